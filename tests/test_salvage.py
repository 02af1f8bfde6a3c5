"""``rstore.salvage_store`` on sound stores of every format, with databases, with the log's
records to apply after a power loss, and its refusals.  (Damaged stores: tests/damage/.)"""

from __future__ import annotations

import hashlib
import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from store_formats import downgrade

import rstore
from rstore.storage.checks import pagecheck
from rstore.storage.engine import wal_checkpoints
from rstore.storage.records import group_records, layout

PAGE = 4096


def _populate(path: Path) -> None:
    with rstore.Store(path, node_max_entries=7, node_max_bytes=2048) as s:
        for i in range(300):
            s.xadd("orders", {"i": str(i), "blob": bytes([i % 256]) * (i % 50)})
            if i % 3 == 0:
                s.xadd(f"small:{i % 5}", {"n": str(i)})
        s.xdel("orders", *[e for e, _ in s.xrange("orders", count=40)][::4])
        s.xgroup_create("orders", "billing", "0")
        s.xreadgroup("billing", "alice", {"orders": ">"}, count=50)
        s.xreadgroup("billing", "bob", {"orders": ">"}, count=20)
        s.xack("orders", "billing", *[e for e, _ in s.xrange("orders", count=10)])
        s.xgroup_create("orders", "audit", "$", entries_read=12)
        s.xgroup_createconsumer("orders", "audit", "idle-one")
        s.xadd("empty", {"x": "y"})
        s.xtrim("empty", maxlen=0)
        s.append_entries([("orders", "*", ["via", "batch"])], batch=("loader", 7))
        s.append_entries([], bookmark=("replay", b"\x00position\xff"))


def _state(path: Path) -> dict[str, Any]:
    """Everything a user reads of a store (times that pass by themselves left out)."""
    out: dict[str, Any] = {}
    with rstore.Store(path, readonly=True, create=False) as s:
        for key in sorted(s.keys("*")):
            groups = [g[1] for g in s.execute("XINFO", "GROUPS", key)]
            out[repr(key)] = (
                s.execute("XRANGE", key, "-", "+"),
                s.execute("XINFO", "STREAM", key, "FULL"),  # absolute times only
                s.execute("XINFO", "GROUPS", key),
                [_consumers(s.execute("XINFO", "CONSUMERS", key, g)) for g in groups],
                [
                    [row[:2] + row[3:] for row in s.execute("XPENDING", key, g, "-", "+", 1000)]
                    for g in groups
                ],  # without the idle time
            )
        out["config"] = s.execute("CONFIG", "GET", "stream-node-max-*")
        out["batch"] = s.last_batch("loader")
        out["bookmark"] = s.bookmark("replay")
    return out


def _consumers(reply: list[list[Any]]) -> list[list[Any]]:
    """XINFO CONSUMERS without the idle and inactive times."""
    return [
        [x for k, v in zip(c[::2], c[1::2]) if k not in (b"idle", b"inactive") for x in (k, v)]
        for c in reply
    ]


