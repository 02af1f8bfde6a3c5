"""``rstore check`` (verify the store's files, checksums and counters), ``rstore upgrade``
(rewrite a store of an older on-disk format) and ``rstore compact`` (give the space of deleted
data back to the file system)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener
from .format import counted
from .jsonout import echo_json
from .progress import progress_option, progress_reporter

if TYPE_CHECKING:
    from rstore import CompactReport

__all__ = ["COMMANDS"]


@click.command("check", short_help="Verify the store's integrity.")
@json_option
@pass_opener
def check_command(opener: StoreOpener, as_json: bool) -> None:
    """Verify the whole store (rstore.check_store): LMDB's structure walked from the file,
    every record's checksum, every stream node's structure and every stored counter --
    stream lengths, node counts, first IDs, the groups' pending and consumer counts and both
    indexes of their pending lists.  It only reads, on one consistent snapshot, so it may run
    while other processes use the store; it also answers for a store too damaged to open,
    naming each damaged page with its sub-database and the streams it held.

    Prints OK (exit status 0), or each problem found on its own line followed by a one-line
    error on stderr (exit status 1).  --json prints {"ok": true|false, "problems": [...]}.

    \b
    Examples:
      rstore check
      rstore check --json
      rstore --store /var/lib/queue check
    """
    opener.note_deprecated()
    problems = rstore.check_store(rstore.database_path(opener.store_path, opener.db or 0))
    if as_json:
        echo_json({"ok": not problems, "problems": problems})
    elif not problems:
        click.echo("OK")
    else:
        for problem in problems:
            click.echo(" ".join(problem.split()))
    if problems:
        click.echo(f"Error: the store has {counted(len(problems), 'problem')}", err=True)
        raise click.exceptions.Exit(1)


@click.command("upgrade", short_help="Bring a store of an older format to the current one.")
@json_option
@pass_opener
def upgrade_command(opener: StoreOpener, as_json: bool) -> None:
    """Bring the store to the current on-disk format, format 4: a write-ahead log, a
    checksum on every record, and streams that count their bytes.  Every command that may
    write a store does this when it first opens it; this one does only that, for every
    database of the store (or --db N alone).  A format-3 store only records the new format (a
    stream counts its bytes when first asked); a format-2 store gets its log; a format-1 store
    also has every record rewritten with its checksum.  Either way in one step: a crash
    leaves the store as it was or upgraded.  Formats 1 and 2 need the store to itself (an
    older rstore may be writing it): other processes must close it first.  A current store is
    left as it is.

    \b
    Examples:
      rstore upgrade --json
      rstore upgrade --store /var/lib/queue
    """
    opener.note_deprecated()
    if opener.readonly:
        raise click.UsageError("upgrade rewrites the store: it cannot run with --read-only")
    numbers = [opener.db] if opener.db is not None else _databases(opener.store_path)
    done = []
    with progress_reporter("upgrading", None) as report:
        for n in numbers:
            path = rstore.database_path(opener.store_path, n)
            before = _format_of(path)
            done.append((n, before, rstore.upgrade_store(path, progress=report)))
    upgraded = [(n, b, r) for n, b, r in done if b is not None and b < rstore.FORMAT_VERSION]
    if as_json:
        echo_json({
            "upgraded": bool(upgraded), "format": rstore.FORMAT_VERSION,
            "format_before": done[0][1], "records": sum(r for _, _, r in done),
            "databases": [{"db": n, "format_before": b, "records": r} for n, b, r in done],
        })  # fmt: skip
        return
    for n, before, records in upgraded:
        where = f"database {n}: " if len(done) > 1 else ""
        rewritten = f"; {counted(records, 'record')} rewritten with checksums" if records else ""
        click.echo(f"{where}upgraded from format {before} to {rstore.FORMAT_VERSION}{rewritten}")
    if not upgraded:
        click.echo("already current: nothing to do")


def _databases(path: str) -> list[int]:
    """Database 0 and every other database the store has on disk (0 alone when a read-only
    look cannot tell: its upgrade then says what is wrong)."""
    try:
        with rstore.Store(path, readonly=True, create=False) as store:
            return store.databases()
    except rstore.RStoreError:
        return [0]


def _format_of(path: str) -> int | None:
    """The store's format before the upgrade (``None`` when a read-only look cannot tell:
    the upgrade then says what is wrong)."""
    try:
        with rstore.Store(path, readonly=True, create=False) as store:
            return store.format
    except rstore.RStoreError:
        return None


@click.command("compact", short_help="Give the space of deleted data back to the disk.")
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="When other processes have the store open, wait up to SECONDS for them to close it "
    "(default: fail at once, naming them).",
)
@progress_option
@json_option
@pass_opener
def compact_command(
    opener: StoreOpener, wait_s: float, progress: bool | None, as_json: bool
) -> None:
    """Rewrite the store's files with only the pages in use (rstore.compact_store): LMDB
    reuses the pages that deleted and trimmed entries leave, but never shrinks data.mdb, and
    the write-ahead log keeps its size too.  Every database of the store is compacted
    (<store>/db<N> too); nothing else changes.  Safe against a crash or power loss at any
    point: the store is then the old one or the compacted one.

    It needs the store to itself: when other processes have it open it fails at once, naming
    them and changing nothing (--wait SECONDS waits for them instead); processes that open the
    store meanwhile wait until it is done.  The disk needs room for the copy (about the size of
    the live data).  Prints each database's sizes before and after; a progress bar on a
    terminal.

    \b
    Examples:
      rstore compact
      rstore compact --wait 30 --json
      rstore --store /var/lib/queue compact
    """
    opener.note_deprecated()
    if opener.readonly:
        raise click.UsageError("compact rewrites the store's files: it cannot run with --read-only")
    if opener.db is not None:
        raise click.UsageError("compact compacts every database of the store: no --db")
    with progress_reporter("compacting", progress) as report:
        done = rstore.compact_store(opener.store_path, wait=wait_s, progress=report)
    if as_json:
        echo_json(_compact_json(opener.store_path, done))
        return
    for db in done.databases:
        line = f"db{db.db}: data.mdb {_size(db.bytes_before)} -> {_size(db.bytes_after)} "
        line += f"({db.pages_before} -> {db.pages_after} pages)"
        if db.log_bytes_before:
            line += f", wal.log {_size(db.log_bytes_before)} -> {_size(db.log_bytes_after)}"
        click.echo(line)
    click.echo(
        f"compacted: {_size(done.bytes_before)} -> {_size(done.bytes_after)} "
        f"in {done.seconds:.2f} s"
    )


def _compact_json(path: str, done: CompactReport) -> dict[str, Any]:
    return {
        "path": path,
        "bytes-before": done.bytes_before,
        "bytes-after": done.bytes_after,
        "seconds": round(done.seconds, 6),
        "databases": [
            {
                "db": db.db,
                "path": db.path,
                "format": db.format,
                "bytes-before": db.bytes_before,
                "bytes-after": db.bytes_after,
                "pages-before": db.pages_before,
                "pages-after": db.pages_after,
                "log-bytes-before": db.log_bytes_before,
                "log-bytes-after": db.log_bytes_after,
            }
            for db in done.databases
        ],
    }


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


COMMANDS: list[click.Command] = [check_command, upgrade_command, compact_command]
