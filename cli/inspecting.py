"""``inspect``: what an RDB file (from rstore, Redis or Valkey) or a store holds, without a
server; and :func:`dump_entries`, the entries of one stream read straight from a file (behind
``rstore range --from-dump``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .files import file_errors
from .format import counted, show_path, table_lines, token
from .jsonout import echo_json
from .params import to_bytes
from .progress import progress_option, progress_reporter
from .timefmt import human_time, now_ms

__all__ = ["COMMANDS"]


def _id(value: tuple[int, int] | None) -> str | None:
    return None if value is None else f"{value[0]}-{value[1]}"


def _stream_record(s: rstore.StreamInfo, consumers: bool) -> dict[str, Any]:
    state = s.state
    return {
        "db": s.db,
        "key": s.key,
        "length": state.length,
        "nodes": s.nodes,
        "first-entry-id": _id(s.first_entry_id),
        "last-entry-id": _id(s.last_entry_id),
        "last-generated-id": _id(state.last_id),
        "entries-added": state.entries_added,
        "max-deleted-entry-id": _id(state.max_deleted_entry_id),
        "expire-time": s.expire_ms,
        "bytes": s.bytes,
        "groups": [
            {
                "name": g.state.name,
                "last-delivered-id": _id(g.state.last_id),
                "entries-read": g.entries_read,
                "lag": g.lag,
                "pending": g.state.pel_count,
                "consumers": [
                    {
                        "name": c.state.name,
                        "pending": c.state.pel_count,
                        "seen-time": c.state.seen_time_ms,
                        "active-time": c.state.active_time_ms,
                    }
                    for c in g.consumers
                ]
                if consumers
                else len(g.consumers),
            }
            for g in s.groups
        ],
    }


def _text(value: Any) -> str:
    """A summary value in text output: ``-`` for none (Valkey's nil)."""
    return "-" if value is None else str(value)


def _time(value: int | None, now: int) -> str:
    """A Unix time in ms, for people; -1 is Valkey's "never", None an RDB 10 file that does
    not store it."""
    if value is None:
        return "-"
    return "never" if value == -1 else human_time(value, now)


def _stream_lines(record: dict[str, Any], consumers: bool) -> Iterator[str]:
    now = now_ms()
    where = f" (db {record['db']})" if record["db"] is not None else ""
    size = f", {record['bytes']} bytes" if record["bytes"] is not None else ""
    yield (
        f"stream {token(record['key'])}{where}: length {record['length']}, "
        f"{counted(record['nodes'], 'node')}{size}"
    )
    expires = record["expire-time"]
    yield (
        f"  first {_text(record['first-entry-id'])}, last {_text(record['last-entry-id'])}, "
        f"last generated {record['last-generated-id']}, entries added "
        f"{_text(record['entries-added'])}, max deleted {_text(record['max-deleted-entry-id'])}"
        + (f", expires {_time(expires, now)}" if expires else "")
    )
    for g in record["groups"]:
        n = len(g["consumers"]) if consumers else g["consumers"]
        yield (
            f"  group {token(g['name'])}: last delivered {g['last-delivered-id']}, "
            f"entries read {_text(g['entries-read'])}, lag {_text(g['lag'])}, "
            f"pending {g['pending']}, {counted(n, 'consumer')}"
        )
        if consumers:
            for c in g["consumers"]:
                yield (
                    f"    consumer {token(c['name'])}: pending {c['pending']}, seen "
                    f"{_time(c['seen-time'], now)}, active {_time(c['active-time'], now)}"
                )


def _file_report(path: str, key: bytes | None, progress: bool | None) -> dict[str, Any]:
    with progress_reporter("reading", progress) as report, file_errors(path, "read"):
        summary = rstore.inspect_rdb(path, key=key, progress=report)
    return {
        "path": path,
        "bytes": summary.size,
        "rdb-version": summary.rdb_version,
        "checksum": "verified" if summary.checksum_verified else "not stored (all zero)",
        "aux": {k.decode(errors="backslashreplace"): v for k, v in summary.aux.items()},
        "functions": summary.functions,
        "module-aux": summary.module_aux,
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


def _by_name(info: rstore.StreamInfo) -> bytes:
    return info.key


def _store_report(
    opener: StoreOpener, path: str, key: bytes | None, progress: bool | None
) -> dict[str, Any]:
    """What a store holds: its format, and per database (each on disk, or ``--db`` alone)
    its streams, in the shape of a file's report (``bytes`` unknown: ``None``).  The store is
    opened as every command opens it (read-only when it cannot be written now)."""
    db = opener.db
    with (
        opener._replace(path=path, db=None).open(create=False) as store,
        progress_reporter("reading", progress) as callback,
    ):
        numbers = store.databases() if db is None else [db]
        if db is not None and db not in store.databases():
            raise click.ClickException(f"no database {db} in the store at {show_path(path)}")
        records: list[dict[str, Any]] = []
        databases: dict[str, Any] = {}
        for n in numbers:
            streams = sorted(store.database(n).inspect(key, progress=callback), key=_by_name)
            for s in streams:
                records.append({**_stream_record(s, key is not None), "db": n, "bytes": None})
            elements = sum(s.state.length for s in streams)
            kinds = {"keys": len(streams), "bytes": None, "elements": elements, "expiring": 0}
            databases[str(n)] = {"stream": kinds}
        form, logged = store.format, store.wal
    return {"path": path, "format": form, "wal": logged, "databases": databases,
            "streams": records}  # fmt: skip


def _store_lines(report: dict[str, Any]) -> Iterator[str]:
    described = f"format {report['format']}" + (" (write-ahead log)" if report["wal"] else "")
    databases = report["databases"]
    yield (
        f"{show_path(report['path'])}: store in {described}, "
        f"{counted(len(databases), 'database')}, {counted(len(report['streams']), 'stream')}"
    )
    for db, kinds in databases.items():
        streams = kinds["stream"]
        yield (
            f"db {db}: {counted(streams['keys'], 'stream')}, "
            f"{counted(streams['elements'], 'entry', 'entries')}"
        )


def _file_lines(report: dict[str, Any]) -> Iterator[str]:
    aux = " ".join(f"{k}={token(v)}" for k, v in report["aux"].items())
    where = show_path(report["path"])
    yield f"{where}: {report['bytes']} bytes, RDB version {report['rdb-version']}"
    yield f"checksum {report['checksum']}" + (f"; {aux}" if aux else "")
    if report["functions"] or report["module-aux"]:
        yield f"functions: {report['functions']}, module data: {report['module-aux']}"
    for db, types in report["databases"].items():
        total = sum(t["keys"] for t in types.values())
        yield f"db {db}: {counted(total, 'key')}"
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
    opener.note_deprecated()
    raw_key = None if key is None else to_bytes(key, unescape, "--key")
    path = opener.store_path if target is None else target
    if target is None or os.path.isdir(path):
        report = _store_report(opener, path, raw_key, progress)
        if raw_key is not None and not report["streams"]:
            raise click.ClickException(f"no stream {token(raw_key)} in {show_path(path)}")
        if as_json:
            echo_json(report)
            return
        for line in _store_lines(report):
            click.echo(line)
    else:
        report = _file_report(path, raw_key, progress)
        if raw_key is not None and not report["streams"]:
            raise click.ClickException(f"{show_path(path)} has no stream {token(raw_key)}")
        if as_json:
            echo_json(report)
            return
        for line in _file_lines(report):
            click.echo(line)
    for record in report["streams"]:
        for line in _stream_lines(record, raw_key is not None):
            click.echo(line)


COMMANDS = [inspect_command]
