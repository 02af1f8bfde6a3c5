"""Runs of records sealed and written in one call: what a restore writes (a read buffer's nodes,
a consumer's NACKs with their index records).

Each record is sealed as :func:`rstore.storage.records.layout.seal` seals it (the payload, then the
CRC-32 of the key and the payload) and the run goes to LMDB in one ``putmulti``, as
:meth:`rstore.storage.records.txn.Txn.put_many` does; only the sealing moves out of Python.
``rstore/storage/records/_sealed.c`` (optional, like the codecs' accelerators) builds the keys and
the
sealed values of a whole run, with a CRC-32 that folds 64-byte blocks with carry-less
multiplications where the CPU has them; the Python functions here are the reference and the
fallback (``tests/storage/test_sealed.py`` compares the bytes), and ``RSTORE_NO_SPEEDUPS=1``
keeps them.  Stores of format 1 (no seals) and nodes the transaction holds in its cache go
through :class:`~rstore.storage.records.txn.Txn` as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from rstore.storage.records import layout
from rstore.storage.records.txn import Txn

__all__ = ["ENABLED", "nack_items", "nacks_write", "node_items", "nodes_write"]

Items = list[tuple[bytes, bytes]]

c_crc32: Callable[..., int] | None = None
_c_seal_nodes: Callable[..., Items | None] | None = None
_c_seal_nacks: Callable[..., tuple[Items, Items] | None] | None = None

if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.storage.records import _sealed as _c  # type: ignore[attr-defined]
    except ImportError:  # not built: records are sealed in Python
        _c: Any = None  # type: ignore[no-redef]
    if _c is not None:
        c_crc32 = _c.crc32
        _c_seal_nodes = _c.seal_nodes
        _c_seal_nacks = _c.seal_nacks

#: Whether the C sealing is in use.
ENABLED = _c_seal_nodes is not None


def node_items_py(handle: int, nodes: Sequence[tuple[Any, ...]]) -> Items:
    """``(node key, sealed listpack)`` of each ``(master ID, listpack, ...)``: the reference."""
    seal, key = layout.seal, layout.node_key
    out = []
    for node in nodes:
        k = key(handle, node[0])
        out.append((k, seal(k, node[1])))
    return out


def node_items(handle: int, nodes: list[tuple[Any, ...]]) -> Items:
    """:func:`node_items_py`, in C when it is built (and takes these values)."""
    if _c_seal_nodes is not None:
        items = _c_seal_nodes(layout.pack_u64(handle), nodes)
        if items is not None:
            return items
    return node_items_py(handle, nodes)


def nack_items_py(
    pel_prefix: bytes, owned_prefix: bytes, owner: bytes, nacks: list[tuple[bytes, int, int]]
) -> tuple[Items, Items]:
    """The sealed group PEL records (``pel_prefix`` + raw ID: the NACK of ``owner``) and owner
    index records (``owned_prefix`` + raw ID: empty) of ``(raw ID, delivery time, delivery
    count)`` NACKs: the reference."""
    seal, pack = layout.seal, layout.pack_nack
    pel, owned = [], []
    for raw, when, count in nacks:
        k = pel_prefix + raw
        pel.append((k, seal(k, pack(when, count, owner))))
        k = owned_prefix + raw
        owned.append((k, seal(k, b"")))
    return pel, owned


def nack_items(
    pel_prefix: bytes, owned_prefix: bytes, owner: bytes, nacks: list[tuple[bytes, int, int]]
) -> tuple[Items, Items]:
    """:func:`nack_items_py`, in C when it is built (and takes these values)."""
    if _c_seal_nacks is not None:
        both = _c_seal_nacks(pel_prefix, owned_prefix, owner, nacks)
        if both is not None:
            return both
    return nack_items_py(pel_prefix, owned_prefix, owner, nacks)


def _put_sealed(txn: Txn, db: bytes, items: Items) -> None:
    if items:
        txn.put_sealed(db, items)


def nodes_write(txn: Txn, handle: int, nodes: list[tuple[Any, ...]]) -> None:
    """:meth:`Txn.nodes_write` of the ``(master ID, listpack, ...)`` tuples of ``nodes`` (a
    :class:`~rstore.model.NodeRun`'s), sealed in one step."""
    if not txn.sealed or txn.holds_nodes:
        txn.nodes_write(handle, [(node[0], node[1]) for node in nodes])
        return
    items = node_items(handle, nodes)
    if items:
        txn.nodes_add_sealed(handle, items)


def nacks_write(
    txn: Txn,
    pel_prefix: bytes,
    owned_prefix: bytes,
    owner: bytes,
    nacks: list[tuple[bytes, int, int]],
) -> None:
    """Store ``(raw ID, delivery time, delivery count)`` NACKs of ``owner`` in the group PEL
    (keys ``pel_prefix`` + raw ID) and in the owner's index (``owned_prefix`` + raw ID)."""
    if not txn.sealed:
        pack = layout.pack_nack
        txn.put_many(layout.DB_PEL, [(pel_prefix + r, pack(w, c, owner)) for r, w, c in nacks])
        txn.put_many(layout.DB_CONSUMER_PEL, [(owned_prefix + r, b"") for r, _, _ in nacks])
        return
    pel, owned = nack_items(pel_prefix, owned_prefix, owner, nacks)
    _put_sealed(txn, layout.DB_PEL, pel)
    _put_sealed(txn, layout.DB_CONSUMER_PEL, owned)
