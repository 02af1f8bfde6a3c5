"""The command table: names, arities and flags as data, and argv dispatch.

Each command module registers its handlers with :func:`command` / :func:`subcommand` when it is
imported.  :data:`COMMAND_MODULES` says which module defines each command: :func:`lookup` imports
it on first use (start-up: a CLI call or a process that runs one command loads one family of
commands, not all), and :func:`load_all` imports them all (for listings and tests).  A handler
takes a :class:`Context` (the transaction and the command's time snapshot) and the full argv as
``bytes``, and returns the internal reply (:mod:`rstore.commands.reply`) or raises a
:class:`~rstore.errors.ResponseError`.

Lookup reproduces Redis's checks before a command runs: unknown command, unknown subcommand of
a container command, and arity (positive = exact, negative = at least).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rstore import messages
from rstore.commands.argv import cstr
from rstore.errors import ResponseError
from rstore.storage.records.txn import Txn

__all__ = [
    "COMMANDS",
    "COMMAND_MODULES",
    "CommandSpec",
    "Context",
    "batch_handler",
    "command",
    "load_all",
    "lookup",
    "lookup_all",
    "subcommand",
]


class Context:
    """What a handler runs against: one transaction, one time snapshot (ms), whether it runs
    inside a batch (where BLOCK is ignored, as in MULTI), and the keys it signals to blocked
    readers once the transaction commits."""

    __slots__ = ("in_batch", "now_ms", "relaxed", "signals", "txn", "wire", "writes")

    def __init__(
        self, txn: Txn, now_ms: int, *, in_batch: bool = False, wire: bool = False
    ) -> None:
        self.txn = txn
        self.now_ms = now_ms
        self.in_batch = in_batch
        #: the caller writes RESP (a network front): a reply may be given as its RESP bytes
        #: (:class:`~rstore.commands.reply.RespReply`), made without a Python object per item
        self.wire = wire
        self.signals: set[bytes] | None = set()
        self.writes = 0  # writing commands run (counted by executor.run_specs)
        self.relaxed = 0  # of them, those whose writes need not wait for the disk

    def relax(self) -> None:
        """The running command's writes need not wait for the disk (a blocking XREADGROUP
        that only recorded its consumer).  The transaction commits relaxed only when every
        writing command in it said so (:meth:`relaxed_only`): another client's XADD in the
        same batch is flushed before it is acknowledged."""
        self.relaxed += 1

    def relaxed_only(self) -> bool:
        """Whether every writing command that ran asked for a relaxed commit."""
        return 0 < self.relaxed >= self.writes

    def signal(self, key: bytes) -> None:
        """Wake readers blocked on ``key`` after commit."""
        if self.signals is not None:
            self.signals.add(key)

    def signal_all(self) -> None:
        """Wake every blocked reader after commit (FLUSHALL)."""
        self.signals = None


Handler = Callable[[Context, list[bytes]], Any]
#: Runs ``batch[start:stop]``, consecutive commands of one spec inside a batch, in order;
#: their replies, a ResponseError instance in place of a refused command's.
BatchHandler = Callable[[Context, list[list[bytes]], int, int], list[Any]]


@dataclass
class CommandSpec:
    """One command (or subcommand) as data."""

    name: str  # lower-case full name, e.g. "xadd" or "xinfo|stream"
    arity: int
    write: bool
    handler: Handler | None = None
    # replies that may hold NIL_ARRAY below the top level: how to turn them public
    public: Callable[[Any], Any] | None = None
    subcommands: dict[bytes, CommandSpec] = field(default_factory=dict)
    summary: str = ""
    # consecutive commands of this spec in a batch, at once (same replies as one by one)
    batch: BatchHandler | None = None


COMMANDS: dict[bytes, CommandSpec] = {}

#: The module of :mod:`rstore.commands` that defines each command (a test checks it is exact).
COMMAND_MODULES: dict[bytes, str] = {
    **dict.fromkeys((b"dump", b"restore"), "dump"),
    **dict.fromkeys(
        (
            b"del",
            b"unlink",
            b"rename",
            b"renamenx",
            b"exists",
            b"type",
            b"keys",
            b"scan",
            b"dbsize",
            b"flushall",
        ),
        "keyspace",
    ),
    **dict.fromkeys((b"ping", b"echo", b"config"), "server"),
    **dict.fromkeys((b"xlen", b"xrange", b"xrevrange", b"xread"), "read"),
    b"xadd": "append",
    **dict.fromkeys((b"xcfgset", b"xidmprecord"), "idempotency"),
    b"xtrim": "trim",
    **dict.fromkeys((b"xdel", b"xdelex", b"xackdel"), "delete"),
    b"xsetid": "setid",
    **dict.fromkeys((b"xclaim", b"xautoclaim"), "claim"),
    b"xgroup": "groups",
    b"xinfo": "info",
    **dict.fromkeys((b"xack", b"xnack", b"xpending"), "pending"),
    b"xreadgroup": "readgroup",
}


def _load(module: str) -> None:
    importlib.import_module(f"rstore.commands.{module}")


def load_all() -> dict[bytes, CommandSpec]:
    """Import every command module; the complete :data:`COMMANDS`."""
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        _load(module)
    return COMMANDS


def command(
    name: str,
    arity: int,
    *,
    write: bool = False,
    public: Callable[[Any], Any] | None = None,
    summary: str = "",
) -> Callable[[Handler], Handler]:
    """Register a top-level command handler."""

    def register(fn: Handler) -> Handler:
        COMMANDS[name.encode()] = CommandSpec(name, arity, write, fn, public, summary=summary)
        return fn

    return register


def batch_handler(name: str) -> Callable[[BatchHandler], BatchHandler]:
    """Register how consecutive ``name`` commands inside a batch run together (registered
    with :func:`command` first).  It must give exactly the replies, errors and effects of
    running them one by one; it only saves the per-command work."""

    def register(fn: BatchHandler) -> BatchHandler:
        COMMANDS[name.encode()].batch = fn
        return fn

    return register


def container(name: str, arity: int = -2, summary: str = "") -> CommandSpec:
    """Register (or fetch) a container command such as XINFO or XGROUP."""
    key = name.encode()
    spec = COMMANDS.get(key)
    if spec is None:
        spec = CommandSpec(name, arity, False, summary=summary)
        COMMANDS[key] = spec
    return spec


def subcommand(
    parent: str, name: str, arity: int, *, write: bool = False
) -> Callable[[Handler], Handler]:
    """Register a subcommand handler (``XINFO STREAM`` is ``subcommand("xinfo", "stream", -3)``)."""

    def register(fn: Handler) -> Handler:
        spec = container(parent)
        spec.subcommands[name.encode()] = CommandSpec(f"{parent}|{name}", arity, write, fn)
        if write:
            spec.write = True
        return fn

    return register


def _unknown_command(argv: list[bytes]) -> ResponseError:
    args = ""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += "'" + messages.sanitize(arg, 128 - len(args)) + "' "
    return messages.error(messages.UNKNOWN_COMMAND, name=messages.sanitize(argv[0], 128), args=args)


def _wrong_arity(spec: CommandSpec) -> ResponseError:
    """Redis's error for a wrong argument count (``arity``: positive = exact, negative = at
    least; the callers check it inline, on every command's path)."""
    return messages.error(messages.WRONG_ARITY, name=spec.name)


