"""Serving many clients from one process (``rstore serve``, or any network front): the
commands of independent clients run together in ONE transaction -- one commit, one flush for
all of them with ``sync=True`` (group commit) -- each on its own, and a blocking read with
nothing to serve yet is handed back to be parked instead of waiting in the caller's thread.

:func:`run_each` runs a list of commands: each gives its internal reply
(:mod:`rstore.commands.reply`, the two nils kept apart), its :class:`ResponseError` in its place
(an unknown command or a wrong argument count included: they refuse that command only), or a
:class:`BlockedCall`.  Commands run in list order, each seeing the ones before it, exactly as if
they had arrived one after another; the transaction is a write transaction when any of them
writes.  A front parks each :class:`BlockedCall`, watches it (:class:`BlockWatch`: a file
descriptor that becomes readable when a write in this or any other process may have served it)
and runs its :attr:`BlockedCall.argv` again in a later batch, until it is served or its
deadline passes (then its reply is the nil array, as Valkey's).
"""

from __future__ import annotations

import time
from typing import Any

from rstore.commands.executor import Blocked, in_transaction, resolve_reply, run_specs
from rstore.commands.registry import CommandSpec, Context, lookup
from rstore.errors import ResponseError
from rstore.storage.env import Env
from rstore.storage.waiting.notify import KIND_GROUP
from rstore.storage.waiting.waiters import PollingWaiter, Waiter

__all__ = ["BlockWatch", "BlockedCall", "run_each"]


class BlockedCall:
    """XREAD or XREADGROUP with BLOCK that found nothing to serve: what to run again and
    until when.  ``deadline`` is on :func:`time.monotonic`, ``None`` for BLOCK 0 (forever)."""

    __slots__ = ("blocked", "deadline")

    def __init__(self, blocked: Blocked, now: float | None = None) -> None:
        self.blocked = blocked
        start = time.monotonic() if now is None else now
        self.deadline = None if blocked.block_ms == 0 else start + blocked.block_ms / 1000

    @property
    def argv(self) -> list[bytes]:
        """The command to run again (XREAD's ``$`` made concrete at the first run): a copy,
        the caller's to keep or change."""
        return list(self.blocked.rerun_argv)

    @property
    def keys(self) -> list[bytes]:
        """The streams it waits on."""
        return self.blocked.keys

    @property
    def group_read(self) -> bool:
        """Whether it is XREADGROUP (served one reader of a group at a time, in arrival
        order across processes)."""
        return self.blocked.kind == KIND_GROUP


class BlockWatch:
    """Wake-ups for a parked :class:`BlockedCall` (from :meth:`rstore.Store.watch`)."""

    __slots__ = ("_waiter",)

    def __init__(self, waiter: Waiter | PollingWaiter) -> None:
        self._waiter = waiter

    def fileno(self) -> int | None:
        """A descriptor that becomes readable on a wake-up; ``None`` when the store's waiter
        table cannot be used (then look again every 50 ms)."""
        return self._waiter.fileno()

    def drain(self) -> bool:
        """Take the wake-ups that arrived (without waiting); whether there was one."""
        return self._waiter.drain()

    def served(self) -> None:
        """After a woken XREADGROUP ran: let the next reader of the group run (FIFO)."""
        self._waiter.pass_baton()

    def close(self) -> None:
        """Stop watching (the call was served, timed out, or its client left)."""
        self._waiter.close()


def run_each(env: Env, batch: list[list[bytes]], streamed: bool = False) -> list[Any]:
    """Run ``batch`` in one transaction, each command on its own (see the module docstring);
    ``streamed``: big entry replies as :class:`~rstore.commands.reply.StreamedEntries`."""
    specs: list[CommandSpec | ResponseError] = []
    for argv in batch:
        try:
            specs.append(lookup(argv))
        except ResponseError as exc:
            specs.append(exc)

    def body(ctx: Context) -> list[Any]:
        return run_specs(ctx, specs, batch)

    write = any(isinstance(s, CommandSpec) and s.write for s in specs)
    if not any(isinstance(s, CommandSpec) for s in specs):
        return list(specs)
    now = time.monotonic()
    results = in_transaction(env, body, write=write)
    return [
        BlockedCall(r, now) if isinstance(r, Blocked) else resolve_reply(r, streamed=streamed)
        for r in results
    ]
