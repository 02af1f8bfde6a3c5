"""Retention policies on disk: one ``meta`` record per pattern, ``b"retention:"`` + the pattern.

The value: u64 maximum age in ms + 1 and u64 maximum entries + 1 (0: no such limit), then a
u8 reference policy (0 KEEPREF, 1 DELREF, 2 ACKED), then u64 maximum bytes + 1 (absent in
records written before the maximum in bytes was: no such limit).  Patterns are at most
:data:`MAX_PATTERN` bytes (an LMDB key is at most 511).  FLUSHALL keeps them: they are the
store's settings, not its data.
"""

from __future__ import annotations

import struct

from rstore.storage.records import layout
from rstore.storage.records.txn import Txn

__all__ = ["MAX_PATTERN", "PREFIX", "Packed", "delete", "get", "items", "put"]

PREFIX = b"retention:"
MAX_PATTERN = 400
_META = layout.DB_META
_VALUE = struct.Struct(">QQBQ")
_VALUE_BEFORE_BYTES = struct.Struct(">QQB")

#: (max age ms or None, max entries or None, policy code, max bytes or None)
Packed = tuple[int | None, int | None, int, int | None]


def _pack(value: Packed) -> bytes:
    age, entries, code, size = value
    return _VALUE.pack(_limit(age), _limit(entries), code, _limit(size))


def _limit(value: int | None) -> int:
    return 0 if value is None else value + 1


def _unpack(raw: bytes) -> Packed:
    if len(raw) == _VALUE_BEFORE_BYTES.size:
        raw += bytes(8)
    age, entries, code, size = _VALUE.unpack(raw)
    if code > 2:
        raise ValueError(f"unknown reference policy {code}")
    return (_given(age), _given(entries), int(code), _given(size))


def _given(stored: int) -> int | None:
    return int(stored) - 1 if stored else None


def put(txn: Txn, pattern: bytes, value: Packed) -> None:
    txn.put(_META, PREFIX + pattern, _pack(value))


def get(txn: Txn, pattern: bytes) -> Packed | None:
    key = PREFIX + pattern
    raw = txn.get(_META, key)
    return None if raw is None else txn.decode(_META, key, _unpack, raw)


def delete(txn: Txn, pattern: bytes) -> bool:
    return txn.delete(_META, PREFIX + pattern)


def items(txn: Txn) -> list[tuple[bytes, Packed]]:
    """Every policy, ``(pattern, value)`` in pattern order."""
    n = len(PREFIX)
    return [(k[n:], txn.decode(_META, k, _unpack, v)) for k, v in txn.items(_META, PREFIX)]
