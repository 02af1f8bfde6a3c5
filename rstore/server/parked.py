"""Parked blocking reads of ``rstore serve``: XREAD / XREADGROUP with BLOCK that found
nothing wait here, in the server's loop, until they run again.

A parked read (:class:`Parked`, a client's ``parked``) holds a :class:`rstore.BlockWatch`; the
loop listens to its descriptor, and a write by any client of the server or by any process using
the store directory makes it readable: the read is handed back to the server to run again in
its next batch (:meth:`ParkedReads.wake`), until it is served, its BLOCK time runs out (the
server answers nil), CLIENT UNBLOCK ends it, or its client leaves.  A watch without a
descriptor (the store's waiter table full, or descriptors short: the store then polls) is
looked at every :data:`POLL_S`; the server has every parked read look again every
:data:`RECHECK_S` anyway (:meth:`ParkedReads.look_again`), in case a process that would have
woken it died.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from rstore import BlockedCall, BlockWatch

if TYPE_CHECKING:
    from .client import Client

__all__ = ["POLL_S", "RECHECK_S", "Parked", "ParkedReads"]

#: a parked read re-checks at least this often, even without a wake-up
RECHECK_S = 1.0
#: how often a parked read whose watch has no descriptor looks again
POLL_S = 0.05


class Parked:
    """A client's blocking read waiting to be served: the call, its watch, its timers (its
    BLOCK time; looking again when the watch has no descriptor)."""

    __slots__ = ("call", "order", "poll", "timer", "watch", "woken")

    def __init__(self, call: BlockedCall, watch: BlockWatch) -> None:
        self.call = call
        self.watch = watch
        self.order = 0  # when it parked, among the server's parked reads
        self.timer: asyncio.TimerHandle | None = None
        self.poll: asyncio.TimerHandle | None = None
        self.woken = False


class ParkedReads:
    """The blocking reads parked in one server's loop: each one's watch, poll and BLOCK timer
    set up and torn down, and its wake-ups handed to the server.

    ``run_again(client)`` is called when a parked read should run again (woken, polled, looked
    at again); ``time_out(client)`` when its BLOCK time ran out and it is still parked.  Both
    run in ``loop``, as every method here does.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        run_again: Callable[[Client], None],
        time_out: Callable[[Client], None],
    ) -> None:
        self._loop = loop
        self._run_again = run_again
        self._time_out = time_out
        self._count = 0  # reads parked
        #: (database, key) -> the clients parked on it, in the order they blocked
        self._by_key: dict[tuple[int, bytes], dict[int, Client]] = {}
        self._order = itertools.count()  # when each read parked, for the order across keys

    def park(self, client: Client, call: BlockedCall, watch: BlockWatch) -> None:
        """Park ``client``'s read ``call``, which found nothing, with ``watch`` on its keys."""
        parked = client.parked = Parked(call, watch)
        parked.order = next(self._order)
        self._count += 1
        for key in call.keys:
            self._by_key.setdefault((client.db, key), {})[client.id] = client
        fd = watch.fileno()
        if fd is not None:
            self._loop.add_reader(fd, self._woken, client)
        else:
            parked.poll = self._loop.call_later(POLL_S, self._poll, client)
        if call.deadline is not None:
            parked.timer = self._loop.call_at(call.deadline, self._timed_out, client)

    def wake(self, client: Client) -> None:
        """Have a parked read run again in the server's next batch."""
        if client.parked is not None:
            client.parked.woken = True
            self._run_again(client)

    def look_again(self, clients: Iterable[Client]) -> None:
        """Every parked read among ``clients`` runs again (a waking process may have died),
        but a group read behind an older reader of its group, which is served first."""
        for client in clients:
            parked = client.parked
            if parked is None:
                continue
            if not parked.call.in_line or parked.watch.first_in_line():
                self.wake(client)

    def __bool__(self) -> bool:
        """Whether any read is parked."""
        return self._count > 0

    @property
    def count(self) -> int:
        """How many reads are parked."""
        return self._count

    def waiting_on(self, db: int, keys: set[bytes], busy: set[int]) -> list[Client]:
        """The clients whose parked read in database ``db`` waits on one of ``keys``, in the
        order they blocked, but for those ``busy`` (running already) and the group reads an
        older reader of another process waits before (``--workers``, or an embedded
        process): that one is woken once the write commits, and passes the baton on."""
        found: dict[int, Client] = {}
        for key in keys:
            for client in self._by_key.get((db, key), {}).values():
                if client.id not in busy and not client.in_flight:
                    found[client.id] = client
        in_line = [c for c in found.values() if c.parked and c.parked.call.in_line]
        if in_line and in_line[0].parked and in_line[0].parked.watch.others_waiting():
            for client in in_line:
                assert client.parked is not None
                if not client.parked.watch.first_in_line(across_processes=True):
                    del found[client.id]
        if len(found) < 2:
            return list(found.values())
        return sorted(found.values(), key=lambda c: c.parked.order if c.parked else 0)

    def unpark(self, client: Client) -> None:
        """End ``client``'s parked read, if any: its timers cancelled, its watch closed."""
        parked, client.parked = client.parked, None
        if parked is None:
            return
        self._count -= 1
        for key in parked.call.keys:
            waiting = self._by_key.get((client.db, key))
            if waiting is not None:
                waiting.pop(client.id, None)
                if not waiting:
                    del self._by_key[(client.db, key)]
        for handle in (parked.timer, parked.poll):
            if handle is not None:
                handle.cancel()
        fd = parked.watch.fileno()
        if fd is not None:
            self._loop.remove_reader(fd)
        with contextlib.suppress(Exception):
            parked.watch.close()

    def _woken(self, client: Client) -> None:
        parked = client.parked
        if parked is None:
            return
        parked.watch.drain()
        self.wake(client)

    def _poll(self, client: Client) -> None:
        parked = client.parked
        if parked is None:
            return
        parked.poll = self._loop.call_later(POLL_S, self._poll, client)
        self.wake(client)

    def _timed_out(self, client: Client) -> None:
        if client.parked is not None:
            self._time_out(client)
