"""``rstore exec``: run any command, print the reply like redis-cli (or as JSON)."""

from __future__ import annotations

import click

from .args import to_bytes
from .context import (
    ERROR_PREFIX,
    StoreOpener,
    json_option,
    pass_opener,
    unescape_option,
)
from .format import redis_cli_reply
from .jsonout import echo_json

__all__ = ["COMMANDS", "CREATING_COMMANDS", "exec_command"]

#: Commands that may create data in an empty store, so ``exec`` creates a missing store for
#: them.  Any other command on a missing store fails with "no store at PATH" instead of leaving
#: an empty store behind.  (Not :meth:`rstore.Store.is_write_command`: XDEL, XACK or DEL write,
#: yet on a missing store they should fail rather than leave an empty store behind.)
CREATING_COMMANDS = frozenset({b"XADD", b"XGROUP", b"CONFIG"})


@click.command(
    "exec",
    context_settings={"allow_interspersed_args": False},
    short_help="Run any command; print the reply like redis-cli.",
)
@click.argument("command", metavar="CMD")
@click.argument("args", nargs=-1, metavar="[ARG]...")
@json_option
@unescape_option
@pass_opener
@click.pass_context
def exec_command(
    ctx: click.Context,
    opener: StoreOpener,
    command: str,
    args: tuple[str, ...],
    as_json: bool,
    unescape: bool,
) -> None:
    """Run CMD with its ARGs, as Store.execute does, and print the reply.

    The reply is printed the way redis-cli prints it on a terminal: "bulk" strings quoted
    with escapes (\\n, \\", \\xHH for bytes outside printable ASCII), (integer) N, status
    replies bare (OK), (nil), (empty array), and nested arrays numbered 1) 2) ...
    A refused command prints "(error) ERR ..." on stderr and exits with status 1.

    Options go before CMD: everything after CMD is passed to the command as it is, so
    arguments such as - + or -1 need no quoting.  With --json the reply is printed as JSON
    (see docs/cli.md for the mapping).

    \b
    Examples:
      rstore exec XADD events '*' user 42
      rstore exec XRANGE events - + COUNT 10
      rstore exec --json XINFO STREAM events
      rstore exec -e XADD bin '*' payload 'a\\x00b'
    """
    ctx.meta[ERROR_PREFIX] = "(error) "
    argv = [to_bytes(a, unescape, "ARG") for a in (command, *args)]
    with opener.open(create=argv[0].upper() in CREATING_COMMANDS) as store:
        reply = store.execute_raw(*argv)
    if as_json:
        echo_json(reply)
    else:
        click.echo(redis_cli_reply(reply), nl=False)


COMMANDS: list[click.Command] = [exec_command]
