"""XCLAIM and XAUTOCLAIM."""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import keyword, parse_int
from rstore.commands.pending import lookup_group
from rstore.commands.registry import Context, command
from rstore.errors import ResponseError
from rstore.numbers import string2ll
from rstore.streams.claim import Claimed, ClaimOptions, autoclaim, claim

# COUNT must fit LONG_MAX / 16 bytes of IDs (Redis's bound).
AUTOCLAIM_MAX_COUNT = (2**63 - 1) // 16
# Redis allocates COUNT x 16 bytes for deleted IDs up front; rstore refuses the same absurd
# counts Valkey cannot allocate (over 1 TiB of IDs).
AUTOCLAIM_ALLOC_LIMIT = (1 << 40) // 16


def claimed_reply(claimed: list[Claimed]) -> list[Any]:
    """``[[id, [fields]], ...]``, or bare IDs for JUSTID claims (fields are ``None``); the
    delivery counts are not part of the reply."""
    return [
        ids.format_id(eid) if fv is None else [ids.format_id(eid), fv] for eid, fv, _ in claimed
    ]


@command("xclaim", -6, write=True, summary="Claim pending entries for a consumer")
def xclaim(ctx: Context, argv: list[bytes]) -> Any:
    stream, group = lookup_group(ctx, argv[1], argv[2])
    min_idle = max(parse_int(argv[4], messages.XCLAIM_MIN_IDLE), 0)
    id_list: list[ids.ID] = []
    j = 5
    while j < len(argv):
        try:
            id_list.append(ids.parse_id(argv[j], strict=True))
        except ResponseError:
            break
        j += 1
    force = justid = False
    delivery_time: int | None = None
    retry: int | None = None
    last_id: ids.ID | None = None
    argc = len(argv)
    while j < argc:
        more = argc - 1 - j
        opt = keyword(argv[j])
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            delivery_time = ctx.now_ms - parse_int(argv[j], messages.XCLAIM_IDLE)
        elif opt == b"time" and more:
            j += 1
            delivery_time = parse_int(argv[j], messages.XCLAIM_TIME)
        elif opt == b"retrycount" and more:
            j += 1
            retry = parse_int(argv[j], messages.XCLAIM_RETRYCOUNT)
        elif opt == b"lastid" and more:
            j += 1
            last_id = ids.parse_id(argv[j], strict=True)
        else:
            raise messages.error(messages.XCLAIM_UNKNOWN_OPTION, opt=messages.sanitize(argv[j]))
        j += 1
    opts = ClaimOptions(
        min_idle, delivery_time, retry if retry is None or retry >= 0 else None,
        force, justid, last_id,
    )  # fmt: skip
    return claimed_reply(claim(ctx.txn, stream, group, argv[3], id_list, opts, ctx.now_ms))


@command("xautoclaim", -6, write=True, summary="Claim idle pending entries, scanning the PEL")
def xautoclaim(ctx: Context, argv: list[bytes]) -> Any:
    min_idle = max(parse_int(argv[4], messages.XAUTOCLAIM_MIN_IDLE), 0)
    start = ids.parse_interval_id(argv[5], missing_seq=0, is_end=False)
    count = 100
    justid = False
    j = 6
    argc = len(argv)
    while j < argc:
        more = argc - 1 - j
        opt = keyword(argv[j])
        if opt == b"count" and more:
            value = string2ll(argv[j + 1])
            if value is None or not 1 <= value <= AUTOCLAIM_MAX_COUNT:
                raise messages.error(messages.COUNT_POSITIVE)
            count = value
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise messages.error(messages.SYNTAX)
        j += 1
    stream, group = lookup_group(ctx, argv[1], argv[2])
    if count > AUTOCLAIM_ALLOC_LIMIT:
        raise messages.error(messages.XAUTOCLAIM_COUNT_TOO_HIGH)
    cursor, claimed, deleted = autoclaim(
        ctx.txn, stream, group, argv[3], min_idle, start, count,
        justid=justid, now_ms=ctx.now_ms,
    )  # fmt: skip
    return [ids.format_id(cursor), claimed_reply(claimed), [ids.format_id(d) for d in deleted]]
