"""LMDB's meta pages, read and written directly: what a checkpoint saves and recovery restores.

``data.mdb`` starts with two meta pages; each names the roots of the free and main trees, the
last page in use and the transaction that wrote it, and LMDB opens the valid one with the
higher transaction id (``mdb_env_read_header``).  A commit writes the slot ``txnid & 1``.

* :func:`capture` reads the meta page of a given transaction -- called with LMDB's writer lock
  held, right after that transaction is the last one committed, so its slot still holds it.
* :func:`restore` writes a captured meta page into **both** slots (the one it belongs to, and
  the other one labelled one transaction older), so that LMDB opens exactly that transaction's
  trees whatever the slots held before (a newer meta page whose pages never reached the disk,
  or a torn one).
* :func:`relabel` gives a meta page another transaction id (a compacted copy, whose ids LMDB
  restarts at 1, keeps its store's).

The layout is LMDB 0.9's on a 64-bit build, as :mod:`rstore.storage.checks.pagecheck` reads it: a
16-byte page header (page number, padding, flags, bounds), then ``magic, version, address,
map size``, the two tree records, the last page and the transaction id.
"""

from __future__ import annotations

import os
import struct

from rstore.storage.checks import pagecheck

__all__ = [
    "META_BYTES", "capture", "newest_txnid", "page_size", "relabel", "restore", "txnid_of",
]  # fmt: skip

_PGNO = struct.Struct("=Q")
_DB = struct.Struct("=IHHQQQQQ")
_META_DBS = pagecheck.HEADER_SIZE + struct.calcsize("=IIQQ")
_TXNID_AT = _META_DBS + 2 * _DB.size + 8
#: The bytes of a meta page that LMDB reads (page header included); the rest is zero.
META_BYTES = _TXNID_AT + 8


class MetaError(Exception):
    """No valid meta page of the requested transaction, or a captured one that is not valid."""


def _valid(meta: bytes, slot: int | None = None) -> bool:
    if len(meta) < META_BYTES:
        return False
    pgno, _, flags, _, _ = struct.unpack_from("=QHHHH", meta)
    magic, version = struct.unpack_from("=II", meta, pagecheck.HEADER_SIZE)
    return (
        (slot is None or pgno == slot)
        and bool(flags & pagecheck.P_META)
        and magic == pagecheck.MAGIC
        and version == pagecheck.DATA_VERSION
    )


def txnid_of(meta: bytes) -> int:
    """The transaction id a captured meta page belongs to."""
    return int(struct.unpack_from("=Q", meta, _TXNID_AT)[0])


def relabel(meta: bytes, txnid: int) -> bytes:
    """``meta`` naming transaction ``txnid`` instead (its trees unchanged): a compacted copy
    keeps its store's transaction ids going (:mod:`rstore.storage.compaction.compact`)."""
    return meta[:_TXNID_AT] + _PGNO.pack(txnid) + meta[_TXNID_AT + 8 :]


def page_size(meta: bytes) -> int:
    """The page size a meta page records (the free tree's padding field)."""
    return int(_DB.unpack_from(meta, _META_DBS)[0])


def capture(fd: int, txnid: int) -> bytes:
    """The first :data:`META_BYTES` of the meta page of ``txnid`` in the data file ``fd``."""
    first = os.pread(fd, META_BYTES, 0)
    if not _valid(first, 0):
        raise MetaError("the first meta page of the data file is not valid")
    psize = page_size(first)
    for slot, meta in ((0, first), (1, os.pread(fd, META_BYTES, psize))):
        if _valid(meta, slot) and txnid_of(meta) == txnid:
            return meta
    raise MetaError(f"no meta page of the data file holds transaction {txnid}")


def newest_txnid(fd: int) -> int | None:
    """The transaction of the newer valid meta page of the data file ``fd`` -- the last commit
    LMDB wrote a meta page for -- or ``None`` when neither slot is valid."""
    first = os.pread(fd, META_BYTES, 0)
    if not _valid(first, 0):
        return None
    second = os.pread(fd, META_BYTES, page_size(first))
    found = [txnid_of(m) for slot, m in ((0, first), (1, second)) if _valid(m, slot)]
    return max(found) if found else None


def restore(fd: int, meta: bytes) -> None:
    """Make ``meta`` (from :func:`capture`) the one LMDB opens: write it into both slots."""
    if not _valid(meta):
        raise MetaError("the saved meta page is not valid")
    txnid = txnid_of(meta)
    psize = page_size(meta)
    if txnid < 1 or psize < 512 or psize & (psize - 1):
        raise MetaError(f"the saved meta page names transaction {txnid}, page size {psize}")
    for slot in (0, 1):
        page = bytearray(psize)
        page[:META_BYTES] = meta[:META_BYTES]
        _PGNO.pack_into(page, 0, slot)
        if slot != txnid & 1:
            struct.pack_into("=Q", page, _TXNID_AT, txnid - 1)
        if os.pwrite(fd, page, slot * psize) != psize:
            raise OSError(f"short write of meta page {slot}")
