"""Command replies (from :meth:`rstore.Store.execute`) turned into plain records.

The CLI reads entries and XINFO replies through ``execute`` rather than the redis-py-shaped
methods because those build ``{field: value}`` dicts, which drop repeated field names (a stream
entry may hold the same field twice).  Here every entry keeps its fields as ordered pairs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "PENDING_COLUMNS",
    "Entry",
    "autoclaim_result",
    "entries_from_reply",
    "entry_from_reply",
    "info_tree",
    "json_reply",
    "pending_rows",
    "pending_summary",
    "read_entries",
    "record",
]

#: The columns of ``pending``'s detail table (and the keys of its JSON objects): the fields of
#: XPENDING's extended form, in its order.
PENDING_COLUMNS = ("id", "consumer", "idle", "delivery-count")


class Entry(NamedTuple):
    """One stream entry: its ID and its ``(field, value)`` pairs in stored order.

    ``deleted`` marks an entry that is still pending in a consumer group but no longer in the
    stream: XREADGROUP reads of the history, and XAUTOCLAIM, give it as ``[id, nil]``.
    """

    id: bytes
    fields: tuple[tuple[bytes, bytes], ...]
    deleted: bool = False

    def flat(self) -> list[bytes] | None:
        """The fields as a reply holds them, ``[field, value, ...]``; ``None`` if deleted."""
        return None if self.deleted else [item for pair in self.fields for item in pair]


def entry_from_reply(item: list[Any]) -> Entry:
    """``[id, [field, value, ...]]`` (or ``[id, nil]``: deleted) -> :class:`Entry`."""
    entry_id, flat = item
    if flat is None:
        return Entry(entry_id, (), deleted=True)
    return Entry(entry_id, tuple(zip(flat[0::2], flat[1::2])))


def entries_from_reply(reply: list[Any] | None) -> list[Entry]:
    return [entry_from_reply(item) for item in reply or []]


def read_entries(reply: list[Any] | None, stream: bytes) -> list[Entry]:
    """The entries of ``stream`` in an XREAD / XREADGROUP reply (``[[key, entries], ...]``, or
    nil when a blocking read timed out)."""
    for key, entries in reply or []:
        if key == stream:
            return entries_from_reply(entries)
    return []


def record(flat: list[Any]) -> dict[str, Any]:
    """A flat ``[name, value, ...]`` map (an item of XINFO GROUPS or CONSUMERS) as a dict."""
    return {
        key.decode("utf-8", "backslashreplace"): value for key, value in zip(flat[0::2], flat[1::2])
    }


# Row layouts of the PEL items in XINFO STREAM FULL.
_GROUP_PENDING = ("id", "consumer", "delivery-time", "delivery-count")
_CONSUMER_PENDING = ("id", "delivery-time", "delivery-count")


def info_tree(flat: list[Any]) -> dict[str, Any]:
    """An XINFO STREAM reply (plain or FULL) as a dict with ``str`` keys.

    * ``first-entry`` / ``last-entry``: an :class:`Entry` or ``None``;
    * ``entries`` (FULL): a list of :class:`Entry`;
    * ``groups``: an ``int`` (plain) or, with FULL, a list of group dicts whose ``pending`` rows
      and ``consumers`` (each with its own ``pending`` rows) are dicts too;
    * every other value as the reply gave it (``int``, ``bytes`` or ``None``).
    """
    return _map(flat, _GROUP_PENDING)


def _map(flat: list[Any], pending_layout: tuple[str, ...]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for raw_key, value in zip(flat[0::2], flat[1::2]):
        key = raw_key.decode("utf-8", "backslashreplace")
        if key in ("first-entry", "last-entry"):
            tree[key] = entry_from_reply(value) if value else None
        elif key == "entries":
            tree[key] = entries_from_reply(value)
        elif key == "groups" and isinstance(value, list):
            tree[key] = [_map(group, _GROUP_PENDING) for group in value]
        elif key == "consumers" and isinstance(value, list):
            tree[key] = [_map(consumer, _CONSUMER_PENDING) for consumer in value]
        elif key == "pending" and isinstance(value, list):
            tree[key] = [dict(zip(pending_layout, row)) for row in value]
        else:
            tree[key] = value
    return tree


def pending_summary(reply: list[Any]) -> dict[str, Any]:
    """XPENDING's summary form: ``pending``, ``min``, ``max`` and each consumer's count."""
    total, low, high, per_consumer = reply
    return {
        "pending": total,
        "min": low,
        "max": high,
        "consumers": [{"name": n, "pending": int(p)} for n, p in per_consumer or []],
    }


def autoclaim_result(reply: list[Any], justid: bool) -> dict[str, Any]:
    """An XAUTOCLAIM reply: the cursor to go on from, what was claimed (entries, or IDs with
    JUSTID) and the IDs found deleted from the stream."""
    cursor, claimed, deleted = reply
    return {
        "next": cursor,
        "entries": claimed if justid else entries_from_reply(claimed),
        "deleted": deleted,
    }


def _streams(reply: list[Any] | None) -> list[dict[str, Any]] | None:
    """XREAD / XREADGROUP: ``[{"stream": key, "entries": [...]}]`` (nil stays nil)."""
    if reply is None:
        return None
    return [{"stream": key, "entries": entries_from_reply(entries)} for key, entries in reply]


def json_reply(argv: list[bytes], reply: Any) -> Any:
    """``reply`` of the command ``argv`` in the shapes of the JSON mapping (docs/cli.md): the
    records the friendly command of the same reply prints -- entries, XINFO and CONFIG GET
    maps as dicts, XPENDING and XAUTOCLAIM as ``pending`` and ``autoclaim`` give them; any
    other reply as it is.  A reply of another shape (an error put in place) is left alone."""
    if not isinstance(reply, list):
        return reply
    name = argv[0].upper()
    words = {a.upper() for a in argv[1:]}
    sub = argv[1].upper() if len(argv) > 1 else b""
    if name in (b"XRANGE", b"XREVRANGE") or (name == b"XCLAIM" and b"JUSTID" not in words):
        return entries_from_reply(reply)
    if name in (b"XREAD", b"XREADGROUP"):
        return _streams(reply)
    if name == b"XAUTOCLAIM":
        return autoclaim_result(reply, b"JUSTID" in words)
    if name == b"XINFO" and sub == b"STREAM":
        return info_tree(reply)
    if name == b"XINFO" and sub in (b"GROUPS", b"CONSUMERS"):
        return [record(item) for item in reply]
    if name == b"XPENDING":
        return pending_summary(reply) if len(argv) == 3 else pending_rows(reply)
    if name == b"CONFIG" and sub == b"GET":
        return record(reply)
    return reply


def pending_rows(rows: list[Any]) -> list[dict[str, Any]]:
    """XPENDING's extended form: one dict per row, keyed by :data:`PENDING_COLUMNS`."""
    return [dict(zip(PENDING_COLUMNS, row)) for row in rows]
