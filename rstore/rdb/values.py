"""RDB values: streams read record by record, every other type parsed past and summarised.

Stream values (types 15, 19, 21, 26, 27), in file order::

    nodes: count, then per node a 16-byte master-ID string and a listpack string
    length, last_id                                       (all types)
    first_id, max_deleted_entry_id, entries_added         (19 and later)
    groups: count, then per group
        name, last_id, [entries_read (19+)], PEL size, PEL entries (raw ID, ms, count)
        consumers: count, then per consumer
            name, seen_time, [active_time (21+)], PEL size, raw IDs
        [NACK zone (27): count, raw IDs in release order]
    [idempotency (26+): duration, maxsize, producers: count, then per producer its pid and
        its iids: count, then per iid the iid and its entry ID; iids added, duplicates]

The checks Redis makes while loading are made here, plus order checks (Redis writes nodes,
PEL entries, groups and consumers in ascending order): then duplicates cannot hide, in
constant memory.  Checks that need the whole PEL are left to whoever consumes the records.
"""

from __future__ import annotations

from collections.abc import Iterator

from rstore.codec import listpack as lp
from rstore.codec.node_validate import NodeFacts, checked, node_facts
from rstore.codec.speedups import c_read_nodes, c_read_pel
from rstore.codec.stream_node import node_counts
from rstore.errors import CorruptDataError, CorruptRDBError, UnsupportedRDBError
from rstore.model import (
    ID,
    ConsumerPending,
    ConsumerPendingRun,
    ConsumerState,
    GroupState,
    IdempotentProducer,
    NackedEntries,
    NodeRun,
    PendingEntry,
    PendingRun,
    StreamIdempotency,
    StreamNode,
    StreamState,
)
from rstore.numbers import INT64_MAX
from rstore.rdb.decoding import Source

__all__ = [
    "STREAM_TYPES",
    "TYPE_NAMES",
    "StreamRecord",
    "node_error",
    "read_nodes",
    "read_stream",
    "skip_value",
]

STREAM_V1, STREAM_V2, STREAM_V3, STREAM_V4, STREAM_V5 = 15, 19, 21, 26, 27
STREAM_TYPES = (STREAM_V1, STREAM_V2, STREAM_V3, STREAM_V4, STREAM_V5)

# Every value type up to Redis 8.8 (RDB 14) / Valkey 8.0 and what it holds.
TYPE_NAMES = {
    0: "string", 1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset", 6: "module", 7: "module",
    9: "hash", 10: "list", 11: "set", 12: "zset", 13: "hash", 14: "list", 15: "stream",
    16: "hash", 17: "zset", 18: "list", 19: "stream", 20: "set", 21: "stream", 22: "hash",
    23: "hash", 24: "hash", 25: "hash", 26: "stream", 27: "stream",
}  # fmt: skip
#: The first RDB version of each newer stream type: a file of an older version cannot hold it.
FIRST_VERSION = {STREAM_V4: 13, STREAM_V5: 14}
#: Redis 8.6's bounds of a stream's idempotency settings, which its loader enforces.
IDMP_DURATION_RANGE, IDMP_MAXSIZE_RANGE = (1, 86400), (1, 10000)

StreamRecord = (
    StreamNode
    | StreamState
    | GroupState
    | PendingEntry
    | ConsumerState
    | ConsumerPending
    | NackedEntries
    | StreamIdempotency
    | NodeRun
    | PendingRun
    | ConsumerPendingRun
)


# The fewest bytes each record of a stream value takes in any valid encoding (a count that
# cannot fit in what is left of the input is damage, reported by Source.count): a node is two
# strings, neither empty (an ID, a listpack), of 2 bytes at least however encoded; a group PEL
# entry a raw ID, a time and a length; a consumer PEL entry a raw ID; a group a name, two ID
# lengths and two counts at least; a consumer a name, a time (two from type 21) and a count.
_NODE_BYTES, _NACK_BYTES, _ID_BYTES, _GROUP_BYTES = 2 + 2, 16 + 8 + 1, 16, 1 + 2 + 2
_CONSUMER_BYTES = {STREAM_V1: 1 + 8 + 1, STREAM_V2: 1 + 8 + 1, STREAM_V3: 1 + 8 + 8 + 1,
                   STREAM_V4: 1 + 8 + 8 + 1, STREAM_V5: 1 + 8 + 8 + 1}  # fmt: skip
# An IDMP producer is a pid and a count; an iid a string and two lengths.
_PRODUCER_BYTES, _IID_BYTES = 1 + 1, 1 + 1 + 1


def _signed(v: int) -> int:
    return v - (1 << 64) if v > INT64_MAX else v


