"""``inspect``: what an RDB file (from rstore, Redis or Valkey) or a store holds, without a
server; and :func:`dump_entries`, the entries of one stream read straight from a file (behind
``rstore range --from-dump``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import click

import rstore

from .args import to_bytes
from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import table_lines, token
from .jsonout import echo_json
from .replies import Entry
from .snapshots import progress_option, progress_reporter

__all__ = ["COMMANDS", "dump_entries"]


def _id(value: tuple[int, int] | None) -> str | None:
    return None if value is None else f"{value[0]}-{value[1]}"


def dump_entries(
    path: str, key: bytes, start: bytes, end: bytes, count: int | None, rev: bool, db: int
) -> list[Entry]:
    """The entries of stream ``key`` of database ``db`` of the RDB file ``path``, as ``rstore
    range`` would print them from a store; a clear error if the file has no such stream."""
    # read_rdb_range's count 0 means "all"; range's --count 0 means none (XRANGE COUNT 0).
    # The file is still read then, so that a missing stream or a damaged file is reported.
    limit = 1 if count == 0 else count or 0
    found = rstore.read_rdb_entries(path, key, start, end, limit, db=db, reverse=rev)
    if found is None:
        raise click.ClickException(
            f"{path} has no stream {key.decode(errors='backslashreplace')!r} in database {db}"
        )
    if count == 0:
        return []
    return [Entry(i, tuple(zip(fv[0::2], fv[1::2]))) for i, fv in found]


def _stream_record(s: rstore.StreamSummary, consumers: bool) -> dict[str, Any]:
    return {
        "db": s.db,
        "key": s.key,
        "length": s.length,
        "nodes": s.nodes,
        "first_entry_id": _id(s.first_entry_id),
        "last_entry_id": _id(s.last_entry_id),
        "last_generated_id": _id(s.last_generated_id),
        "entries_added": s.entries_added,
        "max_deleted_entry_id": _id(s.max_deleted_entry_id),
        "expire_ms": s.expire_ms,
        "bytes": s.bytes,
        "groups": [
            {
                "name": g.name,
                "last_delivered_id": _id(g.last_delivered_id),
                "entries_read": g.entries_read,
                "lag": g.lag,
                "pending": g.pending,
                "consumers": [
                    {
                        "name": c.name,
                        "pending": c.pending,
                        "seen_time_ms": c.seen_time_ms,
                        "active_time_ms": c.active_time_ms,
                    }
                    for c in g.consumers
                ]
                if consumers
                else len(g.consumers),
            }
            for g in s.groups
        ],
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _text(value: Any) -> str:
    """A summary value in text output: ``-`` for none (Valkey's nil)."""
    return "-" if value is None else str(value)


def _ms(value: int | None) -> str:
    """A Unix time in ms; -1 is Valkey's "never", None an RDB 10 file that does not store it."""
    return {None: "-", -1: "never"}.get(value, f"{value} ms")


def _stream_lines(record: dict[str, Any], consumers: bool) -> Iterator[str]:
    where = f" (db {record['db']})" if record["db"] is not None else ""
    size = f", {record['bytes']} bytes" if record["db"] is not None else ""
    yield (
        f"stream {token(record['key'])}{where}: length {record['length']}, "
        f"{_count(record['nodes'], 'node')}{size}"
    )
    yield (
        f"  first {_text(record['first_entry_id'])}, last {_text(record['last_entry_id'])}, "
        f"last generated {record['last_generated_id']}, entries added "
        f"{_text(record['entries_added'])}, max deleted {_text(record['max_deleted_entry_id'])}"
        + (f", expires at {record['expire_ms']} ms" if record["expire_ms"] else "")
    )
    for g in record["groups"]:
        n = len(g["consumers"]) if consumers else g["consumers"]
        yield (
            f"  group {token(g['name'])}: last delivered {g['last_delivered_id']}, "
            f"entries read {_text(g['entries_read'])}, lag {_text(g['lag'])}, "
            f"pending {g['pending']}, {_count(n, 'consumer')}"
        )
        if consumers:
            for c in g["consumers"]:
                yield (
                    f"    consumer {token(c['name'])}: pending {c['pending']}, seen "
                    f"{_ms(c['seen_time_ms'])}, active {_ms(c['active_time_ms'])}"
                )


def _file_report(path: str, key: bytes | None, progress: bool | None) -> dict[str, Any]:
    with progress_reporter("reading", progress) as report:
        summary = rstore.inspect_rdb(path, key=key, progress=report)
    return {
        "path": path,
        "bytes": summary.size,
        "rdb_version": summary.rdb_version,
        "checksum": "verified" if summary.checksum_verified else "not stored (all zero)",
        "aux": {k.decode(errors="backslashreplace"): v for k, v in summary.aux.items()},
        "functions": summary.functions,
        "module_aux": summary.module_aux,
        "databases": {
            str(db): {
                kind: {
                    "keys": t.keys,
                    "bytes": t.bytes,
                    "elements": t.elements,
                    "expiring": t.expiring,
                }
                for kind, t in sorted(types.items())
            }
            for db, types in sorted(summary.databases.items())
        },
        "streams": [_stream_record(s, key is not None) for s in summary.streams],
    }


def _file_lines(report: dict[str, Any]) -> Iterator[str]:
    aux = " ".join(f"{k}={token(v)}" for k, v in report["aux"].items())
    yield f"{report['path']}: {report['bytes']} bytes, RDB version {report['rdb_version']}"
    yield f"checksum {report['checksum']}" + (f"; {aux}" if aux else "")
    if report["functions"] or report["module_aux"]:
        yield f"functions: {report['functions']}, module data: {report['module_aux']}"
    for db, types in report["databases"].items():
        total = sum(t["keys"] for t in types.values())
        yield f"db {db}: {_count(total, 'key')}"
        rows = [[k, t["keys"], t["bytes"], t["elements"], t["expiring"]] for k, t in types.items()]
        for line in table_lines(["type", "keys", "bytes", "elements", "expiring"], rows):
            yield f"  {line}"


@click.command("inspect", short_help="Summarise an RDB file or a store, without a server.")
@click.argument("target", required=False, type=click.Path())
@click.option("--key", help="Only this stream, in depth (with its consumers).")
@progress_option
@json_option
@unescape_option
@pass_opener
def inspect_command(
    opener: StoreOpener,
    target: str | None,
    key: str | None,
    progress: bool | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Summarise TARGET: an RDB file (from rstore, Redis 5.0-7.4 or Valkey 7.2/8.0) or a store
    directory (default: the --store store).

    For a file: its RDB version, checksum, aux fields, and per database the keys, bytes,
    elements and keys with a TTL of each type.  For every stream, in a file or a store: length,
    nodes, first and last IDs, entries added, max deleted ID, and its groups with their last
    delivered ID, entries read, lag, pending count and consumers.  The file is read in
    constant memory and checked as it is read (damage is reported with its byte offset).

    \b
    Examples:
      rstore inspect dump.rdb
      rstore inspect dump.rdb --key events --json | jq '.streams[0].groups'
      rstore --store ./data inspect
    """
    raw_key = None if key is None else to_bytes(key, unescape, "--key")
    path = opener.path if target is None else target
    if target is None or os.path.isdir(path):
        with (
            rstore.Store(path, create=False) as store,
            progress_reporter("reading", progress) as callback,
        ):
            streams = store.inspect(raw_key, progress=callback)
        records = [_stream_record(s, raw_key is not None) for s in streams]
        for record in records:  # a store has one keyspace, and no file bytes to count
            record["db"] = record["bytes"] = None
        report: dict[str, Any] = {"path": path, "streams": records}
        if raw_key is not None and not records:
            raise click.ClickException(f"no stream {key!r} in {path}")
        if as_json:
            echo_json(report)
            return
        click.echo(f"{path}: store, {_count(len(records), 'stream')}")
    else:
        report = _file_report(path, raw_key, progress)
        if raw_key is not None and not report["streams"]:
            raise click.ClickException(f"{path} has no stream {key!r}")
        if as_json:
            echo_json(report)
            return
        for line in _file_lines(report):
            click.echo(line)
    for record in report["streams"]:
        for line in _stream_lines(record, raw_key is not None):
            click.echo(line)


COMMANDS = [inspect_command]
