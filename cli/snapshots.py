"""Snapshot commands: ``save``, ``restore``, ``dump``, ``restore-key``.

``save``/``restore`` move whole stores to and from RDB files (Redis's and Valkey's own dump
format); ``dump``/``restore-key`` move one key as a DUMP payload, as the DUMP and RESTORE
commands do.  Offline reading of a dump is in :mod:`rstore_cli.inspecting`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .files import atomic_output, file_errors
from .format import counted, show_path, token
from .jsonout import echo_json
from .params import to_bytes
from .progress import progress_option, progress_reporter

__all__ = ["COMMANDS"]

F = TypeVar("F", bound=Callable[..., Any])


#: Which servers load a file of each RDB version, and what an older version leaves out.
_LOADS_IN = {
    14: "loads in Redis 8.8+ only, with what idempotent production remembers and the entries "
    "XNACK released (--rdb-version 11 for Valkey and older Redis)",
    13: "loads in Redis 8.6+ only, with what idempotent production remembers (entries XNACK "
    "released are written pending to their last consumer)",
    12: "loads in Redis 7.4+ (not Valkey); streams are written as in RDB 11",
    11: "loads in Redis 7.2+ and Valkey 7.2+ (Redis 7.0 needs --rdb-version 10, Redis 5.0-6.2 "
    "--rdb-version 9)",
    10: "loads in Redis 7.0+ and Valkey 7.2+ (consumers' active times are left out: RDB 10 has "
    "none)",
    9: "loads in Redis 5.0+ and Valkey 7.2+ (groups' entries-read and consumers' active times "
    "are left out: RDB 9 has neither)",
}


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _json_report(
    path: str,
    db: int | None,
    rdb_version: int,
    counts: tuple[int, int, int],
    seconds: float,
    *,
    replaced: Sequence[bytes] = (),
    expired: Sequence[bytes] = (),
    ttl_dropped: Sequence[bytes] = (),
    skipped: Mapping[str, int] | None = None,
    other_dbs: Mapping[int, int] | None = None,
    databases: Mapping[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What ``save --json`` and ``restore --json`` print: one shape for both (a save
    replaces, expires, drops and skips nothing).  ``counts``: streams, entries, bytes of the
    file.  ``db`` is None when every database was written or imported; ``databases`` then
    says what per database (:func:`_json_database`)."""
    streams, entries, size = counts
    return {
        "path": path,
        "db": db,
        "rdb-version": rdb_version,
        "streams": streams,
        "entries": entries,
        "bytes": size,
        "seconds": round(seconds, 6),
        "replaced": list(replaced),
        "expired": list(expired),
        "ttl-dropped": list(ttl_dropped),
        "skipped": dict(skipped or {}),
        "other-databases": {str(k): v for k, v in (other_dbs or {}).items()},
        "databases": {str(k): v for k, v in (databases or {}).items()},
    }


