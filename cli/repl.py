"""``rstore exec`` without a command: a prompt like redis-cli's, or commands read from stdin.

On a terminal: the prompt is the store path (``./rstore-data> ``), lines are edited and
recalled with readline, and kept in a history file (:func:`history_path`) across sessions;
``quit``, ``exit`` or Ctrl-D leave, ``help`` lists what can be typed.  Lines are split as
redis-cli splits them (:func:`rstore_cli.params.split_line`).  Replies and errors print as
redis-cli prints them, on stdout: ``(error) ERR ...`` on a terminal, ``ERR ...`` and an empty
line in raw mode.  When stdin is not a terminal the same loop runs without a prompt or
history, one command a line, as ``valkey-cli < commands.txt`` does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

import rstore

from .context import StoreOpener
from .params import split_line

__all__ = ["COMMAND_NAMES", "HISTORY_ENV", "history_path", "run"]

#: Where the history goes instead of the default (empty: no history file).
HISTORY_ENV = "RSTORE_HISTFILE"
HISTORY_LENGTH = 1000

#: The commands rstore answers, for ``help`` (a test keeps it in step with the library).
COMMAND_NAMES = {
    "streams": (
        "XADD XRANGE XREVRANGE XLEN XREAD XDEL XDELEX XTRIM XSETID XINFO XCFGSET XIDMPRECORD"
    ),
    "groups": "XGROUP XREADGROUP XACK XACKDEL XNACK XPENDING XCLAIM XAUTOCLAIM",
    "keys": "DEL UNLINK RENAME RENAMENX EXISTS TYPE KEYS SCAN DBSIZE FLUSHALL DUMP RESTORE",
    "other": "PING ECHO CONFIG",
}

HELP = (
    "rstore {version}: type commands as in redis-cli, e.g. XRANGE events - + COUNT 10\n"
    "  arguments are split at spaces; quote them with \"...\" (escapes \\n \\xHH ...) or '...'\n"
    '  "help" shows this; "quit", "exit" or Ctrl-D leave; Up and Down recall earlier lines\n'
    "commands:\n{commands}"
)

Printer = Callable[[list[bytes], Any], None]  # (argv, reply)


def history_path() -> str | None:
    """``$RSTORE_HISTFILE`` if set (empty: none), else ``$XDG_STATE_HOME/rstore/history``,
    else ``~/.local/state/rstore/history``."""
    if HISTORY_ENV in os.environ:
        return os.environ[HISTORY_ENV] or None
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "rstore", "history")


def _help_text() -> str:
    commands = "".join(f"  {group}: {names}\n" for group, names in COMMAND_NAMES.items())
    return HELP.format(version=rstore.__version__, commands=commands)


class _Session:
    """The store, opened by the first command that may open it and kept open."""

    def __init__(self, opener: StoreOpener, creating: frozenset[bytes]) -> None:
        self.opener = opener
        self.creating = creating
        self.store: rstore.Store | None = None

    def execute(self, argv: list[bytes]) -> Any:
        if self.store is None:
            self.store = self.opener.open(create=argv[0].upper() in self.creating)
        return self.store.execute_raw(*argv)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _terminal_lines(prompt: str) -> Iterator[str]:
    """Lines typed at the prompt, with readline's editing and a history file."""
    try:
        import readline  # noqa: PLC0415 (only for a terminal; absent on some platforms)
    except ImportError:  # pragma: no cover
        readline = None  # type: ignore[assignment]
    path = history_path()
    if readline is not None and path is not None:
        readline.set_history_length(HISTORY_LENGTH)
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
    while True:
        try:
            line = input(prompt)
        except EOFError:  # Ctrl-D
            sys.stdout.write("\n")
            return
        if readline is not None and path is not None and line.strip():
            with contextlib.suppress(OSError):
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                with open(path, "ab"):  # append_history_file needs the file
                    pass
                readline.append_history_file(1, path)
                readline.set_history_length(HISTORY_LENGTH)
        yield line


def _prompt(opener: StoreOpener) -> str:
    """``./rstore-data> ``, or ``./rstore-data[3]> `` on database 3 (as redis-cli shows it)."""
    return f"{opener.store_path}[{opener.db}]> " if opener.db else f"{opener.store_path}> "


def _stdin_lines(stdin: IO[bytes]) -> Iterator[bytes]:
    for line in stdin:
        yield line.rstrip(b"\r\n")


def run(
    opener: StoreOpener,
    creating: frozenset[bytes],
    print_reply: Printer,
    raw_errors: bool,
) -> None:
    """The loop: read, split, run, print, until ``quit``, ``exit`` or the end of input."""
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if interactive:
        lines: Iterator[bytes] = (os.fsencode(line) for line in _terminal_lines(_prompt(opener)))
    else:
        lines = _stdin_lines(sys.stdin.buffer)
    session = _Session(opener, creating)
    out = sys.stdout.buffer
    try:
        for line in lines:
            try:
                argv = split_line(line)
            except ValueError:
                out.write(b"Invalid argument(s)\n")
                out.flush()
                continue
            if not argv:
                continue
            name = argv[0].lower()
            if name in (b"quit", b"exit"):
                return
            if name == b"help":
                out.write(_help_text().encode())
                out.flush()
                continue
            try:
                reply = session.execute(argv)
            except rstore.RStoreError as exc:
                # a refused command: Valkey's exact line (str() is redis-py's, without "ERR ")
                message = exc.line if isinstance(exc, rstore.ResponseError) else str(exc)
                text = " ".join(message.split("\n"))
                out.write(f"{text}\n\n".encode() if raw_errors else f"(error) {text}\n".encode())
            else:
                print_reply(argv, reply)
            out.flush()
    finally:
        session.close()
