"""XADD, XTRIM, XDEL, XSETID: argv parsing in Redis's order, then the stream layer."""

from __future__ import annotations

from typing import Any

from rstore import ids, messages
from rstore.commands.argv import cstr, is_kw, keyword, parse_int
from rstore.commands.registry import Context, command
from rstore.streams import append, delete, setid
from rstore.streams.keyspace import lookup_stream
from rstore.streams.trim import TrimSpec, trim

__all__ = ["parse_add_or_trim"]


class _AddTrimArgs:
    __slots__ = ("explicit_id", "id_pos", "limit", "nomkstream", "trim")

    def __init__(self) -> None:
        self.trim: TrimSpec | None = None
        self.limit: int | None = None
        self.nomkstream = False
        self.explicit_id: tuple[int, int | None] | None = None
        self.id_pos = 0


def parse_add_or_trim(argv: list[bytes], xadd: bool) -> _AddTrimArgs:
    """The option grammar XADD and XTRIM share (Redis ``streamParseAddOrTrimArgsOrReply``).

    Options are scanned left to right from argv[2]; a keyword counts only when an argument
    follows it.  For XADD the first token that is no option is the ID and ends the scan
    (``id_pos``); for XTRIM it is a syntax error.
    """
    out = _AddTrimArgs()
    strategy: str | None = None
    approx = False
    maxlen = 0
    minid: ids.ID = (0, 0)
    limit_given = False
    limit = 0
    argc = len(argv)
    i = 2
    while i < argc:
        more = argc - 1 - i
        arg = argv[i]
        if xadd and cstr(arg) == b"*":
            break
        kw = keyword(arg)
        if kw in (b"maxlen", b"minid") and more:
            if strategy is not None:
                raise messages.error(messages.TRIM_BOTH)
            approx = False
            nxt = cstr(argv[i + 1])
            if more >= 2 and nxt == b"~":
                approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
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
        elif xadd:
            out.explicit_id = ids.parse_xadd_id(arg)
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
        )
    return out


@command("xadd", -5, write=True, summary="Append an entry to a stream")
def xadd(ctx: Context, argv: list[bytes]) -> Any:
    if argv[2] == b"*":  # fast path: no options
        field_pos = 3
        explicit = None
        nomkstream = False
        trim_spec = None
    else:
        parsed = parse_add_or_trim(argv, True)
        field_pos = parsed.id_pos + 1
        explicit = parsed.explicit_id
        nomkstream = parsed.nomkstream
        trim_spec = parsed.trim
    nfv = len(argv) - field_pos
    if nfv < 2 or nfv % 2:
        raise messages.error(messages.WRONG_ARITY, name="xadd")
    new_id = append.add(
        ctx.txn,
        argv[1],
        argv[field_pos:],
        explicit_id=explicit,
        nomkstream=nomkstream,
        trim_spec=trim_spec,
        now_ms=ctx.now_ms,
    )
    if new_id is None:
        return None
    ctx.signal(argv[1])
    return b"%d-%d" % new_id


@command("xtrim", -4, write=True, summary="Trim a stream by length or minimum ID")
def xtrim(ctx: Context, argv: list[bytes]) -> Any:
    parsed = parse_add_or_trim(argv, False)
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return 0
    assert parsed.trim is not None
    return trim(ctx.txn, stream, parsed.trim)


@command("xdel", -3, write=True, summary="Delete entries from a stream")
def xdel(ctx: Context, argv: list[bytes]) -> Any:
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is None:
        return 0
    id_list = ids.parse_ids(argv[2:])
    return delete.delete_entries(ctx.txn, stream, id_list)


@command("xsetid", -3, write=True, summary="Set a stream's last ID and counters")
def xsetid(ctx: Context, argv: list[bytes]) -> Any:
    last_id = ids.parse_id(argv[2], strict=True)
    entries_added: int | None = None
    max_deleted: ids.ID | None = None
    i = 3
    argc = len(argv)
    while i < argc:
        more = argc - 1 - i
        if is_kw(argv[i], b"entriesadded") and more:
            entries_added = parse_int(argv[i + 1])
            if entries_added < 0:
                raise messages.error(messages.XSETID_ENTRIES_ADDED_NEGATIVE)
        elif is_kw(argv[i], b"maxdeletedid") and more:
            max_deleted = ids.parse_id(argv[i + 1], strict=True)
            if last_id < max_deleted:
                raise messages.error(messages.XSETID_SMALLER_THAN_MAXDEL_ARG)
        else:
            raise messages.error(messages.SYNTAX)
        i += 2
    setid.set_id(ctx.txn, argv[1], last_id, entries_added, max_deleted)
    return "OK"
