"""Running commands in transactions: one command per transaction, or a batch in one.

A write command runs in one LMDB write transaction from start to end; a refused command raises
before anything is committed, so it changes nothing.  A batch (a pipeline) runs every command
in a single write transaction, atomically, like MULTI/EXEC: a command refused while running
answers with its error and the others still apply; a command refused before running (unknown
name, wrong arity) discards the whole batch.
"""

from __future__ import annotations

import time
from typing import Any

from rstore.commands.registry import CommandSpec, Context, lookup
from rstore.errors import ResponseError
from rstore.storage.env import Env
from rstore.storage.txn import Txn

__all__ = ["now_ms", "run_batch", "run_one"]


def now_ms() -> int:
    """The command time snapshot, in Unix milliseconds."""
    return time.time_ns() // 1_000_000


def run_one(env: Env, argv: list[bytes]) -> tuple[CommandSpec, Any]:
    """Run one command; ``(spec, internal reply)``.  Errors raise :class:`ResponseError`."""
    spec = lookup(argv)
    handler = spec.handler
    assert handler is not None
    now = now_ms()

    def body(txn: Txn) -> Any:
        return handler(Context(txn, now), argv)

    return spec, (env.write(body) if spec.write else env.read(body))


def run_batch(env: Env, batch: list[list[bytes]]) -> list[tuple[CommandSpec, Any]]:
    """Run ``batch`` in one transaction; each result is a reply or a ResponseError instance."""
    specs = [lookup(argv) for argv in batch]  # refuse the whole batch before running any
    now = now_ms()

    def body(txn: Txn) -> list[tuple[CommandSpec, Any]]:
        ctx = Context(txn, now)
        results: list[tuple[CommandSpec, Any]] = []
        for spec, argv in zip(specs, batch):
            assert spec.handler is not None
            try:
                results.append((spec, spec.handler(ctx, argv)))
            except ResponseError as exc:
                results.append((spec, exc))
        return results

    if any(spec.write for spec in specs):
        return env.write(body)
    return env.read(body)
