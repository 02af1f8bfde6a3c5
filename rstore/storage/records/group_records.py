"""Consumer groups on disk: group records, consumers, the group PEL and the per-consumer index.

Four sub-databases, all apart from the stream nodes:

* ``groups``       stream handle + group name       -> :class:`GroupMeta`
* ``consumers``    group handle + consumer name     -> :class:`ConsumerMeta`
* ``pel``          group handle + entry ID          -> delivery time, delivery count, owner name
* ``consumer_pel`` group handle + u16 len + consumer + entry ID -> empty (index)

Names sit in keys, so LMDB returns groups and consumers in Redis's bytewise order and PEL
entries in ID order.  The per-consumer index lets per-consumer reads, XPENDING with a consumer
and DELCONSUMER touch only that consumer's entries.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator

from rstore.errors import show_key
from rstore.ids import format_id
from rstore.model import ID
from rstore.storage.records import layout, sealed
from rstore.storage.records.layout import ConsumerMeta, GroupMeta
from rstore.storage.records.txn import Txn

__all__ = [
    "consumer_delete",
    "consumer_get",
    "consumer_pel_ids",
    "consumer_put",
    "consumers_of",
    "group_delete",
    "group_get",
    "group_put",
    "groups_delete_all",
    "groups_of",
    "last_pel_id",
    "nack_delete",
    "nack_get",
    "nack_put",
    "nack_release",
    "pel_entries",
    "released_count",
    "released_entries",
]

#: delivery_time_ms, delivery_count, owner -- ``None`` for an entry XNACK released (its
#: delivery time is then below zero: :data:`rstore.storage.records.layout.RELEASED_BASE`)
Nack = tuple[int, int, bytes | None]


# ----------------------------------------------------------------------------- groups

#: The sub-database of the group PELs (for errors that name it).
PEL_DB = layout.DB_PEL

_GROUPS, _CONSUMERS, _PEL, _OWNED = (
    layout.DB_GROUPS,
    layout.DB_CONSUMERS,
    layout.DB_PEL,
    layout.DB_CONSUMER_PEL,
)


def group_get(txn: Txn, stream_handle: int, name: bytes) -> GroupMeta | None:
    key = layout.group_key(stream_handle, name)
    value = txn.get(_GROUPS, key)
    if value is None:
        return None
    group = txn.decode(_GROUPS, key, lambda v: GroupMeta.unpack(key, v), value)
    return group if group.name == name else None


def group_put(txn: Txn, stream_handle: int, group: GroupMeta) -> None:
    txn.put(_GROUPS, layout.group_key(stream_handle, group.name), group.pack())


def groups_of(txn: Txn, stream_handle: int) -> list[GroupMeta]:
    """The stream's groups in name order."""
    prefix = layout.pack_u64(stream_handle)
    return [
        txn.decode(_GROUPS, k, functools.partial(GroupMeta.unpack, k), v)
        for k, v in txn.items(_GROUPS, prefix)
    ]


def group_delete(txn: Txn, stream_handle: int, group: GroupMeta) -> None:
    """Remove a group with its consumers and pending entries."""
    txn.delete(_GROUPS, layout.group_key(stream_handle, group.name))
    prefix = layout.pack_u64(group.handle)
    for db in (_CONSUMERS, _PEL, _OWNED):
        txn.delete_prefix(db, prefix)


def groups_delete_all(txn: Txn, stream_handle: int) -> None:
    for group in groups_of(txn, stream_handle):
        group_delete(txn, stream_handle, group)


def _group_of(txn: Txn, handle: int) -> tuple[bytes | None, bytes] | None:
    """The stream (when this transaction has seen its name) and the name of the group
    ``handle``, for an error message: every group record is read to find it (damaged ones
    skipped), a cost only errors pay."""
    for key, payload in txn.scan_records(_GROUPS):
        if payload is None or len(key) <= 8:
            continue
        try:
            group = GroupMeta.unpack(key, payload)
        except struct.error:  # format 1 has no checksums: a damaged record may be short
            continue
        if group.handle == handle:
            return txn.stream_name(layout.unpack_u64(key[:8])), group.name
    return None


def whose(txn: Txn, db: bytes, key: bytes, what: str) -> tuple[bytes | None, str]:
    """For the error about the damaged record ``key`` of a group's sub-database (consumers,
    pel, consumer_pel): its stream when known, and ``what`` with the group named, and the
    consumer or the pending entry where the key holds them."""
    found = _group_of(txn, layout.unpack_u64(key[:8])) if len(key) >= 8 else None
    if found is None:
        return None, what
    stream, group = found
    parts = [f"group {show_key(group)}"]
    consumer = key[8:] if db == _CONSUMERS else key[10:-16] if db == _OWNED else b""
    if 0 < len(consumer) < layout.MAX_INLINE_MEMBER:  # a part this long: maybe a hash
        parts.append(f"consumer {show_key(consumer)}")
    if db in (_PEL, _OWNED) and len(key) >= 24:
        parts.append(f"pending entry {format_id(layout.id_from_key_tail(key)).decode()}")
    return stream, f"{what} ({', '.join(parts)})"