def _json_database(
    streams: int,
    entries: int,
    replaced: Sequence[bytes] = (),
    expired: Sequence[bytes] = (),
    ttl_dropped: Sequence[bytes] = (),
    skipped: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One database of a save or a restore of every database, in ``--json``."""
    return {
        "streams": streams,
        "entries": entries,
        "replaced": list(replaced),
        "expired": list(expired),
        "ttl-dropped": list(ttl_dropped),
        "skipped": dict(skipped or {}),
    }


def _names(names: Sequence[bytes]) -> str:
    return ", ".join(n.decode(errors="backslashreplace") for n in names)


def _readable(path: str) -> None:
    """Fail with one line (``Error: cannot read PATH: No such file or directory``) before any
    store is opened or created."""
    with file_errors(path, "read"), open(path, "rb"):
        pass


@click.command("save", short_help="Write the store to an RDB file.")
@click.argument("file", type=click.Path(dir_okay=False, writable=True))
@click.option(
    "--rdb-version",
    type=click.Choice(["9", "10", "11", "12", "13", "14"]),
    default="11",
    show_default=True,
    help="11 loads in Redis 7.2+ and Valkey 7.2+, 10 in Redis 7.0+, 9 in Redis 5.0+; 13 and 14 "
    "(Redis 8.6+, 8.8+) keep idempotency and released entries.",
)
@click.option(
    "--compress/--no-compress",
    default=None,
    help="LZF-compress strings or not (rdbcompression); by default as the store's setting "
    "says (CONFIG SET rdbcompression; on unless changed).",
)
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--db", "dbs", type=click.IntRange(0, 15), multiple=True, metavar="N",
              help="Save only database N (repeatable); by default every database.")  # fmt: skip
@progress_option
@json_option
@pass_opener
def save_command(
    opener: StoreOpener,
    file: str,
    rdb_version: str,
    compress: bool | None,
    force: bool,
    dbs: tuple[int, ...],
    progress: bool | None,
    as_json: bool,
) -> None:
    """Write every stream of every database of the store to FILE, an RDB file that
    redis-server and valkey-server load at start-up (put it in their --dir as dump.rdb).
    Database N is the store in the directory STORE/dbN (SELECT N of rstore serve).

    Each database is one consistent point in time, taken while writers go on; FILE appears
    only when complete (written under a temporary name, flushed, renamed).  An existing FILE
    is left alone unless --force is given.

    \b
    Examples:
      rstore save backup.rdb
      rstore save /var/lib/valkey/dump.rdb --force --rdb-version 11
      rstore save old-redis.rdb --rdb-version 10
      rstore save db3.rdb --db 3
    """
    if os.path.exists(file) and not force:
        raise click.ClickException(f"{show_path(file)} exists; give --force to replace it")
    if opener.db is not None and not dbs:  # `rstore --db 3 save`: that database only
        dbs = (opener.db,)
    with (
        opener._replace(db=None).open(create=False) as store,  # the store, all its databases
        progress_reporter("saving", progress) as report,
        file_errors(file, "write"),
    ):
        result = store.save(
            file, rdb_version=int(rdb_version), compress=compress, progress=report,
            databases=dbs or None,
        )  # fmt: skip
    if as_json:
        counts = (result.streams, result.entries, result.bytes)
        per_db = {db: _json_database(*saved) for db, saved in result.databases.items()}
        db = dbs[0] if len(set(dbs)) == 1 else None
        echo_json(
            _json_report(
                result.path, db, result.rdb_version, counts, result.seconds, databases=per_db
            )
        )
        return
    click.echo(
        f"saved {counted(result.streams, 'stream')} "
        f"({counted(result.entries, 'entry', 'entries')}) to {show_path(result.path)}: "
        f"RDB {result.rdb_version}, {_mib(result.bytes)}, {result.seconds:.2f} s"
    )
    click.echo(_LOADS_IN[result.rdb_version])
    if set(result.databases) - {0}:
        click.echo(
            "databases: "
            + ", ".join(
                f"db {db}: {counted(d.streams, 'stream')} "
                f"({counted(d.entries, 'entry', 'entries')})"
                for db, d in result.databases.items()
            )
        )


@click.command("restore", short_help="Import the streams of an RDB file.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--db", type=click.IntRange(min=0), default=None,
              help="Which database of the file to import.  [default: 0]")  # fmt: skip
@click.option("--all-databases", is_flag=True,
              help="Import every database N of the file into database N of the store.")  # fmt: skip
@click.option("--replace", is_flag=True, help="Replace streams that already exist.")
@progress_option
@json_option
@pass_opener
def restore_command(
    opener: StoreOpener,
    file: str,
    db: int | None,
    all_databases: bool,
    replace: bool,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Import the streams of database --db of FILE (an RDB file from rstore, Redis 5.0-7.4 or
    Valkey 7.2/8.0) into the store (its database given by the global --db before the command:
    `rstore --db 3 restore FILE`), creating it if needed; with --all-databases, those of
    every database N of FILE into database N of the store (the store STORE/dbN, SELECT N of
    rstore serve).

    All or nothing: a damaged or unsupported file, or a stream that already exists (without
    --replace), leaves the store -- every database of it -- exactly as it was.  Other value
    types are skipped and counted; streams keep no TTL in rstore (reported).

    \b
    Examples:
      rstore --store ./restored restore dump.rdb
      rstore restore dump.rdb --db 3 --replace --json
      rstore restore dump.rdb --all-databases
    """
    if all_databases and db is not None:
        raise click.UsageError("give --db or --all-databases, not both")
    if all_databases and opener.db is not None:
        raise click.UsageError(
            "--all-databases restores into the databases of the same numbers: no global --db"
        )
    _readable(file)  # before the store is created
    with (
        opener.open(create=True) as store,
        progress_reporter("restoring", progress) as report,
        file_errors(file, "read"),
        _restore_errors(),
    ):
        result = store.restore_file(
            file, db=None if all_databases else (db or 0), replace=replace, progress=report
        )
    if result.db is None:
        _report_all(result, as_json)
    else:
        _report_one(result, file, as_json)


@contextlib.contextmanager
def _restore_errors() -> Iterator[None]:
    """A restore refused as one line: a stream that exists (where, and what --replace does),
    or an error the library noted the databases already restored on."""
    try:
        yield
    except rstore.KeyExistsError as exc:
        name = exc.key.decode("utf-8", "backslashreplace")
        where = getattr(exc, "db", None)
        place = "the store" if where is None else f"database {where} of the store"
        raise click.ClickException(
            f"stream {name!r} already exists in {place}; nothing was restored "
            "(add --replace to overwrite it)" + _notes(exc)
        ) from exc
    except rstore.RStoreError as exc:
        if not getattr(exc, "__notes__", None):
            raise
        raise click.ClickException(f"{exc}{_notes(exc)}") from exc


def _report_one(result: Any, file: str, as_json: bool) -> None:
    """The report of a restore of one database of the file; an error when it held no keys
    and other databases do."""
    if not (result.streams or result.skipped or result.expired) and result.other_dbs:
        held = ", ".join(str(d) for d in sorted(result.other_dbs))
        word = "database" if len(result.other_dbs) == 1 else "databases"
        raise click.ClickException(
            f"database {result.db} of {show_path(file)} holds no keys; nothing was restored "
            f"(the file has keys in {word} {held}: choose one with --db, or give "
            "--all-databases)"
        )
    if as_json:
        counts = (len(result.streams), result.entries, result.bytes)
        echo_json(
            _json_report(
                result.path,
                result.db,
                result.rdb_version,
                counts,
                result.seconds,
                replaced=result.replaced,
                expired=result.expired,
                ttl_dropped=result.ttl_dropped,
                skipped=result.skipped,
                other_dbs=result.other_dbs,
            )
        )
        return
    click.echo(
        f"restored {counted(len(result.streams), 'stream')} "
        f"({counted(result.entries, 'entry', 'entries')}) from database {result.db} of "
        f"{show_path(result.path)}: RDB {result.rdb_version}, {_mib(result.bytes)}, "
        f"{result.seconds:.2f} s"
    )
    _notes_of(result, "")
    if result.other_dbs:
        dbs = ", ".join(f"db {d}: {n} keys" for d, n in sorted(result.other_dbs.items()))
        click.echo(f"not imported, other databases: {dbs} (--all-databases imports them)")


def _notes(exc: BaseException) -> str:
    """The notes the library added to an error (which databases a restore already wrote)."""
    notes = getattr(exc, "__notes__", None) or []
    return "".join(f"; {note}" for note in notes)


def _notes_of(result: Any, indent: str) -> None:
    """The lines of a restore report beyond its summary: replaced, expired, TTLs, skipped."""
    if result.replaced:
        click.echo(f"{indent}replaced: {counted(len(result.replaced), 'existing stream')}")
    notes = (
        ("expired (not imported)", result.expired),
        ("TTL dropped (rstore keys never expire)", result.ttl_dropped),
    )
    for what, names in notes:
        if names:
            click.echo(f"{indent}{what}: {_names(names)}")
    if result.skipped:
        kinds = ", ".join(f"{n} {t}" for t, n in sorted(result.skipped.items()))
        click.echo(f"{indent}skipped (not streams): {kinds}")


def _report_all(result: Any, as_json: bool) -> None:
    """The report of ``restore --all-databases``: totals, then each database of the file."""
    if as_json:
        counts = (len(result.streams), result.entries, result.bytes)
        per_db = {
            db: _json_database(
                len(sub.streams), sub.entries, sub.replaced, sub.expired, sub.ttl_dropped,
                sub.skipped,
            )
            for db, sub in result.databases.items()
        }  # fmt: skip
        echo_json(
            _json_report(
                result.path, None, result.rdb_version, counts, result.seconds,
                replaced=result.replaced, expired=result.expired,
                ttl_dropped=result.ttl_dropped, skipped=result.skipped, databases=per_db,
            )
        )  # fmt: skip
        return
    click.echo(
        f"restored {counted(len(result.streams), 'stream')} "
        f"({counted(result.entries, 'entry', 'entries')}) from "
        f"{counted(len(result.databases), 'database')} of {show_path(result.path)}: "
        f"RDB {result.rdb_version}, {_mib(result.bytes)}, {result.seconds:.2f} s"
    )
    for db, sub in result.databases.items():
        click.echo(
            f"db {db}: {counted(len(sub.streams), 'stream')} "
            f"({counted(sub.entries, 'entry', 'entries')})"
        )
        _notes_of(sub, "  ")


@click.command("dump", short_help="Write one stream's DUMP payload.")
@click.argument("stream")
@click.option("--output", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Where to write the payload (- is stdout).")  # fmt: skip
@click.option("--rdb-version", type=click.Choice(["9", "10", "11", "12", "13", "14"]),
              default="11", show_default=True,
              help="10 for Redis 7.0, 9 for Redis 5.0-6.2; 13 and 14 for Redis 8.6+ and 8.8+, "
              "with idempotency and released entries.")  # fmt: skip
@unescape_option
@pass_opener
def dump_command(
    opener: StoreOpener, stream: str, output: str, rdb_version: str, unescape: bool
) -> None:
    """Write the DUMP payload of STREAM (what the DUMP command returns: binary, for RESTORE
    on rstore, redis-server or valkey-server).  Refuses to write binary to a terminal.

    \b
    Examples:
      rstore dump events -o events.dump
      rstore dump events | redis-cli -x RESTORE events 0
    """
    key = to_bytes(stream, unescape, "STREAM")
    with opener.open(create=False) as store:
        payload = store.dump(key, rdb_version=int(rdb_version))
    if payload is None:
        raise click.ClickException(f"no stream {token(key)}")
    if output == "-":
        if sys.stdout.isatty():
            raise click.ClickException("the payload is binary: give --output FILE or a pipe")
        sys.stdout.buffer.write(payload)
    else:
        with atomic_output(output, force=True) as f:
            f.write(payload)


@click.command("restore-key", short_help="Create a stream from a DUMP payload.")
@click.argument("stream")
@click.argument("payload", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--replace", is_flag=True, help="Replace the stream if it exists (REPLACE).")
@click.option("--ttl", type=click.IntRange(min=0), default=0, show_default=True, metavar="MS",
              help="RESTORE's TTL in ms (0: no expiry).  rstore keys never expire, so any "
              "other value is refused, as RESTORE refuses it.")  # fmt: skip
@click.option("--absttl", is_flag=True, help="Read --ttl as a Unix time in ms (ABSTTL).")
@json_option
@unescape_option
@pass_opener
def restore_key_command(
    opener: StoreOpener,
    stream: str,
    payload: str,
    replace: bool,
    ttl: int,
    absttl: bool,
    as_json: bool,
    unescape: bool,
) -> None:
    """Create STREAM from a DUMP payload read from PAYLOAD (a file, or - for stdin), as
    RESTORE STREAM TTL <payload> [REPLACE] [ABSTTL] does, and print OK; payloads from
    Redis 5.0-7.4 and Valkey 7.2/8.0 are accepted.  An existing stream is refused (Valkey's
    BUSYKEY) unless --replace; a damaged payload gets Valkey's error line.

    \b
    Examples:
      rstore restore-key events events.dump
      rstore --store other dump events | rstore restore-key events - --replace
      rstore restore-key events events.dump --replace --json
    """
    key = to_bytes(stream, unescape, "STREAM")
    if payload == "-":
        data = sys.stdin.buffer.read()
    else:
        with file_errors(payload, "read"), open(payload, "rb") as f:  # before the store is made
            data = f.read()
    argv: list[Any] = ["RESTORE", key, ttl, data]
    if replace:
        argv.append("REPLACE")
    if absttl:
        argv.append("ABSTTL")
    with opener.open(create=True) as store:
        reply = store.execute(*argv)
    if as_json:
        echo_json(reply)
    else:
        click.echo(reply)


COMMANDS = [save_command, restore_command, dump_command, restore_key_command]
