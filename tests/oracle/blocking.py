"""Running one blocking scenario on valkey and on rstore, and comparing what each observed.

A scenario is a function of a :class:`Side`.  It runs commands (:meth:`Side.run`), starts
blocking calls that each get their own connection, thread or process (:meth:`Side.start`),
waits until they are blocked (:meth:`Side.wait_blocked`), runs transactions (valkey MULTI/EXEC,
an rstore pipeline), and collects replies.  Every reply lands in the side's log; the two logs
must then match entry by entry (time fields within the tolerance of :mod:`.timed`).

Sides:

* :class:`ValkeySide`: the blocked call is sent on a fresh connection and its reply read later;
  "blocked" is valkey's own ``blocked_clients`` count.
* :class:`RstoreSide` with ``mode="thread"``: the blocked call runs in a thread of this process;
  ``mode="process"``: in a worker process started with ``spawn`` (:mod:`.blockworker`).
  "blocked" is the number of waiting slots in the store's ``notify.shm`` table (its header is
  documented in ``rstore/storage/waiting/notify.py``).

No wait is unbounded: every reply is awaited at most :data:`WAIT_S` seconds.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import select
import struct
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol

from valkey_server import HOST, ValkeyServer

from rstore import NIL_ARRAY, ResponseError

from .blockworker import WorkerFailure, serve
from .harness import Oracle, short
from .resp import Arg, ErrorReply, RespClient
from .timed import timed_difference

__all__ = [
    "WAIT_S",
    "Pending",
    "RstoreSide",
    "Scenario",
    "Side",
    "ValkeySide",
    "WorkerPool",
    "compare_logs",
    "run_on_both",
]

WAIT_S = 10.0  # the longest any reply is awaited
Log = list[tuple[str, Any, Any]]  # (label, argv, reply)


def public(reply: Any) -> Any:
    """A reply as an rstore pipeline returns it: nil arrays (at any depth) become ``None``."""
    if reply is NIL_ARRAY:
        return None
    if isinstance(reply, list):
        return [public(item) for item in reply]
    return reply


class Pending(Protocol):
    def done(self, timeout: float = 0.0) -> bool:
        """Whether the reply came (waiting up to ``timeout`` seconds for it)."""
        ...

    def result(self, timeout: float = WAIT_S) -> Any:
        """The reply; fails the test when none came within ``timeout`` seconds."""
        ...


class Side:
    """One system under a scenario; subclasses implement the primitives."""

    name = "?"

    def __init__(self) -> None:
        self.log: Log = []

    # primitives
    def execute(self, *argv: Arg) -> Any:
        raise NotImplementedError

    def start(self, *argv: Arg) -> Pending:
        raise NotImplementedError

    def transaction(self, *commands: tuple[Arg, ...]) -> list[Any]:
        raise NotImplementedError

    def is_blocked(self, calls: int, keys: int) -> bool:
        """Whether ``calls`` blocked calls waiting on ``keys`` keys in all are there yet."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    # used by scenarios
    def run(self, *argv: Arg) -> Any:
        reply = self.execute(*argv)
        self.log.append(("run", argv, reply))
        return reply

    def multi(self, *commands: tuple[Arg, ...]) -> list[Any]:
        replies = self.transaction(*commands)
        self.log.append(("transaction", commands, replies))
        return replies

    def result(self, label: str, pending: Pending, timeout: float = WAIT_S) -> Any:
        reply = pending.result(timeout)
        self.log.append(("blocked call " + label, (), reply))
        return reply

    def note(self, label: str, value: Any) -> None:
        self.log.append((label, (), value))

    def wait_blocked(self, calls: int, keys: int | None = None) -> None:
        """Return once ``calls`` blocked calls (waiting on ``keys`` distinct keys in all, one
        each by default) are blocked; fail after :data:`WAIT_S`."""
        deadline = time.monotonic() + WAIT_S
        while not self.is_blocked(calls, calls if keys is None else keys):
            assert time.monotonic() < deadline, f"{self.name}: {calls} calls never blocked"
            time.sleep(0.002)


