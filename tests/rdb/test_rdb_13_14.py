"""RDB 13 (Redis 8.6: stream type 26, a stream's idempotency) and 14 (Redis 8.8: type 27, each
group's released entries).  No server that writes them can be installed here: values are
assembled byte by byte from their description in docs/rdb.md (the contents of librdb's test
dumps ``stream_v13`` and ``stream_v14_xnack``), and what rstore writes is read back."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore.codec.crc64 import crc64

ID = tuple[int, int]


# ----------------------------------------------------------------------------- the encoding
# Written here from the description, not with rstore's writer.


def length(n: int) -> bytes:
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x81" + n.to_bytes(8, "big")


def string(b: bytes) -> bytes:
    return length(len(b)) + b


def raw(entry_id: ID) -> bytes:
    return struct.pack(">QQ", *entry_id)


def lengths(entry_id: ID) -> bytes:
    return length(entry_id[0]) + length(entry_id[1])


def ms(t: int) -> bytes:
    return struct.pack("<q", t)


def payload(rdb_type: int, value: bytes, version: int) -> bytes:
    body = bytes([rdb_type]) + value + version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def stream_head(store: rstore.Store, key: str) -> bytes:
    """The nodes and stream fields of ``key`` (its listpacks are Redis's: data, not the code
    under test), up to the group count."""
    nodes = store.view(lambda v: list(v.nodes(key.encode())))
    out = length(len(nodes)) + b"".join(string(raw(m)) + string(n) for m, n in nodes)
    ids = [entry_id for entry_id, _ in store.xrange(key)]
    first, last = (tuple(map(int, i.split(b"-"))) for i in (ids[0], ids[-1]))
    return (
        out + length(len(ids)) + lengths(last) + lengths(first) + lengths((0, 0)) + length(len(ids))
    )


def idempotency(producers: list[tuple[bytes, list[tuple[bytes, ID]]]], added: int, dups: int,
                duration: int = 100, maxsize: int = 100) -> bytes:  # fmt: skip
    out = length(duration) + length(maxsize) + length(len(producers))
    for pid, iids in producers:
        out += string(pid) + length(len(iids))
        out += b"".join(string(iid) + lengths(entry_id) for iid, entry_id in iids)
    return out + length(added) + length(dups)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with rstore.Store(tmp_path / "s") as s:
        yield s


def source(tmp_path: Path, ids: list[ID]) -> rstore.Store:
    s = rstore.Store(tmp_path / "source")
    for i, entry_id in enumerate(ids, 1):
        s.xadd("k", {f"field{i}": f"value{i}"}, id=f"{entry_id[0]}-{entry_id[1]}")
    return s


# ----------------------------------------------------------------------------- reading


def test_a_type_27_value_keeps_released_entries_ownerless_in_their_order(
    tmp_path: Path, store: rstore.Store
) -> None:
    """librdb's stream_v14_xnack: four entries, consumer1 owns the first and the last, the
    middle two released (here in reverse ID order, which claims must follow)."""
    ids = [(1779170191996, 0), (1779170191998, 0), (1779170192000, 0), (1779170192001, 0)]
    seen = 1779170192004
    with source(tmp_path, ids) as src:
        head = stream_head(src, "k")
    pel = [(ids[0], seen, 1), (ids[1], 0, 1), (ids[2], 0, 3), (ids[3], seen, 1)]
    value = head + length(1) + string(b"mygroup") + lengths(ids[3]) + length(4)
    value += length(4) + b"".join(raw(i) + ms(t) + length(n) for i, t, n in pel)
    value += length(1) + string(b"consumer1") + ms(seen) + ms(seen) + length(2)
    value += raw(ids[0]) + raw(ids[3])
    value += length(2) + raw(ids[2]) + raw(ids[1])  # the NACK zone, in release order
    value += idempotency([], 0, 0)
    store.execute("RESTORE", "mystream", 0, payload(27, value, 14))
    pending = store.execute("XPENDING", "mystream", "mygroup", "-", "+", 10)
    assert [(p[0], p[1], p[3]) for p in pending] == [
        (b"1779170191996-0", b"consumer1", 1),
        (b"1779170191998-0", b"", 1),
        (b"1779170192000-0", b"", 3),
        (b"1779170192001-0", b"consumer1", 1),
    ]
    assert [p[2] for p in pending][1:3] == [-1, -1]
    full = dict(zip(*[iter(store.execute("XINFO", "STREAM", "mystream", "FULL"))] * 2))
    group = dict(zip(*[iter(full[b"groups"][0])] * 2))
    assert (group[b"pel-count"], group[b"nacked-count"]) == (4, 2)
    claimed = store.execute("XREADGROUP", "GROUP", "mygroup", "c2", "COUNT", "1", "CLAIM", "0",
                            "STREAMS", "mystream", ">")  # fmt: skip
    assert claimed[0][1][0][0] == b"1779170192000-0"  # released first, claimed first
    assert store.check() == []


def test_a_type_26_value_brings_its_idempotency(tmp_path: Path, store: rstore.Store) -> None:
    """librdb's stream_v13: two producers with an iid each, then a retried XADD of either is
    answered with the entry it added (IDs of now: the iids' time is not over)."""
    now = int(time.time() * 1000)
    ids = [(now, 0), (now, 1), (now, 2)]
    with source(tmp_path, ids) as src:
        head = stream_head(src, "k")
    block = idempotency(
        [(b"producer1", [(b"iid_p1_e1", ids[1])]), (b"producer2", [(b"iid_p2_e1", ids[2])])],
        added=2, dups=0, duration=300, maxsize=50,
    )  # fmt: skip
    store.execute("RESTORE", "s", 0, payload(26, head + length(0) + block, 13))
    info = dict(zip(*[iter(store.execute("XINFO", "STREAM", "s"))] * 2))
    assert [info[f] for f in (b"idmp-duration", b"idmp-maxsize", b"pids-tracked",
                              b"iids-tracked", b"iids-added", b"iids-duplicates")] == [
        300, 50, 2, 2, 2, 0]  # fmt: skip
    again = store.execute("XADD", "s", "IDMP", "producer2", "iid_p2_e1", "*", "f", "v")
    assert again == f"{now}-2".encode()
    assert store.xlen("s") == 3 and store.check() == []


@pytest.mark.parametrize(
    ("value_of", "what"),
    [
        (lambda head: head + length(0) + idempotency([], 0, 0, duration=0), "duration 0"),
        (lambda head: head + length(0) + idempotency([], 0, 0, maxsize=10001), "maxsize"),
        (
            lambda head: (
                head
                + length(0)
                + idempotency([(b"p", [(b"a", (1, 0))]), (b"p", [(b"b", (1, 0))])], 2, 0)
            ),
            "a pid twice",
        ),
    ],
)
def test_a_damaged_idempotency_block_is_refused(
    tmp_path: Path, store: rstore.Store, value_of: Any, what: str
) -> None:
    with source(tmp_path, [(1, 0)]) as src:
        head = stream_head(src, "k")
    with pytest.raises(rstore.ResponseError, match="Bad data format"):
        store.execute("RESTORE", "s", 0, payload(26, value_of(head), 13))
    assert store.keys("*") == [], what


def test_a_released_entry_must_be_in_its_group_pel(tmp_path: Path, store: rstore.Store) -> None:
    with source(tmp_path, [(1, 0), (2, 0)]) as src:
        head = stream_head(src, "k")
    value = head + length(1) + string(b"g") + lengths((2, 0)) + length(2)
    value += length(1) + raw((1, 0)) + ms(0) + length(1) + length(0)  # no consumer
    released = [length(1) + raw((1, 0)), length(1) + raw((2, 0))]  # 2-0 is not pending
    store.execute("RESTORE", "ok", 0, payload(27, value + released[0] + idempotency([], 0, 0), 14))
    with pytest.raises(rstore.ResponseError, match="Bad data format"):
        store.execute("RESTORE", "bad", 0,
                      payload(27, value + released[1] + idempotency([], 0, 0), 14))  # fmt: skip
    assert store.keys("*") == [b"ok"]


def test_a_newer_stream_type_in_an_older_payload_is_refused(
    tmp_path: Path, store: rstore.Store
) -> None:
    with source(tmp_path, [(1, 0)]) as src:
        head = stream_head(src, "k")
    with pytest.raises(rstore.ResponseError, match="Bad data format"):
        store.execute("RESTORE", "s", 0, payload(26, head + length(0) + idempotency([], 0, 0), 11))


# ----------------------------------------------------------------------------- writing


def queue(path: Path) -> rstore.Store:
    """A stream with idempotent producers and a group whose entries were partly released."""
    s = rstore.Store(path)
    for i in range(1, 9):
        s.xadd("q", {"n": i}, idmp=(f"p{i % 2}", f"iid{i}"))
    s.xadd("q", {"n": 1}, idmp=("p1", "iid1"))  # a duplicate
    s.xgroup_create("q", "g", "0")
    s.xreadgroup("g", "alice", {"q": ">"}, count=5)
    ids = [entry_id for entry_id, _ in s.xrange("q")]
    s.execute("XNACK", "q", "g", "FAIL", "IDS", "2", ids[3], ids[1])
    return s


def claim_order(store: rstore.Store) -> list[bytes]:
    reply = store.execute("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "CLAIM", "0",
                          "STREAMS", "q", ">")  # fmt: skip
    return [entry[0] for entry in reply[0][1]]


@pytest.mark.parametrize("version", [13, 14])
def test_save_and_restore_keep_what_each_version_holds(tmp_path: Path, version: int) -> None:
    with queue(tmp_path / "a") as s:
        full = s.execute("XINFO", "STREAM", "q", "FULL")
        ids = [entry_id for entry_id, _ in s.xrange("q")]
        s.save(tmp_path / "f.rdb", rdb_version=version)
        payload_bytes = s.dump("q", rdb_version=version)
    with rstore.Store(tmp_path / "b") as t:
        t.restore_file(tmp_path / "f.rdb")
        t.execute("RESTORE", "copy", 0, payload_bytes)
        assert t.xadd("q", {"n": 1}, idmp=("p1", "iid1")) == ids[0]  # remembered: no new entry
        if version == 14:
            assert t.execute("XINFO", "STREAM", "copy", "FULL") == full
            assert claim_order(t) == [ids[3], ids[1]]  # released, in their order
        else:  # given back to alice, at time 0
            pending = t.execute("XPENDING", "q", "g", "-", "+", 10)
            assert {p[1] for p in pending} == {b"alice"}
        assert t.check() == []
    with rstore.Store(tmp_path / "a") as s:
        assert claim_order(s) == [ids[3], ids[1]]


def test_version_13_leaves_out_iids_whose_time_is_over(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "a") as s:
        s.xadd("q", {"f": "v"}, id="1-0")
        s.execute("XIDMPRECORD", "q", "old", "i1", "1-0")  # an entry of 1970: over at once
        s.xadd("q", {"f": "v"}, idmp=("new", "i2"))
        payload_bytes = s.dump("q", rdb_version=13)
    with rstore.Store(tmp_path / "b") as t:
        t.execute("RESTORE", "q", 0, payload_bytes)
        info = dict(zip(*[iter(t.execute("XINFO", "STREAM", "q"))] * 2))
        assert (info[b"pids-tracked"], info[b"iids-tracked"], info[b"iids-added"]) == (1, 1, 2)