def _digests(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("version", [4, 3, 2, 1])
def test_a_sound_store_of_any_format_is_copied_whole(tmp_path: Path, version: int) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _populate(src)
    if version < rstore.FORMAT_VERSION:
        downgrade(str(src), version)
    expected = _state(src)
    before = _digests(src)
    report = rstore.salvage_store(src, dst)
    assert _digests(src) == before
    assert report.complete and report.losses() == [] and report.damaged == []
    assert report.format == version
    assert _state(dst) == expected
    assert rstore.check_store(dst) == []
    with rstore.Store(dst, create=False) as store:
        assert store.format == rstore.FORMAT_VERSION  # the new store has the default format
    assert report.entries == sum(len(v[0]) for k, v in expected.items() if k.startswith("b'"))


def test_every_database_is_salvaged(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with rstore.Store(src) as s:
        s.xadd("zero", {"db": "0"})
        s.database(3).xadd("three", {"db": "3"})
        s.database(3).xgroup_create("three", "g", "0")
        s.database(12).xadd("twelve", {"db": "12"})
    report = rstore.salvage_store(src, dst)
    assert sorted(report.databases) == [3, 12] and report.complete
    assert report.databases[3].streams[0].name == b"three"
    with rstore.Store(dst, create=False) as s:
        assert s.databases() == [0, 3, 12]
        assert s.database(3).xrange("three")[0][1] == {b"db": b"3"}
        assert s.database(3).xinfo_groups("three")[0]["name"] == b"g"
        assert s.database(12).xlen("twelve") == 1
    assert rstore.check_store(dst / "db3") == []


def test_the_target_must_be_new_or_empty(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _populate(src)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(rstore.StorageError, match="exists and is not empty"):
        rstore.salvage_store(src, tmp_path / "full")
    (tmp_path / "file").write_text("x")
    with pytest.raises(rstore.StorageError, match="is not a directory"):
        rstore.salvage_store(src, tmp_path / "file")
    with pytest.raises(rstore.StorageError, match="inside the store"):
        rstore.salvage_store(src, src / "copy")
    with pytest.raises(rstore.StorageError, match="inside the store"):
        rstore.salvage_store(src, src)
    (tmp_path / "empty").mkdir()
    assert rstore.salvage_store(src, tmp_path / "empty").complete


def test_what_is_not_a_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(rstore.StoreNotFoundError):
        rstore.salvage_store(tmp_path / "missing", tmp_path / "dst")
    (tmp_path / "dir").mkdir()
    with pytest.raises(rstore.NotAStoreError, match=r"no data\.mdb"):
        rstore.salvage_store(tmp_path / "dir", tmp_path / "dst")
    (tmp_path / "dir" / "data.mdb").write_bytes(b"not lmdb" * 1000)
    with pytest.raises(rstore.CorruptStoreError):
        rstore.salvage_store(tmp_path / "dir", tmp_path / "dst")
    assert not (tmp_path / "dst").exists()


def test_a_store_written_meanwhile_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _populate(src)
    writer = rstore.Store(src)

    def progress(done: int, total: int | None) -> None:
        writer.xadd("orders", {"meanwhile": "1"})

    try:
        with pytest.raises(rstore.StorageError, match="changed while it was read"):
            rstore.salvage_store(src, dst, progress=progress)
    finally:
        writer.close()
    assert not dst.exists()
    dst.mkdir()
    with rstore.Store(src) as writer, pytest.raises(rstore.StorageError):
        rstore.salvage_store(src, dst, progress=lambda *_: writer.xadd("s", {"a": 1}))
    assert dst.exists() and os.listdir(dst) == []  # the empty directory given, left empty


def test_progress_counts_the_pages_read(tmp_path: Path) -> None:
    _populate(tmp_path / "src")
    seen: list[tuple[int, int | None]] = []
    rstore.salvage_store(
        tmp_path / "src", tmp_path / "dst", progress=lambda d, t: seen.append((d, t))
    )
    assert seen and all(t is not None and 0 < d <= t for d, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


# ----------------------------------------------------------------------------- the log


def test_after_a_power_loss_the_checkpoint_and_the_log_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``data.mdb`` as a power loss may leave it (each page written since the checkpoint on
    disk or not); a restart since (another boot id).  Salvage reads what recovery would --
    the checkpoint, then the log's records -- without recovering the source."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 10**9)
    path = tmp_path / "s"
    with rstore.Store(path) as s:
        first = [s.xadd("k", {"i": i}) for i in range(50)]
        s.xgroup_create("k", "g", "0")
        s.xreadgroup("g", "c", {"k": ">"}, count=20)
        s._live_env()._wal.checkpoint()
        base = (path / "data.mdb").read_bytes()
        for i in range(60):
            s.xadd("k", {"i": i, "pad": "x" * (i * 37 % 900)})
        s.xreadgroup("g", "c", {"k": ">"}, count=30)
        s.xack("k", "g", *first[:10])
        expected = (s.xrange("k"), s.xpending("k", "g"))
        final = (path / "data.mdb").read_bytes()
        log = (path / "wal.log").read_bytes()
    old = [base[i : i + PAGE] for i in range(0, len(base), PAGE)]
    new = [final[i : i + PAGE] for i in range(0, len(final), PAGE)]
    changed = [i for i in range(len(new)) if i >= len(old) or old[i] != new[i]]
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))
    rng = random.Random(1)
    for trial in range(8):
        pages = [old[i] if i in changed and rng.random() < 0.5 and i < len(old) else page
                 for i, page in enumerate(new)]  # fmt: skip
        image = tmp_path / f"image{trial}"
        image.mkdir()
        (image / "data.mdb").write_bytes(b"".join(pages))
        (image / "wal.log").write_bytes(log)
        before = _digests(image)
        report = rstore.salvage_store(image, tmp_path / f"out{trial}")
        assert _digests(image) == before  # not recovered in place
        assert report.complete, report.losses()
        assert any("the machine restarted" in note for note in report.notes)
        assert any("newer records applied" in note for note in report.notes)
        with rstore.Store(tmp_path / f"out{trial}", create=False) as s:
            assert (s.xrange("k"), s.xpending("k", "g")) == expected


def test_the_log_brings_an_older_intact_snapshot_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest tree damaged where only it has pages (the leaf its last XADD rewrote); the
    log's checkpoint -- the snapshot before -- with the log's record of that XADD gives
    everything."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 10**9)
    src = tmp_path / "src"
    with rstore.Store(src, node_max_entries=4) as s:
        for i in range(400):
            s.xadd("k", {"i": i}, id=f"{i + 1}-0")
        s._live_env()._wal.checkpoint()
        s.xadd("k", {"i": "last"}, id="500-0")
    newest = pagecheck.verify(str(src / "data.mdb"))
    older = pagecheck.verify(str(src / "data.mdb"), newest.txnid - 1)
    leaf = _last_leaf(src, newest.trees["nodes"])
    assert leaf != _last_leaf(src, older.trees["nodes"])  # copied on write: only the newest
    with open(src / "data.mdb", "r+b") as f:
        f.seek(leaf * PAGE)
        f.write(bytes(PAGE))
    report = rstore.salvage_store(src, tmp_path / "dst")
    assert report.complete, report.losses()
    assert report.snapshot == newest.txnid - 1
    assert any("1 newer record applied" in note for note in report.notes)
    with rstore.Store(tmp_path / "dst", create=False) as s:
        assert s.xlen("k") == 401 and s.xrange("k", "-", "+")[-1][0] == b"500-0"


def _last_leaf(path: Path, tree: pagecheck.DbRecord) -> int:
    """The rightmost leaf page of ``tree`` (a depth-2 tree: the root's last child)."""
    assert tree.depth == 2
    with open(path / "data.mdb", "rb") as f:
        f.seek(tree.root * PAGE)
        root = f.read(PAGE)
    last = (int.from_bytes(root[12:14], "little") - 16) // 2 - 1
    at = int.from_bytes(root[16 + 2 * last : 18 + 2 * last], "little")
    return int.from_bytes(root[at : at + 4], "little") | root[at + 4] << 32


def _flip_in_record(path: Path, key: bytes, value: bytes, at: int) -> None:
    """Flip a bit of byte ``at`` of a record's value, found by its key and value side by side
    in a leaf page (every copy, stale ones in free pages included)."""
    data = (path / "data.mdb").read_bytes()
    offsets = []
    found = data.find(key + value)
    while found >= 0:
        offsets.append(found + len(key) + at)
        found = data.find(key + value, found + 1)
    assert offsets
    with open(path / "data.mdb", "r+b") as f:
        for offset in offsets:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ 0x10]))


