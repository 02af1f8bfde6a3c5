"""``rstore range``: a stream's entries, from the store or straight from an RDB file.

Entries are read page by page (:func:`rstore.iter_range`, pages sized by bytes) and written as
they come by :class:`~rstore_cli.output.EntryWriter`, so a long range starts printing at once
and memory holds one page -- one entry when entries are huge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .files import file_errors
from .format import show_path, token
from .jsonout import entry_json
from .output import EntryWriter, RawEntry
from .params import range_bound, to_bytes

__all__ = ["COMMANDS", "RANGE_PAGE", "dump_entries"]

#: ``range`` reads at most this many entries per call (fewer when they are large).
RANGE_PAGE = 1000


def dump_entries(
    path: str, key: bytes, start: bytes, end: bytes, count: int | None, rev: bool, db: int
) -> list[RawEntry]:
    """The entries of stream ``key`` of database ``db`` of the RDB file ``path``, as ``rstore
    range`` would print them from a store; a clear error if the file has no such stream."""
    # read_rdb_entries' count 0 means "all"; range's --count 0 means none (XRANGE COUNT 0).
    # The file is still read then, so that a missing stream or a damaged file is reported.
    limit = 1 if count == 0 else count or 0
    with file_errors(path, "read"):
        found = rstore.read_rdb_entries(path, key, start, end, limit, db=db, reverse=rev)
    if found is None:
        raise click.ClickException(f"{show_path(path)} has no stream {token(key)} in database {db}")
    return [] if count == 0 else list(found)


@click.command("range", short_help="Print a stream's entries.")
@click.argument("stream")
@click.argument("start", required=False)
@click.argument("end", required=False)
@click.option(
    "--since", metavar="TIME|ID", help="The same as START: e.g. 1h, 2026-11-01T10:00, an ID."
)
@click.option("--until", metavar="TIME|ID", help="The same as END.")
@click.option("--count", type=click.IntRange(min=0), metavar="N", help="Print at most N entries.")
@click.option(
    "--rev", is_flag=True, help="Newest first: from END down to START (same range, reversed)."
)
@json_option
@click.option(
    "--nl", "as_nl", is_flag=True, help="Print newline-delimited JSON: one entry object a line."
)
@click.option(
    "--from-dump",
    "dump_file",
    type=click.Path(dir_okay=False),
    help="Read the entries from this RDB file instead of the store (no restore needed).",
)
@click.option(
    "--db",
    type=click.IntRange(min=0),
    help="The database (default 0): the file's with --from-dump, else the store's (as the "
    "global --db).",
)
@unescape_option
@pass_opener
def range_command(
    opener: StoreOpener,
    stream: str,
    start: str | None,
    end: str | None,
    since: str | None,
    until: str | None,
    count: int | None,
    rev: bool,
    as_json: bool,
    as_nl: bool,
    dump_file: str | None,
    db: int | None,
    unescape: bool,
) -> None:
    """Print the entries of STREAM from START to END (XRANGE / XREVRANGE).

    START and END are IDs (MS or MS-SEQ) or times (2026-11-01T10:00 in local time, ...Z for
    UTC, or a time ago: 90s, 15m, 1h, 7d); they default to - and + (the whole stream) and are
    inclusive unless written (ID.  A time stands for its Unix time in ms.  They always name
    the low and the high end: --rev only reverses the order.  A stream that does not exist
    has no entries.

    Text output is one entry per line: ID, two spaces, then field=value pairs.  A name or
    value that is empty or holds spaces, quotes, backslashes, control characters or bytes
    that are not UTF-8 is double-quoted with escapes (\\n, \\", \\xHH).  --json prints one
    JSON array (one entry per line); --nl prints one JSON object per line.

    \b
    Examples:
      rstore range events
      rstore range events 1700000000000 1700000060000
      rstore range events --since 1h
      rstore range events --since 2026-11-01T10:00 --until 2026-11-01T11:00
      rstore range events --rev --count 5
      rstore range events '(1700000000000-3' + --nl | jq .fields
      rstore range events --from-dump dump.rdb --count 10

    --from-dump reads STREAM from database --db of an RDB file (rstore's, Redis's or
    Valkey's) without a store; the file is checked to its end before anything is printed.
    """
    if start is not None and since is not None:
        raise click.UsageError("give START or --since, not both")
    if end is not None and until is not None:
        raise click.UsageError("give END or --until, not both")
    if db is not None and dump_file is None:  # range's own --db: the store's database
        opener = opener.with_db(db)
    key = to_bytes(stream, unescape, "STREAM")
    low = range_bound(start or since or "-", is_end=False, param="--since" if since else "START")
    high = range_bound(end or until or "+", is_end=True, param="--until" if until else "END")
    if dump_file is not None:
        _print([dump_entries(dump_file, key, low, high, count, rev, db or 0)], as_json, as_nl)
        return
    with opener.open(create=False) as store:
        pages = rstore.iter_range_pages(
            store, key, low, high, count=count, reverse=rev, max_page=RANGE_PAGE
        )
        _print(pages, as_json, as_nl)


def _print(pages: Iterable[Sequence[RawEntry]], as_json: bool, as_nl: bool) -> None:
    writer = EntryWriter()
    out = writer.out
    if as_nl:
        for page in pages:
            out.write(b"".join(entry_json(i, flat).encode() + b"\n" for i, flat in page))
    elif as_json:
        opening = b"["
        for page in pages:
            for entry_id, flat in page:
                out.write(opening + entry_json(entry_id, flat).encode())
                opening = b",\n "
        out.write(b"[]\n" if opening == b"[" else b"]\n")
    else:
        writer.pages(pages)
    writer.flush()


COMMANDS: list[click.Command] = [range_command]
