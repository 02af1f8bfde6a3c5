"""XADD: its argv parsed in Redis's order (the trimming options by :mod:`rstore.commands.trim`);
the semantics are in :mod:`rstore.streams.append`.

In a batch (a pipeline), consecutive ``XADD key * field value ...`` on one key run together
(:func:`xadd_many`, :func:`rstore.streams.append.add_auto`); each command still gets the reply
or error it would get alone, in order.
"""

from __future__ import annotations

from typing import Any

from rstore import messages
from rstore.commands.registry import Context, batch_handler, command
from rstore.commands.trim import parse_add_or_trim
from rstore.errors import ResponseError
from rstore.streams import append, idempotency
from rstore.streams.idempotency import Producer
from rstore.streams.keyspace import lookup_stream
from rstore.streams.trim import TrimSpec

__all__: list[str] = []


@command("xadd", -5, write=True, summary="Append an entry to a stream")
def xadd(ctx: Context, argv: list[bytes]) -> Any:
    if argv[2] == b"*":  # no options
        # into the stream's last node: as a pipeline's run of them (the same function)
        ids: list[bytes] = []
        if append.add_auto(ctx.txn, argv[1], [argv], 0, 1, 3, ctx.now_ms, ids):
            ctx.signal(argv[1])
            return ids[0]
        field_pos = 3  # a new stream or node, or an error: the general path
        explicit = None
        nomkstream = False
        trim_spec = None
        producer = None
    else:
        parsed = parse_add_or_trim(argv, True)
        field_pos = parsed.id_pos + 1
        explicit = parsed.explicit_id
        nomkstream = parsed.nomkstream
        trim_spec = parsed.trim
        producer = parsed.producer
    nfv = len(argv) - field_pos
    if nfv < 2 or nfv % 2:
        raise messages.error(messages.WRONG_ARITY, name="xadd")
    if producer is not None:
        return _idempotent(ctx, argv, field_pos, producer, nomkstream, trim_spec)
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


def _idempotent(
    ctx: Context,
    argv: list[bytes],
    field_pos: int,
    producer: Producer,
    nomkstream: bool,
    trim_spec: TrimSpec | None,
) -> Any:
    """XADD with IDMP / IDMPAUTO: the ID the producer's earlier XADD of the same iid added, if
    the stream remembers it; else a new entry, remembered."""
    fields = argv[field_pos:]
    iid = producer.iid_for(fields)
    stream = lookup_stream(ctx.txn, argv[1])
    if stream is not None:
        original = idempotency.duplicate_of(ctx.txn, stream.handle, producer.pid, iid, ctx.now_ms)
        if original is not None:
            return b"%d-%d" % original
    new_id = append.add(
        ctx.txn, argv[1], fields, explicit_id=None, nomkstream=nomkstream, trim_spec=trim_spec,
        now_ms=ctx.now_ms,
    )  # fmt: skip
    if new_id is None:
        return None
    added = lookup_stream(ctx.txn, argv[1])
    assert added is not None
    idempotency.record(ctx.txn, added.handle, producer.pid, iid, new_id)
    ctx.signal(argv[1])
    return b"%d-%d" % new_id


@batch_handler("xadd")
def xadd_many(ctx: Context, batch: list[list[bytes]], start: int, stop: int) -> list[Any]:
    """The replies of the XADDs ``batch[start:stop]`` run in order on ``ctx`` (errors in place,
    as :func:`rstore.commands.executor.run_batch` gives them): what :func:`xadd` gives one by
    one, with runs of ``XADD key * ...`` on one key appended together."""
    out: list[Any] = []
    add_auto = append.add_auto
    i = start
    while i < stop:
        argv = batch[i]
        if argv[2] != b"*":
            out.append(_one(ctx, argv))
            i += 1
            continue
        name = argv[1]
        end = i + 1
        while end < stop and batch[end][2] == b"*" and batch[end][1] == name:
            end += 1
        while i < end:
            try:
                added = add_auto(ctx.txn, name, batch, i, end, 3, ctx.now_ms, out)
            except ResponseError:  # the key holds another type: each XADD says so below
                added = i
            if added > i:
                ctx.signal(name)
                i = added
            if i < end:  # a new node, or a refusal: the general path
                out.append(_one(ctx, batch[i]))
                i += 1
    return out


def _one(ctx: Context, argv: list[bytes]) -> Any:
    try:
        return xadd(ctx, argv)
    except ResponseError as exc:
        return exc
