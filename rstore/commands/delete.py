"""XDEL, and Redis 8.2's XDELEX and XACKDEL: argv parsing; the semantics are in
:mod:`rstore.streams.delete`."""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.argv import keyword, parse_ids, parse_int
from rstore.commands.registry import Context, command
from rstore.streams import delete
from rstore.streams.keyspace import lookup_stream
from rstore.streams.references import Policy, References

__all__ = ["parse_policy_ids"]


@command("xdel", -3, write=True, summary="Delete entries from a stream")
def xdel(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return 0
    id_list = parse_ids(argv[2:])
    return delete.delete_entries(ctx.txn, stream, id_list)


@command("xdelex", -5, write=True, summary="Delete entries, with a reference policy (Redis 8.2)")
def xdelex(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])  # WRONGTYPE before any argument error
    policy, raw_ids = parse_policy_ids(argv, 2)
    if stream is None:
        return [delete.NOT_FOUND] * len(raw_ids)  # the IDs are not even parsed
    return delete.delete_with_policy(ctx.txn, stream, parse_ids(raw_ids), policy)


@command("xackdel", -6, write=True, summary="Acknowledge and delete entries of a group (Redis 8.2)")
def xackdel(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    policy, raw_ids = parse_policy_ids(argv, 3)
    missing = [delete.NOT_FOUND] * len(raw_ids)  # no NOGROUP error, the IDs not parsed
    if stream is None:
        return missing
    refs = References(ctx.txn, stream)
    group = refs.group(argv[2])
    if group is None:
        return missing
    return delete.ack_delete(ctx.txn, stream, refs, group, parse_ids(raw_ids), policy)


def parse_policy_ids(argv: list[bytes], start: int) -> tuple[Policy, list[bytes]]:
    """``[KEEPREF | DELREF | ACKED] IDS numids id ...`` from ``argv[start]`` on, as Redis 8.2
    reads it: one policy, anywhere; ``IDS`` blocks, the last one counting; ``numids``
    arguments taken as IDs whatever they are.  The policy and the IDs, not parsed yet."""
    policy: Policy | None = None
    raw_ids: list[bytes] | None = None
    argc = len(argv)
    i = start
    while i < argc:
        kw = keyword(argv[i])
        named = Policy.parse(kw)
        if named is not None and policy is None:
            policy = named
            i += 1
        elif kw == b"ids" and i + 1 < argc:
            numids = parse_int(argv[i + 1], messages.NUMIDS_NOT_POSITIVE)
            if numids <= 0:
                raise messages.error(messages.NUMIDS_NOT_POSITIVE)
            if numids > argc - i - 2:
                raise messages.error(messages.NUMIDS_MISMATCH)
            raw_ids = argv[i + 2 : i + 2 + numids]
            i += 2 + numids
        else:
            raise messages.error(messages.SYNTAX)
    # The arity and the one-policy rule leave no call without an IDS block.
    assert raw_ids is not None
    return policy or Policy.KEEPREF, raw_ids
