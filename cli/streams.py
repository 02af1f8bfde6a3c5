"""Stream commands: ``add``, ``len``, ``info``, ``trim`` (``range`` is in :mod:`.reading`)."""

from __future__ import annotations

import click

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import info_items, token
from .jsonout import echo_json, echo_reply
from .output import EntryWriter
from .params import parse_fields, range_bound, to_bytes
from .refs import check_ref, policy_arg, ref_option
from .replies import info_tree

__all__ = ["COMMANDS"]


def _check_trim_options(
    maxlen: int | None, minid: str | None, approx: bool, limit: int | None, needed: bool
) -> None:
    if maxlen is not None and minid is not None:
        raise click.UsageError("give either --maxlen or --minid, not both")
    if maxlen is None and minid is None:
        if needed:
            raise click.UsageError("give --maxlen N or --minid ID")
        if approx or limit is not None:
            raise click.UsageError("--approx and --limit need --maxlen or --minid")


def _trim_args(
    maxlen: int | None, minid: str | None, approx: bool, limit: int | None
) -> list[bytes]:
    if maxlen is None and minid is None:
        return []
    out = [b"MAXLEN" if maxlen is not None else b"MINID"]
    if approx:
        out.append(b"~")
    if maxlen is not None:
        out.append(str(maxlen).encode())
    else:
        out.append(range_bound(minid or "", is_end=False, param="--minid"))
    if limit is not None:
        out += [b"LIMIT", str(limit).encode()]
    return out


def _echo_int(value: int, as_json: bool) -> None:
    echo_reply(value, as_json)


_maxlen_option = click.option(
    "--maxlen", type=click.IntRange(min=0), metavar="N", help="Keep at most N entries."
)
_minid_option = click.option(
    "--minid",
    metavar="ID|TIME",
    help="Remove the entries with IDs lower than ID (or older than TIME: 7d, 2026-11-01).",
)
_approx_option = click.option(
    "--approx",
    is_flag=True,
    help="Trim only whole nodes (Redis's ~): cheaper, may keep a few more entries.",
)
_limit_option = click.option(
    "--limit",
    type=click.IntRange(min=0),
    metavar="N",
    help="With --approx: remove at most N entries in this call (0 = no limit).",
)


