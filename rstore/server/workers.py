"""Worker processes: ``rstore serve --workers N`` serves one store from N processes.

A **supervisor** (the process ``rstore serve`` started as) binds the listening sockets, makes
a small block of shared memory, and forks the workers; it opens no store, runs no event loop
and starts no thread, so each fork starts clean.  Every worker accepts on the same sockets
(the kernel hands each new connection to one of them), opens the store itself and serves its
clients as a one-process server does: the store is already shared safely by processes, with
group commit in each and cross-process wake-ups for blocking reads.

The supervisor waits.  A worker that ends while the server is not stopping -- killed,
crashed -- is started again in its place (its clients lost their connections; what it
acknowledged was committed, so it is all there); one that fails :data:`FAILURES` times in a
row within :data:`FAILURE_S` of its start stops the server (it cannot start: say why once,
not forever).  SIGTERM or SIGINT to the supervisor is passed to every worker: each stops
accepting, answers what it has read, flushes and exits; then the supervisor exits.

What the workers share, in the shared memory (:class:`Seat`: a worker's view of it): the
``maxclients`` limit (CONFIG SET in any worker sets it for all); each worker's next client
ID -- worker ``i`` of ``N`` gives IDs ``i + 1``, ``i + 1 + N``, ... so IDs are unique across
workers and across restarts; and each worker's :data:`GAUGES`, which it publishes as they
change (its clients on each connection and disconnection, the rest after each batch) and
INFO sums: a new connection is refused when the clients of all workers reach the limit.
Each slot is written only by its own worker, with no lock: a worker killed at any instant
leaves nothing locked.

Saving (SAVE, BGSAVE) is one at a time across the workers: a worker holds an exclusive
lock on a file of the supervisor's directory while it saves (:meth:`Seat.hold_saves`), so
another's SAVE or BGSAVE is refused as "in progress", and a worker killed mid-save holds
nothing.

What does not fit in fixed slots -- INFO commandstats and errorstats, CONFIG RESETSTAT -- a
worker asks the others for (:meth:`Seat.ask`): each answers on a Unix socket in the
supervisor's private directory, from a thread of its own (:meth:`Seat.answer`), so that an
answer never waits for its worker's event loop, and two workers asking each other at once
cannot wait for each other.  A worker that does not answer within :data:`ASK_S` (gone, being
started again) is left out.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config import ServerConfig

__all__ = ["FAILURES", "FAILURE_S", "GAUGES", "Listening", "Seat", "Supervisor", "bind"]

log = logging.getLogger("rstore.server")

#: what each worker publishes for INFO to sum, in this order (:meth:`Seat.publish`)
GAUGES = ("clients", "blocked", "connections", "rejected", "commands", "errors")
#: ... the first two are levels; the others count up, and a worker started again goes on
#: from where the one it replaces stopped
_GAUGE = {name: i for i, name in enumerate(GAUGES)}

#: how long a worker waits for another's answer (:meth:`Seat.ask`)
ASK_S = 1.0

#: a worker that ends this soon after it started failed to start
FAILURE_S = 2.0
#: after this many such failures in a row, the server stops
FAILURES = 3


@dataclass(frozen=True)
class Listening:
    """A socket the supervisor bound, which every worker accepts on."""

    sock: socket.socket
    tls: bool = False


def bind(config: ServerConfig) -> list[Listening]:
    """Bind and listen on ``config``'s addresses (its port, Unix socket, TLS port), as a
    one-process server would: :class:`OSError` when one cannot be used."""
    listening: list[Listening] = []
    try:
        if config.port:
            listening.append(Listening(_tcp(config.bind, config.port)))
        if config.unixsocket:
            listening.append(Listening(_unix(config.unixsocket)))
        if config.tls_port:
            listening.append(Listening(_tcp(config.bind, config.tls_port), tls=True))
    except OSError:
        for done in listening:
            done.sock.close()
        raise
    return listening


def _tcp(host: str, port: int) -> socket.socket:
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return _listen(sock, address)


def _unix(path: str) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.stat(path).st_mode):
            os.unlink(path)  # a socket left by an earlier server, as asyncio does
    return _listen(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), path)


def _listen(sock: socket.socket, address: Any) -> socket.socket:
    """``sock`` bound to ``address`` and listening, non-blocking (closed if it cannot be)."""
    try:
        sock.bind(address)
        sock.listen(511)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class Seat:
    """One worker's place in the shared memory (see the module docstring): slot 0 the
    ``maxclients`` limit, then each worker's next client ID, then each one's gauges."""

    def __init__(self, memory: Any, index: int, workers: int, directory: str) -> None:
        self._memory = memory
        self.index = index
        self.workers = workers
        self._directory = directory  # where each worker answers the others (ask / answer)
        self._supervisor = os.getppid()  # made in the worker, just forked
        start = _gauges_at(workers, index)
        # a worker started again in a dead one's place: the counts go on from its last ones
        self._base = tuple(memory[start : start + len(GAUGES)])

    @property
    def maxclients(self) -> int:
        return int(self._memory[0])

    @maxclients.setter
    def maxclients(self, value: int) -> None:
        self._memory[0] = value

    def next_id(self) -> int:
        """A client ID no worker gave before (this worker's slot, moved on)."""
        slot = 1 + self.index
        given = int(self._memory[slot])
        self._memory[slot] = given + 1
        return given * self.workers + self.index + 1

    def publish(self, values: tuple[int, ...]) -> None:
        """This worker's :data:`GAUGES` now, in their order."""
        start = _gauges_at(self.workers, self.index)
        self._memory[start : start + len(GAUGES)] = [a + b for a, b in zip(values, self._base)]

    def total(self, gauge: str) -> int:
        """A gauge summed over every worker."""
        at = _gauges_at(self.workers, 0) + _GAUGE[gauge]
        return int(sum(self._memory[at : at + self.workers * len(GAUGES) : len(GAUGES)]))

    def orphaned(self) -> bool:
        """Whether the supervisor is gone (killed: then the worker stops, as on SIGTERM)."""
        return os.getppid() != self._supervisor

    def restart_counts(self) -> None:
        """CONFIG RESETSTAT: the counts this worker publishes start again from 0."""
        self._base = (0,) * len(GAUGES)

    def _address(self, index: int) -> str:
        return os.path.join(self._directory, f"{index}.sock")

    def answer(self, respond: Callable[[bytes], bytes]) -> None:
        """Answer the other workers' requests with ``respond(request)``, from a daemon thread
        (``respond`` runs there: it may only read the worker's state, or hand work to its
        loop thread-safely)."""
        path = self._address(self.index)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # the socket of the worker this one replaces
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(16)
        threading.Thread(target=_answering, args=(listener, respond), daemon=True,
                         name="rstore-peers").start()  # fmt: skip

    def hold_saves(self) -> int | None:
        """An exclusive hold on saving (SAVE and BGSAVE) for every worker: a file descriptor
        to close when the save ended, or ``None`` while another worker saves.  A lock on a
        file of the supervisor's directory: the kernel drops it when its holder dies."""
        fd = os.open(os.path.join(self._directory, "save.lock"),
                     os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def saving(self) -> bool:
        """Whether a worker saves now (INFO ``rdb_bgsave_in_progress``)."""
        fd = self.hold_saves()
        if fd is None:
            return True
        os.close(fd)
        return False

    def ask(self, request: bytes) -> list[bytes]:
        """Every other worker's answer to ``request`` (those that answer within
        :data:`ASK_S`)."""
        answers = []
        for index in range(self.workers):
            if index == self.index:
                continue
            with contextlib.suppress(OSError):
                answers.append(_exchange(self._address(index), request))
        return answers


def _answering(listener: socket.socket, respond: Callable[[bytes], bytes]) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError as exc:  # out of descriptors, say: the asker is left out, not us
            log.warning("a worker's request was not accepted: %s", exc)
            time.sleep(0.1)
            continue
        with conn, contextlib.suppress(OSError):
            conn.settimeout(ASK_S)
            request = _read_all(conn)
            try:
                answer = respond(request)
            except Exception:
                log.exception("answering another worker's %r failed", request[:16])
                answer = b""
            conn.sendall(answer)


def _exchange(path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(ASK_S)
        conn.connect(path)
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        return _read_all(conn)


def _read_all(conn: socket.socket) -> bytes:
    parts = []
    while data := conn.recv(1 << 16):
        parts.append(data)
    return b"".join(parts)


def _gauges_at(workers: int, index: int) -> int:
    """Where worker ``index``'s gauges start in the shared memory."""
    return 1 + workers + index * len(GAUGES)


def _memory_size(workers: int) -> int:
    return _gauges_at(workers, workers)


class Supervisor:
    """Forks ``workers`` processes that each run ``work(seat, listening)`` (and exit with what
    it returns), and keeps them running until SIGTERM / SIGINT (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        workers: int,
        work: Callable[[Seat, list[Listening]], int],
    ) -> None:
        self.config = config
        self.workers = workers
        self._work = work
        self._memory = multiprocessing.Array("q", _memory_size(workers), lock=False)
        self._directory = tempfile.mkdtemp(prefix="rstore-workers-")
        self._memory[0] = config.maxclients
        self._pids: dict[int, tuple[int, float]] = {}  # pid -> (worker index, started)
        self._stopping = False
        self._failures = 0

    def run(self, listening: list[Listening]) -> int:
        """Serve until stopped; 0 when stopped by a signal, 1 when a worker cannot start."""
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for index in range(self.workers):
                self._start(index, listening)
            return self._wait(listening)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            shutil.rmtree(self._directory, ignore_errors=True)

    def _stop(self, signum: int, frame: object) -> None:
        self._stopping = True
        for pid in list(self._pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _start(self, index: int, listening: list[Listening]) -> None:
        at = _gauges_at(self.workers, index)  # a dead worker's clients and blocked reads are
        self._memory[at : at + 2] = [0, 0]  # gone; its counts stay (:class:`Seat`)
        pid = os.fork()
        if pid == 0:  # the worker: serve, then leave without the supervisor's clean-up
            code = 1
            try:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                seat = Seat(self._memory, index, self.workers, self._directory)
                code = self._work(seat, listening)
            except BaseException:
                log.exception("worker %d failed", index)
            finally:
                logging.shutdown()
                os._exit(code)
        self._pids[pid] = (index, time.monotonic())
        log.info("worker %d started (pid %d)", index, pid)
        if self._stopping:  # the signal came while it was forked
            os.kill(pid, signal.SIGTERM)

    def _wait(self, listening: list[Listening]) -> int:
        code = 0
        while self._pids:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            if pid not in self._pids:  # not a worker (a test run's own child, say)
                continue
            index, started = self._pids.pop(pid)
            ended = _ending(status)
            if self._stopping:
                if status:
                    log.warning("worker %d (pid %d) %s", index, pid, ended)
                continue
            failed_start = time.monotonic() - started < FAILURE_S
            self._failures = self._failures + 1 if failed_start else 0
            log.warning("worker %d (pid %d) %s: starting it again", index, pid, ended)
            if self._failures >= FAILURES:
                log.error("workers fail as they start (%d in a row): stopping", self._failures)
                code = 1
                self._stop(signal.SIGTERM, None)
                continue
            self._start(index, listening)
        return code


def _ending(status: int) -> str:
    """How a worker ended, from its wait status."""
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
