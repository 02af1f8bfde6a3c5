"""Limits of ``rstore serve``, each refusing as Valkey does and never letting memory grow
without bound: maxclients, the idle timeout, the query buffer of a client that sends an
endless request, the output buffer of a client that never reads."""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

import redis
from served import ServedStore
from valkey_server import HOST

import rstore


def _read_all(sock: socket.socket, timeout: float = 5.0) -> tuple[bytes, bool]:
    sock.settimeout(timeout)
    got = b""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return got, True
            got += data
    except TimeoutError:
        return got, False
    except ConnectionResetError:
        return got, True


def test_maxclients(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store, ServedStore(store, maxclients=2) as served:
        first = redis.Redis(port=served.port)
        second = redis.Redis(port=served.port)
        assert first.ping() and second.ping()
        with socket.create_connection((HOST, served.port)) as third:
            assert _read_all(third) == (b"-ERR max number of clients reached\r\n", True)
        first.close()
        time.sleep(0.2)
        assert redis.Redis(port=served.port).ping()


def test_idle_clients_are_closed_after_the_timeout(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store, ServedStore(store, timeout=1) as served:
        with socket.create_connection((HOST, served.port)) as idle:
            idle.sendall(b"PING\r\n")
            started = time.monotonic()
            got, closed = _read_all(idle, timeout=10)
            assert got == b"+PONG\r\n" and closed
            assert 0.9 < time.monotonic() - started < 5
        # a client blocked in a read is not idle
        blocked = redis.Redis(port=served.port)
        assert blocked.xread({"s": "$"}, block=2500) == []


def test_a_request_over_the_query_buffer_limit_closes_that_client_only(tmp_path: Path) -> None:
    limit = 1024 * 1024
    with (
        rstore.Store(tmp_path / "s") as store,
        ServedStore(store, client_query_buffer_limit=limit) as served,
    ):
        other = redis.Redis(port=served.port)
        with socket.create_connection((HOST, served.port)) as greedy:
            greedy.sendall(b"*3\r\n$4\r\nECHO\r\n$%d\r\n" % (4 * limit))
            chunk = b"x" * 65536
            closed = False
            try:
                for _ in range(2 * limit // len(chunk)):
                    greedy.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            if not closed:
                _, closed = _read_all(greedy)
            assert closed
        assert other.ping()


def test_a_client_that_never_reads_is_dropped_at_the_output_limit(tmp_path: Path) -> None:
    with (
        rstore.Store(tmp_path / "s", sync=False) as store,
        ServedStore(store, client_output_buffer_limit=256 * 1024) as served,
    ):
        writer = redis.Redis(port=served.port)
        writer.xadd("big", {"v": "x" * 10000}, id="1-1")
        with socket.create_connection((HOST, served.port)) as lazy:
            lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            request = b"*4\r\n$6\r\nXRANGE\r\n$3\r\nbig\r\n$1\r\n-\r\n$1\r\n+\r\n" * 2000
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                lazy.sendall(request)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                listed = writer.execute_command("CLIENT", "LIST")
                if listed.count(b"id=") == 1:
                    break
                time.sleep(0.1)
            assert listed.count(b"id=") == 1  # the lazy client was disconnected
        assert writer.xlen("big") == 1
