"""rstore: a durable, embedded log store with Redis Streams semantics, on LMDB.

>>> import rstore
>>> store = rstore.Store("rstore-data")          # doctest: +SKIP
>>> store.xadd("events", {"user": "42"})         # doctest: +SKIP
b'1732191234567-0'

The public names are imported on first use (PEP 562): ``import rstore`` itself costs almost
nothing, ``rstore.Store`` loads the store and its commands, ``rstore.Consumer`` the worker, and
so on.  ``from rstore import Store`` and ``rstore.Store`` behave as if everything had been
imported up front.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from rstore.version import REDIS_VERSION, __version__

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from rstore.atomic_files import atomic_file
    from rstore.codec.columns import Columns
    from rstore.codec.node_validate import NodeFacts, node_facts
    from rstore.commands.listing import command_table
    from rstore.commands.reply import (
        NIL_ARRAY,
        HistoryReads,
        RespReply,
        StreamedEntries,
        StreamedReads,
    )
    from rstore.commands.serving import BlockedCall, BlockWatch
    from rstore.databases import database_path
    from rstore.errors import (
        CorruptDataError,
        CorruptRDBError,
        CorruptStoreError,
        DataError,
        DiskFullError,
        InconsistentSnapshotError,
        KeyExistsError,
        NotAStoreError,
        ReadOnlyStoreError,
        ResponseError,
        RStoreError,
        StorageError,
        StoreClosedError,
        StoreInUseError,
        StoreNotFoundError,
        UnsupportedFormatError,
        UnsupportedRDBError,
    )
    from rstore.glob import key_matches
    from rstore.ids import (
        StreamID,
        parse_duration_ms,
        parse_range_bound,
        parse_time_ms,
        parse_xadd_id,
    )
    from rstore.interrupts import HeldInterrupts
    from rstore.model import (
        AppendReport,
        ConsumerInfo,
        GroupInfo,
        IdempotencyInfo,
        NodeSpan,
        Retention,
        StoreUsage,
        StreamInfo,
        StreamState,
    )
    from rstore.monitor.health import (
        GroupHealth,
        GroupRates,
        HealthSample,
        HealthSource,
        StreamHealth,
        StreamRates,
        health_rates,
        sample_health,
        server_health_source,
        store_health_source,
    )
    from rstore.monitor.metrics import metrics_text, serve_metrics
    from rstore.monitor.report import ReportSummary, write_report
    from rstore.numbers import parse_size
    from rstore.pipeline import Pipeline
    from rstore.queue.consumer import Consumer, Message
    from rstore.ranges import iter_range, iter_range_pages
    from rstore.replay.bookmarks import load_bookmark_file, read_bookmark
    from rstore.replay.engine import (
        ReplayConflict,
        ReplayReport,
        StreamPlan,
        StreamTally,
        check_conflicts,
        plan_replay,
        run_replay,
    )
    from rstore.replay.envelope import (
        ColumnRun,
        EnvelopeError,
        ReplayEntry,
        decode_blocks,
        decode_entry,
        decode_lines,
        encode_columns,
        encode_entry,
    )
    from rstore.replay.follow import follow_store
    from rstore.replay.groups import GroupsReport, copy_groups, groups_of_rdb, groups_of_store
    from rstore.replay.pacing import Pacer, PaceSchedule, parse_duration, parse_rate, parse_speed
    from rstore.replay.remote import entries_from_url
    from rstore.replay.sinks import LinesSink, Sink, SinkError, StoreSink, UrlSink
    from rstore.replay.sources import (
        NodeRun,
        SelectionError,
        batches_from_rdb,
        batches_from_store,
        entries_from_columns,
        entries_from_jsonl,
        entries_from_rdb,
        entries_from_store,
        field_filter,
        jsonl_blocks,
        runs_from_jsonl,
        runs_from_rdb,
        runs_from_store,
        select_streams,
    )
    from rstore.snapshot.inspection import (
        RDBSummary,
        inspect_rdb,
        read_rdb_entries,
        read_rdb_range,
    )
    from rstore.snapshot.rdb_index import RDBStream, index_rdb, read_rdb_nodes, read_rdb_streams
    from rstore.snapshot.salvage import SalvageReport, salvage_store
    from rstore.storage.compaction.compact import CompactedDatabase, CompactReport, compact_store
    from rstore.store import DEFAULT_PATH, FORMAT_VERSION, Store, check_store, upgrade_store
    from rstore.streams.columns import iter_columns
    from rstore.streams.node_build import BuiltNode, NodeBuilder
    from rstore.streams.salvage import LostRange, StreamSalvage
    from rstore.streams.view import StoreView

#: Each public name and the module that defines it.
_LAZY: dict[str, str] = {
    "NIL_ARRAY": "rstore.commands.reply",
    "HistoryReads": "rstore.commands.reply",
    "RespReply": "rstore.commands.reply",
    "StreamedEntries": "rstore.commands.reply",
    "StreamedReads": "rstore.commands.reply",
    "atomic_file": "rstore.atomic_files",
    "command_table": "rstore.commands.listing",
    "BlockedCall": "rstore.commands.serving",
    "BlockWatch": "rstore.commands.serving",
    "database_path": "rstore.databases",
    **dict.fromkeys(
        (
            "CorruptDataError",
            "CorruptRDBError",
            "CorruptStoreError",
            "DataError",
            "DiskFullError",
            "InconsistentSnapshotError",
            "KeyExistsError",
            "NotAStoreError",
            "ReadOnlyStoreError",
            "RStoreError",
            "ResponseError",
            "StorageError",
            "StoreClosedError",
            "StoreInUseError",
            "StoreNotFoundError",
            "UnsupportedFormatError",
            "UnsupportedRDBError",
        ),
        "rstore.errors",
    ),
    "StreamID": "rstore.ids",
    "HeldInterrupts": "rstore.interrupts",
    "key_matches": "rstore.glob",
    "parse_duration_ms": "rstore.ids",
    "parse_range_bound": "rstore.ids",
    "parse_time_ms": "rstore.ids",
    "parse_xadd_id": "rstore.ids",
    "parse_size": "rstore.numbers",
    "RDBSummary": "rstore.snapshot.inspection",
    "StreamInfo": "rstore.model",
    "IdempotencyInfo": "rstore.model",
    "Retention": "rstore.model",
    "StreamState": "rstore.model",
    "NodeSpan": "rstore.model",
    "Columns": "rstore.codec.columns",
    "NodeFacts": "rstore.codec.node_validate",
    "node_facts": "rstore.codec.node_validate",
    "iter_columns": "rstore.streams.columns",
    "BuiltNode": "rstore.streams.node_build",
    "NodeBuilder": "rstore.streams.node_build",
    "StoreView": "rstore.streams.view",
    "RDBStream": "rstore.snapshot.rdb_index",
    "index_rdb": "rstore.snapshot.rdb_index",
    "read_rdb_nodes": "rstore.snapshot.rdb_index",
    "read_rdb_streams": "rstore.snapshot.rdb_index",
    "SalvageReport": "rstore.snapshot.salvage",
    "salvage_store": "rstore.snapshot.salvage",
    "LostRange": "rstore.streams.salvage",
    "StreamSalvage": "rstore.streams.salvage",
    "GroupInfo": "rstore.model",
    "AppendReport": "rstore.model",
    "ConsumerInfo": "rstore.model",
    "inspect_rdb": "rstore.snapshot.inspection",
    "StoreUsage": "rstore.model",
    **dict.fromkeys(
        (
            "GroupHealth",
            "GroupRates",
            "HealthSample",
            "HealthSource",
            "StreamHealth",
            "StreamRates",
            "health_rates",
            "sample_health",
            "server_health_source",
            "store_health_source",
        ),
        "rstore.monitor.health",
    ),
    "metrics_text": "rstore.monitor.metrics",
    "serve_metrics": "rstore.monitor.metrics",
    "ReportSummary": "rstore.monitor.report",
    "write_report": "rstore.monitor.report",
    "read_rdb_entries": "rstore.snapshot.inspection",
    "read_rdb_range": "rstore.snapshot.inspection",
    "Pipeline": "rstore.pipeline",
    "iter_range": "rstore.ranges",
    "iter_range_pages": "rstore.ranges",
    "DEFAULT_PATH": "rstore.store",
    "FORMAT_VERSION": "rstore.store",
    "Store": "rstore.store",
    "check_store": "rstore.store",
    "compact_store": "rstore.storage.compaction.compact",
    "CompactReport": "rstore.storage.compaction.compact",
    "CompactedDatabase": "rstore.storage.compaction.compact",
    "upgrade_store": "rstore.store",
    "Consumer": "rstore.queue.consumer",
    "Message": "rstore.queue.consumer",
    **dict.fromkeys(
        (
            "ColumnRun",
            "EnvelopeError",
            "ReplayEntry",
            "decode_blocks",
            "decode_entry",
            "decode_lines",
            "encode_columns",
            "encode_entry",
        ),
        "rstore.replay.envelope",
    ),
    **dict.fromkeys(
        ("PaceSchedule", "Pacer", "parse_duration", "parse_rate", "parse_speed"),
        "rstore.replay.pacing",
    ),
    "entries_from_url": "rstore.replay.remote",
    "follow_store": "rstore.replay.follow",
    **dict.fromkeys(
        ("GroupsReport", "copy_groups", "groups_of_rdb", "groups_of_store"), "rstore.replay.groups"
    ),
    **dict.fromkeys(
        (
            "ReplayConflict",
            "ReplayReport",
            "StreamPlan",
            "StreamTally",
            "check_conflicts",
            "plan_replay",
            "run_replay",
        ),
        "rstore.replay.engine",
    ),
    **dict.fromkeys(("load_bookmark_file", "read_bookmark"), "rstore.replay.bookmarks"),
    **dict.fromkeys(
        ("LinesSink", "Sink", "SinkError", "StoreSink", "UrlSink"), "rstore.replay.sinks"
    ),
    **dict.fromkeys(
        (
            "NodeRun",
            "SelectionError",
            "batches_from_rdb",
            "runs_from_rdb",
            "runs_from_store",
            "batches_from_store",
            "entries_from_columns",
            "entries_from_jsonl",
            "entries_from_rdb",
            "entries_from_store",
            "field_filter",
            "jsonl_blocks",
            "runs_from_jsonl",
            "select_streams",
        ),
        "rstore.replay.sources",
    ),
}

__all__ = [
    "DEFAULT_PATH",
    "FORMAT_VERSION",
    "NIL_ARRAY",
    "REDIS_VERSION",
    "AppendReport",
    "BlockWatch",
    "BlockedCall",
    "BuiltNode",
    "ColumnRun",
    "Columns",
    "CompactReport",
    "CompactedDatabase",
    "Consumer",
    "ConsumerInfo",
    "CorruptDataError",
    "CorruptRDBError",
    "CorruptStoreError",
    "DataError",
    "DiskFullError",
    "EnvelopeError",
    "GroupHealth",
    "GroupInfo",
    "GroupRates",
    "GroupsReport",
    "HealthSample",
    "HealthSource",
    "HeldInterrupts",
    "HistoryReads",
    "IdempotencyInfo",
    "InconsistentSnapshotError",
    "KeyExistsError",
    "LinesSink",
    "LostRange",
    "Message",
    "NodeBuilder",
    "NodeFacts",
    "NodeRun",
    "NodeSpan",
    "NotAStoreError",
    "PaceSchedule",
    "Pacer",
    "Pipeline",
    "RDBStream",
    "RDBSummary",
    "RStoreError",
    "ReadOnlyStoreError",
    "ReplayConflict",
    "ReplayEntry",
    "ReplayReport",
    "ReportSummary",
    "RespReply",
    "ResponseError",
    "Retention",
    "SalvageReport",
    "SelectionError",
    "Sink",
    "SinkError",
    "StorageError",
    "Store",
    "StoreClosedError",
    "StoreInUseError",
    "StoreNotFoundError",
    "StoreSink",
    "StoreUsage",
    "StoreView",
    "StreamHealth",
    "StreamID",
    "StreamInfo",
    "StreamPlan",
    "StreamRates",
    "StreamSalvage",
    "StreamState",
    "StreamTally",
    "StreamedEntries",
    "StreamedReads",
    "UnsupportedFormatError",
    "UnsupportedRDBError",
    "UrlSink",
    "__version__",
    "atomic_file",
    "batches_from_rdb",
    "batches_from_store",
    "check_conflicts",
    "check_store",
    "command_table",
    "compact_store",
    "copy_groups",
    "database_path",
    "decode_blocks",
    "decode_entry",
    "decode_lines",
    "encode_columns",
    "encode_entry",
    "entries_from_columns",
    "entries_from_jsonl",
    "entries_from_rdb",
    "entries_from_store",
    "entries_from_url",
    "field_filter",
    "follow_store",
    "groups_of_rdb",
    "groups_of_store",
    "health_rates",
    "index_rdb",
    "inspect_rdb",
    "iter_columns",
    "iter_range",
    "iter_range_pages",
    "jsonl_blocks",
    "key_matches",
    "load_bookmark_file",
    "metrics_text",
    "node_facts",
    "parse_duration",
    "parse_duration_ms",
    "parse_range_bound",
    "parse_rate",
    "parse_size",
    "parse_speed",
    "parse_time_ms",
    "parse_xadd_id",
    "plan_replay",
    "read_bookmark",
    "read_rdb_entries",
    "read_rdb_nodes",
    "read_rdb_range",
    "read_rdb_streams",
    "run_replay",
    "runs_from_jsonl",
    "runs_from_rdb",
    "runs_from_store",
    "salvage_store",
    "sample_health",
    "select_streams",
    "serve_metrics",
    "server_health_source",
    "store_health_source",
    "upgrade_store",
    "write_report",
]


#: Public names renamed, old -> new: the old name gives the new one's object, with a
#: DeprecationWarning, for one release (DEVELOPERS.md, "Renaming a public name").
_RENAMED: dict[str, str] = {
    "load_checkpoint_file": "load_bookmark_file",
    "read_checkpoint": "read_bookmark",
}


def __getattr__(name: str) -> Any:
    """Import the module behind a public name on first use, and keep the name here."""
    if name in _RENAMED:  # never kept here, so that each use warns
        new = _RENAMED[name]
        warnings.warn(
            f"rstore.{name} is deprecated, use rstore.{new} (the same)",
            DeprecationWarning,
            stacklevel=2,
        )
        return __getattr__(new)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
