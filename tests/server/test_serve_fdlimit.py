"""``rstore serve`` under an open-files limit below what maxclients needs (issue 13), beside
valkey-server 8.0 under the same limit: maxclients is lowered with Valkey's warnings, every
connection gets PONG or exactly ``-ERR max number of clients reached`` (never silence), the log
stays a few lines, CONFIG GET / SET maxclients answer as Valkey's; and INFO memory's fields.

The limit is set in the child (``preexec_fn``), never in the test process."""

from __future__ import annotations

import errno
import logging
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from valkey_server import HOST, ValkeyServer, find_server_binary, free_port

from rstore.server.info import human_bytes
from rstore.server.limits import ACCEPT_LOG_INTERVAL_S, AcceptErrors, clients_allowed

REFUSED = b"-ERR max number of clients reached\r\n"
LIMIT = 80  # open files: valkey keeps 48 clients, rstore (80 - 32 - 8) // 2 = 20

needs_valkey = pytest.mark.skipif(find_server_binary() is None, reason="needs valkey-server")


def _limit(soft: int, hard: int | None = None) -> Callable[[], None]:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, soft if hard is None else hard))

    return set_limit


class Rstore:
    """``rstore serve`` as a process under an open-files limit, its log in a file."""

    def __init__(self, tmp: Path, preexec: Callable[[], None], *args: str) -> None:
        self.port = free_port()
        self.log = tmp / "serve.log"
        self.stderr = tmp / "serve.err"
        argv = [sys.executable, "-m", "rstore_cli", "--store", str(tmp / "s"), "serve",
                "--port", str(self.port), "--sync", "everysec", "--logfile", str(self.log),
                *args]  # fmt: skip
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=err,
                stdin=subprocess.DEVNULL,
                preexec_fn=preexec,  # noqa: PLW1509 (runs before exec only)
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((HOST, self.port), timeout=5) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(100) == b"+PONG\r\n":
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(self.stderr.read_text())
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the process this test started, by its PID
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Rstore]:
    """Asked for Valkey's default 10000 clients, explicitly: so warned as Valkey warns."""
    server = Rstore(tmp_path, _limit(LIMIT), "--maxclients", "10000")
    yield server
    server.stop()


@pytest.fixture
def valkey() -> Iterator[ValkeyServer]:
    if find_server_binary() is None:
        pytest.skip("needs valkey-server")
    with ValkeyServer(preexec_fn=_limit(LIMIT)) as server:
        yield server