def node_error(src: Source, exc: CorruptDataError) -> CorruptRDBError:
    """A stream node that failed its checks, reported at the damaged byte's offset in the file:
    where the node's listpack starts in the file plus the offset inside the listpack the check
    names.  A node stored LZF-compressed has no file byte for each of its bytes: it is reported
    at the start of its string, with the offset inside the uncompressed node in the message.
    Call it right after the node's listpack string was read (it reads :attr:`Source.string_at`)."""
    text = str(exc)
    suffix = f" (at byte {exc.offset})"
    if exc.offset is not None and text.endswith(suffix):
        text = text[: -len(suffix)]
    offset = src.string_at
    if exc.offset is not None:
        if src.string_data_at is not None:
            offset = src.string_data_at + exc.offset
        else:
            text += f" (byte {exc.offset} of the uncompressed node)"
    return src.corrupt(f"Stream listpack integrity check failed ({text})", offset)


def read_nodes(
    src: Source, count: int, *, deep: bool = True, after: ID | None = None
) -> Iterator[StreamNode]:
    """``count`` stream nodes (master ID string, listpack string) from where ``src`` stands,
    checked as :func:`read_stream` checks them; ``after`` is the master ID of the node before
    them, when known (master IDs must rise).

    With the C extension, the nodes in the read buffer are parsed, decompressed and checked in
    depth there, a buffer at a time (their facts remembered, so that the importer does not
    walk them again); a node it does not take -- one that crosses the buffer's end, is
    encoded otherwise, or is damaged -- is read here, which reports the damage."""
    previous = after
    left = count
    while left:
        if deep and c_read_nodes is not None:
            buf, pos = src.buffered()
            have = previous is not None
            ms, seq = previous if previous is not None else (0, 0)
            records, _ = c_read_nodes(buf, pos, left, have, ms, seq)
            if records:
                left -= len(records)
                for ms, seq, listpack, live, first_ms, first_seq, last_ms, last_seq, end in records:
                    previous = (ms, seq)
                    first = None if first_ms < 0 else (first_ms, first_seq)
                    deleted = node_counts(listpack)[1]  # the master entry's second counter
                    checked(
                        listpack, previous, NodeFacts(live, first, (last_ms, last_seq), deleted)
                    )
                    src.advance(end)  # the offset after each node is where it ends
                    yield StreamNode(previous, listpack)
                continue
        node = _read_node(src, previous, deep)
        previous = node.master_id
        left -= 1
        yield node


def _node_runs(src: Source, count: int) -> Iterator[StreamNode | NodeRun]:
    """:func:`read_nodes` (``deep``) for a restore: what the C reader takes from the read
    buffer comes out as one :class:`NodeRun`, facts included; a node read here comes alone."""
    previous: ID | None = None
    left = count
    while left:
        if c_read_nodes is not None:
            buf, pos = src.buffered()
            ms, seq = previous if previous is not None else (0, 0)
            run, end = c_read_nodes(buf, pos, left, previous is not None, ms, seq, True)
            if run:
                left -= len(run)
                previous = run[-1][0]
                src.advance(end)
                yield NodeRun(run)
                continue
        node = _read_node(src, previous, True)
        previous = node.master_id
        left -= 1
        yield node


