"""Parked blocking reads of ``rstore serve``: XREAD / XREADGROUP with BLOCK that found
nothing wait here (a part of :class:`rstore.server.server.Server`, kept apart for its size).

A parked read holds a :class:`rstore.BlockWatch`; the loop listens to its descriptor, and a
write by any client of the server or by any process using the store directory makes it
readable: the read runs again in the next batch (:meth:`ParkedReads.wake`), until it is
served, its BLOCK time runs out (nil), CLIENT UNBLOCK ends it, or its client leaves.  A watch
without a descriptor (the store's waiter table full, or descriptors short: the store then
polls) is looked at every :data:`POLL_S`; every parked read is looked at every
:data:`RECHECK_S` anyway, in case a process that would have woken it died.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from rstore import NIL_ARRAY, BlockedCall

from .client import Client, Parked

if TYPE_CHECKING:
    from rstore import Store

    from .config import ServerConfig
    from .counters import CommandCounters

__all__ = ["POLL_S", "RECHECK_S", "ParkedReads"]

#: a parked read re-checks at least this often, even without a wake-up
RECHECK_S = 1.0
#: how often a parked read whose watch has no descriptor looks again
POLL_S = 0.05


class ParkedReads:
    """The parked-read methods of the server (a mixin: the server gives the attributes and
    methods declared here)."""

    loop: asyncio.AbstractEventLoop | None
    clients: dict[int, Client]
    config: ServerConfig
    counters: CommandCounters
    _ready: dict[int, Client]

    if TYPE_CHECKING:

        def store_of(self, db: int) -> Store: ...
        def close_client(self, client: Client) -> None: ...
        def _schedule(self) -> None: ...
        def _send(self, client: Client) -> None: ...
        def _write_reply(self, client: Client, argv: list[bytes], result: Any) -> None: ...

    def _park(self, client: Client, call: BlockedCall) -> None:
        watch = self.store_of(client.db).watch(call)
        parked = client.parked = Parked(call, watch)
        assert self.loop is not None
        fd = watch.fileno()
        if fd is not None:
            self.loop.add_reader(fd, self._woken, client)
        else:
            parked.poll = self.loop.call_later(POLL_S, self._poll, client)
        if call.deadline is not None:
            parked.timer = self.loop.call_at(call.deadline, self._timed_out, client)

    def _woken(self, client: Client) -> None:
        parked = client.parked
        if parked is None:
            return
        parked.watch.drain()
        self.wake(client)

    def _poll(self, client: Client) -> None:
        parked = client.parked
        if parked is None or self.loop is None:
            return
        parked.poll = self.loop.call_later(POLL_S, self._poll, client)
        self.wake(client)

    def wake(self, client: Client) -> None:
        """Run a parked read again in the next batch."""
        if client.parked is not None:
            client.parked.woken = True
            self._ready[client.id] = client
            self._schedule()

    def _timed_out(self, client: Client) -> None:
        if client.parked is not None:
            self.unblock(client, NIL_ARRAY)

    def unblock(self, client: Client, reply: Any) -> None:
        """End a parked read with ``reply`` (a timeout's nil, CLIENT UNBLOCK's)."""
        parked = client.parked
        if parked is None:
            return
        if client.in_flight:  # its read runs again right now: see what that gives first
            client.unblock_reply = (reply,)
            return
        self._unpark(client)
        self.counters.count(parked.call.argv, reply, 0.0)
        self._write_reply(client, parked.call.argv, reply)
        self._send(client)

    def _unpark(self, client: Client) -> None:
        parked, client.parked = client.parked, None
        if parked is None:
            return
        for handle in (parked.timer, parked.poll):
            if handle is not None:
                handle.cancel()
        fd = parked.watch.fileno()
        if fd is not None and self.loop is not None:
            self.loop.remove_reader(fd)
        with contextlib.suppress(Exception):
            parked.watch.close()

    def _recheck(self) -> None:
        """Every parked read looks again now and then (a waking process may have died); an
        idle client past ``timeout`` is closed."""
        for client in list(self.clients.values()):
            if client.parked is not None:
                self.wake(client)
        timeout = self.config.timeout
        if timeout:
            idle = time.monotonic() - timeout
            for client in list(self.clients.values()):
                if client.parked is None and client.last_active < idle and not client.queue:
                    self.close_client(client)
        assert self.loop is not None
        self.loop.call_later(RECHECK_S, self._recheck)
