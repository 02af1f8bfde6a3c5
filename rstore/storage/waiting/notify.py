"""Waking blocked readers in any process when a writer changes the keys they wait on.

A blocked XREAD / XREADGROUP must wake when *another process* appends, without polling.  Each
store directory has a small shared table, ``notify.shm``, used by every process::

    header (32 bytes): magic "rsnotify" | u32 version | u32 slots in use | u32 high water |
                       u32 pad | u64 next arrival number
    slot (48 bytes):   u16 state | u16 kind | u32 pid | u64 key hash | u64 group hash |
                       u64 arrival | u64 token | u64 flags (FLAG_EARLY)

A blocked reader binds a Unix datagram socket (named by the store, its pid and a token), then
takes one slot per key under an exclusive ``flock`` and re-checks its keys.  A writer, after
its transaction committed, reads the "slots in use" word: when it is zero (the usual case) it
does nothing more; otherwise it scans the slots up to the high-water mark and sends one byte to
each reader waiting on a key it changed.  Because the reader registers *before* re-checking and
the writer looks *after* committing, no wake-up is lost.

Readers of the same consumer group are served oldest first, as in Redis: the writer wakes only
the oldest of them, and each, after running, wakes the next
(:meth:`~rstore.storage.waiting.waiters.Waiter.pass_baton`).
After a ``sync=True`` commit, readers flagged :data:`FLAG_EARLY` (XREADGROUP of a durable
handle) are woken before the writer's log flush, the others after it
(:meth:`Notifier.notify`'s phases; docs/durability.md, "Wake-ups before the flush").  A
reader that died while blocked is skipped and its slot reclaimed.  Waiting itself is a
``select`` on the socket -- no CPU is used while idle.

The table is read and written with ``pread``/``pwrite``, never mapped: a full disk or a file
cut short by someone else gives an ``OSError`` that can be handled, never a SIGBUS.  Its space
is allocated when it is created.  A table with a wrong size or header (damaged) is rebuilt in
place; one that cannot be used at all (a directory, another user's file) makes blocked reads
fall back to :class:`~rstore.storage.waiting.waiters.PollingWaiter` -- the caller (``Env``) says so
once in the log.  A blocked call's side (its socket, its slots) is
:mod:`rstore.storage.waiting.waiters`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import sys
import threading
from collections.abc import Iterable

from rstore.codec.crc64 import crc64
from rstore.errors import StorageError

__all__ = [
    "EARLY",
    "FLAG_EARLY",
    "KIND_GROUP",
    "KIND_READ",
    "LATE",
    "NOBODY",
    "Notifier",
    "slot_hash",
]

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
#: Slot flag: this reader may be woken as soon as a durable writer's commit is visible, before
#: the writer's log flush (an XREADGROUP of a ``sync=True`` handle: its reply follows a
#: durable commit of its own, whose flush covers the writer's commit too; docs/durability.md).
FLAG_EARLY = 1
#: Which waiters a call of :meth:`Notifier.notify` wakes: those flagged early, the others, all.
EARLY = 1
LATE = 2
ALL = EARLY | LATE
#: What a wake-up returns when no reader of the store was waiting at all: a later phase of the
#: same commit has nobody to wake either (a reader that starts waiting after this was read
#: runs its command again once registered, and reads the commit then).
NOBODY = -1
_FREE = 0
_WAITING = 1

# Linux has an abstract socket namespace (names that are not files); elsewhere use temp files.
_ABSTRACT_SOCKETS: bool = sys.platform.startswith("linux")


def slot_hash(name: bytes) -> int:
    """The hash a waiter slot records for a key or a group name: CRC-64 like the keyspace's
    ``layout.key_hash``, but never 0 (0 marks "no group" in a slot)."""
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
    """This process's handle on a store's waiter table.

    Raises ``OSError`` or :class:`StorageError` when the table cannot be used at all.  When the
    file may be read but not written (another user's store), writers still wake readers but
    this process cannot register its own (``can_register`` is false)."""

    def __init__(self, store_path: str) -> None:
        self._path = os.path.join(store_path, FILE_NAME)
        self._store_id = crc64(os.fsencode(os.path.realpath(store_path)))
        self.can_register = True
        flags = os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | flags, 0o644)
        except PermissionError:
            fd = os.open(self._path, os.O_RDONLY | flags)
            self.can_register = False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StorageError(f"{self._path} is not a regular file")
            fcntl.flock(fd, fcntl.LOCK_EX if self.can_register else fcntl.LOCK_SH)
            try:
                if not self._valid(fd):
                    if not self.can_register:
                        raise StorageError(f"{self._path} is damaged and not ours to repair")
                    self._rebuild(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        import socket  # noqa: PLC0415 -- loaded by the first wake-up, not at start-up

        self._send_sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._send_sock.setblocking(False)
        self._lock = threading.Lock()
        self._closed = False
        self._mine = 0  # slots this process holds (what it registered, not yet freed)

    @staticmethod
    def _valid(fd: int) -> bool:
        if os.fstat(fd).st_size != _SIZE:
            return False
        magic, version, in_use, high, _, _ = _HEADER.unpack(os.pread(fd, _HEADER.size, 0))
        return bool(magic == _MAGIC and version == _VERSION and in_use <= SLOTS and high <= SLOTS)

    @staticmethod
    def _rebuild(fd: int) -> None:
        """A fresh table in place (same file, so every process keeps sharing it), its space
        allocated for real first: a full disk fails here, with an error, not later."""
        os.ftruncate(fd, 0)
        os.posix_fallocate(fd, 0, _SIZE)
        table = bytearray(_SIZE)
        _HEADER.pack_into(table, 0, _MAGIC, _VERSION, 0, 0, 0, 1)
        os.pwrite(fd, table, 0)

    # ------------------------------------------------------------------ addresses

    def address(self, pid: int, token: int) -> str | bytes:
        name = f"rstore-{self._store_id:016x}-{pid}-{token}"
        if _ABSTRACT_SOCKETS:
            return b"\0" + name.encode()  # abstract namespace: no file, gone with the process
        import tempfile  # noqa: PLC0415 - only where abstract sockets are missing

        return os.path.join(tempfile.gettempdir(), name)

    def release_address(self, pid: int, token: int) -> None:
        """After the socket bound at :meth:`address` is closed: remove its file, where sockets
        have files (not on Linux)."""
        if not _ABSTRACT_SOCKETS:
            with contextlib.suppress(OSError):
                os.unlink(self.address(pid, token))

    # ------------------------------------------------------------------ slots

    @staticmethod
    def _slot_offset(i: int) -> int:
        return _HEADER.size + i * _SLOT.size

    def _header(self) -> tuple[bytes, int, int, int, int, int]:
        data = os.pread(self._fd, _HEADER.size, 0)
        if len(data) != _HEADER.size:
            raise StorageError(f"{self._path} was cut short")
        magic, version, in_use, high, pad, arrival = _HEADER.unpack(data)
        return magic, version, in_use, min(high, SLOTS), pad, arrival

    def _slots(self, count: int) -> bytes:
        data = os.pread(self._fd, count * _SLOT.size, _HEADER.size)
        if len(data) != count * _SLOT.size:
            raise StorageError(f"{self._path} was cut short")
        return data

    def register(
        self, kind: int, keys: Iterable[int], group: int, token: int, flags: int = 0
    ) -> tuple[int, list[int]]:
        """Take one slot per key hash; returns ``(arrival number, slot indexes)``."""
        pid = os.getpid()
        keys = list(keys)
        with self._lock:  # then the file lock: a try first, for interrupts
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                magic, version, in_use, high, _, arrival = self._header()
                table = self._slots(high)
                taken: list[int] = []
                for i in range(high):
                    if len(taken) == len(keys):
                        break
                    state, _, spid, *_ = _SLOT.unpack_from(table, i * _SLOT.size)
                    if state == _FREE or not _alive(spid):
                        if state != _FREE:
                            in_use -= 1  # reclaim a slot left by a dead process
                        taken.append(i)
                taken += range(high, min(SLOTS, high + len(keys) - len(taken)))
                if len(taken) < len(keys):
                    raise StorageError(
                        f"{self._path}: the waiter table is full ({SLOTS} blocked reads per key "
                        "per store at most); too many blocked readers"
                    )
                for i, kh in zip(taken, keys):
                    slot = _SLOT.pack(_WAITING, kind, pid, kh, group, arrival, token, flags)
                    os.pwrite(self._fd, slot, self._slot_offset(i))
                high = max(high, taken[-1] + 1) if taken else high
                header = _HEADER.pack(magic, version, in_use + len(taken), high, 0, arrival + 1)
                os.pwrite(self._fd, header, 0)
                self._mine += len(taken)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        return arrival, taken

    def unregister(self, slots: list[int], pid: int, token: int) -> None:
        """Free ``slots`` if they still belong to the waiter ``(pid, token)``.

        Checked under the lock: another process may already have freed a dead reader's slot,
        and a new reader may have taken it since.
        """
        if self._closed:
            return
        with self._lock:  # then the file lock: a try first, for interrupts
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                freed = 0
                for i in slots:
                    off = self._slot_offset(i)
                    state, _, spid, _, _, _, stoken, _ = _SLOT.unpack(
                        os.pread(self._fd, _SLOT.size, off)
                    )
                    if state == _WAITING and spid == pid and stoken == token:
                        os.pwrite(self._fd, bytes(_SLOT.size), off)
                        freed += 1
                in_use = _U32.unpack(os.pread(self._fd, 4, _IN_USE))[0] - freed
                os.pwrite(self._fd, _U32.pack(max(in_use, 0)), _IN_USE)
                if pid == os.getpid():
                    self._mine = max(self._mine - freed, 0)
                if in_use <= 0:
                    os.pwrite(self._fd, _U32.pack(0), _HIGH)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _waiting(self) -> list[tuple[int, int, int, int, int, int, int, int]]:
        """``(arrival, slot, kind, pid, key hash, group hash, token, flags)`` of every waiting
        slot, oldest first."""
        high = self._header()[3]
        table = self._slots(high)
        out = []
        for i in range(high):
            state, kind, pid, kh, gh, arrival, token, flags = _SLOT.unpack_from(
                table, i * _SLOT.size
            )
            if state == _WAITING:
                out.append((arrival, i, kind, pid, kh, gh, token, flags))
        out.sort()
        return out

    # ------------------------------------------------------------------ waking

    def anyone_waiting(self) -> bool:
        """Whether any reader of this store is blocked (one word read from the table)."""
        return bool(_U32.unpack(os.pread(self._fd, 4, _IN_USE) or b"\0\0\0\0")[0])

    def others_waiting(self) -> bool:
        """Whether a slot in use is another process's (one word read; a dead reader's left
        over counts until it is reclaimed)."""
        in_use: int = _U32.unpack(os.pread(self._fd, 4, _IN_USE) or b"\0\0\0\0")[0]
        return in_use > self._mine

    def notify(self, key_hashes: set[int] | None, phase: int = ALL) -> int:
        """Wake readers waiting on any of ``key_hashes`` (``None``: on any key).

        ``phase`` says which: :data:`EARLY` only readers flagged :data:`FLAG_EARLY` (called
        right after a durable commit, before its log flush), :data:`LATE` only the
        others (after the flush), :data:`ALL` every one.  Of each group only the oldest
        reader is woken, and only in the phase its flag belongs to: a phase whose oldest
        reader of a group belongs to the other phase leaves that group alone.  Returns how
        many blocked calls *of other processes* were sent a wake-up (a writer may wait for
        their commits; one of its own process may only run once the writer returned)."""
        if not self.anyone_waiting():
            return 0
        seen_groups: set[tuple[int, int]] = set()
        woken: set[tuple[int, int]] = set()
        sent = 0
        me = os.getpid()
        for _, slot, kind, pid, kh, gh, token, flags in self._waiting():
            if key_hashes is not None and kh not in key_hashes:
                continue
            wanted = phase & (EARLY if flags & FLAG_EARLY else LATE)
            if kind == KIND_GROUP:
                if (kh, gh) in seen_groups:
                    continue  # only the oldest reader of a group; it passes the baton on
                if not wanted:
                    seen_groups.add((kh, gh))
                elif self._send(pid, token, slot):
                    seen_groups.add((kh, gh))
                    sent += pid != me
            elif wanted and (pid, token) not in woken:
                sent += self._send(pid, token, slot) and pid != me
                woken.add((pid, token))
        return sent

    def wake_next(self, key_hashes: set[int], group: int, after_arrival: int) -> None:
        """Pass the baton: wake the oldest group reader that arrived after ``after_arrival``."""
        done: set[int] = set()
        for arrival, slot, kind, pid, kh, gh, token, _ in self._waiting():
            if kind != KIND_GROUP or gh != group or kh not in key_hashes or kh in done:
                continue
            if arrival > after_arrival and self._send(pid, token, slot):
                done.add(kh)

    def older_waiting(
        self, key_hashes: set[int], group: int, arrival: int, other_than: int = 0
    ) -> bool:
        """Whether a reader of ``group`` that arrived before ``arrival`` still waits on every
        one of ``key_hashes`` (it is served first).  One whose process died does not count,
        nor one that waits on only some of them (the news may be on another), nor one of
        process ``other_than`` (which orders its own)."""
        if other_than == os.getpid() and not self.others_waiting():
            return False
        older: dict[tuple[int, int], set[int]] = {}
        for when, _, kind, pid, kh, gh, token, _ in self._waiting():
            if when >= arrival:
                break
            if kind == KIND_GROUP and gh == group and kh in key_hashes and pid != other_than:
                older.setdefault((pid, token), set()).add(kh)
        return any(keys == key_hashes and _alive(pid) for (pid, _), keys in older.items())

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

    def wake_socket(self, address: str | bytes) -> None:
        """Send a wake-up to a socket of this process (closing the store)."""
        with contextlib.suppress(BlockingIOError):
            self._send_sock.sendto(b"!", address)

    def close(self) -> None:
        self._closed = True
        self._send_sock.close()
        os.close(self._fd)
