"""Plain records describing a stream's full state, for snapshots, RDB files and DUMP payloads.

:mod:`rstore.streams` produces them from a store (export) and consumes them (restore);
:mod:`rstore.rdb` turns them into RDB bytes and back.  Neither side needs the other's
internals.  Names follow Redis's ``stream.h``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "DATABASES",
    "ID",
    "INVALID_ENTRIES_READ",
    "AppendReport",
    "ConsumerInfo",
    "ConsumerPending",
    "ConsumerPendingRun",
    "ConsumerSnapshot",
    "ConsumerState",
    "Entry",
    "GroupInfo",
    "GroupSnapshot",
    "GroupState",
    "IdempotentProducer",
    "NackedEntries",
    "NodeRun",
    "NodeSpan",
    "PendingEntry",
    "PendingRun",
    "StreamIdempotency",
    "StreamInfo",
    "StreamNode",
    "StreamSnapshot",
    "StreamState",
]

#: Databases 0 to DATABASES - 1 exist (``SELECT``; Valkey's default ``databases 16``): the one
#: definition, for :meth:`rstore.Store.database` and for restoring every database of a file.
DATABASES = 16

#: A stream entry ID: ``(ms, seq)``, each an unsigned 64-bit integer (the one definition;
#: :mod:`rstore.ids` parses and formats them).
ID = tuple[int, int]

#: A group's ``entries_read`` when it is not known (Redis's ``SCG_INVALID_ENTRIES_READ``).
INVALID_ENTRIES_READ = -1

#: One entry: its ID and its fields and values, flat and in stored order (repeats kept).
Entry = tuple[ID, list[bytes]]


@dataclass(frozen=True, slots=True)
class StreamNode:
    """One node: its master ID and its listpack, byte-identical to Redis's."""

    master_id: ID
    listpack: bytes


@dataclass(frozen=True, slots=True)
class AppendReport:
    """What :meth:`rstore.Store.append_entries` did: ``added`` entries in all; per stream
    ``streams[name] = (entries added, last ID)`` (the ID as XADD replies it, ``b"ms-seq"``);
    ``applied`` false when the batch had been applied before (then nothing was added)."""

    added: int
    streams: dict[bytes, tuple[int, bytes]]
    applied: bool


@dataclass(frozen=True, slots=True)
class NodeSpan:
    """Where a node lies, for planning reads of parts of a stream: its master ID, its live
    entries (from its master entry) and, in an RDB file, the offset of its first byte (``None``
    in a store).  Given by :meth:`rstore.StoreView.node_index` and :func:`rstore.index_rdb`."""

    master_id: ID
    entries: int
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class StreamState:
    """Stream-level metadata.  RDB type 15 (Redis < 7.0) lacks the last three: ``None``."""

    length: int
    last_id: ID
    first_id: ID | None
    max_deleted_entry_id: ID | None
    entries_added: int | None
    group_count: int


@dataclass(frozen=True, slots=True)
class GroupState:
    """A consumer group; ``entries_read`` is -1 when unknown, ``None`` when absent (type 15).

    In an RDB file the consumer count follows the PEL, so a reader reports
    ``consumer_count = -1`` (not read yet); consumers follow as ConsumerState records."""

    name: bytes
    last_id: ID
    entries_read: int | None
    pel_count: int
    consumer_count: int


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """One entry of a group's PEL.  ``consumer`` is its owner where the source says so (a
    store); in an RDB file the owner is given by the consumers' lists, and it is ``None``.
    ``released``: XNACK gave it back to the group (Redis 8.8): it has no owner (``consumer``
    is ``b""``) and no delivery time (``0``)."""

    id: ID
    delivery_time_ms: int
    delivery_count: int
    consumer: bytes | None = None
    released: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerState:
    """A consumer; ``active_time_ms`` is -1 for never, ``None`` when absent (types 15/19)."""

    name: bytes
    seen_time_ms: int
    active_time_ms: int | None
    pel_count: int


@dataclass(frozen=True, slots=True)
class ConsumerPending:
    """One entry ID in a consumer's own PEL."""

    id: ID


@dataclass(frozen=True, slots=True)
class NackedEntries:
    """A group's entries XNACK released (Redis 8.8, RDB 14's NACK zone): in its PEL with no
    owner, in the order they were released (the order claims take them in)."""

    ids: tuple[ID, ...]


@dataclass(frozen=True, slots=True)
class IdempotentProducer:
    """A producer's iids held for idempotent XADD, each with the entry it added, oldest first."""

    pid: bytes
    entries: tuple[tuple[bytes, ID], ...]


@dataclass(frozen=True, slots=True)
class StreamIdempotency:
    """What a stream remembers for idempotent production (Redis 8.6, RDB 13): its settings
    (seconds, iids per producer), its producers by pid, and the iids ever recorded and the
    duplicates ever answered."""

    duration: int
    maxsize: int
    producers: tuple[IdempotentProducer, ...]
    added: int
    duplicates: int


# Runs: consecutive records of one kind, read together (a restore reads a file so, with
# ``RDBReader(runs=True)``, and its importer takes each run in one step instead of a record at a
# time).  IDs in ``PendingRun`` and ``ConsumerPendingRun`` are raw: 16 bytes, big-endian ms then
# seq, as RDB files store them (their byte order is their ID order).  Named tuples: cheap to
# define.


class NodeRun(NamedTuple):
    """Consecutive nodes of a stream, each already checked in depth by the reader, with what
    the check found: ``(master_id, listpack, live entries, first live entry's ID or None, last
    entry's ID -- tombstone or not)`` per node, master IDs ascending."""

    nodes: list[tuple[ID, bytes, int, ID | None, ID]]


