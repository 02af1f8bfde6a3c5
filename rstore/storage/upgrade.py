"""Rewriting a store of an older format in the current one, in one write transaction.

Format 1 had no checksums.  Upgrading seals every value of every sub-database (the format
record aside) with its checksum (:func:`rstore.storage.layout.seal`) and then records format 2,
all in one transaction: a crash or a full disk leaves the store exactly as it was, in format 1.
Node listpacks are not touched (the checksum goes after them).  Before sealing, each format-1
node is checked in depth: sealing damaged bytes would make them look sound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import lmdb

from rstore.codec.node_validate import validate_node
from rstore.errors import CorruptDataError, CorruptStoreError
from rstore.storage import layout
from rstore.storage.failures import translate

if TYPE_CHECKING:
    from rstore.storage.env import Env

__all__ = ["BATCH", "seal_all", "upgrade_env"]

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


def upgrade_env(env: Env, progress: Callable[[int, int], None] | None = None) -> tuple[int, int]:
    """Rewrite the store of ``env`` from format 1 in format 2, in one write transaction, with
    every other use of the environment kept out; ``(format before, records rewritten)``.
    Nothing happens to a store of format 2 or later."""
    if env.readonly:
        raise env._refuse_write()
    before = env.format
    if before >= layout.FIRST_SEALED_FORMAT:
        return before, 0
    while True:
        with env._gate.changing:
            env._gate.drain()
            try:
                raw = env._env.begin(write=True)
                try:
                    count = seal_all(raw, env._dbs, env._data_path, progress)
                except BaseException:
                    raw.abort()
                    raise
                txnid = int(raw.id())
                raw.commit()
                env.format, env.sealed = layout.FIRST_SEALED_FORMAT, True
                env._carry = None
                if env._flusher is not None:  # MDB_NOMETASYNC: flush the meta page
                    env._flusher.make_durable(txnid)
                return before, count
            except lmdb.MapFullError:
                current = int(env._env.info()["map_size"])
                try:
                    env._env.set_mapsize(current * 2)
                except lmdb.Error as exc:
                    env._reopen_in_place(current)
                    raise translate(exc, env.path, writing=True) from exc
            except lmdb.Error as exc:
                raise translate(exc, env.path, writing=True) from exc
