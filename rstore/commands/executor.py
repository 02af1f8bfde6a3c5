"""Running commands in transactions: one command per transaction, or a batch in one.

A write command runs in one LMDB write transaction from start to end; a refused command raises
before anything is committed, so it changes nothing.  A batch (a pipeline) runs every command
in a single write transaction, atomically, like MULTI/EXEC: a command refused while running
answers with its error and the others still apply; a command refused before running (unknown
name, wrong arity) discards the whole batch.  BLOCK is ignored inside a batch.

After a commit, readers blocked on the keys a command changed are woken (in any process):
with ``sync=True``, durable XREADGROUP readers before the commit is made durable and the
others after it (docs/durability.md, "Wake-ups before the flush").
A blocking read that finds nothing returns :class:`Blocked`; :func:`execute` then waits and
re-runs the command until it is served or its deadline passes (Valkey's 7.2+ model).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rstore.commands.registry import CommandSpec, Context, lookup, lookup_all
from rstore.commands.reply import (
    NIL_ARRAY,
    DictEntries,
    RespReply,
    StreamedEntries,
    StreamedReads,
)
from rstore.errors import ResponseError
from rstore.storage.env import Env
from rstore.storage.records.txn import Txn
from rstore.storage.waiting.notify import ALL, EARLY, LATE, NOBODY

__all__ = [
    "Blocked",
    "Deferred",
    "execute",
    "in_transaction",
    "now_ms",
    "resolve_reply",
    "run_batch",
    "run_in_transaction",
    "run_one",
    "run_specs",
]

T = TypeVar("T")

# A blocked reader re-checks at least this often even without a wake-up (bounds the delay if a
# waking process dies half-way); the cost is one read transaction per interval.
SAFETY_RECHECK_S = 1.0


def now_ms() -> int:
    """The command time snapshot, in Unix milliseconds."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Blocked:
    """A blocking read with nothing to serve yet: what to wait on and how to re-run it."""

    keys: list[bytes]
    kind: int  # notify.KIND_READ or notify.KIND_GROUP
    group: int  # hash of the group name for XREADGROUP, else 0
    rerun_argv: list[bytes]  # the command to run again (XREAD's "$" made concrete)
    block_ms: int  # 0 = forever
    # For a write command (XREADGROUP): whether re-running it now could serve the reader (or
    # must answer an error), checked in a read transaction first, so that a reader that is
    # still waiting writes nothing -- no disk flush per re-check, and its consumer's seen-time
    # stays where the call began, as in Valkey.  Its first argument: whether a writer woke the
    # reader (else it is the periodic re-check).
    ready: Callable[[bool, Txn], bool] | None = None
    # How often to re-check without a wake-up, when more often than SAFETY_RECHECK_S (read as
    # the call waits): XREADGROUP CLAIM waits for entries to become idle enough, which no writer
    # announces.
    recheck_s: float | None = None
    # Whether a re-check without a wake-up yields to an older blocked reader of the same group
    # (readers served in arrival order, as Valkey serves them); not with CLAIM, whose entries
    # become claimable with time, which an older reader without CLAIM would never take.
    in_line: bool = False


@dataclass(frozen=True)
class Deferred:
    """A reply whose building needs no transaction (it works on bytes copied out of one),
    built after the transaction ended: read transactions stay short, so LMDB can reuse the
    pages writers free meanwhile (a read transaction held open pins every page freed after it
    began, and concurrent writers then grow the file; docs/durability.md).  ``dicts``, when
    the reply is a list of stream entries: the same entries built straight into redis-py's
    form (:class:`~rstore.commands.reply.DictEntries`), for a client that asks for them --
    one pass, and nothing built only to be reshaped."""

    build: Callable[[], Any]
    dicts: Callable[[], DictEntries] | None = None
    #: a reply too big to build whole, for a network front: written as it is built
    streamed: Callable[[], StreamedEntries | StreamedReads] | None = None
    #: the reply as RESP bytes, for a network front (when not ``streamed``)
    resp: Callable[[], RespReply] | None = None


def resolve_reply(reply: Any, dicts: bool = False, streamed: bool = False) -> Any:
    """A handler's reply, a :class:`Deferred` one built now (with ``dicts``, in redis-py's
    form where it offers that; with ``streamed``, a big one as :class:`StreamedEntries`)."""
    if not isinstance(reply, Deferred):
        return reply
    if streamed:
        if reply.streamed is not None:
            return reply.streamed()
        if reply.resp is not None:
            return reply.resp()
    return reply.dicts() if dicts and reply.dicts is not None else reply.build()


