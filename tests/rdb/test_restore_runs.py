"""The restore path reads records in runs (``read_stream(runs=True)``: a read buffer's nodes,
PEL entries or consumer IDs at a time) and stages a group's PEL in memory up to
``streams.dump.STAGE_LIMIT`` entries, in LMDB records past it.  Neither may change what a
restore gives: the same records (node facts included) and the same error at the same offset as
the record-by-record reader, and the same store, or the same refusal, whatever the limit."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore.codec import speedups
from rstore.codec.crc64 import crc64
from rstore.codec.node_validate import _node_facts
from rstore.errors import CorruptRDBError
from rstore.model import (
    ConsumerPending,
    ConsumerPendingRun,
    ConsumerSnapshot,
    ConsumerState,
    GroupSnapshot,
    GroupState,
    NodeRun,
    PendingEntry,
    PendingRun,
    StreamNode,
    StreamSnapshot,
    StreamState,
)
from rstore.rdb import values
from rstore.rdb.decoding import Source
from rstore.rdb.encoding import encode_string
from rstore.rdb.writer import encode_stream
from rstore.streams import dump

STREAM_TYPE = 21


def _raw(entry_id: tuple[int, int]) -> bytes:
    return struct.pack(">QQ", *entry_id)


def _flat(rec: object) -> Iterator[object]:
    """A run as the records it stands for (each node's facts checked against the check's)."""
    if isinstance(rec, NodeRun):
        for master_id, listpack, live, first, last in rec.nodes:
            facts = _node_facts(listpack, master_id)
            assert (live, first, last) == (facts.live, facts.first_live, facts.last)
            yield StreamNode(master_id, listpack)
    elif isinstance(rec, PendingRun):
        for raw, (when, count) in rec.entries.items():
            yield PendingEntry(values._raw_id(raw), when, count)
    elif isinstance(rec, ConsumerPendingRun):
        for raw in rec.ids:
            yield ConsumerPending(values._raw_id(raw))
    else:
        yield rec


def _read(value: bytes, runs: bool) -> tuple[list[object], object, int, int]:
    """The records of a stream value, the error (text, offset) or None, where the reader
    stopped, and how many runs it handed over."""
    src = Source.from_bytes(value)
    out: list[object] = []
    error: object = None
    n_runs = 0
    try:
        for rec in values.read_stream(src, STREAM_TYPE, runs=runs):
            n_runs += isinstance(rec, (NodeRun, PendingRun, ConsumerPendingRun))
            out.extend(_flat(rec))
    except CorruptRDBError as exc:
        error = (str(exc), exc.offset)
    return out, error, src.offset, n_runs


def _populate(store: rstore.Store, rng: random.Random, entries: int, groups: int) -> None:
    for i in range(entries):
        fields = {f"f{j}": rng.choice(["a", "bb", str(i)]) for j in range(rng.randint(1, 3))}
        store.xadd("s", fields)
    ids = [e[0] for e in store.xrange("s")]
    for victim in rng.sample(ids, len(ids) // 10):
        store.xdel("s", victim)
    for g in range(groups):
        store.xgroup_create("s", f"g{g}", "0")
        for c in range(rng.randint(1, 4)):
            store.xreadgroup(f"g{g}", f"c{c}", {"s": ">"}, count=rng.randint(0, entries // 3))
        pending = store.xpending_range("s", f"g{g}", "-", "+", entries)
        for p in rng.sample(pending, len(pending) // 4):
            store.xack("s", f"g{g}", p["message_id"])


def _value(store: rstore.Store) -> bytes:
    """The stream's RDB value: its DUMP payload without the type byte and the footer."""
    payload = store.dump("s")
    assert payload is not None and payload[0] == STREAM_TYPE
    return payload[1:-10]


