"""XTRIM, and the trimming options it shares with XADD, parsed in Redis's order; the semantics
are in :mod:`rstore.streams.trim`."""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import cstr, keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.streams.idempotency import Producer
from rstore.streams.keyspace import lookup_stream
from rstore.streams.references import Policy
from rstore.streams.trim import TrimSpec, trim

__all__ = ["AddTrimArgs", "parse_add_or_trim"]


class AddTrimArgs:
    """The options of XADD / XTRIM, parsed."""

    __slots__ = ("explicit_id", "id_pos", "limit", "nomkstream", "producer", "trim")

    def __init__(self) -> None:
        self.trim: TrimSpec | None = None
        self.limit: int | None = None
        self.nomkstream = False
        self.producer: Producer | None = None
        self.explicit_id: tuple[int, int | None] | None = None
        self.id_pos = 0


def parse_add_or_trim(argv: list[bytes], xadd: bool) -> AddTrimArgs:
    """The option grammar XADD and XTRIM share (Redis ``streamParseAddOrTrimArgsOrReply``).

    Options are scanned left to right from argv[2]; a keyword counts only when an argument
    follows it, except the reference policy (``KEEPREF | DELREF | ACKED``, Redis 8.2), which
    may come anywhere once.  For XADD the first token that is no option is the ID and ends the
    scan (``id_pos``) -- a second policy too, refused as an ID; for XTRIM it is a syntax error.
    XADD also takes ``IDMPAUTO pid`` or ``IDMP pid iid`` (Redis 8.6), then only with ``*``.
    """
    out = AddTrimArgs()
    strategy: str | None = None
    approx = False
    maxlen = 0
    minid: ids.ID = (0, 0)
    limit_given = False
    limit = 0
    policy: Policy | None = None
    argc = len(argv)
    i = 2
    while i < argc:
        more = argc - 1 - i
        arg = argv[i]
        if xadd and cstr(arg) == b"*":
            break
        kw = keyword(arg)
        named = Policy.parse(kw)
        if named is not None and policy is None:
            policy = named
        elif kw in (b"maxlen", b"minid") and more:
            if strategy is not None:
                raise messages.error(messages.TRIM_BOTH)
            approx, i = _operator(argv, i, more)
            if kw == b"maxlen":
                maxlen = parse_int(argv[i + 1])
                if maxlen < 0:
                    raise messages.error(messages.MAXLEN_NEGATIVE)
                strategy = "maxlen"
            else:
                minid = ids.parse_id(argv[i + 1], strict=True)
                strategy = "minid"
            i += 1
        elif kw == b"limit" and more:
            limit = parse_int(argv[i + 1])
            if limit < 0:
                raise messages.error(messages.LIMIT_NEGATIVE)
            limit_given = True
            i += 1
        elif xadd and kw == b"nomkstream":
            out.nomkstream = True
        elif xadd and ((kw == b"idmpauto" and more) or (kw == b"idmp" and more >= 2)):
            out.producer = _producer(argv, i, out.producer)
            i += 1 if out.producer.iid is None else 2
        elif xadd:
            out.explicit_id = ids.parse_xadd_id(arg)
            if out.producer is not None:
                raise messages.error(messages.IDMP_EXPLICIT_ID)
            break
        else:
            raise messages.error(messages.SYNTAX)
        i += 1
    out.id_pos = i
    if limit and strategy is None:
        raise messages.error(messages.LIMIT_NO_STRATEGY)
    if not xadd and strategy is None:
        raise messages.error(messages.XTRIM_NO_STRATEGY)
    if limit_given and not approx:
        raise messages.error(messages.LIMIT_NO_APPROX)
    if strategy is not None:
        out.trim = TrimSpec(
            "maxlen" if strategy == "maxlen" else "minid",
            maxlen=maxlen,
            minid=minid,
            approx=approx,
            limit=limit if limit_given else None,
            policy=policy or Policy.KEEPREF,
        )
    return out


def _operator(argv: list[bytes], i: int, more: int) -> tuple[bool, int]:
    """After MAXLEN / MINID at ``argv[i]``: whether ``~`` follows, and the position of the
    ``~`` or ``=`` when one is there (else ``i``): the threshold is the argument after it."""
    nxt = cstr(argv[i + 1])
    if more >= 2 and nxt in (b"~", b"="):
        return nxt == b"~", i + 1
    return False, i


def _producer(argv: list[bytes], i: int, given: Producer | None) -> Producer:
    """``IDMPAUTO pid`` or ``IDMP pid iid`` at ``argv[i]``, checked."""
    if given is not None:
        raise messages.error(messages.IDMP_TWICE)
    pid = argv[i + 1]
    if keyword(argv[i]) == b"idmpauto":
        if not pid:
            raise messages.error(messages.IDMPAUTO_NO_PID)
        return Producer(pid, None)
    if not pid:
        raise messages.error(messages.IDMP_NO_PID)
    if not argv[i + 2]:
        raise messages.error(messages.IDMP_NO_IID)
    return Producer(pid, argv[i + 2])


@command("xtrim", -4, write=True, summary="Trim a stream by length or minimum ID")
def xtrim(ctx: Context, argv: list[bytes]) -> Any:
    parsed = parse_add_or_trim(argv, False)
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return 0
    assert parsed.trim is not None
    return trim(ctx.txn, stream, parsed.trim)
