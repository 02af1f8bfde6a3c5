"""Commands of the connection and the server, run by the event loop itself rather than the
store: HELLO, AUTH, SELECT, QUIT, RESET, CLIENT, INFO, COMMAND, MULTI / EXEC / DISCARD, SAVE,
BGSAVE, LASTSAVE, FLUSHDB, TIME.  Everything else goes to the store
(:meth:`rstore.Store.execute_many`), where the semantics of every store command live.

:func:`handler_for` says whether a request is one of these (or must be refused or queued
first: before AUTH, inside MULTI) and gives the function that answers it.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rstore import NIL_ARRAY, REDIS_VERSION, ResponseError, command_table
from rstore import messages as m

from .config import config_handler
from .info import info_text
from .names import full_name
from .resp import Map, Verbatim
from .shapes import resp3
from .watch import fingerprint

if TYPE_CHECKING:
    from .client import Client
    from .server import Server

__all__ = ["handler_for"]

Handler = Callable[[], Any]

_log = logging.getLogger("rstore.server")

#: what the server reports itself compatible with (INFO redis_version, HELLO version)
COMPAT_VERSION = REDIS_VERSION.encode()
#: what a read-only user may always run, and the store's commands outside @read
_ALWAYS = {b"auth", b"hello", b"quit", b"reset"}
_NOT_READ = {b"ping", b"echo", b"config"}
#: commands that may run before AUTH
_BEFORE_AUTH = {b"auth", b"hello", b"quit", b"reset"}
#: commands that end or refuse a MULTI block instead of being queued
_IN_MULTI = {b"exec", b"discard", b"multi", b"watch", b"quit", b"reset"}
#: refused inside MULTI ("Command not allowed inside a transaction"), as Valkey refuses them
_NO_MULTI = {b"save"}


def _err(line: str) -> ResponseError:
    return ResponseError(line)


def _arity(name: bytes) -> ResponseError:
    return _err(m.WRONG_ARITY.format(name=name.decode(errors="replace")))


def handler_for(server: Server, client: Client, argv: list[bytes]) -> Handler | None:
    """The function answering ``argv`` when the loop answers it itself, else ``None``."""
    if argv[0] in _store_names() and client.plain():
        return None  # the common case, with no more look-ups: a store command
    name = argv[0].lower()
    if not client.authenticated and name not in _BEFORE_AUTH:
        return lambda: _err(m.NOAUTH)
    if client.readonly:
        denied = refused(server, client, argv)
        if denied is not None:
            if client.multi is not None:
                client.multi_failed = True  # refused while queueing: EXEC answers EXECABORT
            return lambda: denied
    if client.multi is not None and name not in _IN_MULTI:
        return lambda: _queue(server, client, argv)
    return _server_handler(server, client, argv)


@functools.cache
def _store_names() -> frozenset[bytes]:
    """The store's commands the loop never answers itself, as clients spell them (lower and
    upper case; another spelling takes the longer way, with the same outcome)."""
    names = [n for n in command_table() if n not in _COMMANDS and n != b"config"]
    return frozenset(names + [n.upper() for n in names])


def _server_handler(server: Server, client: Client, argv: list[bytes]) -> Handler | None:
    """The server's own command, as a function, or ``None`` for a store command."""
    name = argv[0].lower()
    command = _COMMANDS.get(name)
    if command is None:
        if name == b"config" and len(argv) == 2 and argv[1].lower() == b"resetstat":
            return lambda: _resetstat(server)
        return config_handler(server, client, argv) if name == b"config" else None
    return lambda: command(server, client, argv)


def _resetstat(server: Server) -> Any:
    """CONFIG RESETSTAT: the command and error statistics start again from zero."""
    server.reset_counters()
    return "OK"


def _queue(server: Server, client: Client, argv: list[bytes]) -> Any:
    name = argv[0].lower()
    if name in _NO_MULTI:
        client.multi_failed = True
        return _err(m.MULTI_NESTED)
    if _server_handler(server, client, argv) is None:
        try:
            server.store_of(client.db).is_write_command(
                *argv
            )  # unknown or wrong arity: refused now
        except ResponseError as exc:
            client.multi_failed = True
            return exc
    assert client.multi is not None
    client.multi.append(argv)
    return "QUEUED"


