"""The optional C accelerator of the codecs, and the switch that turns it off.

``rstore/codec/_speedups.c`` is built at install time when a C compiler is there (it is an
optional extension: a failed build leaves the pure-Python codecs, which are complete on their
own).  It speeds up decoding stream nodes, the inner loop of XRANGE, XREAD and XREADGROUP, and
checking them in depth, the inner loop of restoring an RDB file or a DUMP payload; its
functions return ``None`` for anything unusual and the Python version then does the work (and
reports corrupt data), so both give the same answers.  ``_rdbpack.c`` and ``_rdbread.c`` hold
the per-record loops of writing and reading RDB files (:mod:`rstore.rdb.writer`,
:mod:`rstore.rdb.values`), with the same contract, and ``_crc64.c`` CRC-64
(:mod:`rstore.codec.crc64`).  ``RSTORE_NO_SPEEDUPS=1`` in the
environment, set before rstore is imported, keeps the pure-Python path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "ENABLED",
    "c_append_auto",
    "c_append_columns",
    "c_append_entry",
    "c_check_node",
    "c_columns_append",
    "c_crc64",
    "c_dict_entries",
    "c_encode_args",
    "c_entries_reply",
    "c_entry_size",
    "c_new_node_columns",
    "c_pack",
    "c_pack_sealed",
    "c_parse_ids",
    "c_read_nodes",
    "c_read_pel",
    "c_scan_forward",
    "c_scan_resp",
]

c_scan_forward: Callable[..., bool | None] | None = None
c_scan_resp: Callable[..., int | None] | None = None
c_check_node: Callable[..., tuple[int, int, int, bool, int, int, int, int] | None] | None = None
c_columns_append: Callable[..., tuple[int, bool] | None] | None = None
c_append_entry: Callable[..., bool | None] | None = None
c_append_auto: Callable[..., tuple[int, int, int] | None] | None = None
c_append_columns: Callable[..., tuple[int, int, int] | None] | None = None
c_new_node_columns: Callable[..., bytearray | None] | None = None
c_entry_size: Callable[[object], int | None] | None = None
c_crc64: Callable[..., int] | None = None
c_pack: Callable[..., tuple[bytes, int, bool]] | None = None
c_pack_sealed: Callable[..., tuple[bytes, int, bool, bytes | None]] | None = None
c_read_nodes: Callable[..., tuple[list[tuple[Any, ...]], int]] | None = None
c_read_pel: Callable[..., tuple[list[tuple[Any, ...]], int]] | None = None
c_encode_args: Callable[[object], list[bytes] | None] | None = None
c_entries_reply: Callable[[object], list[Any] | None] | None = None
c_parse_ids: Callable[[object], list[tuple[int, int]] | None] | None = None
c_dict_entries: Callable[[object], list[Any] | None] | None = None

if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.codec import _speedups as _c  # type: ignore[attr-defined]
    except ImportError:  # not built: the pure-Python codecs do everything
        _c: Any = None  # type: ignore[no-redef]
    if _c is not None:
        c_scan_forward = _c.scan_forward
        c_scan_resp = _c.scan_resp
        c_check_node = _c.check_node
        c_entries_reply = _c.entries_reply
        c_parse_ids = _c.parse_ids
        c_dict_entries = _c.dict_entries
    try:
        from rstore.codec import _columns as _cc  # type: ignore[attr-defined]
    except ImportError:  # not built: rstore.codec.columns decodes in Python
        _cc: Any = None  # type: ignore[no-redef]
    if _cc is not None:
        c_columns_append = _cc.append_node
    try:
        from rstore.codec import _append as _ca  # type: ignore[attr-defined]
    except ImportError:  # not built: entries are appended in Python
        _ca: Any = None  # type: ignore[no-redef]
    if _ca is not None:
        c_append_entry = _ca.append_entry
        c_append_auto = _ca.append_auto
        c_encode_args = _ca.encode_args
        c_entry_size = _ca.entry_size
    try:
        from rstore.codec import _append_columns as _cac  # type: ignore[attr-defined]
    except ImportError:  # not built: nodes are built from columns in Python
        _cac: Any = None  # type: ignore[no-redef]
    if _cac is not None:
        c_append_columns = _cac.append_columns
        c_new_node_columns = _cac.new_node_columns
    try:
        from rstore.codec import _crc64 as _ccrc  # type: ignore[attr-defined]
    except ImportError:  # not built: crcmod computes it
        _ccrc: Any = None  # type: ignore[no-redef]
    if _ccrc is not None:
        c_crc64 = _ccrc.crc64
    try:
        from rstore.codec import _rdbpack as _cp  # type: ignore[attr-defined]
    except ImportError:  # not built: RDB records are written in Python
        _cp: Any = None  # type: ignore[no-redef]
    if _cp is not None:
        c_pack = _cp.pack
        c_pack_sealed = _cp.pack_sealed
    try:
        from rstore.codec import _rdbread as _cr  # type: ignore[attr-defined]
    except ImportError:  # not built: RDB records are read in Python
        _cr: Any = None  # type: ignore[no-redef]
    if _cr is not None:
        c_read_nodes = _cr.read_nodes
        c_read_pel = _cr.read_pel

#: Whether the C accelerator is in use.
ENABLED = c_scan_forward is not None
