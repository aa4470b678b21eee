"""`uuid4_hex` gives what `uuid.uuid4().hex` gives: ids keep their shape."""

from __future__ import annotations

import os
import threading
import uuid

from hermes import randomid
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


def test_ids_come_from_few_kernel_calls(monkeypatch) -> None:
    """Each `os.urandom` gives up the GIL (a hand-off to a busy thread mid-turn): ids are
    drawn from blocks, not a call each."""
    calls = []
    real = os.urandom

    def counting(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    monkeypatch.setattr(randomid, "_block", randomid._Block())
    ids = {uuid4_hex() for _ in range(1000)}
    assert len(ids) == 1000
    assert len(calls) <= 4


def test_threads_never_share_an_id() -> None:
    per_thread: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def draw(out: list[str]) -> None:
        start.wait()
        out.extend(uuid4_hex() for _ in range(3000))

    threads = [threading.Thread(target=draw, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in per_thread for i in out]
    assert len(set(every)) == len(every) == 24000


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    uuid4_hex()  # the parent holds a block with ids left in it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then out without pytest's teardown
        os.write(write, "".join(uuid4_hex() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 1000).decode()
    os.close(read)
    parent = "".join(uuid4_hex() for _ in range(4))
    assert len(child) == 128
    assert {child[i : i + 32] for i in range(0, 128, 32)}.isdisjoint(
        parent[i : i + 32] for i in range(0, 128, 32)
    )
