"""Finding every damaged place of a store and saying where it is, in the user's terms.

Two levels, below the logical checks of :mod:`rstore.streams.check`:

* **structure** -- LMDB's trees walked from the file (:mod:`rstore.storage.checks.pagecheck`); a
  damaged page is reported with its sub-database and, for the sub-databases keyed by stream or
  group handles, the streams (and groups) whose records it held;
* **records** -- every record of every sub-database read and its checksum verified.

:func:`diagnose_file` works on a store that cannot be opened (its structure refused): it opens
LMDB without letting it walk any damaged tree, and only reads trees the walk found intact.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

import lmdb

from rstore.ids import format_id
from rstore.storage.checks import pagecheck
from rstore.storage.opening import DATA_FILE
from rstore.storage.records import layout
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn

__all__ = ["Names", "diagnose_file", "record_problems", "structure_problems"]

_BY_STREAM = (layout.DB_STREAMS, layout.DB_NODES, layout.DB_GROUPS)
_BY_GROUP = (layout.DB_CONSUMERS, layout.DB_PEL, layout.DB_CONSUMER_PEL)


class Names:
    """Stream and group handles to names, from whatever intact records could be read."""

    def __init__(self) -> None:
        self.streams: dict[int, bytes] = {}
        self.groups: dict[int, tuple[bytes, bytes]] = {}  # group handle -> (stream, group)

    @classmethod
    def read(cls, txn: Txn) -> Names:
        """Every name ``txn`` can read; damaged records are skipped (they are reported apart)."""
        names = cls()
        for key, value in _records(txn, layout.DB_KEYS):
            if value is not None and len(value) >= 10:
                names.streams[layout.unpack_u64(value[2:10])] = layout.name_from_key_entry(
                    key, value
                )
        for key, value in _records(txn, layout.DB_GROUPS):
            if value is not None and len(key) > 8:
                try:
                    group = GroupMeta.unpack(key, value)
                except (ValueError, struct.error):  # format 1 has no checksums: maybe short
                    continue
                stream = names.streams.get(layout.unpack_u64(key[:8]), b"?")
                names.groups[group.handle] = (stream, group.name)
        return names

    def owner(self, db: str, key: bytes | None) -> str:
        """Whose record ``key`` of sub-database ``db`` is, in words (empty when unknown)."""
        if key is None or len(key) < 8:
            return ""
        handle = layout.unpack_u64(key[:8])
        if db.encode() in _BY_STREAM and handle in self.streams:
            where = f"stream {_show(self.streams[handle])}"
            if db.encode() == layout.DB_NODES and len(key) == layout.NODE_KEY_SIZE:
                where += f" near {format_id(layout.node_key_id(key)).decode()}"
            return where
        if db.encode() in _BY_GROUP and handle in self.groups:
            stream, group = self.groups[handle]
            return f"stream {_show(stream)}, group {_show(group)}"
        if db == "keys" and len(key) > 8:
            return f"key {_show(key[8:])}"
        return ""

    def everyone(self, db: str) -> str:
        """``, holding records of ...`` for a page that may hold any record of ``db``: every
        stream (or group) known, the first few by name; empty when none is known."""
        if db.encode() in _BY_STREAM:
            shown = sorted(_show(n) for n in self.streams.values())
            kind = "stream"
        elif db.encode() in _BY_GROUP:
            shown = sorted(f"{_show(g)} of stream {_show(s)}" for s, g in self.groups.values())
            kind = "group"
        else:
            return ""
        if not shown:
            return ""
        more = f" and {len(shown) - _LISTED} more" if len(shown) > _LISTED else ""
        plural = "s" if len(shown) > 1 else ""
        return f", holding records of {kind}{plural} {', '.join(shown[:_LISTED])}{more}"


#: How many streams (or groups) a damaged page that may hold any of them names.
_LISTED = 5


def _show(name: bytes) -> str:
    return repr(name.decode("utf-8", "backslashreplace"))


def _records(txn: Txn, db: bytes) -> Iterator[tuple[bytes, bytes | None]]:
    return txn.scan_records(db)


def record_problems(txn: Txn, names: Names) -> list[str]:
    """A line per record whose checksum does not match, in every sub-database."""
    if not txn.sealed:
        return []
    problems = []
    for db in layout.ALL_DBS:
        for key, payload in _records(txn, db):
            if payload is None and not (db == layout.DB_META and key == layout.META_FORMAT):
                owner = names.owner(db.decode(), key)
                where = f" ({owner})" if owner else ""
                problems.append(
                    f"sub-database {db.decode()}, record {key.hex()}{where}: checksum mismatch"
                )
    return problems


def structure_problems(report: pagecheck.Report, names: Names | None) -> list[str]:
    """A line per problem of a structure walk, naming the streams a damaged page held."""
    lines = []
    for p in report.problems:
        page = f"page {p.page}" if p.page is not None else "the file"
        held = ""
        if names is not None:
            keys = (p.key,) if p.key is not None else (p.low, p.high)
            owners = {names.owner(p.tree, k) for k in keys} - {""}
            if owners:
                held = f", holding records of {' to '.join(sorted(owners))}"
            elif keys == (None, None):  # the page may hold any record of its tree (its root)
                held = names.everyone(p.tree)
        lines.append(f"{DATA_FILE} {page} (sub-database {p.tree}{held}): {p.what}")
    return lines


def diagnose_file(path: str) -> list[str]:
    """Every problem of the store directory ``path``, without trusting it: the structure from
    the file, then (in the trees found intact) the records' checksums.  Empty when sound."""
    data = os.path.join(path, DATA_FILE)
    try:
        env = lmdb.open(os.fsencode(path), readonly=True, lock=False, create=False, max_dbs=16)
    except lmdb.Error as exc:
        return [f"{path}: LMDB cannot open it ({exc})"]
    try:
        with env.begin() as raw:
            report = pagecheck.verify(data, int(raw.id()))
            damaged = {p.tree for p in report.problems}
            if damaged & {"main", "meta", "free"}:
                return structure_problems(report, None)
            dbs = _open_intact(env, raw, damaged)
            sealed = _sealed(raw, dbs)
            txn = Txn(raw, dbs, write=False, sealed=sealed, path=data)
            names = Names()
            if layout.DB_KEYS in dbs and layout.DB_GROUPS in dbs:
                names = Names.read(txn)
            lines = structure_problems(report, names)
            if len(dbs) == len(layout.ALL_DBS):
                lines += record_problems(txn, names)
            return lines
    except lmdb.Error as exc:
        return [f"{path}: LMDB refused to read it ({exc})"]
    finally:
        env.close()


def _open_intact(env: Any, raw: Any, damaged: set[str]) -> dict[bytes, Any]:
    return {
        name: env.open_db(name, txn=raw, create=False)
        for name in layout.ALL_DBS
        if name.decode() not in damaged
    }


def _sealed(raw: Any, dbs: dict[bytes, Any]) -> bool:
    meta = dbs.get(layout.DB_META)
    value = None if meta is None else raw.get(layout.META_FORMAT, db=meta)
    version = layout.unpack_format(value) if value is not None else None
    return version is None or version >= layout.FIRST_SEALED_FORMAT
