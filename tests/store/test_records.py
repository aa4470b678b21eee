"""Shared records and quota uses on each backend, through two handles on one database (two
replicas): a record added by one is read, taken or refused by the other."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hermes.store import Store, open_store
from hermes.store.base import RecordStore


@pytest.fixture
def pair(store_url: str) -> Iterator[tuple[RecordStore, RecordStore]]:
    one, two = open_store(store_url), open_store(store_url)
    assert one.records is not None and two.records is not None
    yield one.records, two.records
    one.close()
    two.close()


def test_a_record_written_by_one_handle_is_read_by_the_other(
    pair: tuple[RecordStore, RecordStore],
) -> None:
    a, b = pair
    a.put_record("response", "alice", "resp_1", {"text": "hi"})
    got = b.get_record("response", "alice", "resp_1")
    assert got is not None and got.body == {"text": "hi"}
    assert b.get_record("response", "bob", "resp_1") is None  # scopes never meet
    a.put_record("response", "alice", "resp_1", {"text": "again"})
    assert [r.body for r in b.list_records("response", "alice")] == [{"text": "again"}]
    assert b.delete_records("response", "alice", ["resp_1"]) == 1
    assert a.get_record("response", "alice", "resp_1") is None


def test_add_record_lets_exactly_one_caller_win(pair: tuple[RecordStore, RecordStore]) -> None:
    a, b = pair
    with ThreadPoolExecutor(8) as pool:
        wins = list(
            pool.map(
                lambda i: (a if i % 2 else b).add_record("delivery", "s", "job:slot", {"i": i}),
                range(16),
            )
        )
    assert wins.count(True) == 1


def test_take_record_hands_a_code_to_one_caller_and_expired_ones_to_none(
    pair: tuple[RecordStore, RecordStore],
) -> None:
    a, b = pair
    a.put_record("pairing", "default", "CODE1", {"identity": "telegram:7"}, ttl=60)
    taken = b.take_record("pairing", "default", "CODE1")
    assert taken is not None and taken.body["identity"] == "telegram:7"
    assert a.take_record("pairing", "default", "CODE1") is None
    a.put_record("pairing", "default", "OLD", {}, ttl=-1)
    assert b.get_record("pairing", "default", "OLD") is None
    assert b.take_record("pairing", "default", "OLD") is None
    assert a.add_record("pairing", "default", "OLD2", {}, ttl=-1)
    assert b.add_record("pairing", "default", "OLD2", {"fresh": True}, ttl=60)  # expired: free


def test_trim_and_forget(pair: tuple[RecordStore, RecordStore]) -> None:
    a, b = pair
    for i in range(5):
        a.put_record("response", "u", f"r{i}", {"i": i})
        time.sleep(0.002)
    a.put_record("signout", "u", "n1", {})
    assert b.trim_records("response", 2) == 3
    assert [r.key for r in a.list_records("response", "u")] == ["r4", "r3"]
    assert b.forget_records("u") == 3
    assert a.list_records("signout") == []


def test_quota_uses_add_up_across_handles(pair: tuple[RecordStore, RecordStore]) -> None:
    a, b = pair
    now = time.time()
    limits = [("requests:key:1", 60.0, 3)]
    assert a.use_quota(limits, now) is None
    assert b.use_quota(limits, now + 1) is None
    assert a.use_quota(limits, now + 2) is None
    refused = b.use_quota(limits, now + 3)
    assert refused is not None and refused[0] == "requests:key:1"
    assert refused[1] == pytest.approx(57.0)
    assert a.use_quota(limits, now + 61) is None  # the first use left the window


def test_a_refused_quota_counts_nothing(pair: tuple[RecordStore, RecordStore]) -> None:
    a, b = pair
    now = time.time()
    assert a.use_quota([("turns:user:x", 86400.0, 1)], now) is None
    both = [("requests:user:x", 60.0, 5), ("turns:user:x", 86400.0, 1)]
    assert b.use_quota(both, now) is not None
    assert a.use_quota([("requests:user:x", 60.0, 1)], now) is None  # nothing was counted


def test_both_backends_expose_records(store_url: str) -> None:
    store: Store = open_store(store_url)
    try:
        assert store.records is not None
    finally:
        store.close()
