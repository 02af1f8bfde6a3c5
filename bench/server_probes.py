"""The latency and memory probes of ``bench/server.py``: the same code against ``rstore
serve`` and valkey-server.

* :class:`Conn` is a minimal client: a blocking socket (``TCP_NODELAY``) and hiredis's reply
  parser, a few µs a request, so that per-request latencies are the server's and the
  loopback's, not a client library's.  redis-py would add ~50 µs of Python to every sample.
* :func:`xadd_latency` and :func:`cycle_latency` time single requests (one client, no
  pipeline) with :func:`time.perf_counter_ns` around each round trip.
* :func:`memory_state` reads a server's resident memory (``VmRSS`` of ``/proc/PID/status``)
  and INFO's ``used_memory`` before and after connecting N clients that are idle (one PING
  each) or blocked (``XREAD BLOCK 0`` or ``XREADGROUP ... BLOCK 0``), waiting for INFO
  ``clients`` to show them all (``blocked_clients``), then disconnects them and checks that
  the server let go of them.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import time
from collections.abc import Iterator
from typing import Any

import hiredis
from common import percentiles

HOST = "127.0.0.1"
#: The XADD of the throughput rows (the same fields, so the same entry size).
XADD_ARGS = ("XADD", "bench", "*", "user", "12345", "action", "click")
#: The blocking reads of the memory probe; ``{i}`` is the client's number.
BLOCKED_READS = {
    "xread": ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
    "xreadgroup": ("XREADGROUP", "GROUP", "g", "c{i}", "BLOCK", "0", "STREAMS", "s", ">"),
}


class BenchError(RuntimeError):
    """The benchmark cannot go on; its message is one line for the user."""


class Conn:
    """One connection: send a command, read its reply (errors are raised)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def send(self, *args: str | bytes) -> None:
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg.encode() if isinstance(arg, str) else arg
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(out))

    def reply(self) -> Any:
        while True:
            got = self.reader.gets()
            if got is not False:
                if isinstance(got, hiredis.ReplyError):
                    raise BenchError(f"server error: {got}")
                return got
            data = self.sock.recv(1 << 16)
            if not data:
                raise BenchError("the server closed the connection")
            self.reader.feed(data)

    def call(self, *args: str | bytes) -> Any:
        self.send(*args)
        return self.reply()

    def info(self, section: str) -> dict[str, str]:
        text: bytes = self.call("INFO", section)
        pairs = (line.split(":", 1) for line in text.decode().splitlines() if ":" in line)
        return dict(pairs)

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def connection(port: int) -> Iterator[Conn]:
    conn = Conn(port)
    try:
        yield conn
    finally:
        conn.close()


# ----------------------------------------------------------------------------- latency


def _summary(samples_ns: list[int]) -> dict[str, float]:
    """p50/p90/p99/max in milliseconds, and the number of samples."""
    return {**percentiles(samples_ns, 1e-6), "n": len(samples_ns)}


def xadd_latency(port: int, requests: int, warmup: int = 100) -> dict[str, float]:
    """One client, no pipeline: the round trip of each ``XADD bench * ...``."""
    clock = time.perf_counter_ns
    samples = []
    with connection(port) as conn:
        for i in range(warmup + requests):
            t0 = clock()
            conn.call(*XADD_ARGS)
            if i >= warmup:
                samples.append(clock() - t0)
    return _summary(samples)


