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
from collections.abc import Sequence
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

    @property
    def in_line(self) -> bool:
        """Whether it is served in arrival order with the other readers of its group: a look
        that no write asked for (:meth:`BlockWatch.first_in_line`) waits for the older ones."""
        return self.blocked.in_line


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

    def first_in_line(self, across_processes: bool = False) -> bool:
        """Whether no older reader of the same group (in any process; ``across_processes``:
        in another process) still waits on all of its streams: a periodic look runs only such
        a read, and a write serves it at once only then; the older one passes the baton."""
        return self._waiter.first_in_line(across_processes)

    def others_waiting(self) -> bool:
        """Whether readers of other processes wait on this store at all (one word read:
        before asking :meth:`first_in_line` across processes for many reads)."""
        return self._waiter.others_waiting()

    def close(self) -> None:
        """Stop watching (the call was served, timed out, or its client left)."""
        self._waiter.close()


def run_each(
    env: Env,
    batch: list[list[bytes]],
    streamed: bool = False,
    waiting: Sequence[BlockedCall] = (),
) -> list[Any]:
    """Run ``batch`` in one transaction, each command on its own (see the module docstring);
    ``streamed``: big entry replies as :class:`~rstore.commands.reply.StreamedEntries`.

    ``waiting``: reads the front parked earlier, in the order they blocked.  Each runs again
    right after every command of ``batch`` that signals one of its streams, until it is
    served -- as Valkey serves its blocked clients after each command, so that ten XADDs
    pipelined in one write give two blocked group readers ``1-0`` and ``2-0``, not five
    entries each.  Their results follow the batch's, in their order: the reply of one that
    was served; for one that still waits, a new :class:`BlockedCall` when it ran, the same
    one when it did not run (nothing it waits on was written, or its group had nothing new
    for it)."""
    specs = [_spec(argv) for argv in batch]
    if not any(isinstance(s, CommandSpec) for s in specs):
        return [*specs, *waiting]
    write = any(isinstance(s, CommandSpec) and s.write for s in specs)
    # only a write wakes a read: a batch of reads leaves them waiting
    waits = [(call, _spec(call.argv)) for call in waiting] if write else []

    def body(ctx: Context) -> list[Any]:
        if not waits:
            return [*run_specs(ctx, specs, batch), *waiting]
        return _interleaved(ctx, specs, batch, waits)

    now = time.monotonic()
    results = in_transaction(env, body, write=write, wire=streamed)
    return [
        r if isinstance(r, BlockedCall)
        else BlockedCall(r, now) if isinstance(r, Blocked)
        else resolve_reply(r, streamed=streamed)
        for r in results
    ]  # fmt: skip


def _spec(argv: list[bytes]) -> CommandSpec | ResponseError:
    try:
        return lookup(argv)
    except ResponseError as exc:
        return exc


def _interleaved(
    ctx: Context,
    specs: list[CommandSpec | ResponseError],
    batch: list[list[bytes]],
    waits: list[tuple[BlockedCall, CommandSpec | ResponseError]],
) -> list[Any]:
    """:func:`run_specs` one command at a time, each followed by the waiting reads on the
    streams it signalled (in the order they blocked); the batch's replies, then each waiting
    read's last result (:class:`Blocked` when it was not served; its :class:`BlockedCall`
    when it did not run)."""
    results: list[Any] = [call for call, _ in waits]
    left = list(range(len(waits)))
    signals = ctx.signals
    replies: list[Any] = []
    for i in range(len(batch)):
        ctx.signals = set()
        replies += run_specs(ctx, specs[i : i + 1], batch[i : i + 1])
        touched, signals = ctx.signals, _joined(signals, ctx.signals)
        if touched is not None and not touched:
            continue
        for j in list(left):
            call, spec = waits[j]
            if touched is not None and touched.isdisjoint(call.keys):
                continue
            ready = call.blocked.ready  # a group read's cheap look: could it be served?
            if ready is not None and not ready(True, ctx.txn):
                continue
            ctx.signals = set()
            (reply,) = run_specs(ctx, [spec], [call.argv])
            signals = _joined(signals, ctx.signals)
            results[j] = reply
            if not isinstance(reply, Blocked):
                left.remove(j)
    ctx.signals = signals
    return replies + results


def _joined(signals: set[bytes] | None, more: set[bytes] | None) -> set[bytes] | None:
    """Keys signalled so far and ``more`` (``None``: every key, FLUSHALL's)."""
    if signals is None or more is None:
        return None
    return signals | more
