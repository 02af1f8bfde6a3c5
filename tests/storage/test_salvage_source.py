"""Which snapshot a salvage reads and which of the log's records it applies
(rstore.storage.checks.salvage): the rules on their own, then on stores."""

from __future__ import annotations

from pathlib import Path

import pytest

import rstore
from rstore.storage.checks.salvage import LogRecords, open_source
from rstore.storage.engine import wal_checkpoints
from rstore.storage.records import layout


def _log(checkpoint: int, txnids: list[int]) -> LogRecords:
    return LogRecords(checkpoint, False, txnids, [[] for _ in txnids])


def test_the_records_follow_the_checkpoint_and_every_transaction_they_hold() -> None:
    log = _log(10, [11, 12, 13])
    assert log.follows(10) and log.follows(12)
    assert not log.follows(9)  # older than the checkpoint: what came between is unknown
    assert not log.follows(14)  # newer than the last record: nothing to apply
    assert [log.reach(t) for t in (9, 10, 12, 13, 14)] == [9, 13, 13, 13, 14]
    assert log.newer(12) == [13] and log.newer(13) == []
    assert _log(10, []).reach(10) == 10


def _store_with_records_after_the_checkpoint(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """A store whose log holds records after its checkpoint; the checkpoint's transaction."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 10**9)
    with rstore.Store(path) as s:
        s.xadd("k", {"i": 0})
        s._live_env()._wal.checkpoint()
        checkpoint = s._live_env().read(lambda txn: txn.id)
        for i in range(1, 4):
            s.xadd("k", {"i": i})
    return int(checkpoint)


def test_the_newest_sound_snapshot_is_read_and_nothing_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = _store_with_records_after_the_checkpoint(tmp_path / "s", monkeypatch)
    with open_source(str(tmp_path / "s")) as source:
        assert source.snapshot.origin == "meta page " + str(source.snapshot.txnid % 2)
        assert source.snapshot.txnid == checkpoint + 3
        assert source.log is not None and source.log.applied == 0
        assert source.format == layout.FORMAT_VERSION


def test_previous_applies_the_log_record_of_the_last_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = _store_with_records_after_the_checkpoint(tmp_path / "s", monkeypatch)
    with open_source(str(tmp_path / "s"), previous=True) as source:
        assert source.snapshot.txnid == checkpoint + 2
        assert source.log is not None and source.log.applied == 1
        assert any("1 newer record applied" in note for note in source.notes)
    report = rstore.salvage_store(tmp_path / "s", tmp_path / "out", previous=True)
    with rstore.Store(tmp_path / "out", create=False) as s:
        assert [f[b"i"] for _, f in s.xrange("k")] == [b"0", b"1", b"2", b"3"]  # 3 from the log
    assert report.complete


def test_the_logs_changes_are_merged_in_key_order_around_damage() -> None:
    from rstore.storage.checks.pagecheck import Problem
    from rstore.storage.checks.salvage import _merge

    lost = Problem("nodes", 9, "zeroed", b"m", b"p")
    tree = iter([(b"a", b"1"), (b"c", b"old"), lost, (b"q", b"2"), (b"z", b"3")])
    changed: dict[bytes, bytes | None] = {b"b": b"new", b"c": b"changed", b"n": b"4", b"z": None}
    merged = list(_merge(tree, sorted(changed), changed))
    assert merged == [
        (b"a", b"1"), (b"b", b"new"), (b"c", b"changed"), lost, (b"n", b"4"), (b"q", b"2"),
    ]  # fmt: skip
