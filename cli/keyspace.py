"""Keyspace commands: ``keys``, ``del``."""

from __future__ import annotations

import click

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .format import token
from .jsonout import echo_json, echo_reply
from .params import to_bytes

__all__ = ["COMMANDS"]


@click.command("keys", short_help="List key (stream) names.")
@click.argument("pattern", default="*")
@json_option
@unescape_option
@pass_opener
def keys_command(opener: StoreOpener, pattern: str, as_json: bool, unescape: bool) -> None:
    """List the names of the keys matching the glob PATTERN (KEYS), one per line.

    PATTERN defaults to * (every key); quote it so the shell does not expand it.  Glob syntax
    is Redis's: *, ?, [abc], [^a], [a-z], and \\ to escape.  Names that are empty or hold
    spaces, quotes, backslashes, control characters or bytes that are not UTF-8 print
    double-quoted with escapes; --json prints one array.

    \b
    Examples:
      rstore keys
      rstore keys 'orders:*'
      rstore keys --json
    """
    with opener.open(create=False) as store:
        names = store.keys(to_bytes(pattern, unescape, "PATTERN"))
    if as_json:
        echo_json(names)
    else:
        for name in names:
            click.echo(token(name))


@click.command("del", short_help="Delete keys (streams).")
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@json_option
@unescape_option
@pass_opener
def del_command(opener: StoreOpener, keys: tuple[str, ...], as_json: bool, unescape: bool) -> None:
    """Delete each KEY with its entries and groups (DEL); print how many existed.

    Missing keys are skipped.  A store that does not exist is an error: nothing is created.

    \b
    Examples:
      rstore del events
      rstore del old:1 old:2 old:3
    """
    with opener.open(create=False) as store:
        removed = store.delete(*(to_bytes(k, unescape, "KEY") for k in keys))
    echo_reply(removed, as_json)


COMMANDS: list[click.Command] = [keys_command, del_command]