def _multi(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 1:
        return _arity(b"multi")
    if client.multi is not None:
        client.multi_failed = True  # a command refused inside MULTI fails the transaction
        return _err(m.MULTI_NESTED)
    client.multi = []
    client.multi_failed = False
    return "OK"


def _discard(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 1:
        return _arity(b"discard")
    if client.multi is None:
        return _err(m.DISCARD_WITHOUT_MULTI)
    client.multi = None
    client.watched.clear()
    return "OK"


def _exec(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 1:
        return _arity(b"exec")
    queued, client.multi = client.multi, None
    if queued is None:
        return _err(m.EXEC_WITHOUT_MULTI)
    touched = _touched(server, client) if client.watched else False
    client.watched.clear()
    if client.multi_failed:
        return _err(m.EXECABORT)
    if touched:
        return NIL_ARRAY
    replies: list[Any] = []
    part: list[list[bytes]] = []  # stream commands in a row: one store transaction

    def run_part() -> None:
        db = client.db
        for a, reply in zip(part, server.store_of(db).execute_batch(part, raw=True)):
            if not isinstance(reply, ResponseError):
                server.versions.written(db, a, reply)
                if client.proto == 3:
                    reply = resp3(a, reply)
            replies.append(reply)
        part.clear()

    client.in_exec = True
    try:
        for a in queued:
            handler = _server_handler(server, client, a)
            if handler is None:
                part.append(a)
                continue
            if part:  # the stream commands before it run first (SELECT, FLUSHDB may follow)
                run_part()
            replies.append(handler())
        if part:
            run_part()
    except ResponseError as exc:
        return exc
    finally:
        client.in_exec = False
    return replies


def _watch(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        return _arity(b"watch")
    if client.multi is not None:
        client.multi_failed = True
        return _err(m.MULTI_NESTED)
    store = server.store_of(client.db)
    for key in argv[1:]:
        where = (client.db, key)
        if where not in client.watched:
            client.watched[where] = (
                server.versions.version(client.db, key),
                fingerprint(store, key),
            )
    return "OK"


def _unwatch(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 1:
        return _arity(b"unwatch")
    client.watched.clear()
    return "OK"


def _touched(server: Server, client: Client) -> bool:
    """Whether a key the client watches changed since (see :mod:`.watch`)."""
    for (db, key), (version, seen) in client.watched.items():
        if server.versions.version(db, key) != version:
            return True
        if fingerprint(server.store_of(db), key) != seen:
            return True
    return False


def log_in(server: Server, client: Client, name: str, password: str | None) -> bool:
    """Make ``name`` the client's user if ``password`` is right (``None``: only a user with no
    password, as a new connection is the default user's when it needs none)."""
    user = server.users.get(name)
    if user is None or not user.enabled:
        return False
    if password is None:
        if not user.nopass:
            return False
    elif not user.accepts(password):
        return False
    client.authenticated = True
    client.user = name.encode()
    client.readonly = user.readonly
    return True


def _auth(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) not in (2, 3):
        return _err(m.SYNTAX) if len(argv) > 3 else _arity(b"auth")
    name = argv[1].decode("utf-8", "replace") if len(argv) == 3 else "default"
    default = server.users["default"]
    if len(argv) == 2 and default.nopass and not default.passwords:
        return _err(m.NO_PASSWORD)
    if not log_in(server, client, name, argv[-1].decode("utf-8", "surrogateescape")):
        return _err(m.WRONGPASS)
    return "OK"


def refused(server: Server, client: Client, argv: list[bytes]) -> ResponseError | None:
    """The NOPERM error for what a read-only (``+@read``) user may not run: anything but the
    store's read commands, AUTH, HELLO, QUIT and RESET (Valkey's @read category)."""
    name = argv[0].lower()
    if name in _ALWAYS:
        return None
    if name not in _COMMANDS and name not in _NOT_READ:
        try:
            if not server.store_of(client.db).is_write_command(*argv):
                return None
        except ResponseError:
            return None  # unknown or wrong arity: the store answers that
    line = m.NOPERM.format(user=client.user.decode("utf-8", "replace"),
                           command=full_name(argv))  # fmt: skip
    return _err(m.EXECABORT_BECAUSE.format(reason=line) if name == b"exec" else line)


def _hello(server: Server, client: Client, argv: list[bytes]) -> Any:
    proto = client.proto
    i = 1
    if len(argv) > 1:
        try:
            proto = int(argv[1])
        except ValueError:
            return _err(m.PROTO_VERSION_NOT_INT)
        if proto not in (2, 3):
            return _err(m.NOPROTO)
        i = 2
    name = None
    while i < len(argv):
        option = argv[i].lower()
        if option == b"auth" and i + 2 < len(argv):
            failed = _auth(server, client, [b"AUTH", argv[i + 1], argv[i + 2]])
            if isinstance(failed, ResponseError):
                return failed
            i += 3
        elif option == b"setname" and i + 1 < len(argv):
            name = argv[i + 1]
            i += 2
        else:
            return _err(m.HELLO_SYNTAX.format(option=argv[i].decode(errors="replace")))
    if not client.authenticated:
        return _err(m.NOAUTH_HELLO)
    if name is not None:
        if not _valid_name(name):
            return _err(m.BAD_CLIENT_NAME)
        client.name = name
    client.proto = proto
    return Map(
        [
            (b"server", b"rstore"),
            (b"version", COMPAT_VERSION),
            (b"proto", proto),
            (b"id", client.id),
            (b"mode", b"standalone"),
            (b"role", b"master"),
            (b"modules", []),
        ]
    )


def _valid_name(name: bytes) -> bool:
    return all(33 <= c <= 126 for c in name)


def _select(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 2:
        return _arity(b"select")
    try:
        db = int(argv[1])
    except ValueError:
        return _err(m.NOT_INTEGER)
    if not 0 <= db < server.config.databases:
        return _err(m.DB_OUT_OF_RANGE)
    client.db = db
    return "OK"


def _quit(server: Server, client: Client, argv: list[bytes]) -> Any:
    client.closing = True
    return "OK"


def _reset(server: Server, client: Client, argv: list[bytes]) -> Any:
    client.multi = None
    client.watched.clear()
    client.proto = 2
    client.name = b""
    client.db = 0
    client.authenticated = client.readonly = False
    client.user = b"default"
    log_in(server, client, "default", None)
    return "RESET"


def _time(server: Server, client: Client, argv: list[bytes]) -> Any:
    if len(argv) != 1:
        return _arity(b"time")
    now = time.time_ns() // 1000
    return [b"%d" % (now // 1_000_000), b"%d" % (now % 1_000_000)]


def _flushdb(server: Server, client: Client, argv: list[bytes]) -> Any:
    """FLUSHDB: the client's database; FLUSHALL: every database."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"sync", b"async")):
        return _err(m.SYNTAX)
    if argv[0].lower() == b"flushdb":
        stores = [server.store_of(client.db)]
    else:
        stores = list(server.existing_stores().values())
    flushed = [client.db] if argv[0].lower() == b"flushdb" else range(server.config.databases)
    for db in flushed:
        server.versions.written(db, [b"FLUSHALL"])  # every watched key of it: touched
    reply: Any = "OK"
    for store in stores:
        reply = store.execute_many([[b"FLUSHALL", *argv[1:]]])[0]
        if isinstance(reply, ResponseError):
            return reply
    return reply


def _function(server: Server, client: Client, argv: list[bytes]) -> Any:
    """FUNCTION: there are no functions (no scripting): FLUSH has nothing to remove, LIST
    nothing to show."""
    sub = argv[1].lower() if len(argv) > 1 else b""
    if sub == b"flush" and len(argv) <= 3:
        return "OK"
    if sub == b"list":
        return []
    if not sub:
        return _arity(b"function")
    return _err(m.UNKNOWN_SUBCOMMAND.format(sub=argv[1].decode(errors="replace"), cmd="FUNCTION"))


#: held while a save checks for, or starts, a background save
_bgsaves_lock = threading.Lock()


def _save(server: Server, client: Client, argv: list[bytes]) -> Any:
    """SAVE and BGSAVE: every database to ``dir``/``dbfilename`` (``Store.save``), with Valkey
    8.0's replies: a failed save is a bare ``-ERR`` (BGSAVE's only logged), either while a
    background save runs is refused, LASTSAVE moves only on success."""
    background = argv[0].lower() == b"bgsave"
    if not background and len(argv) != 1:
        return _arity(b"save")
    if background and (len(argv) > 2 or (len(argv) == 2 and argv[1].lower() != b"schedule")):
        return _err(m.SYNTAX)
    path = os.path.join(server.config.dir, server.config.dbfilename)
    with _bgsaves_lock:
        release = server.hold_saves()
        if release is None:
            return _err(m.BGSAVE_IN_PROGRESS)
        if background:
            thread = threading.Thread(target=_save_now, args=(server, path, True, release),
                                      name="rstore-bgsave", daemon=True)  # fmt: skip
            server.bgsave = thread
            thread.start()
            # inside EXEC Valkey schedules it for after the transaction, and says so
            return "Background saving scheduled" if client.in_exec else "Background saving started"
    return "OK" if _save_now(server, path, False, release) else _err(m.SAVE_FAILED)


def _save_now(server: Server, path: str, background: bool, release: Callable[[], None]) -> bool:
    """Save, then ``release`` the hold on saving; whether it worked (a failure is logged, as
    Valkey logs it; INFO's ``rdb_last_bgsave_status`` follows background saves, and a SAVE
    that worked)."""
    try:
        server.store.save(path)
    except Exception as exc:  # the file could not be written: the store is untouched
        _log.warning("%s failed: %s", "Background saving" if background else "SAVE", exc)
        if background:
            server.last_bgsave_ok = False
        return False
    finally:
        release()
    server.last_bgsave_ok = True
    server.last_save = int(time.time())
    _log.info("%s", "Background saving terminated with success" if background else "DB saved")
    return True


def _lastsave(server: Server, client: Client, argv: list[bytes]) -> Any:
    """LASTSAVE: the Unix time of the last save that succeeded (start-up time before)."""
    return server.last_save if len(argv) == 1 else _arity(b"lastsave")


def _info(server: Server, client: Client, argv: list[bytes]) -> Any:
    return Verbatim(info_text(server, [a.lower() for a in argv[1:]]).encode())


def _command(server: Server, client: Client, argv: list[bytes]) -> Any:
    sub = argv[1].lower() if len(argv) > 1 else b""
    names = server.command_names()
    if sub == b"count":
        return len(names)
    if sub == b"docs":
        return Map([])
    if sub == b"list":
        return sorted(names)
    if sub in (b"", b"info"):
        wanted = [a.lower() for a in argv[2:]] if sub else sorted(names)
        return [names.get(n) for n in wanted]
    return _err(m.UNKNOWN_SUBCOMMAND.format(sub=argv[1].decode(errors="replace"), cmd="COMMAND"))


def _client(server: Server, client: Client, argv: list[bytes]) -> Any:
    from .client_command import client_command  # noqa: PLC0415 - its own module

    return client_command(server, client, argv)


_COMMANDS: dict[bytes, Callable[[Server, Client, list[bytes]], Any]] = {
    b"multi": _multi,
    b"exec": _exec,
    b"discard": _discard,
    b"watch": _watch,
    b"unwatch": _unwatch,
    b"auth": _auth,
    b"hello": _hello,
    b"select": _select,
    b"quit": _quit,
    b"reset": _reset,
    b"time": _time,
    b"flushdb": _flushdb,
    b"flushall": _flushdb,
    b"function": _function,
    b"save": _save,
    b"bgsave": _save,
    b"lastsave": _lastsave,
    b"info": _info,
    b"command": _command,
    b"client": _client,
}

#: the commands this module answers
COMMAND_NAMES = tuple(_COMMANDS)