def _burst(port: int, count: int) -> Counter[bytes]:
    """``count`` connections at once, each sending PING: what each got within 5 s (the reply
    and whether the server then closed it)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection((HOST, port), timeout=5)
        sock.sendall(b"PING\r\n")
        socks.append(sock)
    got: Counter[bytes] = Counter()
    deadline = time.monotonic() + 5
    for sock in socks:
        data = b""
        try:
            while not data.endswith(b"\r\n"):
                sock.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = sock.recv(100)
                if not chunk:
                    break
                data += chunk
            if data == REFUSED:  # then closed by the server
                sock.settimeout(max(deadline - time.monotonic(), 0.01))
                data += b"<closed>" if sock.recv(100) == b"" else b"<open>"
        except TimeoutError:
            data += b"<no answer>"
        except ConnectionResetError:
            data += b"<closed>"
        got[data] += 1
    for sock in socks:
        sock.close()
    return got


def _call(port: int, *args: str) -> Any:
    """The reply as sent (redis-py's reply callbacks off)."""
    conn = redis.Connection(port=port, socket_timeout=10, protocol=2)
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        conn.disconnect()


def _info(port: int, section: str) -> dict[str, Any]:
    with redis.Redis(port=port, socket_timeout=10) as client:
        return client.info(section)


def _error(port: int, *args: str) -> str:
    with pytest.raises(redis.ResponseError) as info:
        _call(port, *args)
    return str(info.value)


def _warnings(lines: list[str]) -> list[str]:
    """The maxclients warnings of a log (rstore's or valkey's), digits as N."""
    wanted = ("You requested maxclients", "Server can't set maximum", "Current maximum open")
    texts = [line[line.index(w) :] for line in lines for w in wanted if w in line]
    return [re.sub(r"\d+", "N", t) for t in texts]


def test_a_burst_over_the_limit_gets_pong_or_refused_and_a_small_log(
    served: Rstore, valkey: ValkeyServer
) -> None:
    maxclients = int(_call(served.port, "CONFIG", "GET", "maxclients")[1])
    assert maxclients == clients_allowed(LIMIT, 1) == 20
    got = _burst(served.port, 4 * maxclients)
    assert got == {b"+PONG\r\n": maxclients, REFUSED + b"<closed>": 3 * maxclients}
    valkey_max = int(valkey.call(b"CONFIG", b"GET", b"maxclients")[1])  # type: ignore[index]
    assert valkey_max == LIMIT - 32
    assert _burst(valkey.port, 4 * maxclients) == {  # the fixture's connection is one
        b"+PONG\r\n": valkey_max - 1,
        REFUSED + b"<closed>": 4 * maxclients - valkey_max + 1,
    }
    time.sleep(1.5)  # a flood would show by now (asyncio retries a failed accept each second)
    assert redis.Redis(port=served.port).ping()  # the refused ones have left: served again
    served.stop()
    lines = served.log_lines()
    assert len(lines) <= 6, lines  # 3 warnings, serving, stopped
    assert not any("Traceback" in line or "ERROR" in line for line in lines), lines
    with open(valkey.log_path, errors="replace") as f:
        assert _warnings(lines) == _warnings(f.read().splitlines())
    assert len(_warnings(lines)) == 3
    assert f"maxclients has been reduced to {maxclients} " in lines[2]


def test_blocked_readers_at_the_limit_leave_room_to_refuse_and_to_wake(served: Rstore) -> None:
    """Each client may hold a second descriptor while parked in a blocking read: with every
    slot but one parked, new connections are still refused in words and a write wakes all."""
    maxclients = int(_info(served.port, "clients")["maxclients"])
    results: list[Any] = []

    def read(i: int) -> None:
        with redis.Redis(port=served.port, socket_timeout=30) as reader:
            results.append(reader.xread({"s": "$"}, block=20000))

    readers = [threading.Thread(target=read, args=(i,)) for i in range(maxclients - 1)]
    with redis.Redis(port=served.port, socket_timeout=10) as writer:
        writer.ping()
        for thread in readers:
            thread.start()
        deadline = time.monotonic() + 20
        while writer.info("clients")["blocked_clients"] < maxclients - 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _burst(served.port, 10) == {REFUSED + b"<closed>": 10}
        writer.xadd("s", {"f": "v"}, id="1-1")
        for thread in readers:
            thread.join(30)
    assert results == [[[b"s", [(b"1-1", {b"f": b"v"})]]]] * (maxclients - 1)
    served.stop()
    assert not any("Traceback" in line for line in served.log_lines())


def test_config_maxclients_as_valkey_answers_it(served: Rstore, valkey: ValkeyServer) -> None:
    port = served.port
    for server_port in (port, valkey.port):
        assert _call(server_port, "CONFIG", "SET", "maxclients", "10") == b"OK"
        assert _call(server_port, "CONFIG", "GET", "maxclients") == [b"maxclients", b"10"]
        assert _call(server_port, "CONFIG", "GET", "maxcl*") == [b"maxclients", b"10"]
    for bad in ("abc", "0", "-1", "4294967296", "1.5"):
        assert _error(port, "CONFIG", "SET", "maxclients", bad) == _error(
            valkey.port, "CONFIG", "SET", "maxclients", bad
        )
    assert _error(port, "CONFIG", "SET", "maxclients", "5", "maxclients", "6") == _error(
        valkey.port, "CONFIG", "SET", "maxclients", "5", "maxclients", "6"
    )
    too_many = _error(port, "CONFIG", "SET", "maxclients", "1000")
    assert too_many == (
        "CONFIG SET failed (possibly related to argument 'maxclients') - The operating system "
        "is not able to handle the specified number of clients, try with "
        f"{clients_allowed(LIMIT, 1)}"
    )
    on_valkey = _error(valkey.port, "CONFIG", "SET", "maxclients", "1000")
    assert re.sub(r"\d+$", "N", too_many) == re.sub(r"\d+$", "N", on_valkey)
    # a refused CONFIG SET changes nothing, the store's settings named with it included
    assert _error(port, "CONFIG", "SET", "stream-node-max-entries", "7", "maxclients", "1000")
    assert _call(port, "CONFIG", "GET", "stream-node-max-entries", "maxclients") == [
        b"stream-node-max-entries", b"100", b"maxclients", b"10"
    ]  # fmt: skip
    assert _call(port, "CONFIG", "SET", "maxclients", "3", "stream-node-max-entries", "7") == b"OK"
    assert _info(port, "clients")["maxclients"] == 3
    assert _call(port, "CONFIG", "GET", "stream-node-max-entries") == [
        b"stream-node-max-entries", b"7"
    ]  # fmt: skip
    time.sleep(0.5)  # the connections of the calls above are gone
    with redis.Redis(port=port) as a, redis.Redis(port=port) as b, redis.Redis(port=port) as c:
        assert a.ping() and b.ping() and c.ping()
        assert _burst(port, 1) == {REFUSED + b"<closed>": 1}


@pytest.mark.parametrize("soft", [LIMIT, 20000])
def test_a_default_start_is_quiet(tmp_path: Path, soft: int) -> None:
    """maxclients not asked for: fitted to the open-files limit without a warning (one line at
    debug level says so); the same limit with --maxclients warns (the test above)."""
    server = Rstore(tmp_path, _limit(soft), "--loglevel", "debug")
    try:
        maxclients = int(_call(server.port, "CONFIG", "GET", "maxclients")[1])
    finally:
        server.stop()
    assert maxclients == clients_allowed(soft, 1)
    lines = [line.split(" ", 3)[2:] for line in server.log_lines()]
    assert [level for level, _ in lines] == ["DEBUG", "INFO", "INFO"], lines
    assert lines[0][1] == (
        f"maxclients is {maxclients}: the open-files limit ({soft}) holds no more clients "
        "(give --maxclients to ask for more)"
    )
    assert server.stderr.read_text() == ""
    (tmp_path / "again").mkdir()
    quiet = Rstore(tmp_path / "again", _limit(soft))  # the default log level: nothing of it
    quiet.stop()
    assert [line.split(" ", 3)[2] for line in quiet.log_lines()] == ["INFO", "INFO"]


def test_the_limit_is_raised_when_the_hard_limit_allows(tmp_path: Path) -> None:
    server = Rstore(tmp_path, _limit(64, 1024), "--maxclients", "100")
    try:
        assert _call(server.port, "CONFIG", "GET", "maxclients") == [b"maxclients", b"100"]
        needed = 32 + 8 + 2 * 100
        limits = Path(f"/proc/{server.proc.pid}/limits")
        if limits.exists():
            row = next(r for r in limits.read_text().splitlines() if "open files" in r)
            assert row.split()[3:5] == [str(needed), "1024"]
    finally:
        server.stop()
    assert [line.split(" ", 3)[3] for line in server.log_lines()][:1] == [
        f"Increased maximum number of open files to {needed} (it was originally set to 64)."
    ]


def test_a_limit_too_low_for_one_client_refuses_to_start(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "rstore_cli", "--store", str(tmp_path / "s"), "serve",
            "--port", str(free_port())]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=60, preexec_fn=_limit(40), check=False)
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        "Error: Your current 'ulimit -n' of 40 is not enough for the server to start. Please "
        "increase your open file limit to at least 20040. Exiting."
    )