def lookup(argv: list[bytes]) -> CommandSpec:
    """The spec that will run ``argv``; raises Redis's errors for unknown names and arity."""
    name = argv[0].lower() if argv else b""
    spec = COMMANDS.get(name)
    if spec is None and name in COMMAND_MODULES:
        _load(COMMAND_MODULES[name])
        spec = COMMANDS.get(name)
    if spec is None:
        if not argv:
            raise messages.error(messages.EMPTY_COMMAND)
        raise _unknown_command(argv)
    if spec.subcommands:
        if len(argv) == 1:
            raise messages.error(messages.WRONG_ARITY, name=spec.name)
        sub = spec.subcommands.get(argv[1].lower())
        if sub is None:
            raise messages.error(
                messages.UNKNOWN_SUBCOMMAND,
                sub=messages.sanitize(argv[1], 128),
                cmd=cstr(argv[0]).decode("utf-8", "surrogateescape").upper(),
            )
        spec = sub
    arity, argc = spec.arity, len(argv)
    if argc != arity if arity > 0 else argc < -arity:
        raise _wrong_arity(spec)
    return spec


def subcommand_syntax_error(argv: list[bytes]) -> ResponseError:
    """``unknown subcommand or wrong number of arguments for '<sub>'. Try <CMD> HELP.``"""
    return messages.error(
        messages.SUBCOMMAND_SYNTAX,
        sub=messages.sanitize(argv[1], 128),
        cmd=cstr(argv[0]).decode("utf-8", "surrogateescape").upper(),
    )


def lookup_all(batch: list[list[bytes]]) -> list[CommandSpec]:
    """:func:`lookup` of every argv of a batch (the first refusal raises).  A command spelled
    as the one before it reuses its spec, only the arity checked again -- unless it is a
    container (XGROUP, XINFO, CONFIG), whose subcommand is looked up each time."""
    specs: list[CommandSpec] = []
    name: bytes | None = None  # the spelling whose spec can be reused
    spec: CommandSpec | None = None
    arity = 0
    for argv in batch:
        if name is not None and spec is not None and argv and argv[0] == name:
            argc = len(argv)
            if argc != arity if arity > 0 else argc < -arity:
                raise _wrong_arity(spec)
        else:
            spec = lookup(argv)
            name = argv[0] if COMMANDS.get(argv[0].lower()) is spec else None
            arity = spec.arity
        specs.append(spec)
    return specs