class PendingRun(NamedTuple):
    """Consecutive entries of a group's PEL: raw ID -> ``(delivery_time_ms, delivery_count)``,
    in ascending ID order (owners come later, from the consumers' lists)."""

    entries: dict[bytes, tuple[int, int]]


class ConsumerPendingRun(NamedTuple):
    """Consecutive raw IDs of a consumer's own PEL, ascending."""

    ids: list[bytes]


# A whole stream, lazily: the iterables are walked once, in this order, while the source
# (a read transaction) stays open.  Counts are declared up front because RDB needs them first.


@dataclass(frozen=True)
class ConsumerSnapshot:
    state: ConsumerState
    ids: Iterable[ID]  # its PEL, ascending; exactly state.pel_count of them


@dataclass(frozen=True)
class GroupSnapshot:
    state: GroupState
    pending: Iterable[PendingEntry]  # ascending; exactly state.pel_count
    consumers: Iterable[ConsumerSnapshot]  # by name; exactly state.consumer_count
    #: the released entries, in release order (RDB 14): then in ``pending``, in no consumer's
    #: list; empty when they are given to consumers instead (older RDB versions)
    nacked: Sequence[ID] = ()


@dataclass(frozen=True)
class StreamSnapshot:
    node_count: int
    nodes: Iterable[StreamNode]  # ascending master IDs; exactly node_count
    state: StreamState
    groups: Iterable[GroupSnapshot]  # by name; exactly state.group_count
    idempotency: StreamIdempotency | None = None  # RDB 13 and later


# ----------------------------------------------------------------------------- reports


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A consumer as reports show it; ``pending`` holds the first entries of its own PEL when
    asked (XINFO STREAM FULL)."""

    state: ConsumerState
    pending: tuple[PendingEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A group as reports show it: its state, its lag (``None`` when it cannot be known, see
    :mod:`rstore.streams.lag`), and when asked its consumers and the first entries of its PEL
    (with their owners) and how many of its pending entries XNACK released (``None`` when
    not asked)."""

    state: GroupState
    lag: int | None
    consumers: tuple[ConsumerInfo, ...] = ()
    pending: tuple[PendingEntry, ...] = ()
    released: int | None = None

    @property
    def entries_read(self) -> int | None:
        """The group's read counter, ``None`` when unknown (-1) or absent (RDB type 15)."""
        value = self.state.entries_read
        return None if value is None or value < 0 else value


@dataclass(frozen=True, slots=True)
class Retention:
    """A retention policy (rstore's own; Redis has none): limits that streams whose name
    matches ``pattern`` (a Redis glob, or the exact name) keep without any producer passing
    MAXLEN or MINID.  ``max_age_ms``: entries whose ID time is older go; ``max_entries``: the
    oldest entries beyond that many go; ``max_bytes``: the oldest nodes go while the stream's
    nodes hold more listpack bytes than that without them; ``None``: no such limit.  ``ref``
    is the reference policy of the trimming: ``keepref`` (consumer groups' pending entries
    keep naming removed entries), ``delref`` (they are dropped from them) or ``acked`` (only
    entries every group has read and acknowledged go).  Whole nodes go, as with ``~`` trimming
    (``docs/retention.md``)."""

    pattern: bytes
    max_age_ms: int | None = None
    max_entries: int | None = None
    ref: str = "keepref"
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class IdempotencyInfo:
    """What a stream remembers for idempotent production (Redis 8.6's XINFO STREAM fields):
    its settings (``idmp-duration`` seconds, ``idmp-maxsize`` iids per producer), the producers
    and iids held now, and the iids ever recorded and the duplicates ever answered."""

    duration: int
    maxsize: int
    producers: int
    tracked: int
    added: int
    duplicates: int


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A stream as reports show it: XINFO STREAM (from a store) and ``rstore inspect`` (from a
    store or an RDB file).  ``nodes`` is Redis's ``radix-tree-keys``; ``last_entry_id`` the
    last entry physically stored, deleted or not.  Some fields belong to one source only:
    ``radix_tree_nodes``, ``first_entry``, ``last_entry``, ``entries`` (FULL),
    ``idempotency``, ``retention`` (the policy that applies, if any) and ``node_bytes`` (the
    listpack bytes of its nodes, given when that policy has a maximum in bytes) to XINFO;
    ``db``, ``expire_ms`` and ``bytes`` to files."""

    key: bytes
    state: StreamState
    nodes: int
    first_entry_id: ID | None
    last_entry_id: ID | None
    groups: tuple[GroupInfo, ...] = ()
    radix_tree_nodes: int | None = None
    first_entry: Entry | None = None
    last_entry: Entry | None = None
    entries: tuple[Entry, ...] | None = None
    idempotency: IdempotencyInfo | None = None
    retention: Retention | None = None
    node_bytes: int | None = None
    db: int = 0
    expire_ms: int | None = None
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class StoreUsage:
    """A store's files at one moment (:meth:`rstore.Store.usage`): ``data_bytes`` the data
    file's size, ``live_bytes`` the bytes of the pages its records use (about what
    ``rstore compact`` would leave), ``log_bytes`` the write-ahead log's size (0 read-only),
    ``flushes`` the log flushes this process made since it started (each one an ``fsync``;
    a flush another process made for it is not counted)."""

    data_bytes: int
    live_bytes: int
    log_bytes: int
    flushes: int
