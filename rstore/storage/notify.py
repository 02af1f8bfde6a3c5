"""Waking blocked readers in any process when a writer changes the keys they wait on.

A blocked XREAD / XREADGROUP must wake when *another process* appends, without polling.  Each
store directory has a small shared table, ``notify.shm``, mapped by every process::

    header (32 bytes): magic "rsnotify" | u32 version | u32 slots in use | u32 high water |
                       u32 pad | u64 next arrival number
    slot (48 bytes):   u16 state | u16 kind | u32 pid | u64 key hash | u64 group hash |
                       u64 arrival | u64 token | u64 pad

A blocked reader binds a Unix datagram socket (named by the store, its pid and a token), then
takes one slot per key under an exclusive ``flock`` and re-checks its keys.  A writer, after
its transaction committed, reads the "slots in use" word: when it is zero (the usual case) it
does nothing more; otherwise it scans the slots up to the high-water mark and sends one byte to
each reader waiting on a key it changed.  Because the reader registers *before* re-checking and
the writer looks *after* committing, no wake-up is lost.

Readers of the same consumer group are served oldest first, as in Redis: the writer wakes only
the oldest of them, and each, after running, wakes the next (:meth:`Waiter.pass_baton`).  A
reader that died while blocked is skipped and its slot reclaimed.  Waiting itself is a
``select`` on the socket -- no CPU is used while idle.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import mmap
import os
import select
import socket
import struct
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator

from rstore.codec.crc64 import crc64
from rstore.errors import StorageError

__all__ = ["KIND_GROUP", "KIND_READ", "Notifier", "Waiter", "key_hash"]

FILE_NAME = "notify.shm"
_MAGIC = b"rsnotify"
_VERSION = 1
_HEADER = struct.Struct("<8sIIIIQ")
_SLOT = struct.Struct("<HHIQQQQQ")
SLOTS = 4096
_SIZE = _HEADER.size + SLOTS * _SLOT.size
_IN_USE = 12  # offset of "slots in use"
_HIGH = 16  # offset of "high water"
_U32 = struct.Struct("<I")

KIND_READ = 1
KIND_GROUP = 2
_FREE = 0
_WAITING = 1

_tokens = itertools.count(1)
# Linux has an abstract socket namespace (names that are not files); elsewhere use temp files.
_ABSTRACT_SOCKETS: bool = sys.platform.startswith("linux")


def key_hash(name: bytes) -> int:
    """The hash identifying a key in the table (never 0)."""
    return crc64(name) or 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Notifier:
    """This process's handle on a store's waiter table."""

    def __init__(self, store_path: str) -> None:
        self._path = os.path.join(store_path, FILE_NAME)
        self._store_id = crc64(os.fsencode(os.path.realpath(store_path)))
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size < _SIZE:
                    os.ftruncate(fd, _SIZE)
                self._map = mmap.mmap(fd, _SIZE)
                if self._map[:8] != _MAGIC:
                    _HEADER.pack_into(self._map, 0, _MAGIC, _VERSION, 0, 0, 0, 1)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._send_sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._send_sock.setblocking(False)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ addresses

    def address(self, pid: int, token: int) -> str | bytes:
        name = f"rstore-{self._store_id:016x}-{pid}-{token}"
        if _ABSTRACT_SOCKETS:
            return b"\0" + name.encode()  # abstract namespace: no file, gone with the process
        return os.path.join(tempfile.gettempdir(), name)

    # ------------------------------------------------------------------ slots

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _slot_offset(self, i: int) -> int:
        return _HEADER.size + i * _SLOT.size

    def register(
        self, kind: int, keys: Iterable[int], group: int, token: int
    ) -> tuple[int, list[int]]:
        """Take one slot per key hash; returns ``(arrival number, slot indexes)``."""
        m = self._map
        pid = os.getpid()
        with self._locked():
            magic, version, in_use, high, _, arrival = _HEADER.unpack_from(m, 0)
            taken: list[int] = []
            keys = list(keys)
            for i in range(SLOTS):
                if len(taken) == len(keys):
                    break
                state, _, spid, *_ = _SLOT.unpack_from(m, self._slot_offset(i))
                if state == _FREE or not _alive(spid):
                    if state != _FREE:
                        in_use -= 1  # reclaim a slot left by a dead process
                    taken.append(i)
            if len(taken) < len(keys):
                raise StorageError(
                    f"{self._path}: the waiter table is full ({SLOTS} blocked reads per key "
                    "per store at most); too many blocked readers"
                )
            for i, kh in zip(taken, keys):
                _SLOT.pack_into(m, self._slot_offset(i), _WAITING, kind, pid, kh, group,
                                arrival, token, 0)  # fmt: skip
            high = max(high, taken[-1] + 1) if taken else high
            _HEADER.pack_into(m, 0, magic, version, in_use + len(taken), high, 0, arrival + 1)
        return arrival, taken

    def unregister(self, slots: list[int], pid: int, token: int) -> None:
        """Free ``slots`` if they still belong to the waiter ``(pid, token)``.

        Checked under the lock: another process may already have freed a dead reader's slot,
        and a new reader may have taken it since.
        """
        m = self._map
        with self._locked():
            freed = 0
            for i in slots:
                off = self._slot_offset(i)
                state, _, spid, _, _, _, stoken, _ = _SLOT.unpack_from(m, off)
                if state == _WAITING and spid == pid and stoken == token:
                    _SLOT.pack_into(m, off, _FREE, 0, 0, 0, 0, 0, 0, 0)
                    freed += 1
            in_use = _U32.unpack_from(m, _IN_USE)[0] - freed
            _U32.pack_into(m, _IN_USE, max(in_use, 0))
            if in_use <= 0:
                _U32.pack_into(m, _HIGH, 0)

    def _waiting(self) -> list[tuple[int, int, int, int, int, int, int]]:
        """``(arrival, slot, kind, pid, key hash, group hash, token)`` of every waiting slot."""
        m = self._map
        high = _U32.unpack_from(m, _HIGH)[0]
        out = []
        for i in range(min(high, SLOTS)):
            state, kind, pid, kh, gh, arrival, token, _ = _SLOT.unpack_from(m, self._slot_offset(i))
            if state == _WAITING:
                out.append((arrival, i, kind, pid, kh, gh, token))
        out.sort()
        return out

    # ------------------------------------------------------------------ waking

    def anyone_waiting(self) -> bool:
        """Whether any reader of this store is blocked (one word read from the table)."""
        return bool(_U32.unpack_from(self._map, _IN_USE)[0])

    def notify(self, key_hashes: set[int] | None) -> None:
        """Wake readers waiting on any of ``key_hashes`` (``None``: on any key)."""
        if not self.anyone_waiting():
            return
        woken_groups: set[tuple[int, int]] = set()
        woken: set[tuple[int, int]] = set()
        for _, slot, kind, pid, kh, gh, token in self._waiting():
            if key_hashes is not None and kh not in key_hashes:
                continue
            if kind == KIND_GROUP:
                if (kh, gh) in woken_groups:
                    continue  # only the oldest reader of a group; it passes the baton on
                if self._send(pid, token, slot):
                    woken_groups.add((kh, gh))
            elif (pid, token) not in woken:
                self._send(pid, token, slot)
                woken.add((pid, token))

    def wake_next(self, key_hashes: set[int], group: int, after_arrival: int) -> None:
        """Pass the baton: wake the oldest group reader that arrived after ``after_arrival``."""
        done: set[int] = set()
        for arrival, slot, kind, pid, kh, gh, token in self._waiting():
            if kind != KIND_GROUP or gh != group or kh not in key_hashes or kh in done:
                continue
            if arrival > after_arrival and self._send(pid, token, slot):
                done.add(kh)

    def _send(self, pid: int, token: int, slot: int) -> bool:
        try:
            self._send_sock.sendto(b"!", self.address(pid, token))
            return True
        except BlockingIOError:
            return True  # its buffer is full: a wake-up is already pending
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT) and not _alive(pid):
                self.unregister([slot], pid, token)  # the reader died while blocked
            return False

    def close(self) -> None:
        self._send_sock.close()
        self._map.close()
        os.close(self._fd)


class Waiter:
    """One blocked call: a socket to be woken on, and its slots in the table."""

    def __init__(self, notifier: Notifier, kind: int, keys: list[bytes], group: int = 0):
        self._notifier = notifier
        self._token = next(_tokens)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._sock.bind(notifier.address(os.getpid(), self._token))
            self._sock.setblocking(False)
            self._kind = kind
            self._group = group
            self._hashes = {key_hash(k) for k in keys}
            self.arrival, self._slots = notifier.register(kind, self._hashes, group, self._token)
        except BaseException:
            self._sock.close()
            raise

    def wait(self, timeout_s: float) -> bool:
        """Sleep until woken or ``timeout_s`` passes; ``True`` when woken."""
        ready, _, _ = select.select([self._sock], [], [], max(timeout_s, 0.0))
        if not ready:
            return False
        with contextlib.suppress(BlockingIOError):
            while self._sock.recv(64):
                pass
        return True

    def pass_baton(self) -> None:
        """After running, let the next reader of the same group run (FIFO serving)."""
        if self._kind == KIND_GROUP:
            self._notifier.wake_next(self._hashes, self._group, self.arrival)

    def close(self) -> None:
        self._notifier.unregister(self._slots, os.getpid(), self._token)
        self._sock.close()
        if not _ABSTRACT_SOCKETS:
            with contextlib.suppress(OSError):
                os.unlink(self._notifier.address(os.getpid(), self._token))

    def __enter__(self) -> Waiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
