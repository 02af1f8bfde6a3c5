"""WATCH through ``rstore serve`` beside valkey-server: EXEC answers nil when a watched key was
changed by another client or by the watching client itself, runs when nothing changed, and
WATCH / UNWATCH / DISCARD / errors answer as Valkey's; a change by another process using the
store directory is seen too (rstore only: valkey has no such thing)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from valkey_server import HOST

import rstore

from .resp import RespClient

pytestmark = pytest.mark.oracle


def _scenario(port: int) -> list[Any]:
    out: list[Any] = []
    with RespClient(HOST, port) as me, RespClient(HOST, port) as other:
        me.execute("XADD", "k", "1-1", "f", "v")
        for change in (None, "other", "self", "group", "delete", "flush"):
            me.execute("XADD", "k", "*", "f", "again")
            me.execute("XGROUP", "CREATE", "k", f"g-{change}", "0")
            out.append(me.execute("WATCH", "k", "missing"))
            if change == "other":
                other.execute("XADD", "k", "*", "by", "other")
            elif change == "self":
                me.execute("XDEL", "k", "1-1")
            elif change == "group":
                other.execute("XREADGROUP", "GROUP", f"g-{change}", "c", "COUNT", "1",
                              "STREAMS", "k", ">")  # fmt: skip
            elif change == "delete":
                other.execute("DEL", "missing")  # deleting nothing changes nothing
            elif change == "flush":
                other.execute("FLUSHALL")
            out.append(me.execute("MULTI"))
            out.append(me.execute("EXISTS", "k"))
            out.append(me.execute("EXEC"))
        out.append(me.execute("WATCH", "k"))
        out.append(me.execute("UNWATCH"))
        other.execute("XADD", "k", "*", "f", "v")
        me.execute("MULTI")
        out.append(me.execute("EXEC"))  # unwatched: runs
        out.append(me.execute("WATCH"))
        me.execute("MULTI")
        out.append(me.execute("WATCH", "k"))
        out.append(me.execute("DISCARD"))
        out.append(me.execute("UNWATCH", "x"))
    return out


def test_watch_answers_as_valkey(ports: dict[str, Any]) -> None:
    assert _scenario(ports["rstore"]) == _scenario(ports["valkey"])


def test_a_write_by_another_process_is_seen(ports: dict[str, Any]) -> None:
    with RespClient(HOST, ports["rstore"]) as me:
        me.execute("XADD", "k", "1-1", "f", "v")
        assert me.execute("WATCH", "k") == "OK"
        code = "import rstore, sys; rstore.Store(sys.argv[1]).execute('XADD', 'k', '2-2', 'f', 'w')"
        subprocess.run([sys.executable, "-c", code, ports["path"]], check=True, timeout=60)
        me.execute("MULTI")
        me.execute("XLEN", "k")
        assert me.execute("EXEC") is rstore.NIL_ARRAY
        me.execute("WATCH", "k")
        me.execute("MULTI")
        me.execute("XLEN", "k")
        assert me.execute("EXEC") == [2]
