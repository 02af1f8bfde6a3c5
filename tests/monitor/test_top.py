"""``rstore top``: its frames (text and JSON) say what the queue holds, worst first, with the
rates between two samples; it only reads; on a terminal its keys sort, filter and quit
(driven through a pseudo-terminal and read back with a terminal emulator)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from fcntl import ioctl
from pathlib import Path
from typing import Any

import pyte
import pytest
from rstore_cli.top import Sampler
from rstore_cli.top_view import frame_json, frame_lines
from serve_process import Served

import rstore

TOP = [sys.executable, "-m", "rstore_cli"]


def _queue(run: Any) -> None:
    """``orders``: 30 entries, ``billing`` 20 behind, ``shipping`` 5 behind with 25 pending;
    ``audit``: 3 entries, no group."""
    for i in range(1, 31):
        run("XADD", "orders", f"{i}-0", "n", str(i))
    for i in range(1, 4):
        run("XADD", "audit", f"{i}-0", "n", str(i))
    run("XGROUP", "CREATE", "orders", "billing", "0")
    run("XGROUP", "CREATE", "orders", "shipping", "0")
    run("XREADGROUP", "GROUP", "billing", "b", "COUNT", "10", "STREAMS", "orders", ">")
    run("XACK", "orders", "billing", *[f"{i}-0" for i in range(1, 11)])
    run("XREADGROUP", "GROUP", "shipping", "s", "COUNT", "25", "STREAMS", "orders", ">")


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    with rstore.Store(tmp_path / "s") as store:
        _queue(store.execute)
    yield tmp_path / "s"


def _top(path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [*TOP, "--store", str(path), "top", *args]
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout)


def test_once_prints_one_frame_worst_first(path: Path) -> None:
    result = _top(path, "--once", "--interval", "0.1")
    assert result.returncode == 0, result.stderr
    title, summary, blank, header, *rows = result.stdout.splitlines()
    assert title.startswith(f"rstore top - {path} - ") and title.endswith(" UTC")
    assert summary.startswith("2 streams, 2 groups - sampled in ") and "sort: lag" in summary
    assert blank == "" and header.split()[:5] == ["STREAM", "LENGTH", "IN/S", "LAST", "GROUP"]
    cells = [row.split() for row in rows]
    # orders first (a group 20 behind), billing (lag 20) before shipping (lag 5); audit last
    assert [c[0] for c in cells] == ["orders", "shipping", "audit"]
    assert cells[0][:2] == ["orders", "30"] and cells[0][4:7] == ["billing", "20", "0"]
    assert cells[1][:3] == ["shipping", "5", "25"]
    assert cells[2][:2] == ["audit", "3"] and cells[2][4] == "-"
    assert cells[0][-1] == "1/1"  # consumers alive / all


def test_sort_by_pending_puts_the_biggest_backlog_first(path: Path) -> None:
    rows = _top(path, "--once", "--interval", "0.1", "--sort", "pending").stdout.splitlines()[4:]
    assert rows[0].split()[4:7] == ["shipping", "5", "25"]
    assert rows[1].split()[:3] == ["billing", "20", "0"]


def test_json_frame(path: Path) -> None:
    result = _top(path, "--once", "--json", "--interval", "0.1", "--match", "ord*")
    assert result.returncode == 0, result.stderr
    frame = json.loads(result.stdout)
    assert frame["source"] == str(path) and frame["sort"] == "lag"
    assert frame["rates_over_ms"] >= 100
    (orders,) = frame["streams"]
    assert orders["stream"] == "orders" and orders["length"] == 30
    assert orders["last_id"] == "30-0" and orders["added_per_s"] == 0.0
    billing, shipping = orders["groups"]
    assert (billing["group"], billing["lag"], billing["pending"]) == ("billing", 20, 0)
    assert billing["oldest_pending_id"] is None and billing["delivered_per_s"] == 0.0
    assert (shipping["lag"], shipping["pending"], shipping["oldest_pending_id"]) == (5, 25, "1-0")
    assert shipping["oldest_pending_idle_ms"] >= 0
    assert shipping["oldest_pending_age_ms"] == frame["now_ms"] - 1


def test_rates_are_what_happened_between_two_frames(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        _queue(store.execute)
        sampler = Sampler(rstore.store_health_source(store), None)
        assert frame_json(sampler.frame("lag"), 1.0)["rates_over_ms"] is None
        for i in range(31, 71):
            store.execute("XADD", "orders", f"{i}-0", "n", str(i))
        store.execute("XREADGROUP", "GROUP", "billing", "b", "COUNT", "30", "STREAMS", "orders",
                      ">")  # fmt: skip
        store.execute("XACK", "orders", "billing", *[f"{i}-0" for i in range(11, 31)])
        time.sleep(0.05)
        frame = frame_json(sampler.frame("lag"), 1.0)
    seconds = frame["rates_over_ms"] / 1000
    orders = frame["streams"][0]
    billing = next(g for g in orders["groups"] if g["group"] == "billing")
    assert round(orders["added_per_s"] * seconds) == 40
    assert round(billing["delivered_per_s"] * seconds) == 30
    assert round(billing["acknowledged_per_s"] * seconds) == 20  # 30 out, 10 still pending
    assert billing["pending"] == 10 and billing["lag"] == 30


def test_a_filter_keeps_the_streams_or_groups_it_names(path: Path) -> None:
    with rstore.Store(path, readonly=True) as store:
        frame = Sampler(rstore.store_health_source(store), None).frame("lag")
    # a group's name selects its stream, shown with all its groups
    assert [s.key for s in frame.shown_as("name", "ship").streams()] == [b"orders"]
    assert len(frame_lines(frame.shown_as("name", "ship"))[4:]) == 2
    shown = frame.shown_as("lag", "aud")
    assert [s.key for s in shown.streams()] == [b"audit"]
    assert frame_lines(frame.shown_as("lag", "nothing"))[3] == "no streams match the filter"


def _digest(path: Path) -> dict[str, str]:
    return {name: hashlib.sha256((path / name).read_bytes()).hexdigest()
            for name in ("data.mdb", "wal.log")}  # fmt: skip


def test_top_never_writes_the_store(path: Path) -> None:
    before = _digest(path)
    assert _top(path, "--once", "--interval", "0.1").returncode == 0
    assert _top(path, "--once", "--json", "--interval", "0.1").returncode == 0
    assert _digest(path) == before


def test_frames_follow_one_another_until_interrupted(path: Path) -> None:
    proc = subprocess.Popen([*TOP, "--store", str(path), "top", "--json", "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        frames = [json.loads(proc.stdout.readline()) for _ in range(3)]
        assert [f["rates_over_ms"] is None for f in frames] == [True, False, False]
        assert all(f["streams"][0]["stream"] == "orders" for f in frames)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_a_missing_store_and_an_unreachable_server_are_one_line(tmp_path: Path) -> None:
    missing = _top(tmp_path / "none", "--once")
    assert missing.returncode == 1 and missing.stderr == f"Error: no store at {tmp_path}/none\n"
    result = subprocess.run([*TOP, "top", "--once", "--url", "redis://127.0.0.1:1"],
                            check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot read redis://127.0.0.1:1: ")
    assert len(result.stderr.splitlines()) == 1


def test_top_of_a_server_shows_what_the_store_shows(path: Path, tmp_path: Path) -> None:
    embedded = json.loads(_top(path, "--once", "--json", "--interval", "0.1").stdout)
    with Served(path) as served:
        url = f"redis://127.0.0.1:{served.port}"
        argv = [*TOP, "top", "--once", "--json", "--interval", "0.1", "--url", url]
        env = {**os.environ, "RSTORE_PATH": str(tmp_path / "elsewhere")}  # --url wins
        result = subprocess.run(
            argv, check=False, capture_output=True, text=True, timeout=60, env=env
        )
        served.stop()
    remote = json.loads(result.stdout)
    assert remote["source"] == url

    def kept(frame: dict[str, Any]) -> list[Any]:
        return [
            (s["stream"], s["length"], [(g["group"], g["lag"], g["pending"]) for g in s["groups"]])
            for s in frame["streams"]
        ]

    assert kept(remote) == kept(embedded)


# ------------------------------------------------------------------------- on a terminal


class Terminal:
    """``rstore top`` in a pseudo-terminal of 140x30, its screen kept by pyte."""

    def __init__(self, path: Path) -> None:
        self.screen = pyte.Screen(140, 30)
        self.stream = pyte.ByteStream(self.screen)
        pid, self.fd = pty.fork()
        if pid == 0:  # the child: its terminal's size, then exec (nothing of pytest's runs)
            ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 140, 0, 0))
            env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
            env["TERM"] = "xterm-256color"
            argv = [*TOP, "--store", str(path), "top", "--interval", "0.2"]
            os.execve(sys.executable, argv, env)
        self.pid = pid

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, *needles: str, timeout: float = 30) -> str:
        """The screen once it shows every one of ``needles`` (curses draws in any order)."""
        deadline = time.monotonic() + timeout
        while not all(needle in self.text() for needle in needles):
            assert time.monotonic() < deadline, f"{needles!r} not on the screen:\n{self.text()}"
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.stream.feed(os.read(self.fd, 65536))
                except OSError:  # the child is gone
                    break
        return self.text()

    def press(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def exit_status(self, timeout: float = 10) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            with_data, _, _ = select.select([self.fd], [], [], 0.05)
            if with_data:
                with contextlib.suppress(OSError):  # the child is gone
                    os.read(self.fd, 65536)
        return None

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def test_on_a_terminal_keys_sort_filter_and_quit(path: Path) -> None:
    term = Terminal(path)
    try:
        term.wait_for("shipping", "sort: lag", "keys: s sort, / filter, q quit", "audit")
        term.press("s")
        screen = term.wait_for("sort: pending", "audit")
        rows = [line.split() for line in screen.splitlines()[4:] if line.strip()]
        assert rows[0][4:7] == ["shipping", "5", "25"]
        term.press("/aud")
        term.wait_for("filter: aud_")
        term.press("\r")
        screen = term.wait_for("filter: aud -", "audit")
        assert "orders" not in screen
        term.press("q")
        assert term.exit_status() == 0
    finally:
        term.close()
