"""Child processes of the process tests: starting, reporting, waiting, killing.

Shared by every test in this folder (the bodies children run are in ``helpers_mp`` and
``helpers_queue``).  A child reports through a ``multiprocessing`` queue as ``(who, status,
value)``, after the store call returned, so that the parent knows exactly what a child saw
acknowledged before it was killed: ``status`` is ``"ok"``, ``"refused"`` (an
:class:`rstore.ResponseError`, ``value`` is ``(monotonic time, error line)``) or ``"error"``
(``value`` is a traceback).  Every wait has a timeout (at most :data:`WAIT_S`): a child that
hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

import rstore

WAIT_S = 60.0  # no wait in a child or the parent is longer than this


class Reports(Protocol):
    def put(self, obj: Any) -> None: ...


class Waitable(Protocol):
    """A ``multiprocessing`` Barrier or Event."""

    def wait(self, timeout: float | None = None) -> Any: ...


class Event(Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...
    def set(self) -> None: ...
    def is_set(self) -> bool: ...


# =========================================================================== child side


def report(results: Reports, who: Any, body: Callable[[], Any]) -> None:
    """Run ``body`` and put its outcome as ``(who, status, value)`` (see the module)."""
    try:
        value = body()
    except rstore.ResponseError as exc:
        results.put((who, "refused", (time.monotonic(), exc.line)))
    except BaseException:
        results.put((who, "error", traceback.format_exc()))
    else:
        results.put((who, "ok", value))


# =========================================================================== parent side


class Children:
    """The child processes a test started; whatever is still alive at teardown is killed.

    Children start with ``spawn`` (:attr:`ctx`) unless :meth:`start` is given another
    context (``fork``, for children that use a Store inherited from the parent).
    """

    def __init__(self, ctx: BaseContext | None = None) -> None:
        self.ctx = ctx if ctx is not None else mp.get_context("spawn")
        self.started: list[BaseProcess] = []

    def start(
        self, target: Callable[..., None], *args: Any, ctx: BaseContext | None = None
    ) -> BaseProcess:
        proc: BaseProcess = (ctx or self.ctx).Process(  # type: ignore[attr-defined]
            target=target, args=args, daemon=True
        )
        proc.start()
        self.started.append(proc)
        return proc

    def join(self, procs: Sequence[BaseProcess] | None = None, timeout: float = WAIT_S) -> None:
        """Wait for ``procs`` (default: every child started) to exit, each with status 0."""
        deadline = time.monotonic() + timeout
        for proc in self.started if procs is None else procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            assert proc.exitcode is not None, f"child {proc.pid} still running after {timeout} s"
            assert proc.exitcode == 0, f"child {proc.pid} exited with {proc.exitcode}"

    def kill_all(self) -> None:
        for proc in self.started:
            if proc.exitcode is None:
                proc.kill()
            proc.join(10)


def process_state(pid: int, tid: int | None = None) -> str:
    """The one-letter state in /proc/<pid>/stat, or of its thread ``tid`` (``Z``: a zombie,
    dead but not reaped)."""
    where = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    with open(where) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_for(
    predicate: Callable[[], bool], what: str, timeout: float = WAIT_S, interval: float = 0.002
) -> None:
    """Poll ``predicate`` (every ``interval`` s) until it holds; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def sigkill(proc: BaseProcess, reap: bool = True) -> None:
    """SIGKILL ``proc``; with ``reap``, wait for it (it must have died of the signal), else
    only until it is a zombie."""
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    if reap:
        proc.join(WAIT_S)
        assert proc.exitcode == -signal.SIGKILL, f"child ended with {proc.exitcode}, not by SIGKILL"
    else:
        pid = proc.pid
        wait_for(lambda: _all_threads_dead(pid), "the killed child to die")


def _all_threads_dead(pid: int) -> bool:
    """Whether ``pid`` is a zombie whose every thread has exited too.  The main thread turns
    ``Z`` first; a thread of the same process can still be finishing a system call the signal
    cannot interrupt (an ``fdatasync``: the checkpointer thread of a store with the log), and
    until the last one exits the process's descriptors -- its wake-up socket -- stay open."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        return all(process_state(pid, int(tid)) == "Z" for tid in tids)
    except FileNotFoundError:  # a thread (or the process) went away while we looked
        return False


def next_report(results: Any, who: Any = None, timeout: float = WAIT_S) -> tuple[Any, str, Any]:
    """The next report (from ``who``, if given, which must be the next one); a child's crash
    fails the test with its traceback."""
    try:
        item = results.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no report within {timeout} s: a child hangs") from None
    sender, status, value = item
    if status == "error":
        raise AssertionError(f"child {sender} failed:\n{value}")
    if who is not None:
        assert sender == who, f"expected a report from {who}, got {item}"
    return sender, status, value


def collect(
    results: Any, expected: int, children: Children, timeout: float = WAIT_S
) -> dict[Any, Any]:
    """``expected`` reports from children as ``{who: value}``; any status but ``"ok"`` fails
    the test.  Fails early when every child has exited and a report is still missing (a
    crash)."""
    out: dict[Any, Any] = {}
    deadline = time.monotonic() + timeout
    while len(out) < expected:
        try:
            who, status, value = results.get(timeout=0.25)
        except queue.Empty:
            if all(not p.is_alive() for p in children.started):
                try:  # a report may have arrived just before the last exit
                    who, status, value = results.get(timeout=1.0)
                except queue.Empty:
                    codes = [p.exitcode for p in children.started]
                    raise AssertionError(
                        f"children exited (codes {codes}) with {expected - len(out)} "
                        "reports missing"
                    ) from None
            elif time.monotonic() > deadline:
                raise AssertionError(
                    f"no report from {expected - len(out)} children within {timeout} s "
                    f"(got {sorted(map(str, out))}): a child hangs"
                ) from None
            else:
                continue
        if status != "ok":
            raise AssertionError(f"child {who} failed ({status}):\n{value}")
        out[who] = value
    return out


def recv(conn: Connection, timeout: float = WAIT_S) -> Any:
    """The next message from a child, failing (not hanging) when none comes."""
    assert conn.poll(timeout), f"no message from the child within {timeout} s"
    return conn.recv()


def drain(conn: Connection) -> list[Any]:
    """Everything a (dead) child wrote to the pipe before it died."""
    out: list[Any] = []
    while True:
        try:
            out.append(conn.recv())
        except EOFError:
            return out
