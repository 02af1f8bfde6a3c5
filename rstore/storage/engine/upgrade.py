"""Bringing a store of an older format to the current one (format 3), when a process first opens
it for writing (``Env`` opening; ``rstore upgrade`` is such an open).

* **Format 2** (checksums, no write-ahead log) differs from format 3 only by the log: the
  upgrade is the log's creation (:func:`rstore.storage.engine.wal_recovery.create`), whose
  transaction
  also records format 3.
* **Format 1** had no checksums either: the same transaction seals every value of every
  sub-database (the format record aside) with its checksum
  (:func:`rstore.storage.records.layout.seal`).
  Node listpacks are not touched (the checksum goes after them); each format-1 node is checked
  in depth first: sealing damaged bytes would make them look sound.

Crash cases: until the transaction commits, the store is as it was, with a ``wal.log`` without
its header, which the next writable open takes for an upgrade cut short and does again; after
it, the log's header is written once ``data.mdb`` is flushed, and a log without its header is
again finished by the next writable open.  A read-only open reads either state.  Only a store
no other process has open is upgraded (:func:`hold_alone`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rstore.codec.node_validate import validate_node
from rstore.errors import CorruptDataError, CorruptStoreError, StoreInUseError
from rstore.storage.engine import exclusive
from rstore.storage.records import layout

__all__ = ["BATCH", "LEGACY_SHARED_FILE", "bring_current", "forget_old_files", "hold_alone",
           "seal_all"]  # fmt: skip

#: Format 2's shared word (which commits were on disk), removed by the upgrade.
LEGACY_SHARED_FILE = "durable.shm"

#: Records rewritten per cursor pass (the cursor is repositioned between passes).
BATCH = 1024


def seal_all(
    raw: Any, dbs: dict[bytes, Any], path: str, progress: Callable[[int, int], None] | None
) -> int:
    """Seal every record in the write transaction ``raw`` but the format record; the number
    of records sealed."""
    total = sum(int(raw.stat(dbs[name])["entries"]) for name in layout.ALL_DBS) - 1
    done = 0
    if progress is not None:
        progress(0, total)
    for name in layout.ALL_DBS:
        db = dbs[name]
        after: bytes | None = None
        while True:
            batch = _next_batch(raw, db, after)
            if not batch:
                break
            for key, value in batch:
                if name == layout.DB_META and key == layout.META_FORMAT:
                    continue
                if name == layout.DB_NODES:
                    _check_node(key, value, path)
                raw.put(key, layout.seal(key, value), db=db)
                done += 1
            after = batch[-1][0]
            if progress is not None:
                progress(done, total)
    return done


def _next_batch(raw: Any, db: Any, after: bytes | None) -> list[tuple[bytes, bytes]]:
    cur = raw.cursor(db=db)
    if after is None:
        if not cur.first():
            return []
    elif not cur.set_range(after) or (bytes(cur.key()) == after and not cur.next()):
        return []
    batch = []
    for key, value in cur.iternext():
        batch.append((bytes(key), bytes(value)))
        if len(batch) == BATCH:
            break
    return batch


def _check_node(key: bytes, node: bytes, path: str) -> None:
    try:
        validate_node(node, layout.node_key_id(key), deep=True)
    except CorruptDataError as exc:
        raise CorruptStoreError(
            f"node record {key.hex()} is damaged ({exc}); the store was not upgraded",
            path=path, db="nodes", hint="restore it from a snapshot, or save what is readable",
        ) from exc  # fmt: skip


def bring_current(
    raw: Any,
    dbs: dict[bytes, Any],
    version: int,
    path: str,
    progress: Callable[[int, int], None] | None,
) -> int:
    """In the write transaction ``raw`` that gives the store its log: a format-1 store's
    records sealed, and the current format recorded; the number of records rewritten."""
    count = seal_all(raw, dbs, path, progress) if version < layout.FIRST_SEALED_FORMAT else 0
    raw.put(layout.META_FORMAT, layout.pack_format(layout.FORMAT_VERSION), db=dbs[layout.DB_META])
    return count


def hold_alone(store_path: str) -> None:
    """Before a store of an older format (or one whose log was cut short) is given the log:
    raise :class:`~rstore.errors.StoreInUseError` when another process has it open -- an
    older rstore writing it without the log would write past the log.  The check holds LMDB's
    lock for a moment only: this process has not opened LMDB yet, and closing the descriptor
    must drop no lock LMDB holds.  Openers of this rstore wait for the log's open lock that
    the caller holds."""
    lock_fd = exclusive.lock_lmdb(store_path)
    if lock_fd is not None:
        os.close(lock_fd)
        return
    pids = exclusive.holders(store_path)
    raise StoreInUseError(
        f"{store_path} is open in {exclusive.who_holds(pids)}; it is in an older store format, "
        f"which this rstore upgrades to format {layout.FORMAT_VERSION} when it first opens the "
        "store for writing, and the upgrade needs the store to itself",
        hint="close it there (an older rstore may be writing it) and open it again; it can "
        "be read meanwhile (readonly=True, the CLI's --read-only)",
        pids=pids,
    )


def forget_old_files(store_path: str) -> None:
    """After an upgrade: the shared word of format 2 (``durable.shm``) has no use any more."""
    with suppress(OSError):
        os.unlink(os.path.join(store_path, LEGACY_SHARED_FILE))