@click.command("add", short_help="Append an entry to a stream.")
@click.argument("stream")
@click.argument("pairs", nargs=-1, required=True, metavar="FIELD=VALUE...")
@click.option(
    "--id",
    "entry_id",
    default="*",
    show_default=True,
    metavar="ID",
    help="The new entry's ID: *, MS-*, or MS-SEQ.",
)
@_maxlen_option
@_approx_option
@_minid_option
@_limit_option
@click.option("--nomkstream", is_flag=True, help="Do not create the stream when it is missing.")
@ref_option
@click.option(
    "--idempotent",
    metavar="PRODUCER[:ID]",
    help="Add the entry once per producer and idempotent ID (XADD IDMP, Redis 8.6): run again, "
    "it prints the first run's ID and adds nothing. Without :ID the ID is derived from the "
    "fields (IDMPAUTO). Split at the first ':'.",
)
@json_option
@unescape_option
@pass_opener
def add_command(
    opener: StoreOpener,
    stream: str,
    pairs: tuple[str, ...],
    entry_id: str,
    maxlen: int | None,
    approx: bool,
    minid: str | None,
    limit: int | None,
    nomkstream: bool,
    ref: str | None,
    idempotent: str | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Append an entry with the given fields to STREAM (XADD) and print its ID.

    Each FIELD=VALUE is split at its first "="; fields keep their order and may repeat.
    FIELD=@PATH takes the value from the file PATH (its bytes, any size), FIELD=@- from
    stdin; a value that starts with "@" is written "@@" (FIELD=@@home stores "@home").
    The store and the stream are created when missing (unless --nomkstream: then nothing is
    added, nothing is printed on stdout, JSON prints null, and the exit status is still 0).

    \b
    Examples:
      rstore add events user=42 action=login
      rstore add events --id 1700000000000-0 n=1
      rstore add events --maxlen 1000 --approx user=42
      rstore add orders --maxlen 10000 --ref acked item=7
      rstore add payments --idempotent billing:invoice-1017 amount=42
      rstore add -e blobs 'data=\\x00\\xff'
      rstore add images name=logo.png data=@logo.png
      curl -s https://example.com/ | rstore add pages url=https://example.com/ body=@-
    """
    _check_trim_options(maxlen, minid, approx, limit, needed=False)
    check_ref(ref, approx, maxlen is not None or minid is not None)
    fields = parse_fields(pairs, unescape, files=True)
    key = to_bytes(stream, unescape, "STREAM")
    argv = [b"XADD", key]
    if nomkstream:
        argv.append(b"NOMKSTREAM")
    argv += policy_arg(ref)
    argv += _producer_args(idempotent, entry_id, unescape)
    argv += _trim_args(maxlen, minid, approx, limit)
    argv += [to_bytes(entry_id), *fields]
    with opener.open(create=True) as store:
        new_id = store.execute(*argv)
    if as_json:
        echo_json(new_id)
    elif new_id is None:
        click.echo(f"stream {token(key)} does not exist; nothing added (--nomkstream)", err=True)
    else:
        click.echo(new_id.decode("ascii"))


def _producer_args(idempotent: str | None, entry_id: str, unescape: bool) -> list[bytes]:
    """``IDMP producer id`` or ``IDMPAUTO producer`` for ``--idempotent PRODUCER[:ID]``."""
    if idempotent is None:
        return []
    if entry_id != "*":
        raise click.UsageError("--idempotent needs an automatic ID (--id *)")
    producer, colon, iid = idempotent.partition(":")
    if not producer or (colon and not iid):
        raise click.BadParameter(
            "give PRODUCER or PRODUCER:ID, both not empty", param_hint="--idempotent"
        )
    pid = to_bytes(producer, unescape, "--idempotent")
    if not colon:
        return [b"IDMPAUTO", pid]
    return [b"IDMP", pid, to_bytes(iid, unescape, "--idempotent")]


@click.command("len", short_help="Print the number of entries in a stream.")
@click.argument("stream")
@json_option
@unescape_option
@pass_opener
def len_command(opener: StoreOpener, stream: str, as_json: bool, unescape: bool) -> None:
    """Print the number of entries in STREAM (XLEN); 0 when the stream does not exist.

    \b
    Examples:
      rstore len events
    """
    with opener.open(create=False) as store:
        length = store.xlen(to_bytes(stream, unescape, "STREAM"))
    _echo_int(length, as_json)


@click.command("info", short_help="Print a stream's metadata.")
@click.argument("stream")
@click.option(
    "--full", is_flag=True, help="Also list entries and consumer groups (XINFO STREAM FULL)."
)
@click.option(
    "--count",
    type=click.IntRange(min=0),
    metavar="N",
    help="With --full: list at most N entries and pending entries (default 10, 0 = all).",
)
@json_option
@unescape_option
@pass_opener
def info_command(
    opener: StoreOpener, stream: str, full: bool, count: int | None, as_json: bool, unescape: bool
) -> None:
    """Print STREAM's metadata as "key: value" lines (XINFO STREAM).

    The first and last entries print like `range` lines; with --full, entries and groups
    follow as indented lists.  A stream that does not exist is an error (ERR no such key).

    \b
    Examples:
      rstore info events
      rstore info events --full --count 0
      rstore info events --json | jq .length
    """
    if count is not None and not full:
        raise click.UsageError("--count needs --full")
    argv = [b"XINFO", b"STREAM", to_bytes(stream, unescape, "STREAM")]
    if full:
        argv.append(b"FULL")
        if count is not None:
            argv += [b"COUNT", str(count).encode()]
    with opener.open(create=False) as store:
        tree = info_tree(store.execute(*argv))
    if as_json:
        echo_json(tree)
        return
    from .timefmt import shown_times  # noqa: PLC0415 - datetime: not for `rstore len`

    writer = EntryWriter()
    for line in info_items(shown_times(tree)):
        if isinstance(line, str):
            writer.text(line)
        else:
            prefix, entry = line
            writer.entry(entry.id, entry.flat(), prefix)
    writer.flush()


@click.command("trim", short_help="Remove old entries from a stream.")
@click.argument("stream")
@_maxlen_option
@_minid_option
@_approx_option
@_limit_option
@ref_option
@json_option
@unescape_option
@pass_opener
def trim_command(
    opener: StoreOpener,
    stream: str,
    maxlen: int | None,
    minid: str | None,
    approx: bool,
    limit: int | None,
    ref: str | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Trim STREAM to --maxlen entries or to IDs from --minid on (XTRIM); print how many
    entries were removed.  Exactly one of --maxlen and --minid is required.  With --ref
    acked, entries a consumer group has not acknowledged (or not read yet) stay, and the
    trim goes past them.

    \b
    Examples:
      rstore trim events --maxlen 1000
      rstore trim events --minid 1700000000000
      rstore trim events --maxlen 0 --approx --limit 500
      rstore trim orders --minid 7d --ref acked
    """
    _check_trim_options(maxlen, minid, approx, limit, needed=True)
    check_ref(ref, approx, True)
    with opener.open(create=False) as store:
        removed = store.xtrim(
            to_bytes(stream, unescape, "STREAM"),
            maxlen=maxlen,
            approximate=approx,
            minid=None if minid is None else range_bound(minid, is_end=False, param="--minid"),
            limit=limit,
            ref_policy=None if ref is None else ref.upper(),
        )
    _echo_int(removed, as_json)


COMMANDS: list[click.Command] = [
    add_command,
    len_command,
    info_command,
    trim_command,
]
