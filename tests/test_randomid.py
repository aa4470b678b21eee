"""`uuid4_hex` gives what `uuid.uuid4().hex` gives: ids keep their shape."""

from __future__ import annotations

import uuid

from hermes.randomid import uuid4_hex


def test_each_id_is_a_random_version_4_uuid_in_hex() -> None:
    ids = [uuid4_hex() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text and len(text) == 32
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    # every other bit is random: each hex digit outside the two fixed ones takes many values
    for position in range(32):
        seen = {text[position] for text in ids}
        if position == 12:
            assert seen == {"4"}
        elif position == 16:
            assert seen == set("89ab")
        else:
            assert len(seen) == 16
