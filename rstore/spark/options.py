"""The options of the ``rstore`` source, read once (in Spark's planner) into plain values.

Spark hands options over as a case-insensitive mapping of strings; every value is checked here
and a bad one raises :class:`ValueError` with one line naming the option and what it accepts.
The schemas of each table are defined here too, so that the reader, the shim and the docs agree.
"""

from __future__ import annotations

import glob as globmod
import os
from collections.abc import Mapping
from dataclasses import dataclass

import rstore

__all__ = [
    "ENTRY_SCHEMAS",
    "TABLE_SCHEMAS",
    "ReadOptions",
    "entry_schema",
    "read_options",
    "read_schema",
]

MAX_ID = (2**64 - 1, 2**64 - 1)

#: The entries table, by ``fields`` and ``values``.
ENTRY_SCHEMAS = {
    ("map", "string"): "stream string, id string, ms bigint, seq bigint, fields map<string,string>",
    ("map", "binary"): "stream string, id string, ms bigint, seq bigint, fields map<string,binary>",
    ("pairs", "string"): (
        "stream string, id string, ms bigint, seq bigint, "
        "fields array<struct<field:string,value:string>>"
    ),
    ("pairs", "binary"): (
        "stream string, id string, ms bigint, seq bigint, "
        "fields array<struct<field:string,value:binary>>"
    ),
}

#: The consumer-group state as tables: the answers of XINFO STREAM / GROUPS / CONSUMERS and of
#: XPENDING's extended form, one row per stream / group / consumer / pending entry.  Times are
#: Unix ms (absolute: a file has no "now"); IDs are "ms-seq" text.
TABLE_SCHEMAS = {
    "streams": (
        "stream string, length bigint, radix_tree_keys bigint, last_generated_id string, "
        "max_deleted_entry_id string, entries_added bigint, recorded_first_entry_id string, "
        "groups bigint, first_entry_id string, last_entry_id string"
    ),
    "groups": (
        "stream string, group string, consumers bigint, pending bigint, "
        "last_delivered_id string, entries_read bigint, lag bigint"
    ),
    "consumers": (
        "stream string, group string, consumer string, pending bigint, seen_time_ms bigint, "
        "active_time_ms bigint"
    ),
    "pending": (
        "stream string, group string, id string, consumer string, delivery_time_ms bigint, "
        "deliveries bigint"
    ),
}

TABLES = ("entries", *TABLE_SCHEMAS)
DEFAULT_ENTRIES_PER_PARTITION = 250_000


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for, as plain (picklable) values."""

    path: str
    kind: str  # "store" or "rdb"
    files: tuple[str, ...]  # the RDB files, for kind "rdb"
    streams: tuple[bytes, ...] | None  # exact names, or None for all
    pattern: bytes | None  # a KEYS-style glob, or None
    start: tuple[int, int]
    end: tuple[int, int]  # inclusive
    db: int
    table: str
    fields: str  # "map" | "pairs"
    values: str  # "string" | "binary"
    entries_per_partition: int
    num_partitions: int | None
    names: str = "string"  # "string" | "binary": stream and field names

    @property
    def dedupe(self) -> bool:
        """A map holds each field name once: the entry's last value wins."""
        return self.fields == "map"


def _choice(options: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = str(options.get(name, default)).strip().lower()
    if value not in allowed:
        raise ValueError(f"option {name}={value!r}: expected one of {', '.join(allowed)}")
    return value


def _positive(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise ValueError(f"option {name}={raw!r}: expected a positive integer") from None
    if value < 1:
        raise ValueError(f"option {name}={raw!r}: expected a positive integer")
    return value


def _bound(options: Mapping[str, str], name: str, is_end: bool) -> tuple[int, int]:
    raw = options.get(name)
    if raw is None:
        return MAX_ID if is_end else (0, 0)
    try:
        bound = rstore.parse_range_bound(str(raw), is_end=is_end)
    except (rstore.ResponseError, ValueError) as exc:
        raise ValueError(
            f"option {name}={raw!r}: expected a stream ID (ms-seq, ms, -, +, (ms-seq) or a "
            f"time (2026-11-01T10:00Z, 1h) ({exc})"
        ) from None
    return (bound.ms, bound.seq)


def _is_store(path: str) -> bool:
    return os.path.isdir(path) and os.path.exists(os.path.join(path, "data.mdb"))


def _rdb_files(path: str) -> tuple[str, ...]:
    if os.path.isdir(path):
        found = sorted(
            os.path.join(path, name)
            for name in os.listdir(path)
            if name.endswith(".rdb") and os.path.isfile(os.path.join(path, name))
        )
    elif os.path.isfile(path):
        found = [path]
    else:
        found = sorted(p for p in globmod.glob(path) if os.path.isfile(p))
    if not found:
        raise ValueError(
            f"{path}: no rstore store, RDB file, directory of *.rdb files or glob match"
        )
    return tuple(os.path.abspath(p) for p in found)


def read_options(options: Mapping[str, str]) -> ReadOptions:
    """Check and convert the options of a read (see ``docs/spark.md``, "Options")."""
    path = options.get("path")
    if not path:
        raise ValueError('no path: spark.read.format("rstore").load(PATH)')
    path = str(path)
    store = _is_store(path)
    files = () if store else _rdb_files(path)
    streams: tuple[bytes, ...] | None = None
    pattern: bytes | None = None
    raw = options.get("streams")
    if raw:
        names = tuple(n.strip().encode() for n in str(raw).split(",") if n.strip())
        if len(names) == 1 and any(c in names[0] for c in b"*?["):
            pattern = names[0]
        elif names:
            streams = names
    start, end = _bound(options, "start", False), _bound(options, "end", True)
    raw_db = str(options.get("db", "0")).strip()
    if not raw_db.isdigit():
        raise ValueError(f"option db={raw_db!r}: expected a database number (0, 1, ...)")
    return ReadOptions(
        path=os.path.abspath(path),
        kind="store" if store else "rdb",
        files=files,
        streams=streams,
        pattern=pattern,
        start=start,
        end=end,
        db=int(raw_db),
        table=_choice(options, "table", TABLES, "entries"),
        fields=_choice(options, "fields", ("map", "pairs"), "map"),
        values=_choice(options, "values", ("string", "binary"), "string"),
        entries_per_partition=_positive(
            options, "entriesPerPartition", DEFAULT_ENTRIES_PER_PARTITION
        )
        or DEFAULT_ENTRIES_PER_PARTITION,
        num_partitions=_positive(options, "numPartitions", None),
        names=_choice(options, "names", ("string", "binary"), "string"),
    )


def entry_schema(fields: str, values: str, names: str = "string") -> str:
    """The DDL of the entries table; ``names=binary`` makes the stream name and the field
    names ``binary`` too (for names that are not UTF-8 text: Redis keys are binary-safe)."""
    ddl = ENTRY_SCHEMAS[(fields, values)]
    if names == "binary":
        ddl = ddl.replace("stream string", "stream binary").replace("field:string", "field:binary")
        ddl = ddl.replace("map<string,", "map<binary,")
    return ddl


def read_schema(options: Mapping[str, str]) -> str:
    """The DDL schema of what a read gives, from the options alone (no file is opened)."""
    table = _choice(options, "table", TABLES, "entries")
    if table != "entries":
        return TABLE_SCHEMAS[table]
    return entry_schema(
        _choice(options, "fields", ("map", "pairs"), "map"),
        _choice(options, "values", ("string", "binary"), "string"),
        _choice(options, "names", ("string", "binary"), "string"),
    )
