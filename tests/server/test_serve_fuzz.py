"""Protocol fuzzing of ``rstore serve``: random bytes and mutated requests from many
connections at once.  The server must never crash or hang, must keep answering a well-behaved
client throughout, and must keep every write it acknowledged."""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from pathlib import Path

import pytest
import redis
from serve_process import Served
from served import ServedStore
from valkey_server import HOST

import rstore

VALID = [
    [b"XADD", b"fz", b"*", b"f", b"v"],
    [b"XRANGE", b"fz", b"-", b"+", b"COUNT", b"3"],
    [b"XREAD", b"COUNT", b"2", b"BLOCK", b"5", b"STREAMS", b"fz", b"0"],
    [b"XGROUP", b"CREATE", b"fz", b"g", b"0", b"MKSTREAM"],
    [b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"2", b"STREAMS", b"fz", b">"],
    [b"MULTI"],
    [b"EXEC"],
    [b"HELLO", b"3"],
    [b"CLIENT", b"LIST"],
    [b"PING"],
]


def _encode(argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def _mutated(rng: random.Random) -> bytes:
    data = bytearray(b"".join(_encode(rng.choice(VALID)) for _ in range(rng.randint(1, 4))))
    for _ in range(rng.randint(0, 4)):
        action = rng.random()
        at = rng.randrange(len(data) + 1)
        if action < 0.4 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif action < 0.7:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        else:
            del data[at : at + rng.randint(1, 8)]
    return bytes(data)


def _fuzzer(port: int, seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    for _ in range(rounds):
        try:
            with socket.create_connection((HOST, port), timeout=2) as sock:
                kind = rng.random()
                if kind < 0.2:
                    payload = bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
                elif kind < 0.3:
                    payload = b"*" + str(rng.choice([3, 1 << 40, -5])).encode() + b"\r\n$9999"
                else:
                    payload = _mutated(rng)
                for i in range(0, len(payload), rng.randint(1, 64)):
                    sock.sendall(payload[i : i + 64])
                sock.settimeout(0.05)
                try:
                    while sock.recv(65536):
                        pass
                except (TimeoutError, ConnectionResetError):
                    pass
        except OSError:
            pass


def _fuzz(port: int) -> list[bytes]:
    """Six fuzzers against ``port`` while a well-behaved client writes; what it was
    acknowledged, checked to be stored in order and nothing else."""
    witness = redis.Redis(port=port, socket_timeout=10)
    acked: list[bytes] = []
    fuzzers = [
        threading.Thread(target=_fuzzer, args=(port, seed, 60), daemon=True) for seed in range(6)
    ]
    for t in fuzzers:
        t.start()
    started = time.monotonic()
    while any(t.is_alive() for t in fuzzers):
        acked.append(witness.xadd("witness", {"n": str(len(acked))}))
        assert time.monotonic() - started < 120, "the fuzzers did not finish"
    for t in fuzzers:
        t.join(30)
    assert witness.ping() is True  # still serving
    assert len(acked) > 10
    stored = [entry_id for entry_id, _ in witness.xrange("witness")]
    assert stored == acked  # every acknowledged write, in order, nothing else
    return acked


def test_fuzzed_connections_never_hurt_the_server_or_its_writes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with rstore.Store(tmp_path / "store") as store, ServedStore(store) as served:
        acked = _fuzz(served.port)
    with rstore.Store(tmp_path / "store") as reopened:
        assert reopened.xlen("witness") == len(acked)
    # no exception escaped into the event loop, nothing failed inside the server
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_fuzzed_connections_never_hurt_two_workers_or_their_writes(tmp_path: Path) -> None:
    """The same against ``rstore serve --workers 2``: the fuzzers' connections land on both
    workers; neither dies (none is started again), nothing is logged as an error."""
    with Served(tmp_path / "store", "--workers", "2") as served:
        acked = _fuzz(served.port)
        code, err = served.stop()
    assert code == 0, err
    assert "starting it again" not in err and "ERROR" not in err and "Traceback" not in err, err
    with rstore.Store(tmp_path / "store") as reopened:
        assert reopened.xlen("witness") == len(acked)