def in_transaction(
    env: Env,
    fn: Callable[..., T],
    *args: Any,
    write: bool,
    in_batch: bool = False,
    wire: bool = False,
) -> T:
    """Run ``fn(context, *args)`` with a :class:`Context` on one transaction -- a read
    snapshot, or a write transaction that is committed -- under one time snapshot; after a
    commit, wake the readers of the keys ``fn`` signalled.  Every command, batch and queue
    step runs through here.

    ``env.write`` may run its function again (after the map grows): each attempt gets a fresh
    context, and the signals of the attempt that committed are the ones sent.  An exception
    from ``fn`` aborts the transaction: nothing of it is written.
    """
    now = now_ms()
    committed: Context | None = None

    def attempt(txn: Txn) -> T:
        nonlocal committed
        committed = Context(txn, now, in_batch=in_batch, wire=wire)
        result = fn(committed, *args)
        txn.relaxed = committed.relaxed_only()
        return result

    if not write:
        return env.read(attempt)
    if not env.flushes_after_commit:
        result = env.write(attempt)
        assert committed is not None  # env.write ran ``attempt`` at least once
        env.notify(committed.signals, ALL)
        return result
    late = True  # whether readers may be left to wake once the commit is durable

    def wake_early() -> bool:  # committed, not yet flushed: only readers flagged early
        nonlocal late
        assert committed is not None
        woken = env.notify(committed.signals, EARLY)
        late = woken != NOBODY
        return woken > 0  # woke readers of other processes

    result = env.write(attempt, wake_early)
    if late:
        assert committed is not None
        env.notify(committed.signals, LATE)  # durable now: every other reader
    return result


def run_one(env: Env, argv: list[bytes], dicts: bool = False) -> tuple[CommandSpec, Any]:
    """Run one command once; ``(spec, internal reply)``.  Errors raise :class:`ResponseError`.

    The reply may be :class:`Blocked`; see :func:`execute`.
    """
    spec = lookup(argv)
    assert spec.handler is not None
    reply = in_transaction(env, spec.handler, argv, write=spec.write)
    return spec, resolve_reply(reply, dicts)


def execute(env: Env, argv: list[bytes], dicts: bool = False) -> tuple[CommandSpec, Any]:
    """Run one command, waiting when it is a blocking read with nothing to serve yet.
    ``dicts``: a reply of stream entries may come as :class:`~rstore.commands.reply.DictEntries`
    (when the command offers that form)."""
    spec, reply = run_one(env, argv, dicts)
    if isinstance(reply, Blocked):
        reply = _wait(env, reply)
    return spec, reply


def _wait(env: Env, blocked: Blocked) -> Any:
    deadline = None if blocked.block_ms == 0 else time.monotonic() + blocked.block_ms / 1000
    recheck_s = SAFETY_RECHECK_S if blocked.recheck_s is None else blocked.recheck_s
    with env.waiter(blocked.kind, blocked.keys, blocked.group) as waiter:
        woken = False
        while True:
            ready = blocked.ready
            if not woken and blocked.in_line and not waiter.first_in_line():
                pass  # an older reader of the group is served first; it passes the baton
            elif ready is None or env.read(functools.partial(ready, woken)):
                try:
                    _, reply = run_one(env, blocked.rerun_argv)
                finally:
                    if woken:  # a writer woke us: let the next reader of the group run after us
                        waiter.pass_baton()
                if not isinstance(reply, Blocked):
                    return reply
            elif woken:
                waiter.pass_baton()
            if deadline is None:
                woken = waiter.wait(recheck_s)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return NIL_ARRAY
            woken = waiter.wait(min(remaining, recheck_s))


def run_specs(
    ctx: Context, specs: Sequence[CommandSpec | ResponseError], batch: list[list[bytes]]
) -> list[Any]:
    """Run the commands of ``batch`` in ``ctx``'s transaction, in order, given their specs (or
    the error that refused each at lookup, which is its reply): each gives its internal reply,
    or its :class:`ResponseError` in its place; consecutive commands of a spec with a batch
    handler (XADD's) run together, with exactly the replies they give one by one."""
    replies: list[Any] = []
    i, n = 0, len(batch)
    while i < n:
        spec = specs[i]
        if isinstance(spec, ResponseError):
            replies.append(spec)
            i += 1
            continue
        if spec.batch is not None:
            end = i + 1
            while end < n and specs[end] is spec:
                end += 1
            ctx.writes += (end - i) if spec.write else 0
            replies += spec.batch(ctx, batch, i, end)
            i = end
            continue
        assert spec.handler is not None
        ctx.writes += spec.write
        try:
            replies.append(spec.handler(ctx, batch[i]))
        except ResponseError as exc:
            replies.append(exc)
        i += 1
    return replies


def run_batch(env: Env, batch: list[list[bytes]]) -> tuple[list[CommandSpec], list[Any]]:
    """Run ``batch`` in one transaction, atomically (MULTI/EXEC's rule): a command refused
    while running answers with its error (a ResponseError instance in its place) and the others
    still apply; an unknown command or a wrong argument count refuses the whole batch before
    anything runs (raised).  BLOCK is ignored inside a batch.  Returns the commands' specs and
    their internal replies, in order."""
    specs = lookup_all(batch)  # refuse the whole batch before running any

    def body(ctx: Context) -> list[Any]:
        return run_specs(ctx, specs, batch)

    write = any(spec.write for spec in specs)
    replies = in_transaction(env, body, write=write, in_batch=True)
    return specs, [resolve_reply(r) for r in replies]


def run_in_transaction(env: Env, body: Callable[[Context], T]) -> T:
    """Run ``body`` -- stream semantics, command handlers, and decisions between them -- in one
    write transaction (the queue's steps, :mod:`rstore.queue.steps`)."""
    return in_transaction(env, body, write=True, in_batch=True)
