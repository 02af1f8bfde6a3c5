"""The pending entries of a group and taking them over: ``pending``, ``claim``, ``autoclaim``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import info_lines, table_lines
from .jsonout import echo_json
from .output import echo_entries, echo_ids
from .params import range_bound, to_bytes
from .replies import (
    PENDING_COLUMNS,
    autoclaim_result,
    entries_from_reply,
    pending_rows,
    pending_summary,
)
from .timefmt import shown_idle

__all__ = ["COMMANDS", "PENDING_PAGE", "iter_pending"]

#: ``pending`` reads this many rows per call when listing pending entries.
PENDING_PAGE = 1000
_MAX_ID = b"18446744073709551615-18446744073709551615"

_min_idle_option = click.option(
    "--min-idle",
    type=click.IntRange(min=0),
    required=True,
    metavar="MS",
    help="Only take entries last delivered at least MS milliseconds ago (idle that long).",
)
_justid_option = click.option(
    "--justid",
    is_flag=True,
    help="Print only the IDs; the delivery count is not incremented (JUSTID).",
)


def iter_pending(
    store: rstore.Store,
    head: Sequence[bytes],
    start: bytes,
    end: bytes,
    count: int | None,
    consumer: bytes | None,
) -> Iterator[dict[str, Any]]:
    """Pending rows from ``start`` to ``end`` (at most ``count``), :data:`PENDING_PAGE` per call.

    ``head`` is ``XPENDING key group [IDLE ms]``."""
    remaining = count
    low = start
    tail = [consumer] if consumer is not None else []
    while remaining is None or remaining > 0:
        page = PENDING_PAGE if remaining is None else min(PENDING_PAGE, remaining)
        rows = store.execute(*head, low, end, page, *tail)
        yield from pending_rows(rows)
        if len(rows) < page or rows[-1][0] == _MAX_ID:
            return
        low = b"(" + rows[-1][0]
        if remaining is not None:
            remaining -= len(rows)


@click.command("pending", short_help="Show a group's pending entries.")
@click.argument("stream")
@click.argument("group")
@click.option(
    "--start",
    metavar="ID|TIME",
    help="List pending entries from ID on (default -; (ID excludes ID; a time such as 1h "
    "stands for its ID).",
)
@click.option("--end", metavar="ID|TIME", help="List pending entries up to ID (default +).")
@click.option("--count", type=click.IntRange(min=0), metavar="N", help="List at most N entries.")
@click.option("--consumer", metavar="NAME", help="List only the entries pending for NAME.")
@click.option(
    "--idle",
    type=click.IntRange(min=0),
    metavar="MS",
    help="List only entries delivered at least MS milliseconds ago.",
)
@json_option
@unescape_option
@pass_opener
def pending_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    start: str | None,
    end: str | None,
    count: int | None,
    consumer: str | None,
    idle: int | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Show the entries GROUP delivered and nobody acknowledged yet (XPENDING).

    Without options: a summary -- how many, the lowest and highest ID, and how many per
    consumer.  With any of --start, --end, --count, --consumer or --idle: a table of the
    pending entries (ID, CONSUMER, IDLE: how long since the last delivery, as 1m5s or 2h10m;
    DELIVERY-COUNT), all of them unless --count; START and END are inclusive unless written
    (ID.

    --json prints {"pending": N, "min": ID, "max": ID, "consumers": [{"name": ...,
    "pending": N}]} for the summary, and an array of objects keyed by the column names for
    the table (idle in ms).  A missing group is an error (NOGROUP), exit status 1.

    \b
    Examples:
      rstore pending orders billing
      rstore pending orders billing --idle 60000
      rstore pending orders billing --consumer worker-1 --count 10 --json
      rstore pending orders billing --start 1700000000000 --end '(1700000060000'
    """
    key = to_bytes(stream, unescape, "STREAM")
    group_b = to_bytes(group, unescape, "GROUP")
    detail = any(v is not None for v in (start, end, count, consumer, idle))
    with opener.open(create=False) as store:
        if not detail:
            summary = pending_summary(store.execute(b"XPENDING", key, group_b))
            if as_json:
                echo_json(summary)
            else:
                for line in info_lines(summary):
                    click.echo(line)
            return
        head = [b"XPENDING", key, group_b]
        if idle is not None:
            head += [b"IDLE", str(idle).encode()]
        rows = list(
            iter_pending(
                store,
                head,
                range_bound(start or "-", is_end=False, param="--start"),
                range_bound(end or "+", is_end=True, param="--end"),
                count,
                None if consumer is None else to_bytes(consumer, unescape, "--consumer"),
            )
        )
    if as_json:
        echo_json(rows)
    else:
        headers = [c.upper() for c in PENDING_COLUMNS]
        cells = [[r["id"], r["consumer"], shown_idle(r["idle"]), r["delivery-count"]] for r in rows]
        for line in table_lines(headers, cells):
            click.echo(line)


