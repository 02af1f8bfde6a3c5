"""Reading as a consumer of a group, and acknowledging: ``read-group``, ``ack``."""

from __future__ import annotations

import click

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .jsonout import echo_json, echo_reply
from .output import echo_entries, echo_ids
from .params import after_id, to_bytes
from .refs import ACK_RESULTS, echo_results, policy_arg, ref_option
from .replies import read_entries

__all__ = ["COMMANDS", "echo_entries", "echo_ids"]


@click.command("read-group", short_help="Read entries as a consumer of a group.")
@click.argument("stream")
@click.argument("group")
@click.argument("consumer")
@click.option("--count", type=click.IntRange(min=1), metavar="N", help="Read at most N entries.")
@click.option(
    "--block",
    type=click.IntRange(min=0),
    metavar="MS",
    help="When there is nothing to read, wait up to MS milliseconds for new entries "
    "(0: forever); writes by any process wake the wait.",
)
@click.option(
    "--noack",
    is_flag=True,
    help="Do not add the entries to the pending list (NOACK): they count as acknowledged "
    "as soon as they are delivered.",
)
@click.option(
    "--id",
    "start_id",
    default=">",
    show_default=True,
    metavar="ID",
    help="> reads entries never delivered to the group; an ID (such as 0) or a time (1h) "
    "rereads this consumer's own pending entries after it.",
)
@click.option("--ack", is_flag=True, help="Acknowledge (XACK) the entries once printed.")
@json_option
@unescape_option
@pass_opener
def read_group_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    consumer: str,
    count: int | None,
    block: int | None,
    noack: bool,
    start_id: str,
    ack: bool,
    as_json: bool,
    unescape: bool,
) -> None:
    """Read STREAM as CONSUMER of GROUP (XREADGROUP) and print the entries like `range`.

    By default the entries never delivered to the group (ID >) are read, and each becomes
    pending for CONSUMER until acknowledged: with --ack here, after printing, or later with
    `rstore ack`.  Nothing to read prints nothing (--json: no entries) and exits with 0.
    Reading the history (--id 0) shows entries deleted from the stream since as
    "ID  (deleted)" (JSON "fields": null).  The group must exist (else NOGROUP, exit 1);
    the consumer is created on its first read.

    --json prints one object: {"stream": STREAM, "entries": [...]}.

    \b
    Examples:
      rstore read-group orders billing worker-1 --count 10
      rstore read-group orders billing worker-1 --block 5000 --ack
      rstore read-group orders billing worker-1 --id 0 --json
    """
    if noack and ack:
        raise click.UsageError("--noack entries are never pending: nothing to --ack")
    key = to_bytes(stream, unescape, "STREAM")
    group_b = to_bytes(group, unescape, "GROUP")
    argv: list[bytes] = [b"XREADGROUP", b"GROUP", group_b, to_bytes(consumer, unescape, "CONSUMER")]
    if count is not None:
        argv += [b"COUNT", str(count).encode()]
    if block is not None:
        argv += [b"BLOCK", str(block).encode()]
    if noack:
        argv.append(b"NOACK")
    argv += [b"STREAMS", key, after_id(start_id, param="--id")]
    with opener.open(create=False) as store:
        entries = read_entries(store.execute(*argv), key)
        if as_json:
            echo_json({"stream": key, "entries": entries})
        else:
            echo_entries(entries, as_json=False)
        # echo_entries() flushed the lines: what is acknowledged has been written out.
        if ack and entries:
            store.xack(key, group_b, *(e.id for e in entries))


@click.command("ack", short_help="Acknowledge entries of a group.")
@click.argument("stream")
@click.argument("group")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option(
    "--delete",
    is_flag=True,
    help="Also delete the acknowledged entries from the stream (XACKDEL, Redis 8.2).",
)
@ref_option
@json_option
@unescape_option
@pass_opener
def ack_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    ids: tuple[str, ...],
    delete: bool,
    ref: str | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Acknowledge entries of GROUP (XACK): remove them from its pending list; print how many
    were pending.  IDs that are not pending (or a group that does not exist) count 0.

    With --delete (XACKDEL) the acknowledged entries are also deleted, and one line per ID
    says what happened: "acknowledged, deleted", "not pending" (nothing done), or, with
    --ref acked, "acknowledged, kept" while another group still needs the entry.

    \b
    Examples:
      rstore ack orders billing 1700000000000-0
      rstore ack orders billing 1700000000000-0 1700000000000-1 --json
      rstore ack orders billing 1700000000000-0 --delete --ref acked
    """
    if ref is not None and not delete:
        raise click.UsageError("--ref needs --delete")
    if delete:
        argv = [
            b"XACKDEL",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
            *policy_arg(ref),
            b"IDS",
            str(len(ids)).encode(),
            *(to_bytes(i) for i in ids),
        ]
        with opener.open(create=False) as store:
            codes = store.execute(*argv)
        echo_results(ids, codes, ACK_RESULTS, as_json)
        return
    with opener.open(create=False) as store:
        acked = store.execute(
            b"XACK",
            to_bytes(stream, unescape, "STREAM"),
            to_bytes(group, unescape, "GROUP"),
            *(to_bytes(i) for i in ids),
        )
    echo_reply(acked, as_json)


@click.command("nack", short_help="Give pending entries back to their group.")
@click.argument("stream")
@click.argument("group")
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@click.option(
    "--mode",
    type=click.Choice(("fail", "silent", "fatal"), case_sensitive=False),
    default="fail",
    show_default=True,
    help="fail: processing failed (delivery count kept); silent: the worker is stopping, not "
    "the message's fault (count lowered by one); fatal: the message can never be processed "
    "(count set to its maximum, so a max-deliveries rule dead-letters it).",
)
@click.option(
    "--retry-count",
    type=click.IntRange(min=0),
    metavar="N",
    help="Set the delivery count to N instead.",
)
@click.option("--force", is_flag=True, help="Also release entries of STREAM that are not pending.")
@json_option
@unescape_option
@pass_opener
def nack_command(
    opener: StoreOpener,
    stream: str,
    group: str,
    ids: tuple[str, ...],
    mode: str,
    retry_count: int | None,
    force: bool,
    as_json: bool,
    unescape: bool,
) -> None:
    """Give entries pending in GROUP back to it (XNACK, Redis 8.8): they lose their owner, and
    the next claim (claim, autoclaim, or XREADGROUP ... CLAIM) takes them at once, whatever its
    minimum idle time; print how many were released.  IDs that are not pending count 0.

    \b
    Examples:
      rstore nack orders billing 1700000000000-0
      rstore nack orders billing 1700000000000-0 --mode fatal
      rstore nack orders billing 1700000000000-0 --retry-count 0 --json
    """
    argv = [
        b"XNACK",
        to_bytes(stream, unescape, "STREAM"),
        to_bytes(group, unescape, "GROUP"),
        mode.upper().encode(),
        b"IDS",
        str(len(ids)).encode(),
        *(to_bytes(i) for i in ids),
    ]
    if retry_count is not None:
        argv += [b"RETRYCOUNT", str(retry_count).encode()]
    if force:
        argv.append(b"FORCE")
    with opener.open(create=False) as store:
        released = store.execute(*argv)
    echo_reply(released, as_json)


COMMANDS: list[click.Command] = [read_group_command, ack_command, nack_command]
