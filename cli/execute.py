"""``rstore exec``: run any command, print the reply like redis-cli (or as JSON); without a
command, a prompt (see :mod:`rstore_cli.repl`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from .context import (
    ERROR_PREFIX,
    StoreOpener,
    json_option,
    pass_opener,
    unescape_option,
)
from .format import raw_reply, redis_cli_reply
from .jsonout import dumps
from .params import to_bytes
from .replies import json_reply

__all__ = ["COMMANDS", "CREATING_COMMANDS", "exec_command", "reply_printer"]

#: Commands that may create data in an empty store, so ``exec`` creates a missing store for
#: them.  Any other command on a missing store fails with "no store at PATH" instead of leaving
#: an empty store behind.  (Not :meth:`rstore.Store.is_write_command`: XDEL, XACK or DEL write,
#: yet on a missing store they should fail rather than leave an empty store behind.)
CREATING_COMMANDS = frozenset({b"XADD", b"XGROUP", b"CONFIG"})


def reply_printer(raw: bool, as_json: bool) -> Callable[[list[bytes], Any], None]:
    """How ``exec`` prints the reply of a command (``argv``): JSON (the mapping of every
    ``--json``, :func:`rstore_cli.replies.json_reply`), redis-cli's raw format, or its terminal
    format."""
    out = sys.stdout.buffer

    def show(argv: list[bytes], reply: Any) -> None:
        sys.stdout.flush()
        if as_json:
            out.write(dumps(json_reply(argv, reply)).encode() + b"\n")
        elif raw:
            out.write(raw_reply(reply) + b"\n")
        else:
            out.write(redis_cli_reply(reply).encode())  # ASCII: every other byte is escaped
        out.flush()

    return show


@click.command(
    "exec",
    context_settings={"allow_interspersed_args": False},
    short_help="Run any command; print the reply like redis-cli.",
)
@click.argument("command", metavar="[CMD", required=False)
@click.argument("args", nargs=-1, metavar="[ARG]...]")
@click.option(
    "--raw/--no-raw",
    "raw",
    default=None,
    help="Print replies as redis-cli --raw does: strings as they are, one array element a "
    "line.  The default when stdout is not a terminal, as in redis-cli; --no-raw keeps the "
    "terminal format in a pipe.",
)
@json_option
@unescape_option
@pass_opener
@click.pass_context
def exec_command(
    ctx: click.Context,
    opener: StoreOpener,
    command: str | None,
    args: tuple[str, ...],
    raw: bool | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Run CMD with its ARGs, as Store.execute does, and print the reply; without CMD, read
    commands at a prompt (or from stdin).

    On a terminal the reply is printed the way redis-cli prints it there: "bulk" strings
    quoted with escapes (\\n, \\", \\xHH for bytes outside printable ASCII), (integer) N,
    status replies bare (OK), (nil), (empty array), and nested arrays numbered 1) 2) ...
    Into a pipe or a file it is printed as redis-cli does there (--raw): strings as they are,
    integers bare, one array element a line.  A refused command prints "(error) ERR ..." on
    stderr and exits with status 1.

    Options go before CMD: everything after CMD is passed to the command as it is, so
    arguments such as - + or -1 need no quoting.  With --json the reply is printed as JSON,
    in the shapes of every --json output: entries as objects, XINFO and CONFIG GET maps as
    objects, XPENDING and XAUTOCLAIM as `pending` and `autoclaim` print them (docs/cli.md).

    Without CMD: a prompt showing the store path, with line editing and a history file
    (~/.local/state/rstore/history, or $RSTORE_HISTFILE); arguments are split and quoted as
    in redis-cli; "help" lists the commands, "quit", "exit" or Ctrl-D leave.  Errors print
    like replies and the prompt goes on.  When stdin is not a terminal, one command is read
    per line, without a prompt.

    \b
    Examples:
      rstore exec XADD events '*' user 42
      rstore exec XRANGE events - + COUNT 10
      rstore exec --raw XRANGE events - + | grep -c user
      rstore exec --json XINFO STREAM events
      rstore exec -e XADD bin '*' payload 'a\\x00b'
      rstore exec
      rstore exec < commands.txt
    """
    if raw is None:
        raw = not sys.stdout.isatty()
    show = reply_printer(raw, as_json)
    if command is None:
        from . import repl  # noqa: PLC0415 (only when there is no command)

        repl.run(opener, CREATING_COMMANDS, show, raw_errors=raw and not as_json)
        return
    ctx.meta[ERROR_PREFIX] = "(error) "
    argv = [to_bytes(a, unescape, "ARG") for a in (command, *args)]
    with opener.open(create=argv[0].upper() in CREATING_COMMANDS) as store:
        reply = store.execute_raw(*argv)
    show(argv, reply)


COMMANDS: list[click.Command] = [exec_command]
