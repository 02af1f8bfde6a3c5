"""CLIENT and its subcommands: ID, SETNAME, GETNAME, SETINFO, LIST, INFO, KILL, UNBLOCK,
NO-EVICT, NO-TOUCH, HELP."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rstore import NIL_ARRAY, ResponseError
from rstore import messages as m

from .info import client_line
from .resp import Verbatim

if TYPE_CHECKING:
    from .client import Client
    from .server import Server

__all__ = ["client_command", "kill_here", "unblock_here"]


def _err(line: str) -> ResponseError:
    return ResponseError(line)


def _arity(sub: bytes) -> ResponseError:
    return _err(m.WRONG_ARITY.format(name="client|" + sub.decode(errors="replace")))


def _int(raw: bytes) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def _kill(server: Server, me: Client, args: list[bytes]) -> Any:
    if len(args) == 1:  # the old form: CLIENT KILL addr:port
        addr = args[0].decode(errors="replace")
        found = [c for c in server.clients.values() if c.addr == addr]
        _close(server, me, found)
        if not found and not server.elsewhere(b"kill", [b"addr", args[0]]):
            return _err(m.NO_SUCH_CLIENT)
        return "OK"
    matched = _kill_filter(args)
    if isinstance(matched, ResponseError):
        return matched
    match, skip_me = matched
    chosen = [c for c in server.clients.values() if match(c) and not (skip_me and c is me)]
    _close(server, me, chosen)
    return len(chosen) + server.elsewhere(b"kill", args)


def _kill_filter(args: list[bytes]) -> tuple[Callable[[Client], bool], bool] | ResponseError:
    """CLIENT KILL's filters (``ID``, ``ADDR``, ``LADDR``, ``USER``, ``TYPE``) as one test of
    a client, and whether to spare the caller (``SKIPME``); or the error they are."""
    if len(args) % 2:
        return _err(m.SYNTAX)
    wanted: list[tuple[str, object]] = []  # (attribute, value) a client must have
    nobody = False  # TYPE other than normal: no client of ours
    skip_me = True
    for key, value in zip(args[::2], args[1::2]):
        key = key.lower()
        text = value.decode(errors="replace")
        if key == b"id":
            ident = _int(value)
            if ident is None or ident <= 0:
                return _err(m.CLIENT_ID_POSITIVE)
            wanted.append(("id", ident))
        elif key == b"addr":
            wanted.append(("addr", text))
        elif key == b"laddr":
            wanted.append(("laddr", text))
        elif key == b"user":
            wanted.append(("user", value))
        elif key == b"type":
            if value.lower() not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                return _err(m.UNKNOWN_CLIENT_TYPE.format(kind=text))
            nobody = nobody or value.lower() != b"normal"
        elif key == b"skipme":
            if value.lower() not in (b"yes", b"no"):
                return _err(m.SYNTAX)
            skip_me = value.lower() == b"yes"
        else:
            return _err(m.SYNTAX)

    def match(c: Client) -> bool:
        return not nobody and all(getattr(c, attr) == value for attr, value in wanted)

    return match, skip_me


def kill_here(server: Server, args: list[bytes]) -> int:
    """Another worker's CLIENT KILL with ``args`` (valid: it checked them), on this worker's
    clients, from the thread that answers the other workers: how many it closes (in the
    loop, soon)."""
    matched = _kill_filter(args)
    assert not isinstance(matched, ResponseError) and server.loop is not None
    chosen = [c for c in list(server.clients.values()) if matched[0](c)]
    for c in chosen:
        server.loop.call_soon_threadsafe(server.close_client, c)
    return len(chosen)


def unblock_here(server: Server, ident: int, how: bytes) -> int:
    """Another worker's CLIENT UNBLOCK of client ``ident`` if it is this worker's and parked,
    from the thread that answers the other workers (done in the loop, soon): 1 or 0."""
    target = server.clients.get(ident)
    if target is None or target.parked is None or server.loop is None:
        return 0
    reply = NIL_ARRAY if how == b"timeout" else _err(m.UNBLOCKED)
    server.loop.call_soon_threadsafe(server.unblock, target, reply)
    return 1


def _close(server: Server, me: Client, clients: list[Client]) -> None:
    for c in clients:
        if c is me:
            me.closing = True  # after this reply
        else:
            server.close_client(c)


def _unblock(server: Server, args: list[bytes]) -> Any:
    if len(args) not in (1, 2):
        return _arity(b"unblock")
    ident = _int(args[0])
    if ident is None:
        return _err(m.NOT_INTEGER)
    how = args[1].lower() if len(args) == 2 else b"timeout"
    if how not in (b"timeout", b"error"):
        return _err(m.UNBLOCK_REASON)
    target = server.clients.get(ident)
    if target is None:  # another worker's, if any
        return server.elsewhere(b"unblock", [args[0], how])
    if target.parked is None:
        return 0
    server.unblock(target, NIL_ARRAY if how == b"timeout" else _err(m.UNBLOCKED))
    return 1


def _listed(server: Server, args: list[bytes]) -> Any:
    """CLIENT LIST [ID id ...] [TYPE type]: every worker's clients, by ID."""
    lines = [client_line(server, c) for c in server.clients.values()]
    lines += server.listed_elsewhere()
    if len(args) >= 2 and args[0].lower() == b"id":
        ids = [_int(a) for a in args[1:]]
        if any(i is None or i <= 0 for i in ids):
            return _err(m.INVALID_CLIENT_ID)
        lines = [line for line in lines if _line_id(line) in ids]
    elif len(args) == 2 and args[0].lower() == b"type":
        lines = lines if args[1].lower() == b"normal" else []
    elif args:
        return _err(m.SYNTAX)
    lines.sort(key=_line_id)
    return Verbatim("".join(line + "\n" for line in lines).encode())


