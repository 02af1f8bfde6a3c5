"""Crash points for tests: a process that names one in ``RSTORE_CRASH_AT`` kills itself there.

The write-ahead log's crash tests (tests/processes/test_wal_crashes.py) start a child with
``RSTORE_CRASH_AT=<point>``; when the child reaches that point it sends itself SIGKILL, which
is what a power cut or an OOM kill does to a process: no cleanup, no flush.  Without the
variable :func:`crash_point` is one comparison.
"""

from __future__ import annotations

import os
import signal

__all__ = ["POINTS", "arm", "armed", "crash_point"]

#: Every point, in the order a write, a checkpoint, a recovery and a compaction reach them.
POINTS = (
    "log-written",  # the record is in the log file; LMDB has not committed
    "lmdb-committed",  # LMDB committed; the record is not marked committed
    "record-marked",  # marked; the log is not flushed
    "bulk-committed",  # a bulk write committed with its barrier; no checkpoint covers it yet
    "checkpoint-data-flushed",  # data.mdb flushed for a checkpoint; the header is not written
    "upgrade-committed",  # an upgrade's transaction committed, data.mdb flushed; no header yet
    "recovery-meta-restored",  # recovery wrote the checkpoint's meta page back; nothing redone
    "recovery-redone",  # the redo committed in LMDB; the new header is not written
    "compact-copied",  # a compaction's copy written and flushed; data.mdb untouched
    "compact-intent-written",  # format 3: the intent record flushed; the copy not renamed
    "compact-renamed",  # the copy renamed over data.mdb; format 3: the log's header not written
    "compact-header-written",  # format 3: the new header flushed; the intent not removed
)

#: The point this process dies at, or ``None`` (the hot path tests this before calling
#: :func:`crash_point`: no call without it).
armed: str | None = os.environ.get("RSTORE_CRASH_AT")


def arm(name: str | None) -> None:
    """Set the crash point from inside the process (tests), after the writes that must land."""
    global armed  # noqa: PLW0603 -- the write path reads it as one attribute, no call
    if name is not None and name not in POINTS:
        raise ValueError(f"no crash point {name!r}")
    armed = name


def crash_point(name: str) -> None:
    """SIGKILL this process if ``RSTORE_CRASH_AT`` names ``name`` (tests only)."""
    if armed is not None and name == armed:
        os.kill(os.getpid(), signal.SIGKILL)
