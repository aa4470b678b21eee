"""The chat request body: cached JSON of frozen messages must never change what is sent."""

import json

import pytest

from hermes.models.wire import FrozenMessage, encode_chat_body, freeze


def _sent(body: bytes) -> dict:
    return json.loads(body)


def test_body_is_the_plain_json_of_params_messages_and_tools() -> None:
    messages = [
        {"role": "system", "content": "s"},
        freeze({"role": "user", "content": "héllo \ud800"}),
    ]
    tools = [freeze({"type": "function", "function": {"name": "f", "parameters": {}}})]
    body = encode_chat_body({"model": "m", "stream": True}, messages, tools)
    assert _sent(body) == {"model": "m", "stream": True, "messages": messages, "tools": tools}
    assert body.isascii()  # lone surrogates and non-ASCII travel as escapes


def test_growing_history_reuses_the_cache_and_stays_exact() -> None:
    history = [freeze({"role": "user", "content": f"turn {i}"}) for i in range(100)]
    for i in range(5):
        history.append(freeze({"role": "assistant", "content": f"answer {i}"}))
        messages = [
            {"role": "system", "content": "s"},
            *history,
            {"role": "user", "content": "now"},
        ]
        assert _sent(encode_chat_body({"model": "m"}, messages))["messages"] == messages


def test_a_session_of_many_turns_stays_exact_as_its_pieces_are_joined() -> None:
    """A run grows a piece a turn and is joined into one now and then: every turn's body is
    still the plain JSON, an earlier (shorter) history included."""
    history = [freeze({"role": "user", "content": "first"})] * 40
    bodies = []
    for turn in range(150):
        history = [
            *history,
            freeze({"role": "user", "content": f"turn {turn} \u00e9"}),
            freeze({"role": "assistant", "content": f"answer {turn}"}),
        ]
        messages = [{"role": "system", "content": "s"}, *history, {"role": "user", "content": "x"}]
        body = encode_chat_body({"model": "m"}, messages)
        assert _sent(body)["messages"] == messages
        bodies.append((messages, body))
    early, body = bodies[10]
    assert encode_chat_body({"model": "m"}, early) == body


def test_a_toolset_offered_again_or_changed_is_sent_as_it_is() -> None:
    schema = {"type": "function", "function": {"name": "f", "parameters": {}}}
    tools = [freeze({**schema, "n": i}) for i in range(3)]
    messages = [{"role": "user", "content": "x"}]
    for offered in (tools, list(tools), tools[:2], [dict(t) for t in tools], [freeze(schema)]):
        assert _sent(encode_chat_body({"model": "m"}, messages, offered))["tools"] == offered


def test_a_changed_or_shorter_history_is_encoded_afresh() -> None:
    history = [freeze({"role": "user", "content": f"turn {i}"}) for i in range(100)]
    encode_chat_body({"model": "m"}, history)
    changed = list(history)
    changed[50] = freeze({"role": "user", "content": "CHANGED"})
    assert _sent(encode_chat_body({"model": "m"}, changed))["messages"] == changed
    assert _sent(encode_chat_body({"model": "m"}, history[:40]))["messages"] == history[:40]
    summary = {"role": "user", "content": "summary"}
    spliced = [*history[:3], summary, *history[60:]]
    assert _sent(encode_chat_body({"model": "m"}, spliced))["messages"] == spliced


def test_frozen_messages_refuse_changes() -> None:
    message = freeze({"role": "user", "content": "x"})
    for change in (
        lambda: message.__setitem__("content", "y"),
        lambda: message.pop("role"),
        lambda: message.update(content="y"),
        message.clear,
    ):
        with pytest.raises(TypeError):
            change()
    assert message == {"role": "user", "content": "x"}
    assert isinstance(freeze(message), FrozenMessage) and freeze(message) is message


def test_has_images_sees_markers_in_remembered_runs() -> None:
    """The image-marker check remembers runs of frozen history, yet answers for the list given."""
    from hermes.agent.images import has_images

    history = [freeze({"role": "user", "content": f"m{i}"}) for i in range(40)]
    assert not has_images([{"role": "system", "content": "s"}, *history])
    grown = [*history, freeze({"role": "user", "content": "see [image: a.png]"})]
    assert has_images(grown)
    assert not has_images(history)  # the shorter list: its own answer, not the grown run's
    swapped = [*history[:10], freeze({"role": "user", "content": "[image: b.png]"}), *history[11:]]
    assert has_images(swapped)
    assert has_images([*history, {"role": "user", "content": "[image: c.png]"}])
