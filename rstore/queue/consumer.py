"""An idiomatic consumer for the queue use case, on top of a Store's consumer groups.

>>> consumer = rstore.Consumer(store, "orders", "billing", max_deliveries=5,
...                            dead_letter="orders:dead")          # doctest: +SKIP
>>> consumer.run(handle_order)                                      # doctest: +SKIP

Delivery is at least once: a message is acknowledged only after the handler returned; one
whose handler raised stays pending and is delivered again -- to this consumer's history read
after a restart, or to any consumer that reclaims it once it has been idle ``claim_idle_ms``.
Each message carries its delivery count, taken from the very transaction that delivered it
(claim or history read; see :mod:`rstore.queue.steps`); past ``max_deliveries`` it is moved to
the ``dead_letter`` stream (and acknowledged) in one atomic transaction instead of being handed
out again.  Right before a message is handed out, the consumer checks it still owns it: one
that another consumer acknowledged or claimed in the meantime is skipped.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rstore.errors import ResponseError
from rstore.ids import ID, MIN_ID, format_id, parse_id
from rstore.interrupts import HeldInterrupts
from rstore.queue import steps
from rstore.queue.steps import Delivered

if TYPE_CHECKING:
    from rstore.store import Store

__all__ = ["Consumer", "Message"]

log = logging.getLogger("rstore.queue.consumer")


@dataclass(frozen=True)
class Message:
    """One delivered stream entry."""

    stream: bytes
    id: bytes
    fields: dict[bytes, bytes]
    deliveries: int  # how many times it has been delivered, this time included


def _b(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


class Consumer:
    """A named consumer of ``group`` on ``stream`` that yields messages and acks them.

    :param name: the consumer name; keep it stable across restarts to get this consumer's own
        unacknowledged messages back first (default: ``<hostname>-<pid>``).
    :param count: messages fetched per read (at least 1).
    :param block_ms: how long one read waits for new messages (also how quickly :meth:`stop`
        takes effect).
    :param claim_idle_ms: reclaim messages pending longer than this in any consumer (a crashed
        worker's), via XAUTOCLAIM; ``None`` disables reclaiming.
    :param claim_every_ms: how often to look for such messages.
    :param max_deliveries: a message delivered more than this many times goes to
        ``dead_letter`` instead of to the handler (needs ``dead_letter``).
    :param dead_letter: the stream receiving poison messages, with the fields ``stream``,
        ``group``, ``id``, ``deliveries`` and ``reason`` added under ``rstore:`` names.
    :param create_group: create the group (and the stream) when missing, reading from the start.
    """

    def __init__(
        self,
        store: Store,
        stream: str | bytes,
        group: str | bytes,
        name: str | bytes | None = None,
        *,
        count: int = 10,
        block_ms: int = 1000,
        claim_idle_ms: int | None = 60_000,
        claim_every_ms: int = 5_000,
        max_deliveries: int | None = None,
        dead_letter: str | bytes | None = None,
        create_group: bool = True,
    ) -> None:
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count!r}")
        if max_deliveries is not None and dead_letter is None:
            raise ValueError("max_deliveries needs a dead_letter stream")
        self.store = store
        self.stream = _b(stream)
        self.group = _b(group)
        self.name = (
            _b(name) if name is not None else f"{socket.gethostname()}-{os.getpid()}".encode()
        )
        self.count = count
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.claim_every_s = claim_every_ms / 1000
        self.max_deliveries = max_deliveries
        self.dead_letter_stream = None if dead_letter is None else _b(dead_letter)
        self._stopping = threading.Event()
        self._claim_cursor: ID = MIN_ID
        self._next_claim = 0.0
        if create_group:
            try:
                store.xgroup_create(self.stream, self.group, "0", mkstream=True)
            except ResponseError as exc:
                if exc.prefix != "BUSYGROUP":
                    raise

    # ------------------------------------------------------------------ fetching

    def _messages(self, entries: list[Delivered]) -> list[Message]:
        return [
            Message(self.stream, format_id(eid), dict(zip(fv[::2], fv[1::2])), deliveries)
            for eid, fv, deliveries in entries
        ]

    def _history(self, after: ID) -> tuple[ID | None, list[Message]]:
        """This consumer's own pending messages after ``after`` (left by an earlier run under
        the same name), each with the delivery count this read gave it; entries since deleted
        from the stream are acknowledged away in the same transaction."""
        last, entries = steps.read_own_history(
            self.store._live_env(), self.stream, self.group, self.name, after, self.count
        )
        return last, self._messages(entries)

    def _claim(self) -> list[Message]:
        if self.claim_idle_ms is None or time.monotonic() < self._next_claim:
            return []
        self._next_claim = time.monotonic() + self.claim_every_s
        cursor, claimed = steps.claim_idle(
            self.store._live_env(), self.stream, self.group, self.name, self.claim_idle_ms,
            self._claim_cursor, self.count,
        )  # fmt: skip
        self._claim_cursor = cursor
        if claimed and cursor != MIN_ID:
            self._next_claim = 0.0  # more may be waiting: look again right away
        return self._messages(claimed)

    def _new(self) -> list[Message]:
        # execute() replies in bytes whatever the store's decode_responses: Messages are bytes.
        reply = self.store.execute(
            "XREADGROUP", "GROUP", self.group, self.name, "COUNT", self.count,
            "BLOCK", self.block_ms, "STREAMS", self.stream, ">",
        )  # fmt: skip
        if not reply:
            return []
        return [
            Message(self.stream, eid, dict(zip(fv[::2], fv[1::2])), 1) for eid, fv in reply[0][1]
        ]

    def messages(self) -> Iterator[Message]:
        """Yield messages until :meth:`stop`; acknowledge each with :meth:`ack` when done.

        Order: this consumer's own unacknowledged messages first, then reclaimed stale ones
        and new ones as they come.  Poison messages are dead-lettered, not yielded.
        """
        after: ID | None = MIN_ID
        while after is not None and not self._stopping.is_set():
            after, backlog = self._history(after)
            yield from self._filter(backlog)
        while not self._stopping.is_set():
            batch = self._claim() or self._new()
            yield from self._filter(batch)

    __iter__ = messages

    def _filter(self, batch: list[Message]) -> Iterator[Message]:
        """Dead-letter poison messages; yield the others that are still this consumer's.

        Each message is checked right before it is handed out: one acknowledged meanwhile (by
        the consumer it was claimed from, still finishing it) or claimed by another consumer
        (this one took longer than ``claim_idle_ms`` on its batch) is skipped.
        """
        for msg in batch:
            if self.max_deliveries is not None and msg.deliveries > self.max_deliveries:
                self.dead_letter(msg, f"delivered {msg.deliveries} times")
            elif self._owns(msg):
                yield msg
            else:
                log.info("skipped %r %r: no longer pending to this consumer", msg.stream, msg.id)

    def _owns(self, msg: Message) -> bool:
        entry_id = parse_id(msg.id)
        return steps.owns(self.store._live_env(), self.stream, self.group, self.name, entry_id)

    # ------------------------------------------------------------------ outcomes

    def ack(self, *messages: Message) -> int:
        """Acknowledge messages; the number that were still pending."""
        if not messages:
            return 0
        return int(self.store.xack(self.stream, self.group, *(m.id for m in messages)))

    def nack(self, *messages: Message, mode: str = "FAIL") -> int:
        """Give messages back to the group (XNACK, Redis 8.8): the next claim of any worker
        takes them at once instead of after ``claim_idle_ms``.  ``mode``: ``FAIL`` (the
        delivery count stays), ``SILENT`` (not the message's fault: one delivery less) or
        ``FATAL`` (the count at its maximum: dead-lettered at its next delivery when
        ``max_deliveries`` is set).  The number that were still pending."""
        if not messages:
            return 0
        return int(self.store.xnack(self.stream, self.group, mode, *(m.id for m in messages)))

    def dead_letter(self, msg: Message, reason: str = "") -> bool:
        """Move ``msg`` to the dead-letter stream and acknowledge it, atomically -- if it is
        still pending to this consumer.  Returns False, writing nothing, when it is not (it
        was acknowledged, or claimed by another consumer, since it was delivered)."""
        if self.dead_letter_stream is None:
            raise ValueError("this consumer has no dead_letter stream")
        fields: dict[Any, Any] = dict(msg.fields)
        fields.update({
            b"rstore:stream": msg.stream,
            b"rstore:group": self.group,
            b"rstore:id": msg.id,
            b"rstore:deliveries": msg.deliveries,
            b"rstore:reason": reason,
        })  # fmt: skip
        moved = steps.dead_letter(
            self.store._live_env(), self.stream, self.group, self.name, parse_id(msg.id),
            self.dead_letter_stream, fields,
        )  # fmt: skip
        if moved:
            log.warning("dead-lettered %r %r: %s", msg.stream, msg.id, reason)
        else:
            log.info(
                "not dead-lettered %r %r: no longer pending to this consumer", msg.stream, msg.id
            )
        return moved

    def run(self, handler: Callable[[Message], Any]) -> None:
        """Call ``handler`` on each message and acknowledge it when it returns; a message whose
        handler raised stays pending (it will be delivered again).  Runs until :meth:`stop`,
        or until Ctrl-C, after which it returns as cleanly:

        * Ctrl-C while waiting for messages stops at once;
        * a first Ctrl-C while the handler runs lets it finish and its message be acknowledged,
          then stops; a second one stops at once and gives the message back to the group
          (XNACK SILENT: one delivery less), so that the next claim of any worker takes it at
          once.

        This holds SIGINT's handler while ``run`` runs, in the main thread and only while it
        is Python's default one (:class:`rstore.HeldInterrupts`): a program that set its own
        (say, one calling :meth:`stop`) keeps it.  :meth:`messages` leaves Ctrl-C to the
        caller, as any loop."""
        held = HeldInterrupts()
        held.install()
        try:
            for msg in self.messages():
                held.hold()  # a first Ctrl-C from here waits for this message's outcome
                try:
                    self._handle(handler, msg)
                except KeyboardInterrupt:
                    self._give_back(msg)
                    raise
                finally:
                    held.release()
        except KeyboardInterrupt:
            log.info("stopped by Ctrl-C")
        finally:
            held.uninstall()

    def _give_back(self, msg: Message) -> None:
        """A second Ctrl-C stopped the handler: the worker is going, not the message's fault --
        release it (XNACK SILENT) for the next claim instead of leaving it to wait
        ``claim_idle_ms``; if that fails it stays pending, as before."""
        try:
            self.nack(msg, mode="SILENT")
        except Exception:  # best effort while stopping: it stays pending
            log.warning("could not release %r %r; left pending", msg.stream, msg.id)

    def _handle(self, handler: Callable[[Message], Any], msg: Message) -> None:
        try:
            handler(msg)
        except Exception:
            log.exception("handler failed on %r %r; left pending", msg.stream, msg.id)
            return
        self.ack(msg)

    def stop(self) -> None:
        """Ask :meth:`messages` / :meth:`run` to return (within ``block_ms``)."""
        self._stopping.set()