def compare_logs(expected: Log, actual: Log, who: str) -> None:
    for i, ((label_e, argv, reply_e), (label_a, _, reply_a)) in enumerate(zip(expected, actual)):
        assert label_a == label_e, f"{who}: step {i} is {label_a!r}, valkey's is {label_e!r}"
        if label_e == "run":  # one command: its time fields within the tolerance
            problem = timed_difference(tuple(argv), reply_e, reply_a)
        else:  # blocked-call replies, transactions and notes hold no times: exact
            problem = None if reply_a == reply_e else "different values"
        assert problem is None, (
            f"{who} differs from valkey at step {i} ({label_e}, {problem})\n"
            f"  argv:   {short(argv)}\n  valkey: {short(reply_e)}\n  {who}: {short(reply_a)}"
        )
    assert len(actual) == len(expected), f"{who}: {len(actual)} steps, valkey {len(expected)}"


# ---------------------------------------------------------------------------------- valkey


class _ValkeyPending:
    def __init__(self, server: ValkeyServer, argv: tuple[Arg, ...]) -> None:
        self.client = RespClient(HOST, server.port, timeout=WAIT_S)
        self.client.send(*argv)
        self._reply: Any = None
        self._has_reply = False

    def done(self, timeout: float = 0.0) -> bool:
        if not self._has_reply:
            ready, _, _ = select.select([self.client], [], [], timeout)
            if not ready:
                return False
            self._reply, self._has_reply = self.client.receive(), True
        return True

    def result(self, timeout: float = WAIT_S) -> Any:
        assert self.done(timeout), f"valkey: no reply within {timeout} s"
        return self._reply


class ValkeySide(Side):
    name = "valkey"

    def __init__(self, server: ValkeyServer, client: RespClient) -> None:
        super().__init__()
        self.server = server
        self.client = client
        self.pending: list[_ValkeyPending] = []

    def execute(self, *argv: Arg) -> Any:
        return self.client.execute(*argv)

    def start(self, *argv: Arg) -> Pending:
        pending = _ValkeyPending(self.server, argv)
        self.pending.append(pending)
        return pending

    def transaction(self, *commands: tuple[Arg, ...]) -> list[Any]:
        assert self.client.execute("MULTI") == "OK"
        for argv in commands:
            queued = self.client.execute(*argv)
            assert queued == "QUEUED", f"MULTI refused {argv!r}: {queued!r}"
        replies = public(self.client.execute("EXEC"))
        assert isinstance(replies, list), f"EXEC answered {replies!r}"
        return replies

    def is_blocked(self, calls: int, keys: int) -> bool:
        info = self.client.execute("INFO", "clients")
        for line in info.decode().splitlines():
            if line.startswith("blocked_clients:"):
                return int(line.split(":")[1]) >= calls
        raise AssertionError("INFO clients has no blocked_clients line")

    def close(self) -> None:
        for pending in self.pending:
            pending.client.close()


# ---------------------------------------------------------------------------------- rstore

_NOTIFY_HEADER = struct.Struct("<8sIII")  # magic, version, slots in use, high water


class WorkerPool:
    """Worker processes (``spawn``) that run rstore commands; reused across tests."""

    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")
        self._idle: list[tuple[BaseProcess, Connection]] = []

    def take(self) -> tuple[BaseProcess, Connection]:
        if self._idle:
            return self._idle.pop()
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=serve, args=(child,), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def give_back(self, proc: BaseProcess, conn: Connection) -> None:
        """Keep a worker whose Store closed cleanly; stop one that is stuck or dead."""
        try:
            conn.send(("close",))
            if conn.poll(WAIT_S) and conn.recv() == "closed":
                self._idle.append((proc, conn))
                return
        except (OSError, EOFError):
            pass
        self._stop(proc, conn)

    @staticmethod
    def _stop(proc: BaseProcess, conn: Connection) -> None:
        with contextlib.suppress(OSError):
            conn.send(None)
        proc.join(2)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        conn.close()

    def close(self) -> None:
        while self._idle:
            self._stop(*self._idle.pop())


