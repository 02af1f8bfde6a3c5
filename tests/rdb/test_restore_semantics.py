"""Restore semantics: ``Store.restore`` picks the file import or the RESTORE command by its
arguments; a file import is one transaction (all or nothing), refuses existing keys unless
``replace=True`` and, on every refusal, leaves the store exactly as it was; the RESTORE command
follows Valkey (BUSYKEY, REPLACE, payload errors).  Plus the damage the fuzzer found: a node
whose entries' deleted flags disagree with its master count."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore import CorruptRDBError
from rstore.codec import stream_node as sn
from rstore.codec.crc64 import crc64
from rstore.rdb.decoding import Source

from .common import FIXTURES


def snapshot(store: rstore.Store) -> dict[bytes, Any]:
    """Everything a user can see: per stream its DUMP (entries, metadata, groups, PEL, consumers
    with their times) and its full XINFO."""
    out: dict[bytes, Any] = {}
    for key in sorted(store.execute("KEYS", "*")):
        out[key] = (store.dump(key), store.execute("XINFO", "STREAM", key, "FULL"))
    return out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "store") as s:
        s.xadd("keep", {"f": "v"}, id="1-1")
        s.xgroup_create("keep", "g", "0")
        s.xreadgroup("g", "c", {"keep": ">"})
        yield s


def test_restore_file_imports_a_file_and_restore_is_redis_pys(
    store: rstore.Store, tmp_path: Path
) -> None:
    path = tmp_path / "file.rdb"
    store.save(path)
    with rstore.Store(tmp_path / "other") as other:
        report = other.restore_file(path)  # the file import
        assert report.streams == [b"keep"]
        payload = store.dump("keep")
        assert payload is not None
        assert other.restore("copy", 0, payload) in ("OK", b"OK", True)  # redis-py's RESTORE
        assert other.restore(name="copy2", ttl=0, value=payload) in ("OK", b"OK", True)
        assert other.dump("copy") == other.dump("copy2") == payload
        with pytest.raises(TypeError):  # a path is not a payload: no guessing between the two
            other.restore(path)  # type: ignore[call-arg]
        assert snapshot(other)[b"keep"] == snapshot(store)[b"keep"]
        assert other.check() == []


def test_file_import_is_one_transaction(store: rstore.Store, tmp_path: Path) -> None:
    """The bad stream comes after good ones: those are rolled back with it."""
    src = tmp_path / "src"
    with rstore.Store(src) as s:
        for name in ("a", "b", "c"):
            s.xadd(name, {"n": name}, id="2-2")
        s.save(tmp_path / "ok.rdb", compress=False)
    data = (tmp_path / "ok.rdb").read_bytes()
    at = data.rfind(b"\x81n\x02")  # field "n" of the last stream written, in its node
    assert at > 0
    assert any(0 < data.find(b"\x01" + k) < at for k in (b"a", b"b", b"c"))  # one before it
    bad = data[:at] + b"\x85" + data[at + 1 :]  # a 5-byte string where 1 byte was: corrupt
    bad = bad[:-8] + struct.pack("<Q", crc64(bad[:-8]))
    (tmp_path / "bad.rdb").write_bytes(bad)
    before = snapshot(store)
    with pytest.raises(CorruptRDBError):
        store.restore_file(tmp_path / "bad.rdb")
    assert snapshot(store) == before
    assert store.check() == []
    store.restore_file(tmp_path / "ok.rdb")
    assert sorted(store.execute("KEYS", "*")) == [b"a", b"b", b"c", b"keep"]


def test_existing_keys_and_replace(store: rstore.Store, tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "src") as s:
        s.xadd("new", {"x": "1"}, id="3-3")
        s.xadd("keep", {"from": "file"}, id="9-9")
        s.save(tmp_path / "f.rdb")
    before = snapshot(store)
    with pytest.raises(rstore.RStoreError, match="keep"):
        store.restore_file(tmp_path / "f.rdb")
    assert snapshot(store) == before
    assert store.check() == []
    report = store.restore_file(tmp_path / "f.rdb", replace=True)
    assert report.replaced == [b"keep"]
    assert store.xrange("keep") == [(b"9-9", {b"from": b"file"})]
    assert store.xinfo_groups("keep") == []  # replaced whole
    assert store.xrange("new") == [(b"3-3", {b"x": b"1"})]
    assert store.check() == []


def test_other_databases(store: rstore.Store) -> None:
    fixture = FIXTURES / "queue-valkey-lzf.rdb"
    before = snapshot(store)
    report = store.restore_file(fixture, db=3)
    assert report.streams == [b"expiring"]
    assert report.ttl_dropped == [b"expiring"]
    assert report.skipped == {"hash": 1}
    with pytest.raises(rstore.RStoreError):
        store.restore_file(fixture, db=3)  # now it exists
    empty = store.restore_file(fixture, db=2)  # a database the file does not have
    assert empty.streams == []
    assert {k: v for k, v in snapshot(store).items() if k != b"expiring"} == before


def test_restore_takes_payloads_up_to_rdb_12(store: rstore.Store) -> None:
    """Redis 7.4 to 8.2 write DUMP payloads of RDB version 12 (a stream is encoded as in 11);
    rstore answers as Redis 8.2.3 and restores them, and refuses a newer version."""
    payload = store.dump("keep", rdb_version=12)
    assert payload is not None
    assert payload[-10:-8] == (12).to_bytes(2, "little")
    assert payload[:-10] == store.dump("keep")[:-10]  # type: ignore[index]
    assert store.execute("RESTORE", "copy", "0", payload) == "OK"
    assert store.xrange("copy") == store.xrange("keep")
    newer = payload[:-10] + (15).to_bytes(2, "little")
    newer += struct.pack("<Q", crc64(newer))
    with pytest.raises(rstore.ResponseError) as refused:
        store.execute("RESTORE", "other", "0", newer)
    assert refused.value.line == "ERR DUMP payload version or checksum are wrong"
    with pytest.raises(ValueError, match="RDB versions 9 to 14, not 15"):
        store.dump("keep", rdb_version=15)


def test_restore_command_follows_valkey(store: rstore.Store) -> None:
    payload = store.dump("keep")
    assert payload is not None
    with pytest.raises(rstore.ResponseError, match=r"^BUSYKEY Target key name already exists\.$"):
        store.execute("RESTORE", "keep", "0", payload)
    assert store.execute("RESTORE", "keep", "0", payload, "REPLACE") == "OK"
    broken = payload[:-1] + bytes([payload[-1] ^ 1])
    with pytest.raises(rstore.ResponseError) as refused:
        store.execute("RESTORE", "other", "0", broken)
    assert refused.value.line == "ERR DUMP payload version or checksum are wrong"
    unknown_type = bytes([99]) + payload[1:-8]
    unknown_type += struct.pack("<Q", crc64(unknown_type))
    with pytest.raises(rstore.ResponseError) as refused:
        store.execute("RESTORE", "other", "0", unknown_type)
    assert refused.value.line == "ERR Bad data format"
    assert store.execute("EXISTS", "other") == 0
    assert store.check() == []


# --------------------------------------------------------------------------- found by fuzzing


def _flag_an_entry_deleted() -> bytes:
    """queue-valkey-plain.rdb with one entry of a 5-entry node marked deleted in its flags while
    the node's master count still says 5 live, 0 deleted (checksum recomputed).  Redis checks
    only that the node holds count + deleted entries, so it would load this and then report an
    XLEN that XRANGE disagrees with."""
    data = bytearray((FIXTURES / "queue-valkey-plain.rdb").read_bytes())
    master = (1700000000000, 176)
    at = data.find(b"\x10" + struct.pack(">QQ", *master))
    assert at > 0
    src = Source.from_bytes(bytes(data[at + 17 :]))
    size = src.length()
    start = at + 17 + src.offset
    node = bytes(data[start : start + size])
    flags_at = [pos for _, _, pos in sn.iter_ids(node, master)]
    assert node[flags_at[1]] == sn.FLAG_SAMEFIELDS
    data[start + flags_at[1]] = sn.FLAG_SAMEFIELDS | sn.FLAG_DELETED
    data[-8:] = struct.pack("<Q", crc64(bytes(data[:-8])))
    return bytes(data)


def test_deleted_flags_that_disagree_with_the_count_are_refused(
    store: rstore.Store, tmp_path: Path
) -> None:
    path = tmp_path / "flags.rdb"
    path.write_bytes(_flag_an_entry_deleted())
    before = snapshot(store)
    with pytest.raises(CorruptRDBError, match=r"live entries.*key 'small-nodes'"):
        store.restore_file(path)
    assert snapshot(store) == before
    assert store.check() == []
