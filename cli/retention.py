"""``rstore retention``: set, show and clear the retention policies of a store
(``Store.set_retention``; docs/retention.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from rstore import Retention, parse_duration_ms, parse_size

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import table_lines, token
from .jsonout import echo_json
from .params import to_bytes
from .refs import POLICIES

__all__ = ["COMMANDS"]

_COLUMNS = ("PATTERN", "MAX-AGE", "MAX-ENTRIES", "MAX-BYTES", "REF")


class _Ordered(click.Group):
    """Lists its subcommands in the order they were added."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


def _limit(
    text: str | None, parse: Callable[[str], int | None], option: str, what: str
) -> int | None:
    """The option's value parsed (``None`` when not given); a text that is not ``what`` is a
    usage error naming the option."""
    if text is None:
        return None
    value = parse(text)
    if value is None:
        raise click.BadParameter(f"{text!r} is not {what}", param_hint=option)
    return value


def _shown_age(ms: int | None) -> str:
    if ms is None:
        return "-"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _shown(limit: int | None) -> str | int:
    return "-" if limit is None else limit


def _as_json(policy: Retention) -> dict[str, Any]:
    return {
        "pattern": policy.pattern.decode("utf-8", "surrogateescape"),
        "max_age_ms": policy.max_age_ms,
        "max_entries": policy.max_entries,
        "max_bytes": policy.max_bytes,
        "ref": policy.ref,
    }


@click.group("retention", cls=_Ordered, short_help="Set, show and clear retention policies.")
def retention_command() -> None:
    """Limits that streams keep without any producer passing MAXLEN or MINID: a maximum age,
    a maximum number of entries and a maximum size, per stream or key pattern, with a
    reference policy (acked: never drop what a consumer group has not acknowledged).
    rstore's own, modelled on NATS JetStream's and Kafka's limits; whole nodes go, as with
    ~ trimming, when an XADD opens a node.  See docs/retention.md.

    \b
    Examples:
      rstore retention set orders --max-age 7d --max-bytes 1G --ref acked
      rstore retention set 'logs:*' --max-entries 1000000
      rstore retention show
      rstore retention clear 'logs:*'
    """


@retention_command.command("set", short_help="Set the policy of a stream or pattern.")
@click.argument("pattern")
@click.option("--max-age", metavar="DURATION", help="Drop entries older than this (7d, 12h).")
@click.option(
    "--max-entries", type=click.IntRange(min=0), metavar="N", help="Keep at most N entries."
)
@click.option(
    "--max-bytes",
    metavar="SIZE",
    help="Keep the stream's nodes near this size: 1g is 10^9 bytes, 1gb 2^30 (Redis's units).",
)
@click.option(
    "--ref",
    type=click.Choice(POLICIES, case_sensitive=False),
    default="keepref",
    show_default=True,
    help="keepref leaves removed entries in groups' pending lists, delref removes them there, "
    "acked removes only entries every group has read and acknowledged.",
)
@json_option
@unescape_option
@pass_opener
def set_command(
    opener: StoreOpener,
    pattern: str,
    max_age: str | None,
    max_entries: int | None,
    max_bytes: str | None,
    ref: str,
    as_json: bool,
    unescape: bool,
) -> None:
    """Set the retention policy of the streams matching PATTERN (a Redis glob such as
    'logs:*', or a stream's name), replacing the one it had, and apply it now; print what it
    removed.  A stream follows the policy of its exact name, else of the longest pattern
    matching it.  --max-bytes counts the listpack bytes of the stream's nodes (rstore info
    shows them as retention-node-bytes); whole nodes go from the head while the rest still
    holds that many, so a stream stays within two nodes of it (the head node, and the tail
    node filling until the next XADD opens a node and applies the policy).

    \b
    Examples:
      rstore retention set orders --max-age 7d --max-bytes 1G --ref acked
      rstore retention set 'sensors:*' --max-age 30d --max-entries 5000000
      rstore retention set 'logs:*' --max-bytes 512mb
    """
    if max_age is None and max_entries is None and max_bytes is None:
        raise click.UsageError("give --max-age, --max-entries, --max-bytes, or more than one")
    age_ms = _limit(max_age, parse_duration_ms, "--max-age", "a duration (90s, 15m, 1h30m, 7d, 2w)")
    size = _limit(max_bytes, parse_size, "--max-bytes",
                  "a size (500mb, 1gb: powers of 1024; 500m, 1g: of 1000)")  # fmt: skip
    key = to_bytes(pattern, unescape, "PATTERN")
    with opener.open(create=True) as store:
        removed = store.set_retention(
            key, max_age_ms=age_ms, max_entries=max_entries, ref=ref.lower(), max_bytes=size
        )
    if as_json:
        echo_json({"pattern": pattern, "removed": {token(k): n for k, n in removed.items()}})
        return
    total = sum(removed.values())
    streams = "1 stream" if len(removed) == 1 else f"{len(removed)} streams"
    click.echo(f"set for {streams}; {total} entries removed now")
    for name, n in removed.items():
        if n:
            click.echo(f"  {token(name)}: {n}")


@retention_command.command("show", short_help="List the policies.")
@json_option
@pass_opener
def show_command(opener: StoreOpener, as_json: bool) -> None:
    """List the store's retention policies: pattern, maximum age, maximum entries, maximum
    bytes and reference policy ('-' for a limit that is not set).

    \b
    Examples:
      rstore retention show
      rstore retention show --json
    """
    with opener.open(create=False) as store:
        policies = store.retention_policies()
    if as_json:
        echo_json([_as_json(p) for p in policies])
        return
    if not policies:
        click.echo("no retention policies", err=True)
        return
    rows = [
        [p.pattern, _shown_age(p.max_age_ms), _shown(p.max_entries), _shown(p.max_bytes), p.ref]
        for p in policies
    ]  # fmt: skip
    for line in table_lines(_COLUMNS, rows):
        click.echo(line)


@retention_command.command("clear", short_help="Remove the policy of a pattern.")
@click.argument("pattern")
@json_option
@unescape_option
@pass_opener
def clear_command(opener: StoreOpener, pattern: str, as_json: bool, unescape: bool) -> None:
    """Remove the retention policy set for PATTERN (exactly as it was given to set).  A
    pattern without one is an error, exit status 1.

    \b
    Examples:
      rstore retention clear orders
      rstore retention clear 'logs:*'
    """
    key = to_bytes(pattern, unescape, "PATTERN")
    with opener.open(create=False) as store:
        cleared = store.clear_retention(key)
    if as_json:
        echo_json(cleared)
    if not cleared:
        raise click.ClickException(f"no retention policy for {token(key)}")
    if not as_json:
        click.echo("cleared")


COMMANDS: list[click.Command] = [retention_command]
