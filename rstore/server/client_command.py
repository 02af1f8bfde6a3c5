"""CLIENT and its subcommands: ID, SETNAME, GETNAME, SETINFO, LIST, INFO, KILL, UNBLOCK,
NO-EVICT, NO-TOUCH, HELP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rstore import ResponseError
from rstore import messages as m

from .info import client_line
from .resp import Verbatim

if TYPE_CHECKING:
    from .client import Client
    from .server import Server

__all__ = ["client_command"]


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
        found = [c for c in server.clients.values() if c.addr == args[0].decode(errors="replace")]
        if not found:
            return _err(m.NO_SUCH_CLIENT)
        _close(server, me, found)
        return "OK"
    if len(args) % 2:
        return _err(m.SYNTAX)
    chosen = list(server.clients.values())
    skip_me = True
    for key, value in zip(args[::2], args[1::2]):
        key = key.lower()
        text = value.decode(errors="replace")
        if key == b"id":
            ident = _int(value)
            if ident is None or ident <= 0:
                return _err(m.CLIENT_ID_POSITIVE)
            chosen = [c for c in chosen if c.id == ident]
        elif key == b"addr":
            chosen = [c for c in chosen if c.addr == text]
        elif key == b"laddr":
            chosen = [c for c in chosen if c.laddr == text]
        elif key == b"user":
            chosen = [c for c in chosen if c.user == value]
        elif key == b"type":
            if value.lower() not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                return _err(m.UNKNOWN_CLIENT_TYPE.format(kind=text))
            chosen = chosen if value.lower() == b"normal" else []
        elif key == b"skipme":
            if value.lower() not in (b"yes", b"no"):
                return _err(m.SYNTAX)
            skip_me = value.lower() == b"yes"
        else:
            return _err(m.SYNTAX)
    if skip_me:
        chosen = [c for c in chosen if c is not me]
    _close(server, me, chosen)
    return len(chosen)


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
    if target is None or target.parked is None:
        return 0
    from rstore import NIL_ARRAY  # noqa: PLC0415

    server.unblock(target, NIL_ARRAY if how == b"timeout" else _err(m.UNBLOCKED))
    return 1


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
        chosen = list(server.clients.values())
        if len(args) >= 2 and args[0].lower() == b"id":
            ids = [_int(a) for a in args[1:]]
            if any(i is None or i <= 0 for i in ids):
                return _err(m.INVALID_CLIENT_ID)
            chosen = [c for c in chosen if c.id in ids]
        elif len(args) == 2 and args[0].lower() == b"type":
            chosen = chosen if args[1].lower() == b"normal" else []
        elif args:
            return _err(m.SYNTAX)
        return Verbatim("".join(client_line(server, c) + "\n" for c in chosen).encode())
    if sub == b"kill":
        return _kill(server, me, args) if args else _arity(sub)
    if sub == b"unblock":
        return _unblock(server, args)
    if sub in (b"no-evict", b"no-touch"):
        if len(args) != 1 or args[0].lower() not in (b"on", b"off"):
            return _err(m.SYNTAX)
        return "OK"
    return _err(m.UNKNOWN_SUBCOMMAND.format(sub=argv[1].decode(errors="replace"), cmd="CLIENT"))
