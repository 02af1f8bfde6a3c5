"""Consumer groups: creating, moving and destroying groups; creating and deleting consumers.

Group records keep two counters (pending entries, consumers) and consumer records one (pending
entries); every function here that changes the PEL or the consumer set keeps them in step, and
:mod:`rstore.streams.check` verifies them.
"""

from __future__ import annotations

from rstore.ids import ID
from rstore.model import INVALID_ENTRIES_READ
from rstore.storage.records import group_records
from rstore.storage.records.layout import ConsumerMeta, GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = [
    "create_consumer",
    "create_group",
    "delete_consumer",
    "destroy_group",
    "ensure_consumer",
    "find_consumer",
    "find_group",
    "given_entries_read",
    "set_group_id",
]


def find_group(txn: Txn, stream: StreamRef, name: bytes) -> GroupMeta | None:
    return group_records.group_get(txn, stream.handle, name)


def find_consumer(txn: Txn, group: GroupMeta, name: bytes) -> ConsumerMeta | None:
    return group_records.consumer_get(txn, group, name)


def given_entries_read(stream: StreamRef, entries_read: int) -> int:
    """An ENTRIESREAD argument as the group keeps it: at most the stream's entries-added, as
    Redis 8.2.2 has it (Valkey 8.0 keeps any number, and then reports a negative lag)."""
    if entries_read == INVALID_ENTRIES_READ:
        return entries_read
    return min(entries_read, stream.meta.entries_added)


def create_group(txn: Txn, stream: StreamRef, name: bytes, last_id: ID, entries_read: int) -> bool:
    """XGROUP CREATE on an existing stream; ``False`` when the group already exists."""
    if group_records.group_get(txn, stream.handle, name) is not None:
        return False
    group = GroupMeta(name, txn.new_handle(), last_id, given_entries_read(stream, entries_read))
    group_records.group_put(txn, stream.handle, group)
    stream.meta.group_count += 1
    txn.stream_put(stream.handle, stream.meta)
    return True


def set_group_id(
    txn: Txn, stream: StreamRef, group: GroupMeta, last_id: ID, entries_read: int
) -> None:
    """XGROUP SETID: move the group; its PEL is untouched."""
    group.last_id = last_id
    group.entries_read = given_entries_read(stream, entries_read)
    group_records.group_put(txn, stream.handle, group)


def destroy_group(txn: Txn, stream: StreamRef, group: GroupMeta) -> None:
    group_records.group_delete(txn, stream.handle, group)
    stream.meta.group_count -= 1
    txn.stream_put(stream.handle, stream.meta)


def create_consumer(
    txn: Txn, stream: StreamRef, group: GroupMeta, name: bytes, now_ms: int
) -> ConsumerMeta | None:
    """A new consumer (seen now, never active); ``None`` when it already exists."""
    if group_records.consumer_get(txn, group, name) is not None:
        return None
    consumer = ConsumerMeta(name, now_ms)
    group_records.consumer_put(txn, group, consumer)
    group.consumer_count += 1
    group_records.group_put(txn, stream.handle, group)
    return consumer


def ensure_consumer(
    txn: Txn, stream: StreamRef, group: GroupMeta, name: bytes, now_ms: int
) -> ConsumerMeta:
    """Look up or create a consumer and mark it seen now (XREADGROUP, XCLAIM, XAUTOCLAIM).

    The caller writes the consumer back once it is done with it.
    """
    consumer = group_records.consumer_get(txn, group, name)
    if consumer is None:
        consumer = ConsumerMeta(name, now_ms)
        group.consumer_count += 1
        group_records.group_put(txn, stream.handle, group)
    consumer.seen_time = now_ms
    group_records.consumer_put(txn, group, consumer)
    return consumer


def delete_consumer(txn: Txn, stream: StreamRef, group: GroupMeta, name: bytes) -> int:
    """XGROUP DELCONSUMER: remove the consumer and its NACKs; how many were pending."""
    consumer = group_records.consumer_get(txn, group, name)
    if consumer is None:
        return 0
    owned = list(group_records.consumer_pel_ids(txn, group, name))
    for entry_id in owned:
        group_records.nack_delete(txn, group, entry_id, name)
    group_records.consumer_delete(txn, group, name)
    group.pel_count -= len(owned)
    group.consumer_count -= 1
    group_records.group_put(txn, stream.handle, group)
    return len(owned)
