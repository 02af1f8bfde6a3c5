"""Command replies (from :meth:`rstore.Store.execute`) turned into plain records.

The CLI reads entries and XINFO replies through ``execute`` rather than the redis-py-shaped
methods because those build ``{field: value}`` dicts, which drop repeated field names (a stream
entry may hold the same field twice).  Here every entry keeps its fields as ordered pairs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "Entry",
    "entries_from_reply",
    "entry_from_reply",
    "info_tree",
    "read_entries",
    "record",
]


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
