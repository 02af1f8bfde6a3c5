"""WATCH: an EXEC that answers nil when a watched key changed since it was watched.

What changes a key is Valkey 8.0's rule, measured against valkey-server 8.0.1: XADD, XDEL and
XTRIM that remove something (and, as Redis 8.2.3 has it, XDELEX and XACKDEL that answer a
``1`` for an ID), DEL / UNLINK of it, RENAME onto or away from it, RESTORE,
FLUSHALL / FLUSHDB -- not the group commands (XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM)
nor XSETID.  Two witnesses, both checked at EXEC before the transaction runs:

* **this server's writes**: each such command the server runs bumps a version of each key it
  names (FLUSHALL / FLUSHDB every key of the database), so a change by any client of the
  server -- the watching one included, as in Valkey -- is seen exactly;
* **other processes' writes** (embedded ``rstore.Store`` users of the same directory): the key's
  fingerprint -- whether it exists, its length, entries-added, max-deleted-entry-id and first
  and last entry IDs -- taken at WATCH and again at EXEC.  A change that leaves all of those as
  they were is not seen, nor a write that lands between the check and the transaction;
  docs/server.md says so.
"""

from __future__ import annotations

from typing import Any

from rstore import ResponseError, Store

__all__ = ["KeyVersions", "fingerprint", "written_keys"]

#: commands that change their first argument's key (XDEL / XTRIM: when they remove entries)
_FIRST_KEY = {b"xadd", b"xtrim", b"xdel", b"restore"}


#: the commands that never change a key as WATCH sees it, as clients spell them (any other
#: spelling takes the longer way below, with the same outcome)
_UNWATCHED = frozenset(
    spelled
    for name in (b"xlen", b"xrange", b"xrevrange", b"xread", b"xreadgroup", b"xinfo",
                 b"xpending", b"xack", b"xclaim", b"xautoclaim", b"xgroup", b"xsetid",
                 b"exists", b"type", b"keys", b"scan", b"dbsize", b"dump", b"ping", b"echo")
    for spelled in (name, name.upper())
)  # fmt: skip


def written_keys(argv: list[bytes], reply: Any) -> list[bytes] | None:
    """The keys a command that answered ``reply`` changed, as WATCH sees it (``None``: every
    key, FLUSHALL); ``[]`` for none."""
    if argv[0] in _UNWATCHED:
        return []
    name = argv[0].lower()
    removed_nothing = reply == 0 and name in (b"xdel", b"xtrim", b"del", b"unlink", b"renamenx")
    if removed_nothing or reply is None:  # nothing removed, or XADD NOMKSTREAM of nothing
        return []
    if name in (b"xdelex", b"xackdel"):
        return [argv[1]] if isinstance(reply, list) and 1 in reply else []
    if name in _FIRST_KEY and len(argv) > 1:
        return [argv[1]]
    if name in (b"del", b"unlink", b"rename", b"renamenx"):
        return argv[1:]
    if name in (b"flushall", b"flushdb"):
        return None
    return []


class KeyVersions:
    """Per database, a counter per key bumped by each write this server runs on it."""

    def __init__(self) -> None:
        self._versions: dict[tuple[int, bytes], int] = {}
        self._epochs: dict[int, int] = {}

    def version(self, db: int, key: bytes) -> tuple[int, int]:
        return self._epochs.get(db, 0), self._versions.get((db, key), 0)

    def written(self, db: int, argv: list[bytes], reply: Any = "OK") -> None:
        keys = written_keys(argv, reply)
        if keys is None:
            self._epochs[db] = self._epochs.get(db, 0) + 1
            return
        for key in keys:
            self._versions[(db, key)] = self._versions.get((db, key), 0) + 1


def fingerprint(store: Store, key: bytes) -> Any:
    """What the key looks like now, as far as WATCH cares: ``None`` when it does not exist."""
    info = store.execute_many([[b"XINFO", b"STREAM", key]])[0]
    if isinstance(info, ResponseError):
        return None if "no such key" in str(info) else str(info)
    fields = dict(zip(info[::2], info[1::2]))
    first, last = fields.get(b"first-entry"), fields.get(b"last-entry")
    return (
        fields.get(b"length"),
        fields.get(b"entries-added"),
        fields.get(b"max-deleted-entry-id"),
        first[0] if isinstance(first, list) else None,
        last[0] if isinstance(last, list) else None,
    )
