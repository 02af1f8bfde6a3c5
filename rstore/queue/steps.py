"""The transactions of :class:`rstore.Consumer`, each one LMDB transaction.

A consumer must never act on a message on the strength of something it read in an earlier
transaction: another consumer may have acknowledged or claimed the message in between.  So:

* :func:`claim_idle` and :func:`read_own_history` return each entry together with its delivery
  count as that same claim or history read set it (``streams.claim`` / ``streams.readgroup``
  hand the counts back; the XAUTOCLAIM and XREADGROUP replies leave them out);
* :func:`owns` tells, just before a message is handed to the handler, whether it is still
  pending to this consumer;
* :func:`dead_letter` appends a message to the dead-letter stream and acknowledges it only if
  it is still pending to this consumer, all in one transaction.

Errors are the commands' own: NOGROUP as XAUTOCLAIM or XREADGROUP word it, XADD's refusals.
"""

from __future__ import annotations

from typing import Any

from rstore.commands.argv import encode_argv
from rstore.commands.executor import run_in_transaction
from rstore.commands.pending import lookup_group
from rstore.commands.registry import Context, lookup
from rstore.ids import ID
from rstore.storage.env import Env
from rstore.storage.records import group_records as pel
from rstore.storage.records.layout import GroupMeta
from rstore.storage.records.txn import Txn
from rstore.streams import groups
from rstore.streams.claim import autoclaim
from rstore.streams.keyspace import StreamRef, lookup_stream
from rstore.streams.pending import ack
from rstore.streams.readgroup import find_target, read_history

__all__ = ["Delivered", "claim_idle", "dead_letter", "owns", "read_own_history"]

Delivered = tuple[ID, list[bytes], int]  # entry ID, fields and values, delivery count


def claim_idle(
    env: Env, key: bytes, group_name: bytes, consumer: bytes, min_idle_ms: int, cursor: ID,
    count: int,
) -> tuple[ID, list[Delivered]]:  # fmt: skip
    """XAUTOCLAIM ``key group consumer min_idle_ms cursor COUNT count``; returns the next
    cursor and the claimed entries with their new delivery counts."""

    def body(ctx: Context) -> tuple[ID, list[Delivered]]:
        stream, group = lookup_group(ctx, key, group_name)
        next_cursor, claimed, _deleted = autoclaim(
            ctx.txn, stream, group, consumer, min_idle_ms, cursor, count,
            justid=False, now_ms=ctx.now_ms,
        )  # fmt: skip
        return next_cursor, [(eid, fv, n) for eid, fv, n in claimed if fv is not None]

    return run_in_transaction(env, body)


def read_own_history(
    env: Env, key: bytes, group_name: bytes, consumer: bytes, after: ID, count: int
) -> tuple[ID | None, list[Delivered]]:
    """XREADGROUP ``GROUP group consumer COUNT count STREAMS key after``: the consumer's own
    pending entries after ``after`` with their raised delivery counts.  Entries deleted from
    the stream meanwhile are acknowledged in the same transaction (there is nothing left to
    process).  Returns the last ID read (``None``: no entries left) and the live entries."""

    def body(ctx: Context) -> tuple[ID | None, list[Delivered]]:
        target = find_target(ctx.txn, key, group_name, {})  # XREADGROUP's NOGROUP if missing
        stream, group = target.stream, target.group
        meta = groups.ensure_consumer(ctx.txn, stream, group, consumer, ctx.now_ms)
        history = read_history(ctx.txn, stream, group, meta, after, count, now_ms=ctx.now_ms)
        if not history:
            return None, []
        gone = [eid for eid, fv, _ in history if fv is None]
        if gone:
            ack(ctx.txn, stream, group, gone)
        return history[-1][0], [(eid, fv, n) for eid, fv, n in history if fv is not None]

    return run_in_transaction(env, body)


def _find(txn: Txn, key: bytes, group_name: bytes) -> tuple[StreamRef, GroupMeta] | None:
    stream = lookup_stream(txn, key)
    group = None if stream is None else groups.find_group(txn, stream, group_name)
    return None if stream is None or group is None else (stream, group)


def _owner(txn: Txn, found: tuple[StreamRef, GroupMeta] | None, entry_id: ID) -> bytes | None:
    nack = None if found is None else pel.nack_get(txn, found[1], entry_id)
    return None if nack is None else nack[2]


def owns(env: Env, key: bytes, group_name: bytes, consumer: bytes, entry_id: ID) -> bool:
    """Whether ``entry_id`` is pending in the group and owned by ``consumer``."""
    return env.read(lambda txn: _owner(txn, _find(txn, key, group_name), entry_id) == consumer)


def dead_letter(
    env: Env, key: bytes, group_name: bytes, consumer: bytes, entry_id: ID,
    dead_key: bytes, fields: dict[Any, Any],
) -> bool:  # fmt: skip
    """If ``entry_id`` is still pending to ``consumer``: acknowledge it and XADD ``fields`` to
    ``dead_key``, both in one transaction, and return True.  Otherwise write nothing, False.

    The XADD is idempotent (``IDMP``, producer: the source stream and group; idempotent ID:
    the entry's ID): a message delivered again after it was dead-lettered (the group moved
    back by XGROUP SETID) is not dead-lettered twice while the dead-letter stream remembers
    it (``docs/queue.md``)."""
    producer = b"rstore.Consumer\x00" + key + b"\x00" + group_name
    iid = b"%d-%d" % entry_id
    pairs = (x for kv in fields.items() for x in kv)
    argv = encode_argv([b"XADD", dead_key, b"IDMP", producer, iid, b"*", *pairs])
    xadd = lookup(argv).handler
    assert xadd is not None

    def body(ctx: Context) -> bool:
        found = _find(ctx.txn, key, group_name)
        if found is None or _owner(ctx.txn, found, entry_id) != consumer:
            return False
        ack(ctx.txn, *found, [entry_id])
        xadd(ctx, argv)
        return True

    return run_in_transaction(env, body)