@click.command("claim", short_help="Take over pending entries from other consumers.")
@click.argument("stream")
@click.argument("group")
@click.argument("consumer")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@_min_idle_option
@_justid_option
@json_option
@unescape_option
@pass_opener
def claim_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    consumer: str,
    ids: tuple[str, ...],
    min_idle: int,
    justid: bool,
    as_json: bool,
    unescape: bool,
) -> None:
    """Make the pending entries ID... of GROUP pending for CONSUMER (XCLAIM), if they have been
    idle at least --min-idle ms, and print those claimed, like `range`.

    IDs that are not pending, or not idle long enough, are skipped; pending entries deleted
    from the stream are removed from the pending list and not printed.  --json prints one
    array (of IDs with --justid).

    \b
    Examples:
      rstore claim orders billing worker-2 --min-idle 60000 1700000000000-0
      rstore claim orders billing worker-2 --min-idle 0 1-0 2-0 --justid
    """
    argv = [
        b"XCLAIM",
        to_bytes(stream, unescape, "STREAM"),
        to_bytes(group, unescape, "GROUP"),
        to_bytes(consumer, unescape, "CONSUMER"),
        str(min_idle).encode(),
        *(to_bytes(i) for i in ids),
    ]
    if justid:
        argv.append(b"JUSTID")
    with opener.open(create=False) as store:
        reply = store.execute(*argv)
    if justid:
        echo_ids(reply, as_json)
    else:
        echo_entries(entries_from_reply(reply), as_json)


@click.command("autoclaim", short_help="Take over idle pending entries, scanning the group.")
@click.argument("stream")
@click.argument("group")
@click.argument("consumer")
@_min_idle_option
@click.option(
    "--start",
    default="0-0",
    show_default=True,
    metavar="ID",
    help="Scan the pending list from ID on: 0-0, or the cursor the previous call returned.",
)
@click.option(
    "--count",
    type=click.IntRange(min=1),
    metavar="N",
    help="Claim at most N entries (default 100).",
)
@_justid_option
@json_option
@unescape_option
@pass_opener
def autoclaim_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    consumer: str,
    min_idle: int,
    start: str,
    count: int | None,
    justid: bool,
    as_json: bool,
    unescape: bool,
) -> None:
    """Claim for CONSUMER the pending entries of GROUP idle at least --min-idle ms, scanning
    the pending list from --start (XAUTOCLAIM), and print them like `range`.

    One call scans a limited part of the pending list.  When it stopped early, stderr says
    where to continue ("next: ID; run again with --start ID"); the IDs of pending entries
    that were deleted from the stream (now removed from the pending list) are listed there
    too.  --json prints {"next": ID, "entries": [...], "deleted": [IDs]} ("entries" holds
    IDs with --justid); "next" is "0-0" when the scan is complete.

    \b
    Examples:
      rstore autoclaim orders billing worker-2 --min-idle 60000
      rstore autoclaim orders billing worker-2 --min-idle 60000 --start 1700000000000-5
      rstore autoclaim orders billing worker-2 --min-idle 0 --count 10 --justid --json
    """
    argv = [
        b"XAUTOCLAIM",
        to_bytes(stream, unescape, "STREAM"),
        to_bytes(group, unescape, "GROUP"),
        to_bytes(consumer, unescape, "CONSUMER"),
        str(min_idle).encode(),
        range_bound(start, is_end=False, param="--start"),
    ]
    if count is not None:
        argv += [b"COUNT", str(count).encode()]
    if justid:
        argv.append(b"JUSTID")
    with opener.open(create=False) as store:
        result = autoclaim_result(store.execute(*argv), justid)
    if as_json:
        echo_json(result)
        return
    cursor, deleted = result["next"], result["deleted"]
    if justid:
        echo_ids(result["entries"], as_json=False)
    else:
        echo_entries(result["entries"], as_json=False)
    if deleted:
        ids = " ".join(d.decode("ascii", "backslashreplace") for d in deleted)
        click.echo(f"deleted from the stream, no longer pending: {ids}", err=True)
    if cursor != b"0-0":
        next_id = cursor.decode("ascii", "backslashreplace")
        click.echo(f"next: {next_id}; run again with --start {next_id}", err=True)


COMMANDS: list[click.Command] = [pending_command, claim_command, autoclaim_command]
