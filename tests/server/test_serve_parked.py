"""Parked blocking reads of ``rstore serve`` where no client can tell them from Valkey's but a
user would notice a fault: a read whose wake-up never comes is still served by the server's
once-a-second look again, and a parked reader that leaves gives back its watch (no descriptor
kept per departed reader) while the server goes on waking the others."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
import redis
from served import ServedStore
from valkey_server import HOST

import rstore
from rstore.server import parked

#: XREAD BLOCK 0 STREAMS k $, as a client sends it
_XREAD_FOREVER = (
    b"*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n$1\r\nk\r\n$1\r\n$\r\n"
)


def _wait_blocked(client: redis.Redis, count: int) -> None:
    deadline = time.monotonic() + 10
    while client.info("clients")["blocked_clients"] != count:
        assert time.monotonic() < deadline, f"never {count} blocked clients"
        time.sleep(0.01)


def test_a_parked_read_whose_wakeup_never_comes_is_served_by_the_look_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No wake-up descriptor (the store's waiter table refused it) and its poll put off for an
    hour: the write still reaches the parked read within the once-a-second look again."""
    from rstore.storage.waiting import waiters

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(waiters.Waiter, "__init__", refuse)
    monkeypatch.setattr(parked, "POLL_S", 3600.0)
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        reader, writer = redis.Redis(port=served.port), redis.Redis(port=served.port)
        writer.xadd("k", {"f": "v"}, id="1-1")
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.append(reader.xread({"k": "$"}, block=10_000)))
        thread.start()
        _wait_blocked(writer, 1)
        started = time.monotonic()
        writer.xadd("k", {"f": "w"}, id="2-1")
        thread.join(10)
        waited = time.monotonic() - started
        assert got == [[[b"k", [(b"2-1", {b"f": b"w"})]]]]
        assert waited < parked.RECHECK_S + 0.5, f"the parked read took {waited:.2f} s"


def test_a_parked_reader_that_leaves_gives_its_watch_back(tmp_path: Path) -> None:
    """Readers park and hang up, again and again: each one's watch is closed (one left to the
    garbage collector would warn, and warnings fail the tests), the server's process holds no
    more descriptors than after the first one, and a reader parked afterwards is woken at
    once."""
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        writer = redis.Redis(port=served.port)
        writer.ping()

        def park_and_leave() -> None:
            with socket.create_connection((HOST, served.port)) as sock:
                sock.sendall(_XREAD_FOREVER)
                _wait_blocked(writer, 1)
            _wait_blocked(writer, 0)

        park_and_leave()  # what the first watch opens for good (the store's waiter table)
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(5):
            park_and_leave()
        assert len(os.listdir("/proc/self/fd")) == before
        reader = redis.Redis(port=served.port)
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.append(reader.xread({"k": "$"}, block=10_000)))
        thread.start()
        _wait_blocked(writer, 1)
        started = time.monotonic()
        writer.xadd("k", {"f": "v"}, id="1-1")
        thread.join(10)
        assert got == [[[b"k", [(b"1-1", {b"f": b"v"})]]]]
        assert time.monotonic() - started < 0.5  # woken, not found by the look again
