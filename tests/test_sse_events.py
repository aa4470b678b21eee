"""`hermes.models.sse`: the event-stream format's rules, fed in awkward pieces."""

from __future__ import annotations

from hermes.models.sse import Event, EventReader


def read(*pieces: bytes) -> list[Event]:
    reader = EventReader()
    return [event for piece in pieces for event in reader.feed(piece)]


def test_every_line_ending_ends_a_line_even_split_across_pieces() -> None:
    assert read(b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r", b"\n\r", b"\n") == [
        Event("a"),
        Event("b"),
        Event("c"),
        Event("d"),
    ]


def test_data_lines_join_comments_are_skipped_and_names_are_kept() -> None:
    stream = b': ping\n\nevent: error\ndata: {"x":\ndata:1}\nid: 7\nretry: 10\n\n'
    assert read(stream) == [Event('{"x":\n1}', "error")]


def test_an_event_without_data_or_a_blank_line_is_not_given() -> None:
    assert read(b"event: nothing\n\n", b"data: unfinished") == []


def test_one_byte_at_a_time() -> None:
    stream = b"data: first\r\n\r\ndata: second\r\n\r\n"
    assert read(*(stream[i : i + 1] for i in range(len(stream)))) == [
        Event("first"),
        Event("second"),
    ]
