"""Typed access to one LMDB transaction: keyspace, stream metadata and nodes.

Write transactions cache what they change and write it back once, at :meth:`Txn.flush` (called
by :meth:`rstore.storage.env.Env.write` just before commit).  That makes a pipeline of 1000
XADDs touch the tail node 1000 times in memory but write it to LMDB once:

* stream metadata (:class:`~rstore.storage.layout.StreamMeta`) is read once per transaction and
  written back if marked dirty;
* nodes obtained with :meth:`Txn.node_for_update` are ``bytearray`` copies kept until flush;
  every iteration over nodes first writes the dirty ones back, so LMDB is the single truth that
  cursors see.

Keyspace changes are written through at once (they are rare and SCAN iterates them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rstore.storage import layout
from rstore.storage.layout import ID, KeyRecord, StoreConfig, StreamMeta

_MAX_DIRTY_NODES = 64


_CARRY_LIMIT = 4096  # records carried from one write transaction to the next, at most


class Carry:
    """What a committed write transaction knew, for the next one to start from.

    Valid only for the write transaction whose id is ``txnid + 1``: then no other writer (in
    any process) committed in between, so every record is still exactly what LMDB holds.
    """

    __slots__ = ("config", "keys", "meta", "nodes", "txnid")

    def __init__(
        self,
        txnid: int,
        keys: dict[bytes, KeyRecord | None],
        meta: dict[int, StreamMeta],
        config: StoreConfig | None,
        nodes: dict[bytes, bytes],
    ) -> None:
        self.txnid = txnid
        self.keys = keys
        self.meta = meta
        self.config = config
        self.nodes = nodes


class Txn:
    """One LMDB transaction with rstore's record types."""

    __slots__ = (
        "_clean_nodes",
        "_config",
        "_dirty_meta",
        "_dirty_nodes",
        "_keys",
        "_meta",
        "_raw",
        "db_consumer_pel",
        "db_consumers",
        "db_groups",
        "db_keys",
        "db_meta",
        "db_nodes",
        "db_pel",
        "db_streams",
        "write",
    )

    def __init__(self, raw: Any, dbs: dict[bytes, Any], *, write: bool) -> None:
        self._raw = raw
        self.write = write
        self.db_meta = dbs[layout.DB_META]
        self.db_keys = dbs[layout.DB_KEYS]
        self.db_streams = dbs[layout.DB_STREAMS]
        self.db_nodes = dbs[layout.DB_NODES]
        self.db_groups = dbs[layout.DB_GROUPS]
        self.db_consumers = dbs[layout.DB_CONSUMERS]
        self.db_pel = dbs[layout.DB_PEL]
        self.db_consumer_pel = dbs[layout.DB_CONSUMER_PEL]
        self._config: StoreConfig | None = None
        self._keys: dict[bytes, KeyRecord | None] = {}
        self._meta: dict[int, StreamMeta] = {}
        self._dirty_meta: set[int] = set()
        self._dirty_nodes: dict[bytes, bytearray] = {}
        self._clean_nodes: dict[bytes, bytes] = {}  # nodes read by node_get, unchanged

    def adopt(self, carry: Carry) -> None:
        """Start from what the previous write transaction of this process left (see Carry)."""
        self._keys = carry.keys
        self._meta = carry.meta
        self._config = carry.config
        self._clean_nodes = carry.nodes

    def carry(self, txnid: int) -> Carry | None:
        """After a successful commit of transaction ``txnid``: its records, for the next."""
        if len(self._keys) + len(self._meta) + len(self._clean_nodes) > _CARRY_LIMIT:
            return None
        return Carry(txnid, self._keys, self._meta, self._config, self._clean_nodes)

    @property
    def raw(self) -> Any:
        """The underlying ``lmdb.Transaction`` (for storage-layer helpers only)."""
        return self._raw

    # ------------------------------------------------------------------ config / handles

    def config(self) -> StoreConfig:
        if self._config is None:
            raw = self._raw.get(layout.META_CONFIG, db=self.db_meta)
            self._config = StoreConfig.unpack(raw) if raw is not None else StoreConfig()
        return self._config

    def set_config(self, config: StoreConfig) -> None:
        self._raw.put(layout.META_CONFIG, config.pack(), db=self.db_meta)
        self._config = config

    def new_handle(self) -> int:
        raw = self._raw.get(layout.META_NEXT_HANDLE, db=self.db_meta)
        handle = layout.unpack_u64(raw) if raw is not None else 1
        self._raw.put(layout.META_NEXT_HANDLE, layout.pack_u64(handle + 1), db=self.db_meta)
        return handle

    # ------------------------------------------------------------------ keyspace

    def key_get(self, name: bytes) -> KeyRecord | None:
        """The record of key ``name``, or ``None`` when it does not exist."""
        try:
            return self._keys[name]
        except KeyError:
            pass
        value = self._raw.get(layout.key_db_key(name), db=self.db_keys)
        rec = None
        if value is not None and layout.long_name_matches(value, name):
            rec = layout.unpack_key_record(value)
        self._keys[name] = rec
        return rec

    def key_put(self, name: bytes, rec: KeyRecord) -> None:
        self._raw.put(layout.key_db_key(name), layout.pack_key_record(name, rec), db=self.db_keys)
        self._keys[name] = rec

    def key_delete(self, name: bytes) -> None:
        self._raw.delete(layout.key_db_key(name), db=self.db_keys)
        self._keys[name] = None

    def key_count(self) -> int:
        return int(self._raw.stat(self.db_keys)["entries"])

    def iter_keys(self, start_hash: int = 0) -> Iterator[tuple[int, bytes, KeyRecord]]:
        """``(hash, name, record)`` in hash order, from the first key whose hash >= start_hash."""
        cur = self._raw.cursor(db=self.db_keys)
        if not cur.set_range(layout.pack_u64(start_hash)):
            return
        for k, v in cur.iternext():
            yield (
                layout.unpack_u64(k[:8]),
                layout.name_from_key_entry(k, v),
                layout.unpack_key_record(v),
            )

    # ------------------------------------------------------------------ stream metadata

    def stream_get(self, handle: int) -> StreamMeta:
        meta = self._meta.get(handle)
        if meta is None:
            raw = self._raw.get(layout.pack_u64(handle), db=self.db_streams)
            meta = StreamMeta.unpack(raw) if raw is not None else StreamMeta()
            self._meta[handle] = meta
        return meta

    def stream_put(self, handle: int, meta: StreamMeta) -> None:
        """Mark ``meta`` (possibly a new object) as the stream's state; written at flush."""
        self._meta[handle] = meta
        self._dirty_meta.add(handle)

    def stream_delete(self, handle: int) -> None:
        """Remove the stream's metadata and every node (groups: see the groups module)."""
        self._meta.pop(handle, None)
        self._dirty_meta.discard(handle)
        prefix = layout.pack_u64(handle)
        for cache in (self._dirty_nodes, self._clean_nodes):
            for key in [k for k in cache if k.startswith(prefix)]:
                del cache[key]
        self._raw.delete(prefix, db=self.db_streams)
        self.delete_prefix(self.db_nodes, prefix)

    # ------------------------------------------------------------------ generic helpers

    def delete_prefix(self, db: Any, prefix: bytes) -> None:
        """Delete every key of ``db`` that starts with ``prefix``."""
        cur = self._raw.cursor(db=db)
        if not cur.set_range(prefix):
            return
        while cur.key()[: len(prefix)] == prefix:
            if not cur.delete():
                break

    def iter_prefix(
        self, db: Any, prefix: bytes, start: bytes | None = None, *, values: bool = True
    ) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` pairs of ``db`` whose key starts with ``prefix``, in key order,
        beginning at ``start`` (default: the prefix itself).  Values are ``b""`` when not asked.

        Do not change ``db`` while iterating: collect first, then write.
        """
        cur = self._raw.cursor(db=db)
        if not cur.set_range(start if start is not None else prefix):
            return
        n = len(prefix)
        if values:
            for key, value in cur.iternext():
                if key[:n] != prefix:
                    return
                yield key, value
        else:
            for key in cur.iternext(values=False):
                if key[:n] != prefix:
                    return
                yield key, b""

    # ------------------------------------------------------------------ nodes

    def node_get(self, handle: int, master_id: ID) -> bytes | bytearray | None:
        """A node's listpack (read only), or ``None``."""
        key = layout.node_key(handle, master_id)
        node = self._dirty_nodes.get(key)
        if node is not None:
            return node
        clean = self._clean_nodes.get(key)
        if clean is None:
            value = self._raw.get(key, db=self.db_nodes)
            if value is None:
                return None
            clean = self._clean_nodes[key] = bytes(value)
        return clean

    def node_for_update(self, handle: int, master_id: ID) -> bytearray | None:
        """A mutable copy of a node; changes to it are written back at flush."""
        key = layout.node_key(handle, master_id)
        node = self._dirty_nodes.get(key)
        if node is None:
            value = self._clean_nodes.pop(key, None)
            if value is None:
                value = self._raw.get(key, db=self.db_nodes)
                if value is None:
                    return None
            node = bytearray(value)
            self._track(key, node)
        return node

    def node_put(self, handle: int, master_id: ID, node: bytearray) -> None:
        """Store a (new or replaced) node; written back at flush."""
        self._track(layout.node_key(handle, master_id), node)

    def _track(self, key: bytes, node: bytearray) -> None:
        self._clean_nodes.pop(key, None)
        if len(self._dirty_nodes) >= _MAX_DIRTY_NODES and key not in self._dirty_nodes:
            self._flush_nodes()
        self._dirty_nodes[key] = node

    def node_delete(self, handle: int, master_id: ID) -> None:
        key = layout.node_key(handle, master_id)
        self._dirty_nodes.pop(key, None)
        self._clean_nodes.pop(key, None)
        self._raw.delete(key, db=self.db_nodes)

    def iter_nodes(
        self, handle: int, from_id: ID = (0, 0), *, reverse: bool = False
    ) -> Iterator[tuple[ID, bytes]]:
        """Nodes of a stream as ``(master_id, listpack)``.

        Forward: starts at the node that may hold ``from_id`` (the last node whose master ID is
        <= ``from_id``, or else the first node), in ascending order.  Reverse: starts at the last
        node whose master ID is <= ``from_id``, descending.
        """
        self._flush_nodes()
        prefix = layout.pack_u64(handle)
        cur = self._raw.cursor(db=self.db_nodes)
        start = layout.node_key(handle, from_id)
        positioned = cur.set_range(start)
        if not positioned or cur.key()[:8] != prefix or cur.key() != start:
            # Not on an exact match: step back to the node that could hold from_id.
            if positioned:
                if not cur.prev() or cur.key()[:8] != prefix:
                    if reverse:
                        return
                    if not cur.set_range(prefix) or cur.key()[:8] != prefix:
                        return
            elif not cur.last() or cur.key()[:8] != prefix:
                return
        step = cur.prev if reverse else cur.next
        while True:
            key = cur.key()
            if key[:8] != prefix:
                return
            yield layout.node_key_id(key), bytes(cur.value())
            if not step():
                return

    def node_ids(self, handle: int) -> list[ID]:
        """Every master ID of the stream, ascending (keys only)."""
        self._flush_nodes()
        prefix = layout.pack_u64(handle)
        cur = self._raw.cursor(db=self.db_nodes)
        out: list[ID] = []
        if not cur.set_range(prefix):
            return out
        for key in cur.iternext(values=False):
            if key[:8] != prefix:
                break
            out.append(layout.node_key_id(bytes(key)))
        return out

    def last_node_before(self, handle: int, master_id: ID) -> ID | None:
        """The master ID of the last node strictly before ``master_id``, or ``None``."""
        self._flush_nodes()
        prefix = layout.pack_u64(handle)
        cur = self._raw.cursor(db=self.db_nodes)
        if cur.set_range(layout.node_key(handle, master_id)):
            ok = cur.prev()
        else:
            ok = cur.last()
        if not ok or cur.key()[:8] != prefix:
            return None
        return layout.node_key_id(bytes(cur.key()))

    # ------------------------------------------------------------------ flush

    def _flush_nodes(self) -> None:
        if self._dirty_nodes:
            put = self._raw.put
            db = self.db_nodes
            clean = self._clean_nodes
            for key, node in self._dirty_nodes.items():
                put(key, node, db=db)
                clean[key] = bytes(node)
            self._dirty_nodes.clear()

    def flush(self) -> None:
        """Write every cached change back to LMDB (before commit)."""
        self._flush_nodes()
        if self._dirty_meta:
            put = self._raw.put
            for handle in self._dirty_meta:
                put(layout.pack_u64(handle), self._meta[handle].pack(), db=self.db_streams)
            self._dirty_meta.clear()

    def drop_all_data(self) -> None:
        """Empty every data sub-database (FLUSHALL); format, config and handles stay."""
        self._dirty_nodes.clear()
        self._clean_nodes.clear()
        self._dirty_meta.clear()
        self._meta.clear()
        self._keys.clear()
        for db in (
            self.db_keys,
            self.db_streams,
            self.db_nodes,
            self.db_groups,
            self.db_consumers,
            self.db_pel,
            self.db_consumer_pel,
        ):
            self._raw.drop(db, delete=False)
