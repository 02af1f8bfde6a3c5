"""Connection commands of ``rstore serve`` beside valkey-server, raw replies compared:
MULTI / EXEC / DISCARD (queued replies, errors inside, EXECABORT), AUTH with requirepass and
the limits before it, HELLO's errors, SELECT, CLIENT SETNAME / GETNAME / ID, QUIT."""

from __future__ import annotations

from pathlib import Path

import pytest
from newer_fields import raw_as_older_server
from served import ServedStore
from valkey_server import HOST, ValkeyServer

import rstore

from .resp import RespClient, encode_command
from .test_served_protocol import _exchange

pytestmark = pytest.mark.oracle


def _script(*commands: tuple[str, ...]) -> list[bytes]:
    return [b"".join(encode_command(list(c)) for c in commands)]


SCRIPTS = {
    "multi exec": _script(
        ("MULTI",),
        ("XADD", "s", "1-1", "f", "v"),
        ("XADD", "s", "1-1", "f", "v"),
        ("XLEN", "s"),
        ("PING",),
        ("EXEC",),
        ("XLEN", "s"),
    ),
    "execabort": _script(
        ("MULTI",),
        ("XADD", "s", "1-1", "f", "v"),
        ("NOSUCH",),
        ("XADD", "s"),
        ("EXEC",),
        ("EXISTS", "s"),
    ),
    "nesting and strays": _script(
        ("EXEC",),
        ("DISCARD",),
        ("MULTI",),
        ("MULTI",),
        ("XLEN", "s"),
        ("DISCARD",),
        ("MULTI", "x"),
    ),
    "select and flushdb inside multi, in their place": _script(
        ("MULTI",),
        ("XADD", "s", "1-1", "f", "v"),
        ("SELECT", "1"),
        ("XADD", "s", "2-1", "f", "v"),
        ("XADD", "s", "3-1", "f", "v"),
        ("XLEN", "s"),
        ("FLUSHDB",),
        ("XLEN", "s"),
        ("XADD", "s", "4-1", "f", "v"),
        ("SELECT", "0"),
        ("XRANGE", "s", "-", "+"),
        ("EXEC",),
        ("XRANGE", "s", "-", "+"),
        ("SELECT", "1"),
        ("XRANGE", "s", "-", "+"),
        ("FLUSHDB",),
    ),
    "save refused and bgsave scheduled inside multi": _script(
        ("MULTI",),
        ("SAVE",),
        ("EXEC",),
        ("MULTI",),
        ("BGSAVE", "SCHEDULE", "x"),
        ("EXEC",),
        ("MULTI",),
        ("BGSAVE",),
        ("EXEC",),
    ),
    "server config inside multi": _script(
        ("MULTI",),
        ("CONFIG", "GET", "maxclients"),
        ("CONFIG", "RESETSTAT"),
        ("XADD", "s", "1-1", "f", "v"),
        ("EXEC",),
    ),
    "hello errors": _script(("HELLO", "4"), ("HELLO", "x"), ("HELLO", "2", "BOGUS")),
    "select": _script(("SELECT", "0"), ("SELECT", "x"), ("SELECT",)),
    "client names": _script(
        ("CLIENT", "GETNAME"),
        ("CLIENT", "SETNAME", "a b"),
        ("CLIENT", "SETNAME", "job-1"),
        ("CLIENT", "GETNAME"),
        ("CLIENT", "NOPE"),
        ("CLIENT", "SETINFO", "LIB-NAME", "x y"),
        ("CLIENT", "SETINFO", "LIB-VER", "1.0"),
        ("CLIENT", "UNBLOCK", "x"),
    ),
    "auth without a password": _script(("AUTH", "pw"), ("AUTH", "default", "pw")),
    "quit": _script(("PING",), ("QUIT",), ("PING",)),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_same_bytes_back_as_valkey(servers: tuple[int, int], name: str) -> None:
    valkey_port, rstore_port = servers
    with RespClient(HOST, valkey_port) as c:
        c.execute("FLUSHALL")
    expected = _exchange(valkey_port, SCRIPTS[name])
    actual = _exchange(rstore_port, SCRIPTS[name])
    assert actual == expected


def test_requirepass(valkey_server: ValkeyServer, tmp_path: Path) -> None:
    """Before AUTH: NOAUTH, and at most 10 arguments (then the connection is closed).

    One command at a time: valkey-server 8.0.1 sends no reply at all for a refused AUTH that
    is pipelined behind other commands before it (the client then pairs replies with the
    wrong commands); rstore answers every command, so only unpipelined AUTH is compared."""
    script = [
        encode_command(list(c))
        for c in (
            ("PING",), ("XLEN", "s"), ("AUTH", "wrong"), ("AUTH", "someone", "pw"),
            ("AUTH", "s3cret"), ("PING",),
        )
    ]  # fmt: skip
    too_many = [b"*11\r\n"]
    with RespClient(HOST, valkey_server.port) as admin:
        admin.execute("CONFIG", "SET", "requirepass", "s3cret")
        try:
            expected = [_exchange(valkey_server.port, s) for s in (script, too_many)]
        finally:
            admin.execute("AUTH", "s3cret")
            admin.execute("CONFIG", "SET", "requirepass", "")
    with (
        rstore.Store(tmp_path / "store", sync=False) as store,
        ServedStore(store, requirepass="s3cret") as served,
    ):
        actual = [_exchange(served.port, s) for s in (script, too_many)]
    assert actual == expected


def test_read_only_and_read_write_users(valkey_server: ValkeyServer, tmp_path: Path) -> None:
    """ACL users in the subset rstore takes (``on >pw ~* +@read`` / ``+@all``): a read-only
    user runs read commands only (everything else, connection commands included, answers
    NOPERM as Valkey's @read user gets it); a read-write user writes."""
    script = [
        encode_command(list(c))
        for c in (
            ("XLEN", "s"), ("AUTH", "bob", "nope"), ("AUTH", "bob", "pw"), ("XLEN", "s"),
            ("XRANGE", "s", "-", "+"), ("XADD", "s", "1-1", "f", "v"),
            ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), ("FLUSHALL",),
            ("MULTI",), ("XLEN", "s"), ("XADD", "s", "2-1", "f", "v"), ("EXEC",),
            ("AUTH", "alice", "pw2"), ("XADD", "s", "1-1", "f", "v"), ("XLEN", "s"),
            ("AUTH", "carol", "x"), ("AUTH", "bob", "pw"), ("PING",), ("SELECT", "0"),
            ("CLIENT", "ID"), ("INFO",), ("CONFIG", "GET", "x"), ("TIME",), ("DBSIZE",),
            ("KEYS", "*"), ("TYPE", "s"), ("XINFO", "STREAM", "s"), ("XREAD", "STREAMS", "s", "0"),
            ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("WATCH", "s"), ("RESET",),
            ("XLEN", "s"),
        )
    ]  # fmt: skip
    with RespClient(HOST, valkey_server.port) as admin:
        admin.execute("FLUSHALL")
        admin.execute("ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@read")
        admin.execute("ACL", "SETUSER", "alice", "on", ">pw2", "~*", "+@all")
        try:
            expected = _exchange(valkey_server.port, script)
        finally:
            admin.execute("ACL", "DELUSER", "bob", "alice")
            admin.execute("FLUSHALL")
    users = [["bob", "on", ">pw", "~*", "+@read"], ["alice", "on", ">pw2", "~*", "+@all"]]
    with (
        rstore.Store(tmp_path / "store", sync=False) as store,
        ServedStore(store, users=users) as served,
    ):
        raw, closed = _exchange(served.port, script)
    assert (raw_as_older_server(raw), closed) == expected