def _line_id(line: str) -> int:
    """The client ID a CLIENT LIST line starts with (``id=N ...``)."""
    return int(line[3 : line.index(" ")])


def client_command(server: Server, me: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        return _err(m.WRONG_ARITY.format(name="client"))
    sub = argv[1].lower()
    args = argv[2:]
    if sub == b"id":
        return me.id if not args else _arity(sub)
    if sub == b"getname":
        return (me.name or None) if not args else _arity(sub)
    if sub == b"setname":
        if len(args) != 1:
            return _arity(sub)
        if not all(33 <= c <= 126 for c in args[0]):
            return _err(m.BAD_CLIENT_NAME)
        me.name = args[0]
        return "OK"
    if sub == b"setinfo":
        if len(args) != 2:
            return _arity(sub)
        attr = args[0].lower()
        if attr not in (b"lib-name", b"lib-ver"):
            return _err(m.UNRECOGNIZED_OPTION.format(option=args[0].decode(errors="replace")))
        if not all(33 <= c <= 126 for c in args[1]):
            return _err(m.BAD_LIB_INFO.format(attr=args[0].decode(errors="replace")))
        if attr == b"lib-name":
            me.lib_name = args[1]
        else:
            me.lib_ver = args[1]
        return "OK"
    if sub == b"info":
        return Verbatim((client_line(server, me) + "\n").encode()) if not args else _arity(sub)
    if sub == b"list":
        return _listed(server, args)
    if sub == b"kill":
        return _kill(server, me, args) if args else _arity(sub)
    if sub == b"unblock":
        return _unblock(server, args)
    if sub in (b"no-evict", b"no-touch"):
        if len(args) != 1 or args[0].lower() not in (b"on", b"off"):
            return _err(m.SYNTAX)
        return "OK"
    return _err(m.UNKNOWN_SUBCOMMAND.format(sub=argv[1].decode(errors="replace"), cmd="CLIENT"))