def _read_node(src: Source, previous: ID | None, deep: bool) -> StreamNode:
    at = src.offset
    key = src.string()
    if len(key) != 16:
        raise src.corrupt("Stream node key entry is not the size of a stream ID", at)
    master_id = (int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big"))
    if previous is not None and master_id <= previous:
        raise src.corrupt("stream nodes are not in ascending order (or repeat)", at)
    at = src.offset
    listpack = src.string()
    try:
        lp.validate(listpack, deep=False)
        if deep:
            node_facts(listpack, master_id)
    except CorruptDataError as exc:
        raise node_error(src, exc) from exc
    if listpack[lp.HEADER_SIZE] == lp.EOF:
        raise src.corrupt("Empty listpack inside stream", at)
    return StreamNode(master_id, listpack)


def read_stream(
    src: Source, rdb_type: int, *, deep: bool = True, runs: bool = False
) -> Iterator[StreamRecord]:
    """The records of one stream value, checked as they are read.

    Every node gets the listpack header checks; with ``deep`` also the whole check a restore
    makes (:func:`~rstore.codec.node_validate.node_facts`: the listpack walk, the stream-node
    layout, entry IDs rising, live counts agreeing).  Damage is reported by :func:`node_error`.

    With ``runs``, what the C reader takes from the read buffer comes out as runs
    (:class:`NodeRun`, :class:`PendingRun`, :class:`ConsumerPendingRun`: one per buffer and
    kind) instead of a record each; a record read in Python still comes alone.  The same checks
    are made in the same order, so the same damage raises the same error at the same offset,
    after the run of the records before it.
    """
    nodes = src.count("stream nodes", _NODE_BYTES)
    if runs and deep:
        yield from _node_runs(src, nodes)
    else:
        yield from read_nodes(src, nodes, deep=deep)
    at = src.offset
    length = src.length()
    last_id = src.length_id()
    first_id = max_deleted = entries_added = None
    if rdb_type >= STREAM_V2:
        first_id = src.length_id()
        max_deleted = src.length_id()
        entries_added = src.length()
    if length and not nodes:
        raise src.corrupt("Stream length inconsistent with rax entries", at)
    group_count = src.count("consumer groups", _GROUP_BYTES)
    yield StreamState(length, last_id, first_id, max_deleted, entries_added, group_count)
    previous_name = None
    for _ in range(group_count):
        at = src.offset
        name = src.string()
        if previous_name is not None and name <= previous_name:
            raise src.corrupt(f"Duplicated consumer group name {name!r} (or out of order)", at)
        previous_name = name
        group_last = src.length_id()
        entries_read = _signed(src.length()) if rdb_type >= STREAM_V2 else None
        pel_size = src.count("group PEL entries", _NACK_BYTES)
        # The consumer count is stored after the PEL: -1 here means "not read yet".
        yield GroupState(name, group_last, entries_read, pel_size, -1)
        yield from _group_pel(src, pel_size, runs)
        yield from _consumers(src, rdb_type, runs)
        if rdb_type >= STREAM_V5:
            yield _nack_zone(src)
    if rdb_type >= STREAM_V4:
        yield _idempotency(src)


def _nack_zone(src: Source) -> NackedEntries:
    """A group's released entries (type 27), in release order: each once."""
    ids: dict[ID, None] = {}
    for _ in range(src.count("released entries", _ID_BYTES)):
        at = src.offset
        entry_id = src.raw_id()
        if entry_id in ids:
            raise src.corrupt("Duplicated NACKed entry loading stream consumer group", at)
        ids[entry_id] = None
    return NackedEntries(tuple(ids))


def _idempotency(src: Source) -> StreamIdempotency:
    """The stream's idempotency block (types 26 and 27), checked as Redis 8.6 loads it:
    settings within their bounds, each pid once (a repeated iid of a producer is skipped)."""
    at = src.offset
    duration, maxsize = src.length(), src.length()
    for value, (low, high), what in ((duration, IDMP_DURATION_RANGE, "duration"),
                                     (maxsize, IDMP_MAXSIZE_RANGE, "maxsize")):  # fmt: skip
        if not low <= value <= high:
            raise src.corrupt(f"stream idempotency {what} {value} is out of range", at)
    producers: list[IdempotentProducer] = []
    pids: set[bytes] = set()
    for _ in range(src.count("idempotent producers", _PRODUCER_BYTES)):
        at = src.offset
        pid = src.string()
        if pid in pids:
            raise src.corrupt(f"Duplicated idempotent producer {pid!r}", at)
        pids.add(pid)
        entries: dict[bytes, ID] = {}
        for _ in range(src.count("idempotent IDs", _IID_BYTES)):
            iid = src.string()
            entries.setdefault(iid, src.length_id())
        producers.append(IdempotentProducer(pid, tuple(entries.items())))
    producers.sort(key=lambda p: p.pid)
    return StreamIdempotency(duration, maxsize, tuple(producers), src.length(), src.length())


def _raw_id(raw: bytes) -> ID:
    return (int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big"))


def _group_pel(src: Source, count: int, runs: bool = False) -> Iterator[PendingEntry | PendingRun]:
    previous: ID | None = None
    left = count
    while left:
        if c_read_pel is not None:  # the records in the read buffer, in C
            buf, pos = src.buffered()
            ms, seq = previous or (0, 0)
            if runs:
                staged: dict[bytes, tuple[int, int]] = {}
                _, end = c_read_pel(buf, pos, left, True, previous is not None, ms, seq, staged)
                if staged:
                    left -= len(staged)
                    previous = _raw_id(next(reversed(staged)))
                    src.advance(end)
                    yield PendingRun(staged)
                    continue
            else:
                records, _ = c_read_pel(buf, pos, left, True, previous is not None, ms, seq)
                if records:
                    left -= len(records)
                    for ms, seq, when, deliveries, end in records:
                        previous = (ms, seq)
                        src.advance(end)
                        yield PendingEntry(previous, when, deliveries)
                    continue
        at = src.offset
        entry_id = src.raw_id()
        if previous is not None and entry_id <= previous:
            raise src.corrupt("Duplicated global PEL entry loading stream consumer group", at)
        previous = entry_id
        left -= 1
        yield PendingEntry(entry_id, src.ms_time(), src.length())


def _consumers(src: Source, rdb_type: int, runs: bool = False) -> Iterator[StreamRecord]:
    count = src.count("consumers", _CONSUMER_BYTES[rdb_type])
    previous_name = None
    for _ in range(count):
        at = src.offset
        name = src.string()
        if previous_name is not None and name <= previous_name:
            raise src.corrupt("Duplicate stream consumer detected.", at)
        previous_name = name
        seen = src.ms_time()
        active = src.ms_time() if rdb_type >= STREAM_V3 else None
        pel_size = src.count("consumer PEL entries", _ID_BYTES)
        yield ConsumerState(name, seen, active, pel_size)
        yield from _consumer_pel(src, pel_size, runs)


def _consumer_pel(
    src: Source, count: int, runs: bool = False
) -> Iterator[ConsumerPending | ConsumerPendingRun]:
    previous: ID | None = None
    left = count
    while left:
        if c_read_pel is not None:  # the IDs in the read buffer, in C
            buf, pos = src.buffered()
            ms, seq = previous or (0, 0)
            if runs:
                ids: list[bytes] = []
                _, end = c_read_pel(buf, pos, left, False, previous is not None, ms, seq, ids)
                if ids:
                    left -= len(ids)
                    previous = _raw_id(ids[-1])
                    src.advance(end)
                    yield ConsumerPendingRun(ids)
                    continue
            else:
                records, _ = c_read_pel(buf, pos, left, False, previous is not None, ms, seq)
                if records:
                    left -= len(records)
                    for ms, seq, end in records:
                        previous = (ms, seq)
                        src.advance(end)
                        yield ConsumerPending(previous)
                    continue
        at = src.offset
        entry_id = src.raw_id()
        if previous is not None and entry_id <= previous:
            raise src.corrupt("Duplicated consumer PEL entry loading a stream consumer group", at)
        previous = entry_id
        left -= 1
        yield ConsumerPending(entry_id)


# ----------------------------------------------------------------------------- other types


def _count_in_blob(blob: bytes) -> int:
    """Elements of a listpack or ziplist blob, from its header (-1 when it cannot tell)."""
    if len(blob) >= 7 and int.from_bytes(blob[:4], "little") == len(blob) and blob[-1] == 0xFF:
        n = blob[4] | (blob[5] << 8)
        if n != lp.NUMELE_UNKNOWN:
            return n
    if len(blob) >= 11 and int.from_bytes(blob[:4], "little") == len(blob):
        return int.from_bytes(blob[8:10], "little")  # ziplist: zlbytes, zltail, zllen
    return -1


def skip_value(src: Source, rdb_type: int) -> int:
    """Parse past a value of a type rstore does not store; its element count (-1: unknown)."""
    if rdb_type == 0:
        src.skip_string()
        return 1
    if rdb_type in (1, 2):  # list, set: strings
        n = src.length()
        for _ in range(n):
            src.skip_string()
        return n
    if rdb_type == 3:  # zset: member, score as a 1-byte-length decimal string
        n = src.length()
        for _ in range(n):
            src.skip_string()
            width = src.byte()
            if width < 253:
                src.skip(width)
        return n
    if rdb_type == 4:  # hash: field, value
        n = src.length()
        for _ in range(2 * n):
            src.skip_string()
        return n
    if rdb_type == 5:  # zset: member, 8-byte binary double
        n = src.length()
        for _ in range(n):
            src.skip_string()
            src.skip(8)
        return n
    if rdb_type == 9:  # zipmap: first byte counts pairs (254 and up: unknown)
        blob = src.string()
        return blob[0] if blob and blob[0] < 254 else -1
    if rdb_type == 11:  # intset: u32 encoding, u32 count, integers
        blob = src.string()
        return int.from_bytes(blob[4:8], "little") if len(blob) >= 8 else -1
    if rdb_type in (10, 12, 13, 16, 17, 20, 23):  # one ziplist / listpack blob
        n = _count_in_blob(src.string())
        if n > 0 and rdb_type in (12, 13, 16, 17):
            return n // 2  # field-value or member-score pairs
        return n // 3 if n > 0 and rdb_type == 23 else n
    if rdb_type in (14, 18):  # quicklist: nodes of ziplists / listpacks
        nodes = src.length()
        total = 0
        for _ in range(nodes):
            if rdb_type == 18:
                src.length()  # container: plain or packed
            n = _count_in_blob(src.string())
            total += max(n, 0)
        return total
    if rdb_type in (22, 24):  # hash with field TTLs: [min expire], count, (ttl, field, value)
        if rdb_type == 24:
            src.ms_time()
        n = src.length()
        for _ in range(n):
            src.length()
            src.skip_string()
            src.skip_string()
        return n
    if rdb_type == 25:  # listpack hash with field TTLs: min expire, blob
        src.ms_time()
        n = _count_in_blob(src.string())
        return n // 3 if n > 0 else n
    if rdb_type in (6, 7):
        raise UnsupportedRDBError(f"a module value (RDB type {rdb_type})", src.offset, src.key)
    raise UnsupportedRDBError(f"unknown RDB value type {rdb_type}", src.offset, src.key)