def cycle_latency(port: int, cycles: int, count: int = 10) -> dict[str, Any]:
    """One client, no pipeline: ``XREADGROUP GROUP g c COUNT count STREAMS cycle >`` then
    ``XACK`` of what it got, over a stream of ``cycles * count`` entries filled beforehand,
    until drained.  Each sample is one whole cycle (two round trips); the two commands'
    own percentiles come with it."""
    clock = time.perf_counter_ns
    with connection(port) as conn:
        conn.call("DEL", "cycle")
        entries = cycles * count
        for start in range(0, entries, 1000):
            batch = min(1000, entries - start)
            for i in range(batch):
                conn.send("XADD", "cycle", "*", "n", str(start + i))
            for _ in range(batch):
                conn.reply()
        conn.call("XGROUP", "CREATE", "cycle", "g", "0")
        whole, reads, acks = [], [], []
        done = 0
        while True:
            t0 = clock()
            got = conn.call("XREADGROUP", "GROUP", "g", "c", "COUNT", str(count),
                            "STREAMS", "cycle", ">")  # fmt: skip
            t1 = clock()
            if not got:
                break
            ids = [entry[0] for entry in got[0][1]]
            acked = conn.call("XACK", "cycle", "g", *ids)
            t2 = clock()
            if acked != len(ids):
                raise BenchError(f"XACK acknowledged {acked} of {len(ids)} entries")
            done += len(ids)
            whole.append(t2 - t0)
            reads.append(t1 - t0)
            acks.append(t2 - t1)
    if done != entries:
        raise BenchError(f"the group cycle read {done} of {entries} entries")
    return {**_summary(whole), "xreadgroup": _summary(reads), "xack": _summary(acks)}


# ----------------------------------------------------------------------------- memory


def rss_kib(pid: int) -> int:
    """The resident set of process ``pid`` (``VmRSS`` of ``/proc/PID/status``), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


def ensure_open_files(clients: int) -> None:
    """Raise this process's soft limit of open files (the servers it starts inherit it) to
    what ``clients`` connections need on both ends, or fail with one line."""
    need = clients * 2 + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise BenchError(
                f"{clients} clients need {need} open files, and the hard limit is {hard} "
                f"(raise it with `ulimit -Hn {need}` as root, or ask for fewer clients)"
            )
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def _wait_clients(admin: Conn, connected: int, blocked: int, what: str) -> None:
    """Wait (10 s at most) until INFO clients shows ``connected`` and ``blocked`` clients."""
    deadline = time.monotonic() + 10
    while True:
        info = admin.info("clients")
        seen = (int(info["connected_clients"]), int(info["blocked_clients"]))
        if seen == (connected, blocked):
            return
        if time.monotonic() > deadline:
            raise BenchError(
                f"{what}: INFO clients says connected_clients:{seen[0]} blocked_clients:"
                f"{seen[1]}, expected {connected} and {blocked}"
            )
        time.sleep(0.05)


def _used_memory(admin: Conn) -> int:
    return int(admin.info("memory")["used_memory"])


def memory_state(port: int, pid: int, state: str, clients: int, settle: float) -> dict[str, Any]:
    """RSS and ``used_memory`` of the server before and with ``clients`` clients in
    ``state`` (``idle``, ``xread`` or ``xreadgroup``), and after they disconnected."""
    with connection(port) as admin:
        maxclients = int(admin.info("clients")["maxclients"])
        if maxclients < clients + 1:
            raise BenchError(f"the server on port {port} takes {maxclients} clients, not "
                             f"{clients + 1} (its open-file limit or maxclients)")  # fmt: skip
        admin.call("XADD", "s", "*", "f", "v")
        admin.call("XGROUP", "CREATE", "s", "g", "$")
        time.sleep(settle)
        before, used_before = rss_kib(pid), _used_memory(admin)
        conns: list[Conn] = []
        try:
            for i in range(clients):
                conn = Conn(port)
                conns.append(conn)
                if state == "idle":
                    if conn.call("PING") != b"PONG":
                        raise BenchError("PING did not answer PONG")
                else:
                    conn.send(*(a.format(i=i) for a in BLOCKED_READS[state]))
            blocked = 0 if state == "idle" else clients
            _wait_clients(admin, clients + 1, blocked, f"{clients} {state} clients")
            time.sleep(settle)
            with_clients, used_with = rss_kib(pid), _used_memory(admin)
        finally:
            for conn in conns:
                conn.close()
        _wait_clients(admin, 1, 0, f"after {clients} {state} clients disconnected")
        time.sleep(settle)
        after, used_after = rss_kib(pid), _used_memory(admin)
    return {
        "state": state,
        "clients": clients,
        "rss_before_kib": before,
        "rss_kib": with_clients,
        "rss_after_kib": after,
        "per_client_kib": (with_clients - before) / clients,
        "used_memory_before": used_before,
        "used_memory": used_with,
        "used_memory_after": used_after,
        "used_memory_per_client": (used_with - used_before) / clients,
    }
