"""Checking a store's write-ahead log (``rstore check`` of a store in format 3).

Recovery after an OS crash starts from the checkpoint the log's header names and redoes the
records after it (docs/durability.md).  So the log is sound when a header is valid and the
records after its checkpoint form an unbroken chain -- each valid where the previous one ends
-- at least up to the position LMDB's last commit recorded: every transaction committed since
the checkpoint must be in the log, intact, or an OS crash now would lose it.  Records past that
position (one being written, or one whose transaction did not commit) are not checked.

A checkpoint or a restart of the log at its front may move the header while the chain is read
in a store in use: the check then reads the header again and starts over.  Never writes.
"""

from __future__ import annotations

import os
from typing import Any

from rstore.storage.engine import wal, wal_log, wal_position
from rstore.storage.engine.wal_log import Position

__all__ = ["check_log"]

_ATTEMPTS = 5


def check_log(store_path: str, env: Any) -> list[str]:
    """The problems of the log of the store at ``store_path`` (open as ``env``, an
    :class:`~rstore.storage.env.Env`); empty when sound."""
    path = os.path.join(store_path, wal.LOG_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        return [f"{wal.LOG_FILE}: cannot be read ({exc.strerror})"]
    try:
        problems: list[str] = []
        for _ in range(_ATTEMPTS):
            header = wal_log.read_header(fd)
            if header is None:
                return [f"{wal.LOG_FILE}: no valid header (both slots damaged)"]
            committed = wal_position.read_of(env)  # read after the header: not older than it
            problems = _chain_problems(fd, header.position, committed)
            if not problems or wal_log.read_header(fd) == header:
                return problems
        return problems
    finally:
        os.close(fd)


def _chain_problems(fd: int, start: Position, committed: Position) -> list[str]:
    if (start.generation, start.lsn) > (committed.generation, committed.lsn):
        return []  # a header ahead of LMDB (never, as check_log reads LMDB after it): no chain
    reached, count = start, 0
    for record in wal_log.chain(fd, start):
        if record.position.lsn >= committed.lsn:
            break
        reached, count = wal_log.after(record), count + 1
    if (reached.generation, reached.lsn) >= (committed.generation, committed.lsn):
        return []
    missing = committed.lsn - reached.lsn
    return [
        f"{wal.LOG_FILE}: the record at offset {reached.offset} (log sequence number "
        f"{reached.lsn}) is damaged or missing: {missing} committed "
        f"transaction{'s' if missing != 1 else ''} since the last checkpoint "
        f"({count} intact before it) would be lost by an OS crash before the next checkpoint"
    ]
