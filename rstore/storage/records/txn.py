"""Typed access to one LMDB transaction: records, keyspace, stream metadata and nodes.

Everything rstore stores goes through this class; the LMDB transaction itself stays private.

* **Records.**  :meth:`Txn.get`, :meth:`Txn.put`, :meth:`Txn.items` ... take a sub-database
  name (``layout.DB_*``) and handle the checksum of format 2 (:func:`layout.seal`): every value
  read is verified against its key, and a mismatch raises
  :class:`~rstore.errors.CorruptStoreError` naming the sub-database and the stream.  A format 1
  store (no checksums, read-only) is decoded defensively instead: malformed bytes raise the same
  error, never a bare ``struct.error``.
* **One copy per read.**  LMDB hands out views into its map (``buffers=True``); a value is
  verified in place and copied once.  Views leave only through :meth:`Txn.cursor`, to
  ``storage/records/bulk_read.py`` (they are valid only in the txn).
* **Write caching.**  Write transactions cache what they change and write it back once, at
  :meth:`Txn.flush` (just before commit): stream metadata is read once per transaction and
  written back if marked dirty; nodes obtained with :meth:`Txn.node_for_update` are
  ``bytearray`` copies kept until flush, and every iteration over
  nodes first writes the dirty ones back, so LMDB is the single truth that cursors see.  That
  makes a pipeline of 1000 XADDs touch the tail node 1000 times in memory but write it once.
* **Carried on.**  A committed write transaction hands what it read and wrote to the next write
  transaction of the process (:meth:`Txn.carry`, the ``prior`` of the next), valid when no
  other writer, of any process, committed in between: then every record is still exactly what
  LMDB holds, and the next XADD to the same stream reads nothing from LMDB.
* **Node bytes.**  Every node written or deleted goes through this class, which keeps each
  stream's :attr:`StreamMeta.node_bytes` (the sum of its listpacks' sizes, for retention's
  maximum in bytes) as it goes: a node made dirty remembers the size LMDB holds of it, and its
  flush adds the difference.  A stream whose record predates format 4 is counted when first
  asked for (:meth:`Txn.stream_bytes`); until then nothing is added to it.
* Keyspace changes are written through at once (they are rare and SCAN iterates them).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from rstore.errors import CorruptDataError, CorruptStoreError
from rstore.model import ID
from rstore.storage.checks import pagecheck
from rstore.storage.records import layout, txn_errors
from rstore.storage.records.cursors import seek_node
from rstore.storage.records.layout import KeyRecord, StoreConfig, StreamMeta

__all__ = ["Txn"]

T = TypeVar("T")

_MAX_DIRTY_NODES = 64
_CARRY_LIMIT = 4096  # records carried from one write transaction to the next, at most
_DECODE_ERRORS = (struct.error, ValueError, IndexError, KeyError, CorruptDataError)


class Txn:
    """One LMDB transaction with rstore's record types."""

    __slots__ = (
        "_clean_nodes",
        "_config",
        "_dbs",
        "_dirty_meta",
        "_dirty_nodes",
        "_keys",
        "_meta",
        "_names",
        "_node_base",
        "_path",
        "_raw",
        "relaxed",
        "sealed",
        "write",
        "wrote",
    )

    def __init__(
        self,
        raw: Any,
        dbs: dict[bytes, Any],
        *,
        write: bool,
        sealed: bool = True,
        path: str = "",
        prior: Txn | None = None,
    ) -> None:
        """``prior``: the write transaction of this process that committed right before this
        one (none other in between, :meth:`carry`): this one starts from what it knew."""
        self._raw = raw
        self._dbs = dbs
        self.write = write
        self.wrote = False  # certainly changed a page (a put, a delete that found its key, ...)
        # Nothing in it was acknowledged to anyone (a blocking read that found nothing, which
        # only recorded its consumer): with sync=True it need not wait for the disk, and the
        # flush of any later commit covers it (docs/durability.md, "Relaxed commits").
        self.relaxed = False
        self.sealed = sealed  # format 2: values carry checksums
        self._path = path  # the data file, for error messages
        self._dirty_meta: set[int] = set()
        self._dirty_nodes: dict[bytes, bytearray] = {}
        self._node_base: dict[bytes, int] = {}  # dirty node -> the size LMDB holds of it
        self._config: StoreConfig | None
        self._keys: dict[bytes, KeyRecord | None]
        self._names: dict[int, bytes]  # stream handle -> key name, as far as seen
        self._meta: dict[int, StreamMeta]
        self._clean_nodes: dict[bytes, bytes]  # nodes read by node_get, unchanged
        if prior is None:
            self._config, self._keys, self._names, self._meta, self._clean_nodes = (
                None, {}, {}, {}, {}
            )  # fmt: skip
        else:  # flushed and committed: its dirty records are clean now
            self._config, self._keys, self._names = prior._config, prior._keys, prior._names
            self._meta, self._clean_nodes = prior._meta, prior._clean_nodes

    def put_sealed(self, db: bytes, items: list[tuple[bytes, bytes]]) -> None:
        """Put records whose values are sealed already (:mod:`rstore.storage.records.sealed`), in
        key order, in one call."""
        self.wrote = True
        self._raw.cursor(db=self._dbs[db]).putmulti(items)

    @property
    def holds_nodes(self) -> bool:
        """Whether nodes read or written in this transaction are held in its cache (a write
        of nodes must then go through :meth:`nodes_write`)."""
        return bool(self._dirty_nodes or self._clean_nodes)

    def corrupt(self, db: bytes, key: bytes, what: str) -> CorruptStoreError:
        """The error for a damaged record of ``db`` at ``key``, naming its stream if known."""
        return txn_errors.corrupt(self, self._names, self._path, db, key, what)

    def inconsistent(self, db: bytes, what: str, stream: bytes | None = None) -> CorruptStoreError:
        """The error for records that disagree, each sound on its own (see txn_errors)."""
        return txn_errors.inconsistent(self._path, db, what, stream)

    def carry(self) -> Txn | None:
        """Once flushed, to be committed: this transaction, as the ``prior`` of the next write
        transaction if that one follows its commit; ``None`` when it holds too many records to
        keep them (a bulk load: memory stays bounded)."""
        if len(self._keys) + len(self._meta) + len(self._clean_nodes) > _CARRY_LIMIT:
            return None
        return self

    def pages_in_use(self) -> int:
        """The pages of every sub-database's tree (branch, leaf, overflow), as this transaction
        sees them; not the free list, nor the two meta pages and the main tree."""
        total = 0
        for handle in self._dbs.values():
            stat = self._raw.stat(handle)
            total += int(stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"])
        return total

    @property
    def id(self) -> int:
        """LMDB's transaction id (the snapshot a read transaction sees)."""
        return int(self._raw.id())

    # ------------------------------------------------------------------ damaged data

    def stream_name(self, handle: int) -> bytes | None:
        """The key name of the stream ``handle``, when this transaction has seen it."""
        return self._names.get(handle)

    def decode(self, db: bytes, key: bytes, fn: Callable[[bytes], T], payload: bytes) -> T:
        """``fn(payload)``; malformed bytes raise :class:`CorruptStoreError`, never a bare
        ``struct.error`` (only possible in format 1, which has no checksums)."""
        try:
            return fn(payload)
        except _DECODE_ERRORS as exc:
            raise self.corrupt(db, key, f"malformed record ({exc})") from exc

    def _open(self, db: bytes, key: bytes, value: bytes | memoryview) -> bytes:
        if not self.sealed:
            return bytes(value)
        payload = layout.unseal(key, value)
        if payload is None:
            raise self.corrupt(db, key, "checksum mismatch: the record is damaged")
        return payload

    # ------------------------------------------------------------------ records

    def get(self, db: bytes, key: bytes) -> bytes | None:
        """The record of ``db`` at ``key`` (checksum verified), or ``None``."""
        value = self._raw.get(key, db=self._dbs[db])
        return None if value is None else self._open(db, key, value)

    def put(self, db: bytes, key: bytes, payload: bytes | bytearray) -> None:
        """Store ``payload`` at ``key`` (sealed with its checksum)."""
        self.wrote = True
        self._raw.put(key, layout.seal(key, payload) if self.sealed else payload, db=self._dbs[db])

    def delete(self, db: bytes, key: bytes) -> bool:
        """Remove the record at ``key``; whether it existed."""
        found = bool(self._raw.delete(key, db=self._dbs[db]))
        self.wrote = self.wrote or found
        return found

    def delete_many(self, db: bytes, keys: list[bytes]) -> int:
        """:meth:`delete` of each of ``keys``; how many existed."""
        delete, handle = self._raw.delete, self._dbs[db]
        found = 0
        for key in keys:
            if delete(key, db=handle):
                found += 1
        self.wrote = self.wrote or found > 0
        return found

    def pop(self, db: bytes, key: bytes) -> bytes | None:
        """Remove and return the record at ``key`` (checksum verified), or ``None``."""
        payload = self.get(db, key)  # copied before the delete frees its page
        if payload is not None:
            self.wrote = bool(self._raw.delete(key, db=self._dbs[db])) or self.wrote
        return payload

    def pop_many(self, db: bytes, keys: list[bytes]) -> list[bytes | None]:
        """:meth:`pop` of each of ``keys``, in order (in one C call when it is built): the
        payloads, ``None`` where there was no record.  A damaged record raises as :meth:`pop`
        raises, the records before it popped (the write transaction is then abandoned)."""
        pop_sealed = layout.pop_sealed
        if pop_sealed is None or not self.sealed or not keys:
            return [self.pop(db, key) for key in keys]
        payloads, damaged = pop_sealed(self._raw, self._dbs[db], keys)
        if damaged >= 0:
            raise self.corrupt(db, keys[damaged], "checksum mismatch: the record is damaged")
        self.wrote = self.wrote or any(p is not None for p in payloads)
        return payloads

    def count(self, db: bytes) -> int:
        """How many records ``db`` holds."""
        return int(self._raw.stat(self._dbs[db])["entries"])

    def items(
        self, db: bytes, prefix: bytes, start: bytes | None = None, end: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """``(key, payload)`` of ``db`` whose key starts with ``prefix``, in key order, from
        ``start`` (default: the prefix itself) up to ``end`` inclusive (default: no bound).

        Do not change ``db`` while iterating: collect first, then write.
        """
        cur = self._raw.cursor(db=self._dbs[db])
        if not cur.set_range(start if start is not None else prefix):
            return
        n = len(prefix)
        for view, value in cur.iternext():
            key = bytes(view)
            if key[:n] != prefix or (end is not None and key > end):
                return
            yield key, self._open(db, key, value)

    def last_item(self, db: bytes, prefix: bytes) -> tuple[bytes, bytes] | None:
        """The record with the greatest key starting with ``prefix`` (a fixed-size prefix whose
        successor is ``prefix`` + 1), or ``None``."""
        cur = self._raw.cursor(db=self._dbs[db])
        after = (int.from_bytes(prefix, "big") + 1).to_bytes(len(prefix), "big")
        ok = cur.prev() if cur.set_range(after) else cur.last()
        if not ok or cur.key()[: len(prefix)] != prefix:
            return None
        key = bytes(cur.key())
        return key, self._open(db, key, cur.value())

    def scan_records(self, db: bytes) -> Iterator[tuple[bytes, bytes | None]]:
        """Every record of ``db`` as ``(key, payload)``, the payload ``None`` when its checksum
        does not match (for checks, which report damage instead of stopping at it)."""
        cur = self._raw.cursor(db=self._dbs[db])
        if not cur.first():
            return
        for view, value in cur.iternext():
            key = bytes(view)
            yield key, (layout.unseal(key, value) if self.sealed else bytes(value))

    def walk_structure(self) -> pagecheck.Report:
        """LMDB's trees of this transaction's snapshot, walked from the file (the snapshot is
        pinned while this transaction is open)."""
        return pagecheck.verify(self._path, self.id)

    def delete_prefix(self, db: bytes, prefix: bytes) -> None:
        """Delete every record of ``db`` whose key starts with ``prefix``."""
        cur = self._raw.cursor(db=self._dbs[db])
        if not cur.set_range(prefix):
            return
        while cur.key()[: len(prefix)] == prefix:
            if not cur.delete():
                break
            self.wrote = True

    def drop_all_data(self) -> None:
        """Empty every data sub-database (FLUSHALL); format, config and handles stay."""
        self._dirty_nodes.clear()
        self._node_base.clear()
        self._clean_nodes.clear()
        self._dirty_meta.clear()
        self._meta.clear()
        self._keys.clear()
        self._names.clear()
        self.wrote = True
        for db in layout.DATA_DBS:
            self._raw.drop(self._dbs[db], delete=False)

    # ------------------------------------------------------------------ config / handles

    def config(self) -> StoreConfig:
        if self._config is None:
            raw = self.get(layout.DB_META, layout.META_CONFIG)
            self._config = (
                StoreConfig()
                if raw is None
                else self.decode(layout.DB_META, layout.META_CONFIG, StoreConfig.unpack, raw)
            )
        return self._config

    def set_config(self, config: StoreConfig) -> None:
        self.put(layout.DB_META, layout.META_CONFIG, config.pack())
        self._config = config

    def record_format(self, version: int) -> None:
        """Record the store's format version (the one record without a checksum)."""
        self.wrote = True
        self._raw.put(layout.META_FORMAT, layout.pack_format(version), db=self._dbs[layout.DB_META])

    def new_handle(self) -> int:
        raw = self.get(layout.DB_META, layout.META_NEXT_HANDLE)
        handle = (
            1
            if raw is None
            else self.decode(layout.DB_META, layout.META_NEXT_HANDLE, layout.unpack_u64, raw)
        )
        self.put(layout.DB_META, layout.META_NEXT_HANDLE, layout.pack_u64(handle + 1))
        return handle

    # ------------------------------------------------------------------ keyspace

    def key_get(self, name: bytes) -> KeyRecord | None:
        """The record of key ``name``, or ``None`` when it does not exist."""
        try:
            return self._keys[name]
        except KeyError:
            pass
        key = layout.key_db_key(name)
        value = self.get(layout.DB_KEYS, key)
        rec = None
        if value is not None and self.decode(
            layout.DB_KEYS, key, lambda v: layout.long_name_matches(v, name), value
        ):
            rec = self.decode(layout.DB_KEYS, key, layout.unpack_key_record, value)
            self._names[rec.handle] = name
        self._keys[name] = rec
        return rec

    def key_put(self, name: bytes, rec: KeyRecord) -> None:
        self.put(layout.DB_KEYS, layout.key_db_key(name), layout.pack_key_record(name, rec))
        self._keys[name] = rec
        self._names[rec.handle] = name

    def key_delete(self, name: bytes) -> None:
        self.delete(layout.DB_KEYS, layout.key_db_key(name))
        self._keys[name] = None

    def key_count(self) -> int:
        return self.count(layout.DB_KEYS)

    def iter_keys(self, start_hash: int = 0) -> Iterator[tuple[int, bytes, KeyRecord]]:
        """``(hash, name, record)`` in hash order, from the first key whose hash >= start_hash."""
        db = layout.DB_KEYS
        for key, value in self.items(db, b"", layout.pack_u64(start_hash)):
            name = self.decode(db, key, functools.partial(layout.name_from_key_entry, key), value)
            rec = self.decode(db, key, layout.unpack_key_record, value)
            self._names[rec.handle] = name
            yield layout.unpack_u64(key[:8]), name, rec

    # ------------------------------------------------------------------ stream metadata

    def stream_get(self, handle: int) -> StreamMeta:
        meta = self._meta.get(handle)
        if meta is None:
            key = layout.pack_u64(handle)
            raw = self.get(layout.DB_STREAMS, key)
            meta = (
                StreamMeta()
                if raw is None
                else self.decode(layout.DB_STREAMS, key, StreamMeta.unpack, raw)
            )
            self._meta[handle] = meta
        return meta

    def stream_put(self, handle: int, meta: StreamMeta) -> None:
        """Mark ``meta`` (possibly a new object) as the stream's state; written at flush.  Its
        ``node_bytes`` is this class's: a new object takes the count of the one it replaces."""
        held = self._meta.get(handle)
        if held is not meta:
            meta.node_bytes = (held if held is not None else self.stream_get(handle)).node_bytes
        self._meta[handle] = meta
        self._dirty_meta.add(handle)

    def stream_bytes(self, handle: int) -> int:
        """The bytes of the stream's node listpacks (:attr:`StreamMeta.node_bytes`), counted
        from its nodes when its record predates format 4 (and kept, in a write transaction).
        Nodes changed in this transaction and not written back yet count as they are now."""
        meta = self.stream_get(handle)
        prefix = layout.pack_u64(handle)
        if meta.node_bytes is not None:
            base = self._node_base
            return meta.node_bytes + sum(
                len(node) - base[key] for key, node in self._dirty_nodes.items()
                if key[:8] == prefix
            )  # fmt: skip
        self._flush_nodes()  # counted from LMDB: the cache first (it adds nothing uncounted)
        cur = self._raw.cursor(db=self._dbs[layout.DB_NODES])
        total = 0
        if cur.set_range(prefix):
            for key, value in cur.iternext():
                if key[:8] != prefix:
                    break
                total += self._payload_size(value)
        meta.node_bytes = total
        if self.write:
            self._dirty_meta.add(handle)
        return total

    def _count_bytes(self, handle: int, delta: int) -> None:
        """Add ``delta`` to the stream's node bytes (nothing while they are not counted)."""
        if delta:
            meta = self.stream_get(handle)
            if meta.node_bytes is not None:
                meta.node_bytes += delta
                self._dirty_meta.add(handle)

    def _payload_size(self, value: bytes | memoryview) -> int:
        return len(value) - layout.CHECKSUM_SIZE if self.sealed else len(value)

    def _stored_size(self, key: bytes) -> int:
        """The size of the node LMDB holds at ``key`` now (0: none)."""
        base = self._node_base.get(key)
        if base is not None:
            return base
        clean = self._clean_nodes.get(key)
        if clean is not None:
            return len(clean)
        value = self._raw.get(key, db=self._dbs[layout.DB_NODES])
        return 0 if value is None else self._payload_size(value)

    def stream_delete(self, handle: int) -> None:
        """Remove the stream's metadata and every node (groups: see the groups module)."""
        self._meta.pop(handle, None)
        self._dirty_meta.discard(handle)
        prefix = layout.pack_u64(handle)
        for cache in (self._dirty_nodes, self._clean_nodes, self._node_base):
            for key in [k for k in cache if k.startswith(prefix)]:
                del cache[key]
        self.delete(layout.DB_STREAMS, prefix)
        self.delete_prefix(layout.DB_NODES, prefix)

    # ------------------------------------------------------------------ nodes

    def _node_payload(self, key: bytes, value: bytes | memoryview) -> bytes:
        """A stored node's listpack, verified (format 2) or deep-checked (format 1)."""
        node = self._open(layout.DB_NODES, key, value)
        if not self.sealed:
            from rstore.codec.node_validate import validate_node  # noqa: PLC0415 -- format 1

            try:
                validate_node(node, layout.node_key_id(key), deep=True)
            except CorruptDataError as exc:
                raise self.corrupt(layout.DB_NODES, key, f"malformed node ({exc})") from exc
        return node

    def node_get(self, handle: int, master_id: ID) -> bytes | bytearray | None:
        """A node's listpack (read only), or ``None``."""
        key = layout.node_key(handle, master_id)
        node = self._dirty_nodes.get(key)
        if node is not None:
            return node
        clean = self._clean_nodes.get(key)
        if clean is None:
            value = self._raw.get(key, db=self._dbs[layout.DB_NODES])
            if value is None:
                return None
            clean = self._clean_nodes[key] = self._node_payload(key, value)
        return clean

    def node_for_update(self, handle: int, master_id: ID) -> bytearray | None:
        """A mutable copy of a node; changes to it are written back at flush."""
        key = layout.node_key(handle, master_id)
        node = self._dirty_nodes.get(key)
        if node is None:
            value = self._clean_nodes.pop(key, None)
            if value is None:
                raw = self._raw.get(key, db=self._dbs[layout.DB_NODES])
                if raw is None:
                    return None
                value = self._node_payload(key, raw)
            node = bytearray(value)
            self._track(key, node, len(value))
        return node

    def node_put(self, handle: int, master_id: ID, node: bytearray) -> None:
        """Store a (new or replaced) node; written back at flush."""
        key = layout.node_key(handle, master_id)
        self._track(key, node, None if key in self._dirty_nodes else self._stored_size(key))

    def node_write(self, handle: int, master_id: ID, node: bytes | bytearray) -> None:
        """Store a node now, keeping no copy of it (bulk loads: memory stays bounded by what
        the caller holds, not by what the transaction wrote)."""
        key = layout.node_key(handle, master_id)
        stored = self._forget_node(key)
        self.put(layout.DB_NODES, key, node)
        self._count_bytes(handle, len(node) - stored)

    def _track(self, key: bytes, node: bytearray, stored: int | None) -> None:
        """Hold ``node`` dirty; ``stored``: the size LMDB holds at ``key`` (``None``: it is
        dirty already, and its size then is known)."""
        self._clean_nodes.pop(key, None)
        if len(self._dirty_nodes) >= _MAX_DIRTY_NODES and key not in self._dirty_nodes:
            self._flush_nodes()  # other nodes: what LMDB holds at ``key`` is unchanged
        if stored is not None:
            self._node_base[key] = stored
        self._dirty_nodes[key] = node

    def _forget_node(self, key: bytes) -> int:
        """Drop ``key`` from the caches; the size LMDB holds of it."""
        stored = self._stored_size(key)
        self._dirty_nodes.pop(key, None)
        self._node_base.pop(key, None)
        self._clean_nodes.pop(key, None)
        return stored

    def node_delete(self, handle: int, master_id: ID) -> None:
        key = layout.node_key(handle, master_id)
        stored = self._forget_node(key)
        if self.delete(layout.DB_NODES, key):
            self._count_bytes(handle, -stored)

    def iter_nodes(
        self, handle: int, from_id: ID = (0, 0), *, reverse: bool = False
    ) -> Iterator[tuple[ID, bytes]]:
        """Nodes of a stream as ``(master_id, listpack)``.

        Forward: starts at the node that may hold ``from_id`` (the last node whose master ID is
        <= ``from_id``, or else the first node), in ascending order.  Reverse: starts at the last
        node whose master ID is <= ``from_id``, descending.
        """
        prefix = layout.pack_u64(handle)
        cur = self.cursor(layout.DB_NODES)
        if not seek_node(cur, prefix, layout.node_key(handle, from_id), reverse=reverse):
            return
        step = cur.prev if reverse else cur.next
        while True:
            key = bytes(cur.key())
            if key[:8] != prefix:
                return
            yield self._node_id(key), self._node_payload(key, cur.value())
            if not step():
                return

    def _node_id(self, key: bytes) -> ID:
        """The master ID of a ``nodes`` key; a key of another size (a damaged page that still
        holds in order) is damage, not a ``struct.error``."""
        if len(key) != layout.NODE_KEY_SIZE:
            raise self.corrupt(layout.DB_NODES, key, f"a node key of {len(key)} bytes")
        return layout.node_key_id(key)

    def cursor(self, db: bytes) -> Any:
        """An LMDB cursor on ``db`` for storage's bulk readers (``bulk_read``): views valid in
        this transaction only, values as stored (sealed in format 2).  Nodes cached first."""
        self._flush_nodes()
        return self._raw.cursor(db=self._dbs[db])

    def node_ids(self, handle: int) -> list[ID]:
        """Every master ID of the stream, ascending (keys only)."""
        self._flush_nodes()
        prefix = layout.pack_u64(handle)
        cur = self._raw.cursor(db=self._dbs[layout.DB_NODES])
        out: list[ID] = []
        if not cur.set_range(prefix):
            return out
        for key in cur.iternext(values=False):
            if key[:8] != prefix:
                break
            out.append(self._node_id(bytes(key)))
        return out

    def last_node_before(self, handle: int, master_id: ID) -> ID | None:
        """The master ID of the last node strictly before ``master_id``, or ``None``."""
        self._flush_nodes()
        prefix = layout.pack_u64(handle)
        cur = self._raw.cursor(db=self._dbs[layout.DB_NODES])
        if cur.set_range(layout.node_key(handle, master_id)):
            ok = cur.prev()
        else:
            ok = cur.last()
        if not ok or cur.key()[:8] != prefix:
            return None
        return self._node_id(bytes(cur.key()))

    # ------------------------------------------------------------------ flush

    def _flush_nodes(self) -> None:
        """Write the nodes changed in the cache back to LMDB (they stay cached, clean)."""
        self.wrote = True
        put, db, clean = self._raw.put, self._dbs[layout.DB_NODES], self._clean_nodes
        seal = layout.seal if self.sealed else None
        base, metas, handle_of = self._node_base, self._meta, layout.unpack_u64_from
        for key, node in self._dirty_nodes.items():
            put(key, node if seal is None else seal(key, node), db=db)
            clean[key] = bytes(node)
            delta = len(node) - base.pop(key, 0)
            if delta:  # _count_bytes, inline: this runs for every write
                handle = handle_of(key)[0]
                meta = metas.get(handle) or self.stream_get(handle)
                if meta.node_bytes is not None:
                    meta.node_bytes += delta
                    self._dirty_meta.add(handle)
        self._dirty_nodes.clear()

    def flush(self) -> None:
        """Write every cached change back to LMDB (before commit)."""
        if self._dirty_nodes:
            self._flush_nodes()
        if self._dirty_meta:
            self.wrote = True
            put, db, metas = self._raw.put, self._dbs[layout.DB_STREAMS], self._meta
            seal, pack_u64 = layout.seal if self.sealed else None, layout.pack_u64
            for handle in self._dirty_meta:
                key, payload = pack_u64(handle), metas[handle].pack()
                put(key, payload if seal is None else seal(key, payload), db=db)
            self._dirty_meta.clear()

    def put_many(self, db: bytes, items: list[tuple[bytes, bytes]]) -> None:
        """:meth:`put` of each ``(key, payload)`` in one call to LMDB, sealed one at a time."""
        if items:
            self.wrote = True
            seal = layout.seal
            sealed = ((k, seal(k, v)) for k, v in items) if self.sealed else iter(items)
            self._raw.cursor(db=self._dbs[db]).putmulti(sealed)

    def nodes_write(self, handle: int, nodes: list[tuple[ID, bytes]]) -> None:
        """:meth:`node_write` of each ``(master_id, listpack)`` of ``nodes`` (ascending), in
        one call."""
        items = [(layout.node_key(handle, mid), node) for mid, node in nodes]
        stored = self._stored_sizes([key for key, _ in items])
        self.put_many(layout.DB_NODES, items)
        self._count_bytes(handle, sum(len(node) for _, node in items) - stored)

    def nodes_add_sealed(self, handle: int, items: list[tuple[bytes, bytes]]) -> None:
        """Store nodes sealed already (``(key, sealed listpack)``, ascending keys) in one
        call, as :meth:`nodes_write` does."""
        stored = self._stored_sizes([key for key, _ in items])
        self.put_sealed(layout.DB_NODES, items)
        size = layout.CHECKSUM_SIZE
        self._count_bytes(handle, sum(len(value) - size for _, value in items) - stored)

    def _stored_sizes(self, keys: list[bytes]) -> int:
        """The size LMDB holds at ``keys`` (ascending; dropped from the caches), in all: one
        seek tells when none is stored (nodes appended after a stream's last)."""
        if not keys:
            return 0
        if self._dirty_nodes or self._clean_nodes:
            return sum(self._forget_node(key) for key in keys)
        cur = self._raw.cursor(db=self._dbs[layout.DB_NODES])
        if not cur.set_range(keys[0]) or bytes(cur.key()) > keys[-1]:
            return 0
        return sum(self._stored_size(key) for key in keys)