# ----------------------------------------------------------------------------- consumers


def consumer_get(txn: Txn, group: GroupMeta, name: bytes) -> ConsumerMeta | None:
    key = layout.consumer_key(group.handle, name)
    value = txn.get(_CONSUMERS, key)
    if value is None:
        return None
    consumer = txn.decode(_CONSUMERS, key, lambda v: ConsumerMeta.unpack(key, v), value)
    return consumer if consumer.name == name else None


def consumer_put(txn: Txn, group: GroupMeta, consumer: ConsumerMeta) -> None:
    txn.put(_CONSUMERS, layout.consumer_key(group.handle, consumer.name), consumer.pack())


def consumer_delete(txn: Txn, group: GroupMeta, name: bytes) -> None:
    """Remove a consumer record and its index entries (its NACKs are the caller's business)."""
    txn.delete(_CONSUMERS, layout.consumer_key(group.handle, name))
    txn.delete_prefix(_OWNED, layout.consumer_pel_prefix(group.handle, name))


def consumers_of(txn: Txn, group: GroupMeta) -> list[ConsumerMeta]:
    """The group's consumers in name order."""
    prefix = layout.pack_u64(group.handle)
    return [
        txn.decode(_CONSUMERS, k, functools.partial(ConsumerMeta.unpack, k), v)
        for k, v in txn.items(_CONSUMERS, prefix)
    ]


# ----------------------------------------------------------------------------- PEL


def _nack(txn: Txn, key: bytes, value: bytes) -> Nack:
    delivery_time, count, owner = txn.decode(_PEL, key, layout.unpack_nack, value)
    released = delivery_time < 0 and _in_released_index(txn, key)
    return delivery_time, count, None if released else owner


def _in_released_index(txn: Txn, pel_key: bytes) -> bool:
    """Whether the ``pel`` record at ``pel_key`` is in its group's released index."""
    return txn.get(_OWNED, pel_key[:8] + layout.RELEASED_PART + pel_key[8:]) is not None


def _released(txn: Txn, key: bytes, value: bytes | memoryview) -> bool:
    """Whether the ``pel`` record ``key`` -> ``value`` is of a released entry: a delivery time
    below zero (the sign bit, big-endian) and the released index says so."""
    return bool(value[0] & 0x80) and _in_released_index(txn, key)


def owned_nack(txn: Txn, group: GroupMeta, entry_id: ID, owner: bytes) -> Nack:
    """The NACK of an entry ``owner``'s own list names; :class:`CorruptStoreError` when the
    group PEL lacks it (the two indexes disagree)."""
    nack = nack_get(txn, group, entry_id)
    if nack is None:
        found = _group_of(txn, group.handle)
        raise txn.inconsistent(
            _PEL,
            f"consumer {owner!r} of group {group.name!r} lists entry {entry_id[0]}-{entry_id[1]}, "
            "which the group's pending entries lack",
            None if found is None else found[0],
        )
    return nack


def nack_get(txn: Txn, group: GroupMeta, entry_id: ID) -> Nack | None:
    key = layout.pel_key(group.handle, entry_id)
    value = txn.get(_PEL, key)
    return None if value is None else _nack(txn, key, value)


def nack_put(
    txn: Txn,
    group: GroupMeta,
    entry_id: ID,
    nack: Nack,
    previous_owner: bytes | None,
    *,
    was_released: bool = False,
) -> None:
    """Store a NACK; keep the per-consumer index in step when the owner changes.

    ``previous_owner`` is the owner before this call (``None`` for a new NACK, or with
    ``was_released`` for a released one, which leaves the released index).
    """
    delivery_time, delivery_count, owner = nack
    assert owner is not None, "nack_release stores released entries"
    txn.put(
        _PEL,
        layout.pel_key(group.handle, entry_id),
        layout.pack_nack(delivery_time, delivery_count, owner),
    )
    if was_released:
        txn.delete(_OWNED, layout.released_key(group.handle, entry_id))
    if previous_owner != owner:
        tail = layout.ID_PACK(*entry_id)
        if previous_owner is not None:
            txn.delete(_OWNED, layout.consumer_pel_prefix(group.handle, previous_owner) + tail)
        txn.put(_OWNED, layout.consumer_pel_prefix(group.handle, owner) + tail, b"")


