"""Rewriting a store of an older format in the current one, in one write transaction.

Format 1 had no checksums.  Upgrading seals every value of every sub-database (the format
record aside) with its checksum (:func:`rstore.storage.layout.seal`) and then records format 2,
all in one transaction: a crash or a full disk leaves the store exactly as it was, in format 1.
Node listpacks are not touched (the checksum goes after them).  Before sealing, each format-1
node is checked in depth: sealing damaged bytes would make them look sound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rstore.codec.node_validate import validate_node
from rstore.errors import CorruptDataError, CorruptStoreError
from rstore.storage import layout

__all__ = ["BATCH", "seal_all"]

#: Records rewritten per cursor pass (the cursor is repositioned between passes).
BATCH = 1024


def seal_all(
    raw: Any, dbs: dict[bytes, Any], path: str, progress: Callable[[int, int], None] | None
) -> int:
    """Seal every record in the write transaction ``raw``; the number of records sealed."""
    total = sum(int(raw.stat(dbs[name])["entries"]) for name in layout.ALL_DBS)
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
            done += len(batch)
            after = batch[-1][0]
            if progress is not None:
                progress(done, total)
    raw.put(
        layout.META_FORMAT, layout.pack_format(layout.FIRST_SEALED_FORMAT), db=dbs[layout.DB_META]
    )
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