class _ThreadPending:
    def __init__(self, run: Callable[..., Any], argv: tuple[Arg, ...]) -> None:
        self._reply: Any = None
        self._thread = threading.Thread(target=self._body, args=(run, argv), daemon=True)
        self._thread.start()

    def _body(self, run: Callable[..., Any], argv: tuple[Arg, ...]) -> None:
        try:
            self._reply = run(*argv)
        except ResponseError as err:
            self._reply = ErrorReply(err.line)
        except Exception as exc:
            self._reply = WorkerFailure(repr(exc))

    def done(self, timeout: float = 0.0) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def result(self, timeout: float = WAIT_S) -> Any:
        assert self.done(timeout), f"rstore thread: no reply within {timeout} s"
        return self._reply


class _ProcessPending:
    def __init__(self, conn: Connection, path: str, argv: tuple[Arg, ...]) -> None:
        self._conn = conn
        self._reply: Any = None
        self._has_reply = False
        conn.send(("run", path, argv))

    def done(self, timeout: float = 0.0) -> bool:
        if not self._has_reply:
            if not self._conn.poll(timeout):
                return False
            self._reply, self._has_reply = self._conn.recv(), True
        return True

    def result(self, timeout: float = WAIT_S) -> Any:
        assert self.done(timeout), f"rstore process: no reply within {timeout} s"
        return self._reply


class RstoreSide(Side):
    """The Oracle's Store; blocked calls in threads or in worker processes."""

    def __init__(self, oracle: Oracle, mode: str, pool: WorkerPool | None = None) -> None:
        super().__init__()
        assert mode in ("thread", "process") and (mode == "thread" or pool is not None)
        self.name = f"rstore ({mode})"
        self.oracle = oracle
        self.mode = mode
        self.pool = pool
        self.workers: list[tuple[BaseProcess, Connection]] = []

    @property
    def path(self) -> str:
        assert self.oracle.store is not None
        return self.oracle.store.path

    def execute(self, *argv: Arg) -> Any:
        return self.oracle.on_rstore(*argv)

    def start(self, *argv: Arg) -> Pending:
        if self.mode == "thread":
            assert self.oracle.store is not None
            return _ThreadPending(self.oracle.store.execute_raw, argv)
        assert self.pool is not None
        worker = self.pool.take()
        self.workers.append(worker)
        return _ProcessPending(worker[1], self.path, argv)

    def transaction(self, *commands: tuple[Arg, ...]) -> list[Any]:
        assert self.oracle.store is not None
        pipe = self.oracle.store.pipeline()
        for argv in commands:
            pipe.execute_command(*argv)
        replies = pipe.execute(raise_on_error=False)
        return [ErrorReply(r.line) if isinstance(r, ResponseError) else r for r in replies]

    def is_blocked(self, calls: int, keys: int) -> bool:
        """Counts the waiting slots in ``notify.shm`` (one per distinct key of a call)."""
        path = Path(self.path) / "notify.shm"
        if not path.exists():
            return False
        with path.open("rb") as f:
            raw = f.read(_NOTIFY_HEADER.size)
        if len(raw) < _NOTIFY_HEADER.size:
            return False
        magic, _, in_use, _ = _NOTIFY_HEADER.unpack(raw)
        if magic == bytes(8):
            return False  # just created, header not written yet
        assert magic == b"rsnotify", f"notify.shm has an unknown header: {raw!r}"
        return int(in_use) >= keys

    def close(self) -> None:
        assert self.pool is not None or not self.workers
        for proc, conn in self.workers:
            assert self.pool is not None
            self.pool.give_back(proc, conn)
        self.workers = []


Scenario = Callable[[Side], None]


def run_on_both(scenario: Scenario, valkey: ValkeySide, rstore: RstoreSide) -> None:
    """``scenario`` on valkey, then on rstore; the two logs must match."""
    try:
        scenario(valkey)
    finally:
        valkey.close()
    try:
        scenario(rstore)
    finally:
        rstore.close()
    compare_logs(valkey.log, rstore.log, rstore.name)