def nack_release(
    txn: Txn,
    group: GroupMeta,
    entry_id: ID,
    order: int,
    delivery_count: int,
    holder: bytes | None,
    last_owner: bytes | None,
) -> None:
    """Store the NACK of ``entry_id`` as released by XNACK: no owner, ``order`` its place among
    the released (their delivery times), ``last_owner`` the consumer it was released from
    (``None``: the one the record names already).  ``holder`` is its owner until now
    (``None``: released already, or a new NACK)."""
    key = layout.pel_key(group.handle, entry_id)
    if last_owner is None:
        old = txn.get(_PEL, key)
        last_owner = b"" if old is None else bytes(old[layout.NACK_HEADER_SIZE :])
    txn.put(_PEL, key, layout.pack_nack(layout.RELEASED_BASE + order, delivery_count, last_owner))
    txn.put(_OWNED, layout.released_key(group.handle, entry_id), b"")
    if holder is not None:
        txn.delete(_OWNED, layout.consumer_pel_prefix(group.handle, holder) + key[8:])


def released_entries(txn: Txn, group: GroupMeta) -> Iterator[tuple[ID, int, bytes]]:
    """The group's entries XNACK released, in ID order: ``(ID, delivery count, the consumer
    they were released from -- empty when none)``."""
    for key, _ in list(txn.items(_OWNED, layout.released_prefix(group.handle))):
        entry_id = layout.id_from_key_tail(key)
        pel_key = layout.pel_key(group.handle, entry_id)
        value = txn.get(_PEL, pel_key)
        if value is None:
            raise txn.inconsistent(
                _PEL, f"group {group.name!r} lists {entry_id} as released, which it lacks"
            )
        _, count, last_owner = txn.decode(_PEL, pel_key, layout.unpack_nack, value)
        yield entry_id, count, last_owner


def released_count(txn: Txn, group: GroupMeta) -> int:
    """How many of the group's entries XNACK released (their index records, counted)."""
    return sum(1 for _ in txn.items(_OWNED, layout.released_prefix(group.handle)))


def nack_delete(txn: Txn, group: GroupMeta, entry_id: ID, owner: bytes | None) -> None:
    """Remove a NACK from the group PEL and from its owner's index (``None``: a released
    entry, in no consumer's list)."""
    key = layout.pel_key(group.handle, entry_id)
    txn.delete(_PEL, key)
    if owner is None:
        txn.delete(_OWNED, layout.released_key(group.handle, entry_id))
    else:
        txn.delete(_OWNED, layout.consumer_pel_prefix(group.handle, owner) + key[8:])


def nacks_deliver(
    txn: Txn,
    group: GroupMeta,
    ids: Iterable[ID],
    owner: bytes,
    now_ms: int,
    *,
    may_exist: bool,
) -> tuple[int, dict[bytes | None, int]]:
    """Make ``owner`` the holder of fresh NACKs (delivery count 1, time ``now_ms``) for
    ``ids``.  With ``may_exist`` a NACK already there (after XGROUP SETID moved the group
    back) is taken over.  Returns how many NACKs are new, and how many were taken from each
    other consumer (``None``: released entries, which no consumer held).  Without
    ``may_exist`` (the usual delivery) the two records of each NACK
    are sealed and written as runs (:func:`rstore.storage.records.sealed.nacks_write`)."""
    put, get, delete, pack = txn.put, txn.get, txn.delete, layout.ID_PACK
    handle = group.handle
    prefix = layout.pack_u64(handle)
    owned_prefix = layout.consumer_pel_prefix(handle, owner)
    if not may_exist:  # every NACK is new: the records of the run sealed and written at once
        nacks = [(pack(*entry_id), now_ms, 1) for entry_id in ids]
        sealed.nacks_write(txn, prefix, owned_prefix, owner, nacks)
        return len(nacks), {}
    value = layout.pack_nack(now_ms, 1, owner)
    skip = layout.NACK_HEADER_SIZE
    new = 0
    taken: dict[bytes | None, int] = {}
    for entry_id in ids:
        tail = pack(*entry_id)
        key = prefix + tail
        old = get(_PEL, key) if may_exist else None
        put(_PEL, key, value)
        if old is None:
            new += 1
            put(_OWNED, owned_prefix + tail, b"")
            continue
        if _released(txn, key, old):
            taken[None] = taken.get(None, 0) + 1
            delete(_OWNED, layout.released_key(handle, entry_id))
            put(_OWNED, owned_prefix + tail, b"")
            continue
        previous = bytes(old[skip:])
        if previous != owner:
            taken[previous] = taken.get(previous, 0) + 1
            delete(_OWNED, layout.consumer_pel_prefix(handle, previous) + tail)
            put(_OWNED, owned_prefix + tail, b"")
    return new, taken


