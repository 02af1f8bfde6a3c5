"""The last steps of a compaction, and finishing one that was interrupted (every writable
opener looks).

A compaction (:mod:`rstore.storage.compaction.compact`) writes the compacted copy of
``data.mdb`` as :data:`COPY_FILE` in the store directory, flushed, and renames it over
``data.mdb``. The log's header must then name the copy's checkpoint -- its meta page, which
points at other pages than the old file's: between the rename and that header a recovery after a
power loss would write the old file's meta page into the new file. So before the rename the
compaction writes :data:`INTENT_FILE` (the header to write: the copy's last transaction, its
meta page, the log's new position), flushed with its directory, and then runs :func:`complete`:
rename, header, log cut back to its first record, intent removed. Whoever finds an intent runs
:func:`complete` again.

:func:`finish_interrupted` is what every writable opener runs before anything else
(``env_opening``), under the log's open lock (which a compaction holds from start to end), so
a store is never used between a compaction's steps: a valid intent is completed -- rolled
forward: the copy was flushed before the intent was written; a copy without a valid intent (a
crash before or while the intent was written) is removed, and so is a torn intent -- rolled
back: ``data.mdb`` was never touched.

Layout of the intent (little-endian)::

    0 magic b"RSCI" | 4 version u32 | 8 txnid u64 | 16 generation u64 | 24 offset u64
    32 sequence number u64 | 40 last CRC u32 | 44 meta length u16 | 46 meta page | CRC-32 u32
"""

from __future__ import annotations

import os
import struct
import zlib
from contextlib import suppress

from rstore import logs
from rstore.storage.engine import wal_log, wal_meta
from rstore.storage.engine.faults import crash_point
from rstore.storage.engine.wal_log import Position, boot_id
from rstore.storage.failures import translate_os
from rstore.storage.opening import DATA_FILE

__all__ = [
    "COPY_FILE", "INTENT_FILE", "Intent", "complete", "finish_interrupted", "read_intent",
    "remove_leftovers", "swap_in", "sync_directory", "write_intent",
]  # fmt: skip

COPY_FILE = DATA_FILE + ".compact"
INTENT_FILE = "compact.intent"
_MAGIC = b"RSCI"
_VERSION = 1
_FIXED = struct.Struct("<4sIQQQQIH")
_CRC = struct.Struct("<I")


class Intent:
    """What the log's header names once the copy is ``data.mdb``: the copy's last transaction,
    its meta page, and where the log's records start again.  (A plain class: this module is
    loaded by every process that opens a store, and a NamedTuple costs more to define.)"""

    __slots__ = ("meta", "position", "txnid")

    def __init__(self, txnid: int, position: Position, meta: bytes) -> None:
        self.txnid = txnid
        self.position = position
        self.meta = meta


def _encode(intent: Intent) -> bytes:
    gen, offset, lsn, last = intent.position
    body = _FIXED.pack(_MAGIC, _VERSION, intent.txnid, gen, offset, lsn, last, len(intent.meta))
    body += intent.meta
    return body + _CRC.pack(zlib.crc32(body))


def _decode(raw: bytes) -> Intent | None:
    if len(raw) < _FIXED.size + _CRC.size:
        return None
    magic, version, txnid, gen, offset, lsn, last, size = _FIXED.unpack_from(raw)
    end = _FIXED.size + size
    if magic != _MAGIC or version != _VERSION or len(raw) != end + _CRC.size:
        return None
    if _CRC.unpack_from(raw, end)[0] != zlib.crc32(raw[:end]):
        return None
    return Intent(txnid, Position(gen, offset, lsn, last), raw[_FIXED.size : end])


def sync_directory(store_path: str) -> None:
    """Flush the directory: the names created, renamed and removed in it are on disk."""
    fd = os.open(store_path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_intent(store_path: str, intent: Intent) -> None:
    """Write the intent, flushed, with the directory flushed."""
    path = os.path.join(store_path, INTENT_FILE)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        data = _encode(intent)
        if os.write(fd, data) != len(data):
            raise OSError(f"short write of {path}")
        os.fsync(fd)
    finally:
        os.close(fd)
    sync_directory(store_path)


def read_intent(store_path: str) -> Intent | None:
    """The intent in ``store_path``, or ``None`` when there is none or it is not valid."""
    try:
        with open(os.path.join(store_path, INTENT_FILE), "rb") as f:
            return _decode(f.read(64 << 10))
    except FileNotFoundError:
        return None


def swap_in(store_path: str) -> None:
    """Rename the copy over ``data.mdb``, with the directory flushed."""
    os.rename(os.path.join(store_path, COPY_FILE), os.path.join(store_path, DATA_FILE))
    sync_directory(store_path)
    crash_point("compact-renamed")


def complete(store_path: str, log_fd: int, intent: Intent) -> None:
    """The steps after the intent (format 3; ``log_fd``: ``wal.log``, its open lock held), each
    harmless to run again: the copy renamed over ``data.mdb`` if it is still there, the header
    naming the copy's checkpoint, the log cut back to its first record, the intent removed.

    A header already past the intent's checkpoint (writes followed a finished compaction) is
    left alone, and the log is cut only when no record was written at its new start."""
    if os.path.exists(os.path.join(store_path, COPY_FILE)):
        swap_in(store_path)
    if _data_meta(store_path, intent.txnid) != intent.meta:
        # Not the copy (the copy was lost before its rename, or writes followed): its own
        # header stays.
        logs.warn(logs.STORAGE, "%s: %s does not match data.mdb; removed", store_path, INTENT_FILE)
    else:
        header = wal_log.read_header(log_fd)
        if header is None or header.checkpoint_txnid <= intent.txnid:
            wal_log.write_header(log_fd, intent.txnid, intent.position, boot_id(), intent.meta)
            os.fdatasync(log_fd)
            crash_point("compact-header-written")
            if next(wal_log.chain(log_fd, intent.position), None) is None:
                os.ftruncate(log_fd, wal_log.RECORDS_START)
                os.fdatasync(log_fd)
    os.unlink(os.path.join(store_path, INTENT_FILE))
    sync_directory(store_path)


def _data_meta(store_path: str, txnid: int) -> bytes | None:
    """The meta page of ``txnid`` in ``data.mdb``, if one of its slots holds it."""
    try:
        fd = os.open(os.path.join(store_path, DATA_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        return wal_meta.capture(fd, txnid)
    except wal_meta.MetaError:
        return None
    finally:
        os.close(fd)


def remove_leftovers(store_path: str) -> bool:
    """Remove a copy and an intent left behind (the caller holds the store); whether there was
    anything to remove."""
    removed = False
    for name in (COPY_FILE, INTENT_FILE):
        with suppress(FileNotFoundError):
            os.unlink(os.path.join(store_path, name))
            removed = True
    if removed:
        sync_directory(store_path)
    return removed


def finish_interrupted(store_path: str, log_fd: int) -> None:
    """Before a writable opener uses the store: finish or undo a compaction that was
    interrupted (see the module).  ``log_fd``: ``wal.log`` with its open lock held."""
    copy = os.path.join(store_path, COPY_FILE)
    try:
        if not os.path.exists(os.path.join(store_path, INTENT_FILE)):
            if os.path.exists(copy):
                remove_leftovers(store_path)
            return
        intent = read_intent(store_path)
        if intent is None:
            remove_leftovers(store_path)
            return
        complete(store_path, log_fd, intent)
    except OSError as exc:
        raise translate_os(exc, store_path, "finish the interrupted compaction of") from exc
    logs.warn(logs.STORAGE, "%s: finished a compaction that was interrupted", store_path)
