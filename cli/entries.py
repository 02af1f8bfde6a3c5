"""Editing a stream's entries and counters: ``del-entries`` (XDEL), ``setid`` (XSETID)."""

from __future__ import annotations

import click

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .jsonout import echo_reply
from .params import to_bytes
from .refs import DELETE_RESULTS, echo_results, policy_arg, ref_option

__all__ = ["COMMANDS"]


@click.command("del-entries", short_help="Delete entries from a stream by ID.")
@click.argument("stream")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@ref_option
@json_option
@unescape_option
@pass_opener
def del_entries_command(
    opener: StoreOpener,
    stream: str,
    ids: tuple[str, ...],
    ref: str | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Delete the entries with these IDs from STREAM (XDEL) and print how many existed.

    IDs are exact entry IDs (MS-SEQ; MS alone means MS-0).  Missing IDs count 0, and so does a
    stream that does not exist.  The entries are gone for every reader; a consumer group
    that delivered one keeps it pending until acknowledged (it then reads as deleted).  To
    drop old entries by age or count, use `rstore trim`.

    With --ref (XDELEX), one line per ID says what happened to it: "deleted", "not found",
    or "kept" (--ref acked: a group has not acknowledged it, or not read it yet).

    \b
    Examples:
      rstore del-entries events 1700000000000-0
      rstore del-entries events 1700000000000-0 1700000000000-1 --json
      rstore del-entries orders 1700000000000-0 --ref acked
    """
    key = to_bytes(stream, unescape, "STREAM")
    raw_ids = [to_bytes(i) for i in ids]
    if ref is not None:
        argv = [b"XDELEX", key, *policy_arg(ref), b"IDS", str(len(ids)).encode(), *raw_ids]
        with opener.open(create=False) as store:
            codes = store.execute(*argv)
        echo_results(ids, codes, DELETE_RESULTS, as_json)
        return
    with opener.open(create=False) as store:
        removed = store.execute(b"XDEL", key, *raw_ids)
    echo_reply(removed, as_json)


@click.command("setid", short_help="Set a stream's last ID and counters.")
@click.argument("stream")
@click.argument("last_id", metavar="ID")
@click.option(
    "--entries-added",
    type=click.IntRange(min=0),
    metavar="N",
    help="Also set the count of entries ever added (ENTRIESADDED; at least the length).",
)
@click.option(
    "--max-deleted-id",
    metavar="ID",
    help="Also set the highest deleted ID (MAXDELETEDID; at most ID).",
)
@json_option
@unescape_option
@pass_opener
def setid_command(
    opener: StoreOpener,
    stream: str,
    last_id: str,
    entries_added: int | None,
    max_deleted_id: str | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Set STREAM's last ID (XSETID) and print OK: entries added later with automatic IDs
    get IDs above it.  ID must be at least the ID of the stream's last entry (else ERR), so
    this never hides entries; the stream must exist.

    Used to restore a stream's position after copying its entries elsewhere, or to make new
    IDs start at a given time.  (A consumer group's position is `rstore group setid`.)

    \b
    Examples:
      rstore setid events 1800000000000-0
      rstore setid events 1800000000000-0 --entries-added 5000 --max-deleted-id 1700000000000-9
    """
    argv = [b"XSETID", to_bytes(stream, unescape, "STREAM"), to_bytes(last_id)]
    if entries_added is not None:
        argv += [b"ENTRIESADDED", str(entries_added).encode()]
    if max_deleted_id is not None:
        argv += [b"MAXDELETEDID", to_bytes(max_deleted_id)]
    with opener.open(create=False) as store:
        reply = store.execute(*argv)
    echo_reply(reply, as_json)


COMMANDS: list[click.Command] = [del_entries_command, setid_command]
