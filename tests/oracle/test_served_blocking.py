"""Blocking reads through ``rstore serve``, beside valkey-server: a parked XREAD / XREADGROUP
is woken by another client's write and by a write of another process on the same store,
answers nil at its timeout, is ended by CLIENT UNBLOCK, and learns of its stream's deletion
with Valkey's reply; other clients are served meanwhile; parked clients are served in the
order they blocked; a parked group reader that hangs up takes no entry."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from valkey_server import HOST

import rstore

from .resp import ErrorReply, RespClient

pytestmark = pytest.mark.oracle


def _blocked(port: int, *argv: Any) -> tuple[threading.Thread, list[Any], RespClient]:
    """``argv`` sent on a new connection, its reply awaited in a thread."""
    client = RespClient(HOST, port)
    got: list[Any] = []
    client.send(*argv)
    thread = threading.Thread(target=lambda: got.append(client.receive()), daemon=True)
    thread.start()
    return thread, got, client


def _wait_blocked(port: int, count: int = 1) -> None:
    with RespClient(HOST, port) as c:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            info = c.execute("INFO", "clients")
            if f"blocked_clients:{count}".encode() in info:
                return
            time.sleep(0.01)
    raise AssertionError(f"no {count} blocked clients")


@pytest.mark.parametrize("side", ["valkey", "rstore"])
def test_a_write_by_another_client_wakes_the_reader(ports: dict[str, Any], side: str) -> None:
    port = ports[side]
    thread, got, conn = _blocked(port, "XREAD", "BLOCK", "10000", "STREAMS", "s", "$")
    _wait_blocked(port)
    with RespClient(HOST, port) as other:
        assert other.execute("PING") == "PONG"  # others are served meanwhile
        other.execute("XADD", "s", "5-1", "f", "v")
    thread.join(10)
    conn.close()
    assert got == [[[b"s", [[b"5-1", [b"f", b"v"]]]]]]


def test_a_write_by_another_process_wakes_the_reader(ports: dict[str, Any]) -> None:
    port = ports["rstore"]
    with RespClient(HOST, port) as c:
        c.execute("XGROUP", "CREATE", "jobs", "g", "$", "MKSTREAM")
    thread, got, conn = _blocked(
        port, "XREADGROUP", "GROUP", "g", "w", "BLOCK", "10000", "STREAMS", "jobs", ">"
    )
    _wait_blocked(port)
    started = time.monotonic()
    code = "import rstore, sys; rstore.Store(sys.argv[1]).execute('XADD', 'jobs', '7-0', 'n', '1')"
    subprocess.run([sys.executable, "-c", code, ports["path"]], check=True, timeout=60)
    thread.join(10)
    conn.close()
    assert got == [[[b"jobs", [[b"7-0", [b"n", b"1"]]]]]]
    assert time.monotonic() - started < 8  # woken, not timed out


def _timeout_unblock_deletion(port: int) -> dict[str, Any]:
    replies: dict[str, Any] = {}
    with RespClient(HOST, port) as c:
        started = time.monotonic()
        replies["timeout"] = c.execute("XREAD", "BLOCK", "100", "STREAMS", "s", "$")
        assert 0.09 < time.monotonic() - started < 5
        for how in ("TIMEOUT", "ERROR"):
            thread, got, conn = _blocked(port, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
            _wait_blocked(port)
            lines = c.execute("CLIENT", "LIST").splitlines()
            blocked = [line for line in lines if b" flags=b " in line]
            ident = blocked[0].split(b" ")[0].split(b"=")[1]
            replies[f"unblock {how}"] = c.execute("CLIENT", "UNBLOCK", ident, how)
            thread.join(10)
            conn.close()
            replies[f"reply {how}"] = got
        replies["unblock nobody"] = c.execute("CLIENT", "UNBLOCK", "999999")
        c.execute("XGROUP", "CREATE", "d", "g", "$", "MKSTREAM")
        thread, got, conn = _blocked(
            port, "XREADGROUP", "GROUP", "g", "w", "BLOCK", "0", "STREAMS", "d", ">"
        )
        _wait_blocked(port)
        c.execute("DEL", "d")
        thread.join(10)
        conn.close()
        replies["deleted"] = got
    return replies


def test_timeout_unblock_and_deletion_answer_as_valkey(ports: dict[str, Any]) -> None:
    expected = _timeout_unblock_deletion(ports["valkey"])
    actual = _timeout_unblock_deletion(ports["rstore"])
    assert actual == expected
    assert actual["timeout"] is rstore.NIL_ARRAY and actual["reply TIMEOUT"] == [rstore.NIL_ARRAY]
    assert actual["reply ERROR"] == [ErrorReply("UNBLOCKED client unblocked via CLIENT UNBLOCK")]


def test_parked_readers_are_served_in_the_order_they_blocked(ports: dict[str, Any]) -> None:
    port = ports["rstore"]
    with RespClient(HOST, port) as c:
        c.execute("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
        readers = []
        for i in range(4):
            readers.append(
                _blocked(
                    port,
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    f"c{i}",
                    "COUNT",
                    "1",
                    "BLOCK",
                    "10000",
                    "STREAMS",
                    "q",
                    ">",
                )
            )
            _wait_blocked(port, i + 1)
        for i in range(4):
            c.execute("XADD", "q", f"{i + 1}-0", "n", str(i))
        for thread, _got, conn in readers:
            thread.join(10)
            conn.close()
    served = [got[0][0][1][0][0] for _t, got, _c in readers]
    assert served == [b"1-0", b"2-0", b"3-0", b"4-0"]


def _group_reader_leaves(port: int) -> dict[str, Any]:
    replies: dict[str, Any] = {}
    with RespClient(HOST, port) as c:
        c.execute("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
        gone = RespClient(HOST, port)
        gone.send("XREADGROUP", "GROUP", "g", "gone", "BLOCK", "0", "STREAMS", "q", ">")
        _wait_blocked(port)
        gone.close()
        _wait_blocked(port, 0)
        c.execute("XADD", "q", "1-0", "n", "1")
        replies["next reader"] = c.execute("XREADGROUP", "GROUP", "g", "stays", "STREAMS", "q", ">")
        replies["pending"] = c.execute("XPENDING", "q", "g")
    return replies


def test_a_parked_group_reader_that_hangs_up_takes_no_entry(ports: dict[str, Any]) -> None:
    expected = _group_reader_leaves(ports["valkey"])
    actual = _group_reader_leaves(ports["rstore"])
    assert actual == expected
    assert actual["pending"] == [1, b"1-0", b"1-0", [[b"stays", b"1"]]]


def _pipelined_xadds(port: int, count: int) -> list[Any]:
    """``count`` XADDs (IDs ``1-0`` ...) sent in ONE write, as a client that pipelines
    concurrent calls sends them; their replies."""
    with RespClient(HOST, port) as c:
        c.send_all([("XADD", "s", f"{i}-0", "n", str(i)) for i in range(1, count + 1)])
        return [c.receive() for _ in range(count)]


def _served_per_command(port: int) -> dict[str, Any]:
    with RespClient(HOST, port) as c:
        c.execute("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    readers = [
        _blocked(port, "XREADGROUP", "GROUP", "g", f"c{k}", "COUNT", "5", "BLOCK", "10000",
                 "STREAMS", "s", ">")
        for k in range(2)
    ]  # fmt: skip
    _wait_blocked(port, 2)
    readers.append(_blocked(port, "XREAD", "COUNT", "100", "BLOCK", "10000", "STREAMS", "s", "$"))
    _wait_blocked(port, 3)
    added = _pipelined_xadds(port, 10)
    for thread, _, conn in readers:
        thread.join(10)
        conn.close()
    with RespClient(HOST, port) as c:
        pending = c.execute("XPENDING", "s", "g")
    return {"added": added, "got": [got for _, got, _ in readers], "pending": pending}


def test_blocked_readers_are_served_after_each_pipelined_command(ports: dict[str, Any]) -> None:
    """Ten XADDs in one write: Valkey serves blocked readers after each command, so the two
    group readers (COUNT 5) get ``1-0`` and ``2-0``, and an XREAD COUNT 100 gets ``1-0``
    alone -- not the whole pipeline's entries once it is done."""
    valkey = _served_per_command(ports["valkey"])
    assert valkey["got"] == [
        [[[b"s", [[b"1-0", [b"n", b"1"]]]]]],
        [[[b"s", [[b"2-0", [b"n", b"2"]]]]]],
        [[[b"s", [[b"1-0", [b"n", b"1"]]]]]],
    ]
    assert _served_per_command(ports["rstore"]) == valkey