def test_failed_accepts_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    handler = AcceptErrors(logging.getLogger("test.accept"), clock=lambda: now[0])
    others: list[dict[str, Any]] = []

    class Loop:
        def default_exception_handler(self, context: dict[str, Any]) -> None:
            others.append(context)

    failed = {"message": "socket.accept() out of system resource", "socket": object(),
              "exception": OSError(errno.EMFILE, "Too many open files")}  # fmt: skip
    caplog.set_level(logging.WARNING, logger="test.accept")
    for _ in range(1000):
        handler(Loop(), failed)
        now[0] += 0.005  # 1000 failures in 5 s
    assert len(caplog.records) == 1
    now[0] += ACCEPT_LOG_INTERVAL_S
    handler(Loop(), failed)
    assert [r.getMessage() for r in caplog.records] == [
        "cannot accept connections: Too many open files (1 failed accepts since the last "
        "report); new connections wait",
        "cannot accept connections: Too many open files (1000 failed accepts since the last "
        "report); new connections wait",
    ]
    other = {"message": "something else", "exception": ValueError("x")}
    handler(Loop(), other)
    assert others == [other] and len(caplog.records) == 2


def _memory(port: int) -> dict[str, Any]:
    return _info(port, "memory")


@needs_valkey
def test_info_memory_is_the_current_and_the_peak_rss(tmp_path: Path) -> None:
    with ValkeyServer() as valkey:
        text = valkey.call(b"INFO", b"memory")
    assert isinstance(text, bytes)
    valkey_fields = [n.split(":")[0] for n in text.decode().split("\r\n") if ":" in n]
    served = Rstore(tmp_path, _limit(2000))
    try:
        before = _memory(served.port)
        assert list(before) == [f for f in valkey_fields if f in before]  # Valkey's, in order
        assert {"used_memory", "used_memory_rss", "used_memory_peak"} <= set(before)
        for field in ("used_memory", "used_memory_rss", "used_memory_peak",
                      "total_system_memory"):  # fmt: skip
            assert before[f"{field}_human"] == human_bytes(before[field])
        assert before["used_memory"] == before["used_memory_rss"] <= before["used_memory_peak"]
        status = Path(f"/proc/{served.proc.pid}/status")
        if status.exists():  # Linux: what the kernel says the process holds now
            rss_kib = next(int(line.split()[1]) for line in status.read_text().splitlines()
                           if line.startswith("VmRSS:"))  # fmt: skip
            assert abs(before["used_memory"] - rss_kib * 1024) < 4 * 1024 * 1024
        clients = [redis.Redis(port=served.port) for _ in range(500)]
        try:
            for client in clients:
                client.ping()
            during = _memory(served.port)
        finally:
            for client in clients:
                client.close()
        assert during["used_memory"] > before["used_memory"]
        assert during["used_memory"] <= during["used_memory_peak"]
        assert during["used_memory_peak"] >= before["used_memory_peak"]
    finally:
        served.stop()


def test_human_bytes_as_valkey_writes_them() -> None:
    # Valkey 8.0.1's INFO memory of a fresh server: 439696 -> 429.39K, 12222464 -> 11.66M,
    # 25276510208 -> 23.54G, 0 -> 0B, 200 -> 200B
    assert [human_bytes(n) for n in (439696, 12222464, 25276510208, 0, 200)] == [
        "429.39K", "11.66M", "23.54G", "0B", "200B"
    ]  # fmt: skip
