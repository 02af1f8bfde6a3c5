"""``rstore tail`` as a separate process, fed by writes from this one.

Every wait has a deadline: lines are read by a thread into a queue (``get`` with a timeout), and
every process is waited for with a timeout and killed if it outlives the test.
"""

from __future__ import annotations

import json
import queue
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore

TIMEOUT = 30.0  # seconds: the most any single step may take before the test fails


def _script() -> str:
    beside = Path(sys.executable).with_name("rstore")
    found = str(beside) if beside.exists() else shutil.which("rstore")
    if found is None:
        pytest.skip("the rstore console script is not installed (pip install -e .)")
    return found


class Tail:
    """A running ``rstore tail`` whose stdout lines arrive in a queue."""

    def __init__(self, store: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [_script(), "--store", str(store), "tail", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # end of output

    def line(self, timeout: float = TIMEOUT) -> bytes:
        """The next line; fails the test if none comes in time or the output ended."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no line from rstore tail within {timeout} s")
        assert line is not None, "rstore tail ended its output early"
        return line

    def json_line(self, timeout: float = TIMEOUT) -> Any:
        return json.loads(self.line(timeout))

    def finish(self) -> tuple[int, bytes]:
        """Wait for the process to exit; its status and stderr."""
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("rstore tail did not exit in time")
        assert self.proc.stderr is not None
        return self.proc.returncode, self.proc.stderr.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def tails() -> Iterator[list[Tail]]:
    """Started tails, killed at the end of the test whatever happened."""
    started: list[Tail] = []
    yield started
    for tail in started:
        tail.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with rstore.Store(path) as store:
        store.execute("XADD", "s", "1-0", "n", "1")
    return path


def start(tails: list[Tail], store: Path, *args: str) -> Tail:
    tail = Tail(store, *args)
    tails.append(tail)
    return tail


def test_tail_prints_entries_added_by_another_process(store_path: Path, tails: list[Tail]) -> None:
    """From $ (the default): only entries added after tail started, as they come."""
    tail = start(tails, store_path, "s", "--max", "3", "--json")
    added: list[str] = []
    got: list[Any] = []
    deadline = time.monotonic() + TIMEOUT
    with rstore.Store(store_path) as store:
        # tail has started when it prints; until then entries may come before its "$".
        while len(got) < 3 and time.monotonic() < deadline:
            added.append(store.xadd("s", {"n": len(added) + 2}).decode())
            try:
                line = tail.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            assert line is not None, "rstore tail ended its output early"
            got.append(json.loads(line))
        while len(got) < 3:
            got.append(tail.json_line())
    assert tail.finish() == (0, b"")
    ids = [entry["id"] for entry in got]
    assert "1-0" not in ids
    first = added.index(ids[0])
    assert ids == added[first : first + 3]  # consecutive: none missed
    assert got[0]["fields"] == [["n", str(first + 2)]]


def test_tail_from_zero_then_live(store_path: Path, tails: list[Tail]) -> None:
    with rstore.Store(store_path) as store:
        store.execute("XADD", "s", "2-0", "n", "2")
        tail = start(tails, store_path, "s", "--from", "0", "--max", "4")
        assert tail.line() == b"1-0  n=1\n"
        assert tail.line() == b"2-0  n=2\n"
        # tail is now waiting (or about to): these wake it.
        store.execute("XADD", "s", "3-0", "n", "3")
        assert tail.line() == b"3-0  n=3\n"
        store.execute("XADD", "s", "4-0", "text", "two words")
        assert tail.line() == b'4-0  text="two words"\n'
    assert tail.finish() == (0, b"")


def test_tail_group_acks_what_it_printed(store_path: Path, tails: list[Tail]) -> None:
    with rstore.Store(store_path) as store:
        store.xgroup_create("s", "g", "0")
        store.xreadgroup("g", "worker", {"s": ">"})  # 1-0 is pending for worker: its history
        tail = start(tails, store_path, "s", "--group", "g", "--consumer", "worker", "--json")
        assert tail.json_line()["id"] == "1-0"
        store.execute("XADD", "s", "2-0", "n", "2")
        assert tail.json_line()["id"] == "2-0"
        store.execute("XADD", "s", "3-0", "n", "3")
        store.execute("XADD", "s", "4-0", "n", "4")
        assert [tail.json_line()["id"] for _ in range(2)] == ["3-0", "4-0"]
        # Acknowledged right after printing (the batch is acked before tail waits again).
        deadline = time.monotonic() + TIMEOUT
        while store.xpending("s", "g")["pending"] and time.monotonic() < deadline:
            time.sleep(0.01)
        tail.proc.send_signal(signal.SIGTERM)
        assert tail.finish() == (143, b"")
        assert store.xpending("s", "g")["pending"] == 0
        info = store.xinfo_groups("s")[0]
        assert info["last-delivered-id"] == b"4-0"


def test_tail_group_max_stops_and_acks(store_path: Path, tails: list[Tail]) -> None:
    with rstore.Store(store_path) as store:
        store.xgroup_create("s", "g", "$")
        tail = start(tails, store_path, "s", "--group", "g", "--consumer", "c", "--max", "3")
        for i in range(2, 6):  # one more than --max: it stays undelivered
            store.execute("XADD", "s", f"{i}-0", "n", str(i))
        assert [tail.line() for _ in range(3)] == [b"2-0  n=2\n", b"3-0  n=3\n", b"4-0  n=4\n"]
        assert tail.finish() == (0, b"")
        assert store.xpending("s", "g")["pending"] == 0
        assert store.xinfo_groups("s")[0]["last-delivered-id"] == b"4-0"


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_tail_stops_on_signals_without_traceback(
    store_path: Path, tails: list[Tail], signum: int, status: int
) -> None:
    tail = start(tails, store_path, "s", "--from", "0")
    assert tail.line() == b"1-0  n=1\n"  # running and about to wait
    tail.proc.send_signal(signum)
    code, err = tail.finish()
    assert (code, err) == (status, b"")


def test_tail_ends_when_stdout_is_closed(store_path: Path, tails: list[Tail]) -> None:
    """Like `rstore tail s | head -1`: no more entries come, yet tail notices and exits."""
    proc = subprocess.Popen(
        [_script(), "--store", str(store_path), "tail", "s", "--from", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT)
        assert ready, "no line from rstore tail"
        assert proc.stdout.readline() == b"1-0  n=1\n"  # tail writes and flushes whole lines
        proc.stdout.close()
        proc.wait(timeout=TIMEOUT)
        assert proc.returncode == 1
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        if proc.stderr is not None:
            proc.stderr.close()
