"""Running commands in transactions: one command per transaction, or a batch in one.

A write command runs in one LMDB write transaction from start to end; a refused command raises
before anything is committed, so it changes nothing.  A batch (a pipeline) runs every command
in a single write transaction, atomically, like MULTI/EXEC: a command refused while running
answers with its error and the others still apply; a command refused before running (unknown
name, wrong arity) discards the whole batch.  BLOCK is ignored inside a batch.

After a commit, readers blocked on the keys a command changed are woken (in any process).
A blocking read that finds nothing returns :class:`Blocked`; :func:`execute` then waits and
re-runs the command until it is served or its deadline passes (Valkey's 7.2+ model).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from rstore.commands.registry import CommandSpec, Context, lookup
from rstore.commands.reply import NIL_ARRAY
from rstore.errors import ResponseError
from rstore.storage.env import Env
from rstore.storage.txn import Txn

__all__ = [
    "Blocked",
    "Deferred",
    "execute",
    "now_ms",
    "run_batch",
    "run_in_transaction",
    "run_one",
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
    # stays where the call began, as in Valkey.
    ready: Callable[[Txn], bool] | None = None


@dataclass(frozen=True)
class Deferred:
    """A reply whose building needs no transaction (it works on bytes copied out of one),
    built after the transaction ended: read transactions stay short, so LMDB can reuse the
    pages writers free meanwhile (a read transaction held open pins every page freed after it
    began, and concurrent writers then grow the file; docs/durability.md)."""

    build: Callable[[], Any]


def _resolve(reply: Any) -> Any:
    return reply.build() if isinstance(reply, Deferred) else reply


def run_one(env: Env, argv: list[bytes]) -> tuple[CommandSpec, Any]:
    """Run one command once; ``(spec, internal reply)``.  Errors raise :class:`ResponseError`.

    The reply may be :class:`Blocked`; see :func:`execute`.
    """
    spec = lookup(argv)
    handler = spec.handler
    assert handler is not None
    now = now_ms()
    contexts: list[Context] = []

    def body(txn: Txn) -> Any:
        ctx = Context(txn, now)
        contexts[:] = [ctx]
        return handler(ctx, argv)

    if not spec.write:
        return spec, _resolve(env.read(body))
    reply = env.write(body)
    env.notify(contexts[0].signals)
    return spec, _resolve(reply)


def execute(env: Env, argv: list[bytes]) -> tuple[CommandSpec, Any]:
    """Run one command, waiting when it is a blocking read with nothing to serve yet."""
    spec, reply = run_one(env, argv)
    if isinstance(reply, Blocked):
        reply = _wait(env, reply)
    return spec, reply


def _wait(env: Env, blocked: Blocked) -> Any:
    deadline = None if blocked.block_ms == 0 else time.monotonic() + blocked.block_ms / 1000
    with env.waiter(blocked.kind, blocked.keys, blocked.group) as waiter:
        woken = False
        while True:
            if blocked.ready is None or env.read(blocked.ready):
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
                woken = waiter.wait(SAFETY_RECHECK_S)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return NIL_ARRAY
            woken = waiter.wait(min(remaining, SAFETY_RECHECK_S))


def run_batch(env: Env, batch: list[list[bytes]]) -> list[tuple[CommandSpec, Any]]:
    """Run ``batch`` in one transaction; each result is a reply or a ResponseError instance."""
    specs = [lookup(argv) for argv in batch]  # refuse the whole batch before running any
    now = now_ms()
    signals: list[set[bytes] | None] = []

    def body(txn: Txn) -> list[tuple[CommandSpec, Any]]:
        ctx = Context(txn, now, in_batch=True)
        signals[:] = [ctx.signals]
        results: list[tuple[CommandSpec, Any]] = []
        for spec, argv in zip(specs, batch):
            assert spec.handler is not None
            try:
                results.append((spec, spec.handler(ctx, argv)))
            except ResponseError as exc:
                results.append((spec, exc))
        signals[:] = [ctx.signals]
        return results

    if not any(spec.write for spec in specs):
        return [(spec, _resolve(r)) for spec, r in env.read(body)]
    results = env.write(body)
    env.notify(signals[0])
    return [(spec, _resolve(r)) for spec, r in results]


def run_in_transaction(env: Env, body: Callable[[Context], T]) -> T:
    """Run ``body`` -- stream semantics, command handlers, and decisions between them -- in one
    write transaction with one time snapshot, then wake the readers it signalled.  An
    exception from ``body`` aborts the transaction: nothing of it is written."""
    now = now_ms()
    contexts: list[Context] = []

    def run(txn: Txn) -> T:
        ctx = Context(txn, now, in_batch=True)
        contexts[:] = [ctx]  # the last attempt's (env.write may run ``run`` again)
        return body(ctx)

    result = env.write(run)
    env.notify(contexts[0].signals)
    return result
