"""``rstore group``: create, destroy, move and list consumer groups and their consumers
(XGROUP, XINFO GROUPS, XINFO CONSUMERS)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import table_lines
from .jsonout import echo_json, echo_reply
from .params import after_id, to_bytes
from .replies import record
from .timefmt import shown_idle

__all__ = ["COMMANDS", "CONSUMER_COLUMNS", "GROUP_COLUMNS"]

#: The columns of ``group list`` and ``group consumers``: XINFO's field names, in its order.
GROUP_COLUMNS = ("name", "consumers", "pending", "last-delivered-id", "entries-read", "lag")
CONSUMER_COLUMNS = ("name", "pending", "idle", "inactive")

_entries_read_option = click.option(
    "--entries-read",
    type=click.IntRange(min=-1),
    metavar="N",
    help="Set the group's entries-read counter (ENTRIESREAD), so XINFO can compute its lag: "
    "the number of entries up to the new last-delivered ID (-1: unknown).",
)


def _echo_reply(reply: Any, as_json: bool) -> None:
    echo_reply(reply, as_json)


def _echo_table(
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    as_json: bool,
    shown: Mapping[str, Callable[[Any], str]] | None = None,
) -> None:
    """A table (``shown`` turns a column's values into text), or with ``--json`` the rows as
    they are."""
    if as_json:
        echo_json(rows)
        return
    show = shown or {}
    cells = [[show[c](r[c]) if c in show else r.get(c) for c in columns] for r in rows]
    for line in table_lines([c.upper() for c in columns], cells):
        click.echo(line)


class _OrderedGroup(click.Group):
    """Lists its subcommands in the order they were added, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(
    "group", cls=_OrderedGroup, short_help="Create, destroy, move and list consumer groups."
)
def group_command() -> None:
    """Manage the consumer groups of a stream (XGROUP) and list them (XINFO).

    A consumer group remembers which entries of a stream it has delivered (its last-delivered
    ID) and which are delivered but not yet acknowledged (its pending entries list).  Read
    with `rstore read-group` or `rstore tail --group`, acknowledge with `rstore ack`.

    \b
    Examples:
      rstore group create orders billing --id 0 --mkstream
      rstore group list orders
      rstore group consumers orders billing
      rstore group setid orders billing '$'
      rstore group del-consumer orders billing worker-9
      rstore group destroy orders billing
    """


@group_command.command("create", short_help="Create a consumer group.")
@click.argument("stream")
@click.argument("group")
@click.option(
    "--id",
    "start_id",
    default="$",
    show_default=True,
    metavar="ID|TIME",
    help="The group's last-delivered ID: $ delivers only entries added from now on, 0 every "
    "entry of the stream, a time (1h, 2026-11-01T10:00) the entries added after it.",
)
@click.option(
    "--mkstream", is_flag=True, help="Create the stream (and the store) when they are missing."
)
@_entries_read_option
@json_option
@unescape_option
@pass_opener
def create_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    start_id: str,
    mkstream: bool,
    entries_read: int | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Create GROUP on STREAM (XGROUP CREATE) and print OK.

    The stream must exist unless --mkstream is given.  A group of that name that already
    exists is an error (BUSYGROUP), exit status 1.

    \b
    Examples:
      rstore group create orders billing
      rstore group create orders billing --id 0 --mkstream
      rstore group create orders audit --id 1700000000000-0 --entries-read 120
    """
    argv = [
        b"XGROUP",
        b"CREATE",
        to_bytes(stream, unescape, "STREAM"),
        to_bytes(group, unescape, "GROUP"),
        after_id(start_id, param="--id"),
    ]
    if mkstream:
        argv.append(b"MKSTREAM")
    if entries_read is not None:
        argv += [b"ENTRIESREAD", str(entries_read).encode()]
    with opener.open(create=mkstream) as store:
        reply = store.execute(*argv)
    _echo_reply(reply, as_json)


@group_command.command("destroy", short_help="Delete a consumer group.")
@click.argument("stream")
@click.argument("group")
@json_option
@unescape_option
@pass_opener
def destroy_command(
    opener: StoreOpener, stream: str, group: str, as_json: bool, unescape: bool
) -> None:
    """Delete GROUP of STREAM with its consumers and pending entries (XGROUP DESTROY); print 1,
    or 0 when there was no such group.  The stream's entries are untouched.

    \b
    Examples:
      rstore group destroy orders billing
    """
    with opener.open(create=False) as store:
        reply = store.execute(
            b"XGROUP",
            b"DESTROY",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
        )
    _echo_reply(reply, as_json)


@group_command.command("setid", short_help="Move a group's last-delivered ID.")
@click.argument("stream")
@click.argument("group")
@click.argument("entry_id", metavar="ID|TIME")
@_entries_read_option
@json_option
@unescape_option
@pass_opener
def setid_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    entry_id: str,
    entries_read: int | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Set GROUP's last-delivered ID to ID (XGROUP SETID) and print OK: the next `>` read
    delivers the entries after ID.  $ means the stream's last entry (skip everything), 0
    replays the whole stream, a time (1h, 2026-11-01T10:00) the entries added after it.
    Pending entries are not changed.

    \b
    Examples:
      rstore group setid orders billing 0
      rstore group setid orders billing '$'
      rstore group setid orders billing 1700000000000-0 --entries-read 120
      rstore group setid orders billing 2h
    """
    argv = [
        b"XGROUP",
        b"SETID",
        to_bytes(stream, unescape, "STREAM"),
        to_bytes(group, unescape, "GROUP"),
        after_id(entry_id, param="ID"),
    ]
    if entries_read is not None:
        argv += [b"ENTRIESREAD", str(entries_read).encode()]
    with opener.open(create=False) as store:
        reply = store.execute(*argv)
    _echo_reply(reply, as_json)


@group_command.command("list", short_help="List a stream's consumer groups.")
@click.argument("stream")
@json_option
@unescape_option
@pass_opener
def list_command(opener: StoreOpener, stream: str, as_json: bool, unescape: bool) -> None:
    """List STREAM's consumer groups as a table (XINFO GROUPS): NAME, CONSUMERS, PENDING,
    LAST-DELIVERED-ID, ENTRIES-READ and LAG, one group per line after a header line.

    ENTRIES-READ and LAG are (nil) when rstore cannot know them (after a SETID without
    --entries-read, or once entries were deleted).  A missing stream is an error (ERR no such
    key).  --json prints an array of objects keyed by the same names in lower case.

    \b
    Examples:
      rstore group list orders
      rstore group list orders --json | jq '.[] | select(.lag > 100) | .name'
    """
    with opener.open(create=False) as store:
        reply = store.execute(b"XINFO", b"GROUPS", to_bytes(stream, unescape, "STREAM"))
    _echo_table([record(item) for item in reply], GROUP_COLUMNS, as_json)


@group_command.command("consumers", short_help="List a group's consumers.")
@click.argument("stream")
@click.argument("group")
@json_option
@unescape_option
@pass_opener
def consumers_command(
    opener: StoreOpener, stream: str, group: str, as_json: bool, unescape: bool
) -> None:
    """List the consumers of GROUP as a table (XINFO CONSUMERS): NAME, PENDING (entries
    delivered and not acknowledged), IDLE (how long since its last read or claim attempt:
    1m5s) and INACTIVE (since its last successful read or claim; never).  --json gives
    both in ms (-1: never).

    A missing group is an error (NOGROUP), exit status 1.

    \b
    Examples:
      rstore group consumers orders billing
      rstore group consumers orders billing --json
    """
    with opener.open(create=False) as store:
        reply = store.execute(
            b"XINFO",
            b"CONSUMERS",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
        )
    shown = {"idle": shown_idle, "inactive": shown_idle}
    _echo_table([record(item) for item in reply], CONSUMER_COLUMNS, as_json, shown)


@group_command.command("create-consumer", short_help="Add a consumer to a group.")
@click.argument("stream")
@click.argument("group")
@click.argument("consumer")
@json_option
@unescape_option
@pass_opener
def create_consumer_command(
    opener: StoreOpener, stream: str, group: str, consumer: str, as_json: bool, unescape: bool
) -> None:
    """Add CONSUMER to GROUP (XGROUP CREATECONSUMER); print 1, or 0 when it exists already.

    Consumers are also created by their first read (`rstore read-group`, `rstore tail
    --group`); creating one ahead makes it show in `group consumers` before it reads.  A
    missing group is an error (NOGROUP).

    \b
    Examples:
      rstore group create-consumer orders billing worker-3
    """
    with opener.open(create=False) as store:
        reply = store.execute(
            b"XGROUP",
            b"CREATECONSUMER",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
            to_bytes(consumer, unescape, "CONSUMER"),
        )
    _echo_reply(reply, as_json)


@group_command.command("del-consumer", short_help="Remove a consumer from a group.")
@click.argument("stream")
@click.argument("group")
@click.argument("consumer")
@json_option
@unescape_option
@pass_opener
def del_consumer_command(
    opener: StoreOpener, stream: str, group: str, consumer: str, as_json: bool, unescape: bool
) -> None:
    """Remove CONSUMER from GROUP (XGROUP DELCONSUMER); print how many entries were pending
    for it (0 when there was no such consumer).

    Its pending entries are dropped from the group's pending list: nobody will be given them
    again.  For a worker that is gone for good, first take its entries over (`rstore
    autoclaim ... --min-idle MS`, or `rstore.Consumer`'s claims), check `rstore group
    consumers` shows PENDING 0 for it, then remove it.  A missing group is an error (NOGROUP).

    \b
    Examples:
      rstore group consumers orders billing
      rstore group del-consumer orders billing worker-9
    """
    with opener.open(create=False) as store:
        reply = store.execute(
            b"XGROUP",
            b"DELCONSUMER",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
            to_bytes(consumer, unescape, "CONSUMER"),
        )
    _echo_reply(reply, as_json)


COMMANDS: list[click.Command] = [group_command]