def nacks_pop(txn: Txn, group: GroupMeta, ids: Iterable[ID]) -> dict[bytes | None, int]:
    """Remove the NACKs of ``ids`` that exist (from the group PEL and their owners' indexes);
    how many each owner lost (``None``: released entries).  IDs without a NACK, or repeated,
    are skipped."""
    pack, handle = layout.ID_PACK, group.handle
    prefix = layout.pack_u64(handle)
    tails = [pack(*entry_id) for entry_id in ids]
    values = txn.pop_many(_PEL, [prefix + tail for tail in tails])
    skip = layout.NACK_HEADER_SIZE
    per_owner: dict[bytes | None, int] = {}
    owned: list[bytes] = []
    for tail, value in zip(tails, values):
        if value is None:
            continue
        if _released(txn, prefix + tail, value):
            per_owner[None] = per_owner.get(None, 0) + 1
            owned.append(prefix + layout.RELEASED_PART + tail)
            continue
        owner = value[skip:]
        owned.append(layout.consumer_pel_prefix(handle, owner) + tail)
        per_owner[owner] = per_owner.get(owner, 0) + 1
    txn.delete_many(_OWNED, owned)
    return per_owner


def pel_entries(
    txn: Txn, group: GroupMeta, start: ID = (0, 0), end: ID | None = None
) -> Iterator[tuple[ID, Nack]]:
    """The group PEL from ``start`` (inclusive) to ``end`` (inclusive), in ID order."""
    prefix = layout.pack_u64(group.handle)
    end_key = None if end is None else layout.pel_key(group.handle, end)
    for key, value in txn.items(_PEL, prefix, layout.pel_key(group.handle, start), end_key):
        yield layout.id_from_key_tail(key), _nack(txn, key, value)


def last_pel_id(txn: Txn, group: GroupMeta) -> ID | None:
    """The greatest ID in the group PEL."""
    last = txn.last_item(_PEL, layout.pack_u64(group.handle))
    return None if last is None else layout.id_from_key_tail(last[0])


def consumer_pel_ids(
    txn: Txn, group: GroupMeta, consumer: bytes, start: ID = (0, 0), end: ID | None = None
) -> Iterator[ID]:
    """The IDs a consumer owns, from ``start`` to ``end`` inclusive, in ID order."""
    prefix = layout.consumer_pel_prefix(group.handle, consumer)
    first = prefix + layout.ID_PACK(*start)
    last = None if end is None else prefix + layout.ID_PACK(*end)
    for key, _ in txn.items(_OWNED, prefix, first, last):
        yield layout.id_from_key_tail(key)


# ----------------------------------------------------------------------------- restore
# While a group is restored from a file, its PEL entries arrive before their owners: they wait
# (in the importer's memory, or past its limit here under a temporary handle, never a real
# group's) until a consumer's list names them.  Raw IDs: 16 bytes, big-endian ms then seq, as
# RDB files store them and as keys end here.


def nacks_restore(
    txn: Txn, group: GroupMeta, owner: bytes, nacks: list[tuple[bytes, int, int]]
) -> None:
    """Store NACKs new to the group, all of ``owner``: ``(raw ID, delivery time, delivery
    count)`` each, in the group PEL and in the owner's index."""
    prefix = layout.pack_u64(group.handle)
    owned = layout.consumer_pel_prefix(group.handle, owner)
    sealed.nacks_write(txn, prefix, owned, owner, nacks)


def stage_nacks(txn: Txn, staging: int, nacks: list[tuple[bytes, tuple[int, int]]]) -> None:
    """Stage ``(raw ID, (delivery time, delivery count))`` entries under ``staging``."""
    prefix = layout.pack_u64(staging)
    pack = layout.pack_nack
    txn.put_many(_PEL, [(prefix + raw, pack(when, count, b"")) for raw, (when, count) in nacks])


def take_staged_nack(txn: Txn, staging: int, raw: bytes) -> tuple[int, int] | None:
    """Remove a staged entry; its ``(delivery time, count)``, or ``None`` if not staged."""
    key = layout.pack_u64(staging) + raw
    value = txn.pop(_PEL, key)
    if value is None:
        return None
    delivery_time, count, _ = _nack(txn, key, value)
    return delivery_time, count


def staged_left(txn: Txn, staging: int) -> int:
    """How many staged entries no consumer named (after dropping them)."""
    prefix = layout.pack_u64(staging)
    left = sum(1 for _ in txn.items(_PEL, prefix))
    txn.delete_prefix(_PEL, prefix)
    return left