def test_pending_entries_of_a_lost_consumer_go_to_the_consumer_they_name(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _populate(src)
    with rstore.Store(src) as s:
        bob = s.xpending_range("orders", "billing", "-", "+", 1000, "bob")
        assert bob

        def record(txn: Any) -> tuple[bytes, bytes]:
            stream = txn.key_get(b"orders").handle
            group = group_records.group_get(txn, stream, b"billing")
            key = layout.consumer_key(group.handle, b"bob")
            return key, bytes(txn._raw.get(key, db=txn._dbs[layout.DB_CONSUMERS]))

        key, value = s._live_env().read(record)
    _flip_in_record(src, key, value, 3)  # the seen time: the checksum no longer matches
    report = rstore.salvage_store(src, tmp_path / "dst")
    [orders] = [s for s in report.streams if s.name == b"orders"]
    assert any("consumer 'bob' re-created from its pending entries" in line for line in orders.lost)

    def rows(pending: list[dict[str, Any]]) -> list[tuple[bytes, bytes, int]]:
        return [(p["message_id"], p["consumer"], p["times_delivered"]) for p in pending]

    with rstore.Store(tmp_path / "dst", create=False) as s:
        assert rows(s.xpending_range("orders", "billing", "-", "+", 1000, "bob")) == rows(bob)
        consumers = {c["name"]: c for c in s.xinfo_consumers("orders", "billing")}
        assert consumers[b"bob"]["pending"] == len(bob)
    assert rstore.check_store(tmp_path / "dst") == []


def test_a_malformed_node_of_a_format_1_store_is_lost_alone(tmp_path: Path) -> None:
    """Format 1 has no checksums: a node's own structure is its only guard."""
    src = tmp_path / "src"
    with rstore.Store(src, node_max_entries=10) as s:
        for i in range(100):
            s.xadd("k", {"f": f"value-{i:03}"}, id=f"{i + 1}-0")
    downgrade(str(src), 1)
    data = (src / "data.mdb").read_bytes()
    at = data.find(b"value-055")
    assert at > 0
    with open(src / "data.mdb", "r+b") as f:  # the element's length byte, just before it
        while at >= 0:  # every copy: LMDB's free pages may hold stale ones
            f.seek(at - 1)
            f.write(b"\x7f")
            at = data.find(b"value-055", at + 1)
    report = rstore.salvage_store(src, tmp_path / "dst")
    [stream] = report.streams
    [lost] = stream.lost_entries
    # bounded by the entries read around it: after 50-0, up to the next node's first entry
    assert (lost.first, lost.before) == ((50, 1), (61, 0)) and "malformed" in lost.cause
    with rstore.Store(tmp_path / "dst", create=False) as s:
        ids = [int(e.split(b"-")[0]) for e, _ in s.xrange("k")]
    assert ids == [*range(1, 51), *range(61, 101)]