@pytest.mark.parametrize("seed", range(6))
def test_runs_read_as_the_records_do(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    with rstore.Store(tmp_path / "s") as store:
        _populate(store, rng, rng.randint(1, 600), rng.randint(0, 3))
        value = _value(store)
    records, error, end, _ = _read(value, runs=False)
    assert error is None and end == len(value)
    assert _read(value, runs=True)[:3] == (records, None, end)
    for _ in range(60):  # damaged copies: the same records before the same error
        damaged = bytearray(value)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        assert _read(bytes(damaged), runs=True)[:3] == _read(bytes(damaged), runs=False)[:3]


def test_runs_across_read_buffers(tmp_path: Path) -> None:
    """Over 1 MiB of nodes and of PEL entries: runs end at the buffer's end, the record that
    crosses it is read alone, and everything still comes out in order."""
    with rstore.Store(tmp_path / "s") as store:
        for _ in range(60):
            pipe = store.pipeline()
            for _ in range(1000):
                pipe.xadd("s", {"field": "x" * 20})
            pipe.execute()
        store.xgroup_create("s", "g", "0")
        store.xreadgroup("g", "a", {"s": ">"}, count=40_000)
        store.xreadgroup("g", "b", {"s": ">"})
        value = _value(store)
    records, error, end, _ = _read(value, runs=False)
    assert error is None
    got, error, at, n_runs = _read(value, runs=True)
    assert (got, error, at) == (records, None, end)
    if speedups.c_read_nodes is not None:  # without the C reader, every record comes alone
        assert n_runs >= 4  # nodes, PEL and consumer IDs each span more than one buffer


# ----------------------------------------------------------------------------- staging


def _file(value: bytes) -> bytes:
    """A one-key RDB file (version 11) holding stream ``s`` with ``value``."""
    body = b"REDIS0011\xfe\x00" + bytes([STREAM_TYPE]) + encode_string(b"s") + value + b"\xff"
    return body + struct.pack("<Q", crc64(body))


def _crafted(tmp_path: Path, pel: list[int], owners: dict[bytes, list[int]]) -> bytes:
    """A file whose stream has 9 entries and one group with PEL entries ``pel`` (by seq) and
    consumers owning ``owners`` (which may disagree with it)."""
    with rstore.Store(tmp_path / "scratch") as store:
        for i in range(1, 10):
            store.xadd("s", {"f": str(i)}, id=f"1-{i}")
        nodes = [
            rec
            for rec in values.read_stream(Source.from_bytes(_value(store)), STREAM_TYPE)
            if isinstance(rec, StreamNode)
        ]
    group = GroupSnapshot(
        GroupState(b"g", (1, 9), 9, len(pel), len(owners)),
        [PendingEntry((1, seq), 1000 + seq, seq) for seq in pel],
        [
            ConsumerSnapshot(ConsumerState(name, 5, 6, len(ids)), [(1, seq) for seq in ids])
            for name, ids in sorted(owners.items())
        ],
    )
    snap = StreamSnapshot(len(nodes), nodes, StreamState(9, (1, 9), (1, 1), (0, 0), 9, 1), [group])
    return _file(b"".join(encode_stream(snap, STREAM_TYPE)))


def _everything(store: rstore.Store) -> Any:
    """XINFO STREAM FULL, every group's PEL with owners and every consumer's own PEL (IDs,
    owners, delivery counts: idle times move with the clock), DUMP."""
    pending = {}
    for group in store.xinfo_groups("s"):
        name = group["name"]
        for consumer in [None, *(c["name"] for c in store.xinfo_consumers("s", name))]:
            only = [] if consumer is None else [consumer]
            got = store.execute("XPENDING", "s", name, "-", "+", "100000", *only)
            pending[(name, consumer)] = [(i, owner, n) for i, owner, _, n in got]
    return store.execute("XINFO", "STREAM", "s", "FULL"), pending, store.dump("s")


@pytest.mark.parametrize("limit", [0, 1, 5, dump.STAGE_LIMIT])
def test_the_staging_limit_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Past the limit, PEL entries wait in LMDB records: the store restored is the same, and
    nothing of the staging is left behind (``check()`` would see a stray PEL record)."""
    rng = random.Random(7)
    path = tmp_path / "f.rdb"
    with rstore.Store(tmp_path / "src") as source:
        _populate(source, rng, 300, 3)
        expected = _everything(source)
        source.save(str(path))
    monkeypatch.setattr(dump, "STAGE_LIMIT", limit)
    with rstore.Store(tmp_path / "dst") as store:
        store.restore_file(str(path))
        assert _everything(store) == expected
        assert store.check() == []


REFUSALS = [
    ([1, 2, 3], {b"a": [1, 2]}, "Stream CG PEL entry without consumer in group b'g'"),
    ([1, 2, 3], {b"a": [1, 2, 3, 4]}, "Consumer entry not found in group global PEL: (1, 4)"),
    ([1, 2, 3], {b"a": [1, 2], b"b": [2, 3]}, "not found in group global PEL: (1, 2)"),
]


@pytest.mark.parametrize(("pel", "owners", "text"), REFUSALS)
@pytest.mark.parametrize("limit", [0, 2, dump.STAGE_LIMIT])
def test_pel_and_owners_that_disagree_are_refused_whatever_the_limit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pel: list[int],
    owners: dict[bytes, list[int]],
    text: str,
    limit: int,
) -> None:
    path = tmp_path / "f.rdb"
    path.write_bytes(_crafted(tmp_path, pel, owners))
    monkeypatch.setattr(dump, "STAGE_LIMIT", limit)
    with rstore.Store(tmp_path / "dst") as store:
        store.xadd("other", {"f": "v"}, id="1-1")
        with pytest.raises(CorruptRDBError, match=text.replace("(", r"\(").replace(")", r"\)")):
            store.restore_file(str(path))
        assert store.execute("KEYS", "*") == [b"other"]
        assert store.check() == []


def test_a_refused_restore_in_a_pipeline_leaves_no_record(tmp_path: Path) -> None:
    """A pipeline commits past a RESTORE refused half-way through a group (a consumer names an
    entry another consumer owns): the consumers and NACKs already written for that group go
    too (they once stayed behind, out of reach of every command and of ``check()``)."""
    from rstore.storage.records import layout

    def records(store: rstore.Store) -> tuple[int, ...]:
        """How many group PEL, consumer and consumer-index records the store holds."""
        env = store._env
        assert env is not None
        dbs = (layout.DB_PEL, layout.DB_CONSUMERS, layout.DB_CONSUMER_PEL)
        return env.read(lambda txn: tuple(txn.count(db) for db in dbs))

    with rstore.Store(tmp_path / "s") as store:
        for i in range(1, 10):
            store.xadd("src", {"f": str(i)}, id=f"1-{i}")
        store.xgroup_create("src", "g", "0")
        store.xreadgroup("g", "a", {"src": ">"}, count=3)
        store.xreadgroup("g", "b", {"src": ">"}, count=3)
        payload = store.dump("src")
        assert payload is not None
        body = payload[:-10]
        at = body.rfind(_raw((1, 4)))  # b's first ID -> 1-3, which a owns
        bad = body[:at] + _raw((1, 3)) + body[at + 16 :] + payload[-10:-8]
        bad += struct.pack("<Q", crc64(bad))
        before = records(store)
        pipe = store.pipeline()
        pipe.restore("dst", 0, bad)
        pipe.xadd("other", {"x": "y"})
        replies = pipe.execute(raise_on_error=False)
        assert isinstance(replies[0], rstore.ResponseError)
        assert str(replies[0]) == "Bad data format"
        assert records(store) == before == (6, 2, 6)
        assert sorted(store.execute("KEYS", "*")) == [b"other", b"src"]
