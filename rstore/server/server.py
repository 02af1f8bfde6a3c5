"""The event loop of ``rstore serve``: connections, batching, blocking reads.

**One batch per turn.**  Requests are read as they arrive; once the loop has read what was
there, the waiting requests of every client go to the store together, in arrival order, in ONE
transaction (:meth:`rstore.Store.execute_many`): one commit, and with ``--sync always`` one
flush, for all the clients that sent something meanwhile -- group commit.  Each client's
replies are written after that commit, so a write is acknowledged only once it is on disk.
With ``--sync always`` the batch runs in a committer thread (:mod:`.committer`): while it commits
and waits for the disk, the loop only reads and parses, and what arrived meanwhile forms the
next batch once that one is back -- unless the batch is one client's and no other client sent
anything lately (:data:`SOLO_S`): then there is nothing to overlap, and it runs in the loop,
without the thread handoff.  Nothing else runs meanwhile (no connection command either), so
WATCH sees every change made through this server exactly; a timeout that fires while a parked
read runs again waits for that run's outcome.  Commands of the connection itself (HELLO,
CLIENT, MULTI, ...: :mod:`.admin`) run in the loop between batches, in their place.

**Blocking reads.**  XREAD / XREADGROUP with BLOCK that find nothing are parked (that client
runs nothing else meanwhile, as in Valkey; :mod:`.parked`), with a watch whose descriptor the
loop listens to: a write by any client of this server, or by any process using the store
directory, wakes it, and it runs again in the next batch -- until served, timed out (nil) or
unblocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import marshal
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from rstore import (
    NIL_ARRAY,
    BlockedCall,
    HistoryReads,
    ResponseError,
    RespReply,
    Store,
    StreamedEntries,
    StreamedReads,
    command_table,
    messages,
)

from . import admin
from .client import Client
from .client_command import kill_here, unblock_here
from .committer import Committer, execute
from .config import ServerConfig
from .counters import CommandCounters
from .info import client_line
from .parked import RECHECK_S, ParkedReads
from .protocol import ProtocolError
from .resp import encoded, error_line
from .shapes import resp3
from .tls import tls_context
from .users import users_of
from .watch import KeyVersions
from .workers import Listening, Seat

if TYPE_CHECKING:
    from .metrics_endpoint import MetricsEndpoint

__all__ = ["Server"]

log = logging.getLogger("rstore.server")

#: who sent each command of a batch, and whether it is a parked read run again
Owners = list[tuple[Client, bool]]

#: a batch of one client's runs in the loop when no other client sent anything for this long
SOLO_S = 0.01


def _blocking(argv: list[bytes]) -> bool:
    """Whether a command may park its client (XREAD / XREADGROUP with BLOCK)."""
    name = argv[0].lower()
    return name in (b"xread", b"xreadgroup") and any(a.lower() == b"block" for a in argv[1:])


#: Pages of a streamed reply written per turn of the event loop (each about a MiB of nodes).
_CHUNKS_PER_TURN = 2


class _Connection(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.client: Client | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.client = self.server.connected(cast(asyncio.Transport, transport))

    def data_received(self, data: bytes) -> None:
        if self.client is not None:
            self.server.received(self.client, data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client is not None:
            self.server.disconnected(self.client)

    def pause_writing(self) -> None:
        if self.client is not None:
            self.server.pause(self.client)

    def resume_writing(self) -> None:
        if self.client is not None:
            self.server.resume(self.client)


class Server:
    """``rstore serve``: a RESP server over one store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        config: ServerConfig,
        seat: Seat | None = None,
        listening: list[Listening] | None = None,
    ) -> None:
        """``seat`` and ``listening``: a worker of ``--workers N`` (:mod:`.workers`), its
        place in the shared memory and the sockets the supervisor bound; else the server
        binds ``config``'s addresses and is alone."""
        self.store = store
        self.seat = seat
        self._listening = listening
        self._stores: dict[int, Store] = {0: store}  # database -> its store (SELECT)
        self.config = config
        self.clients: dict[int, Client] = {}
        self._ids = itertools.count(1)
        self._ready: dict[int, Client] = {}  # clients with requests to run, in arrival order
        self._scheduled = False
        self._servers: list[asyncio.AbstractServer] = []
        self._stopping: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._parked_reads: ParkedReads | None = None  # made by start(), with the loop
        self.metrics: MetricsEndpoint | None = None  # --metrics-port: made by start()
        self.started = time.time()
        self.last_save = int(time.time())
        self.last_bgsave_ok = True  # INFO rdb_last_bgsave_status
        self.bgsave: threading.Thread | None = None  # the last BGSAVE's thread
        self.stats = {"connections": 0, "rejected": 0, "batches": 0}
        self.commands_per_batch_max = 0
        self.counters = CommandCounters()
        self.users = users_of(config.requirepass, config.users)
        self.versions = KeyVersions()
        self._command_table: dict[bytes, list[Any]] | None = None
        #: ``--sync always``: the thread that runs batches while the loop reads (else inline)
        self._committer: Committer | None = None  # started with the loop
        self._running = 0  # batches out in the committer thread (one per database of a round)
        # who sent the latest request and when, and when another client last did (_solo)
        self._last_sender, self._last_sent, self._other_sent = 0, 0.0, 0.0

    @property
    def maxclients(self) -> int:
        """The clients the server takes (with workers: all of them together, as any of them
        set it last with CONFIG SET)."""
        return self.config.maxclients if self.seat is None else self.seat.maxclients

    @maxclients.setter
    def maxclients(self, value: int) -> None:
        self.config.maxclients = value
        if self.seat is not None:
            self.seat.maxclients = value

    def bgsave_running(self) -> bool:
        """Whether a background save runs (SAVE and BGSAVE refuse to start meanwhile) -- in
        any worker, with ``--workers``."""
        if self.bgsave is not None and self.bgsave.is_alive():
            return True
        return self.seat is not None and self.seat.saving()

    def hold_saves(self) -> Callable[[], None] | None:
        """Hold saving for this save (SAVE, BGSAVE): what releases it, or ``None`` while a
        background save runs here or any save in another worker."""
        if self.bgsave is not None and self.bgsave.is_alive():
            return None
        if self.seat is None:
            return lambda: None
        fd = self.seat.hold_saves()
        return None if fd is None else functools.partial(os.close, fd)

    def store_of(self, db: int) -> Store:
        """The store of database ``db``: :meth:`rstore.Store.database` of the served store
        (database N is ``<store>/db<N>``, opened on first use; docs/server.md)."""
        store = self._stores.get(db)
        if store is None:
            store = self._stores[db] = self.store.database(db)
        return store

    def existing_stores(self) -> dict[int, Store]:
        """Every database that holds a store (:meth:`rstore.Store.databases`), opened."""
        for db in self.store.databases():
            self.store_of(db)
        return dict(self._stores)

    @property
    def parked_reads(self) -> ParkedReads:
        """The blocking reads parked in the loop (:mod:`.parked`), from :meth:`start` on."""
        assert self._parked_reads is not None, "the server has not started"
        return self._parked_reads

    def command_names(self) -> dict[bytes, list[Any]]:
        """COMMAND INFO entries: the store's commands and the loop's own."""
        if self._command_table is None:
            table = dict(command_table())
            for name in admin.COMMAND_NAMES:
                table.setdefault(name, [name, -1, ["fast"], 0, 0, 0, [], [], [], []])
            self._command_table = table
        return self._command_table

    # -- connections ---------------------------------------------------------------------------

    def connected(self, transport: asyncio.Transport) -> Client:
        seat = self.seat
        client_id = next(self._ids) if seat is None else seat.next_id()
        client = Client(client_id, transport, self.config.proto_max_bulk_len)
        client.authenticated = False
        admin.log_in(self, client, "default", None)  # a default user without password
        self.stats["connections"] += 1
        if seat is None:
            full = len(self.clients) >= self.config.maxclients
        else:  # every worker's clients
            full = seat.total("clients") >= seat.maxclients
        if full:
            self.stats["rejected"] += 1
            transport.write(error_line(messages.MAX_CLIENTS))
            transport.close()
            client.closed = True
            return client
        self.clients[client.id] = client
        if seat is not None:
            self.publish()
        return client

    def disconnected(self, client: Client) -> None:
        client.closed = True
        client.backlog.clear()  # its replies' nodes are freed
        self.parked_reads.unpark(client)
        self.clients.pop(client.id, None)
        self._ready.pop(client.id, None)
        if self.seat is not None:
            self.publish()

    def all_counters(self) -> CommandCounters:
        """The command and error counts of this server -- with workers, of every worker."""
        if self.seat is None:
            return self.counters
        total = CommandCounters()
        for snapshot in [self.counters.snapshot(), *self.seat.ask(b"stats")]:
            total.add(snapshot)
        return total

    def reset_counters(self) -> None:
        """CONFIG RESETSTAT: this server's counts -- with workers, every worker's."""
        if self.seat is None:
            self.counters.reset()
            return
        self.seat.ask(b"resetstat")
        self._answer(b"resetstat")

    def elsewhere(self, request: bytes, args: list[bytes]) -> int:
        """With workers: the other workers' CLIENT KILL (``request`` ``kill``) or CLIENT
        UNBLOCK (``unblock``) with ``args`` on their own clients -- how many they matched;
        alone: 0."""
        if self.seat is None:
            return 0
        asked = request + b"\0" + marshal.dumps(args)
        return sum(int(answer or b"0") for answer in self.seat.ask(asked))

    def listed_elsewhere(self) -> list[str]:
        """With workers: the CLIENT LIST lines of the other workers' clients."""
        if self.seat is None:
            return []
        # each answer a list of lines (a line may hold a newline: a client's last command)
        return [line for answer in self.seat.ask(b"list") for line in marshal.loads(answer)]

    def _answer(self, request: bytes) -> bytes:
        """Another worker's request (:meth:`.workers.Seat.answer`: in a thread of its own,
        so it reads, resets counters, or hands what it changes to the loop)."""
        name, _, payload = request.partition(b"\0")
        if name == b"kill":
            return b"%d" % kill_here(self, marshal.loads(payload))
        if name == b"unblock":
            ident, how = marshal.loads(payload)
            return b"%d" % unblock_here(self, int(ident), how)
        if request == b"list":
            return marshal.dumps([client_line(self, c) for c in list(self.clients.values())])
        if request == b"stats":
            return self.counters.snapshot()
        if request == b"resetstat":
            self.counters.reset()
            assert self.seat is not None
            self.seat.restart_counts()
            self.publish()
            return b"OK"
        return b""

    def publish(self) -> None:
        """A worker's figures for INFO to sum (:data:`.workers.GAUGES`); alone, nothing."""
        if self.seat is not None:
            stats, counters = self.stats, self.counters
            parked = self._parked_reads.count if self._parked_reads is not None else 0
            figures = (len(self.clients), parked, stats["connections"], stats["rejected"],
                       counters.processed, counters.error_replies)  # fmt: skip
            self.seat.publish(figures)

    def close_client(self, client: Client) -> None:
        """Close at once (CLIENT KILL, idle timeout, output limit)."""
        if not client.closed:
            client.transport.close()
            self.disconnected(client)

    def pause(self, client: Client) -> None:
        client.write_paused = True
        client.transport.pause_reading()

    def resume(self, client: Client) -> None:
        client.write_paused = False
        if not client.closing and not client.closed:
            client.transport.resume_reading()
        if client.backlog:
            self._kick(client)

    def received(self, client: Client, data: bytes) -> None:
        if client.closing or client.closed:
            return
        client.last_active = now = time.monotonic()
        if client.id != self._last_sender:  # the latest request of another client: _solo
            self._other_sent, self._last_sender = self._last_sent, client.id
        self._last_sent = now
        client.parser.feed(data)
        got: list[list[bytes]] = []
        try:
            client.parser.requests(got, authenticated=client.authenticated)
        except ProtocolError as exc:
            client.protocol_error = exc
            client.transport.pause_reading()
        if client.parser.pending_bytes > self.config.client_query_buffer_limit:
            log.warning("closing client %d: query buffer over the limit", client.id)
            self.close_client(client)
            return
        if got or client.protocol_error is not None:
            client.queue.extend(got)
            self._run_soon(client)

    # -- the turn ------------------------------------------------------------------------------

    def _run_soon(self, client: Client) -> None:
        """Run what ``client`` has waiting (requests, a woken parked read) in the next turn."""
        self._ready[client.id] = client
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and self.loop is not None and not self._running:
            self._scheduled = True
            self.loop.call_soon(self._turn)

    def _turn(self) -> None:
        self._scheduled = False
        touched: dict[int, Client] = {}
        try:
            while not self._running and self._round(touched):
                pass
        finally:
            for client in touched.values():
                self._send(client)

    def _round(self, touched: dict[int, Client]) -> bool:
        """One batch per database: whether there was anything to run."""
        batches: dict[int, tuple[list[list[bytes]], Owners]] = {}
        woken: dict[int, list[Client]] = {}  # parked reads to run again, per database
        for client in list(self._ready.values()):
            touched[client.id] = client
            if client.in_flight or client.backlog:
                self._ready.pop(client.id, None)  # back when its replies are in (or out)
                continue
            parked = client.parked
            if parked is not None:
                if parked.woken:
                    woken.setdefault(client.db, []).append(client)
                    batches.setdefault(client.db, ([], []))
                else:
                    self._ready.pop(client.id, None)
                continue
            self._answer_leading(client)  # SELECT among them picks the batch below
            batch, owners = batches.setdefault(client.db, ([], []))
            taken = self._take(client, batch)
            owners.extend((client, False) for _ in range(taken))
            if not client.queue and client.parked is None:
                if client.protocol_error is not None:
                    if taken:
                        continue  # the error goes after the replies of this batch
                    client.reply(error_line(str(client.protocol_error)))
                    client.closing = True
                self._ready.pop(client.id, None)
        ran = False
        for db, (batch, owners) in batches.items():
            waiting = self._waiting(db, batch, owners)
            for client in woken.get(db, ()):
                if client not in waiting and client.parked is not None:
                    client.parked.woken = False
                    batch.append(client.parked.call.argv)  # it runs again
                    owners.append((client, True))
            if batch:
                ran = True
                self._run(db, batch, owners, waiting)
        return ran

    def _waiting(self, db: int, batch: list[list[bytes]], owners: Owners) -> list[Client]:
        """The parked reads the batch may serve as it runs: after each command that writes
        to their streams, in the order they blocked, as Valkey serves them
        (:meth:`rstore.Store.execute_many`'s ``waiting``) -- woken ones too, so that one
        woken by an earlier write keeps its place."""
        if not batch or not self.parked_reads:
            return []
        keys = {key for argv in batch for key in argv[1:3]}  # RENAME's second key too
        return self.parked_reads.waiting_on(db, keys, {client.id for client, _ in owners})

    def _run(
        self, db: int, batch: list[list[bytes]], owners: Owners, waiting: list[Client]
    ) -> None:
        self.stats["batches"] += 1
        self.commands_per_batch_max = max(self.commands_per_batch_max, len(batch))
        store = self.store_of(db)
        calls = [client.parked.call for client in waiting if client.parked is not None]
        if self._committer is None or self._solo(owners):
            self._complete(db, batch, owners, waiting, *execute(store, batch, calls))
            return
        for client, _ in owners:
            client.in_flight = True
        for client in waiting:
            client.in_flight = True
        self._running += 1
        loop = self.loop
        assert loop is not None
        self._committer.submit(
            store,
            batch,
            calls,
            lambda results, each: loop.call_soon_threadsafe(
                self._finished, db, batch, owners, waiting, results, each
            ),
        )

    def _solo(self, owners: Owners) -> bool:
        """Whether a batch runs in the loop itself: it is one client's, and no other client
        sent anything lately -- nothing to overlap with, so no thread handoff to pay."""
        client = owners[0][0]
        if any(other is not client for other, _ in owners):
            return False
        other = self._last_sent if self._last_sender != client.id else self._other_sent
        return time.monotonic() - other > SOLO_S

    def _finished(
        self,
        db: int,
        batch: list[list[bytes]],
        owners: Owners,
        waiting: list[Client],
        results: list[Any],
        each: float,
    ) -> None:
        """A batch run in a committer thread is back: its replies go out, its clients go on."""
        self._running -= 1
        clients = {client.id: client for client, _ in owners}
        clients.update((client.id, client) for client in waiting)
        for client in clients.values():
            client.in_flight = False
        self._complete(db, batch, owners, waiting, results, each)
        for client in clients.values():
            pending, client.unblock_reply = client.unblock_reply, None
            if pending is not None and client.parked is not None:
                self.unblock(client, pending[0])  # its rerun found nothing: the unblock holds
                continue
            if client.protocol_error is not None or (
                client.parked is not None and client.parked.woken
            ):  # the error goes after these replies; a wake-up meanwhile runs it again
                self._run_soon(client)
            self._send(client)
        if self._ready:  # what gathered while the batch ran
            self._schedule()

    def _complete(
        self,
        db: int,
        batch: list[list[bytes]],
        owners: Owners,
        waiting: list[Client],
        results: list[Any],
        each: float,
    ) -> None:
        for client, result in zip(waiting, results[len(batch) :]):
            parked = client.parked
            if parked is None:
                continue
            if isinstance(result, BlockedCall):  # not served: still parked
                if parked.woken:  # by a write before the batch, or during it
                    self._run_soon(client)
                continue
            self.counters.count(parked.call.argv, result, each)
            self._deliver(client, parked.call.argv, result, True)
            self._send(client)
        for (client, rerun), argv, result in zip(owners, batch, results):
            if not isinstance(result, BlockedCall):
                self.counters.count(argv, result, each)
                if not isinstance(result, ResponseError):
                    self.versions.written(db, argv, result)
            if client.closed and isinstance(result, BlockedCall) and not rerun:
                continue  # gone before its read was parked
            self._deliver(client, argv, result, rerun)
        if self.seat is not None:
            self.publish()

    def _answer_leading(self, client: Client) -> None:
        """Answer the connection commands at the head of the client's queue."""
        while client.queue and client.parked is None and not client.closing:
            argv = client.queue[0]
            handler = admin.handler_for(self, client, argv)
            if handler is None:
                return
            client.queue.popleft()
            client.last_command = self._known(argv[0])
            started = time.perf_counter()
            try:
                reply = handler()
            except Exception as exc:  # a bug here must not stop the loop for everyone
                log.exception("client %d: %r failed", client.id, argv[:2])
                reply = ResponseError(messages.INTERNAL.format(what=str(exc).splitlines()[0]))
            self.counters.count(argv, reply, time.perf_counter() - started)
            self._write_reply(client, argv, reply)

    def _known(self, name: bytes) -> bytes:
        """A command's name as CLIENT LIST's ``cmd=`` shows it: ``NULL`` for an unknown one,
        as in Valkey (whatever bytes a client sent, a newline even, stay out of the line)."""
        lowered = name.lower()
        return lowered if lowered in self.command_names() else b"NULL"

    def _take(self, client: Client, batch: list[list[bytes]]) -> int:
        """Move the client's next store commands into ``batch``: up to a connection command,
        or through a blocking read.  Called right after :meth:`_answer_leading`, so the first
        command waiting is a store command."""
        taken = 0
        while client.queue and client.parked is None and not client.closing:
            argv = client.queue[0]
            if taken and admin.handler_for(self, client, argv) is not None:
                break  # after this batch, so that replies keep their order
            client.queue.popleft()
            client.last_command = self._known(argv[0])
            batch.append(argv)
            taken += 1
            if _blocking(argv):
                break
        return taken

    def _deliver(self, client: Client, argv: list[bytes], result: Any, rerun: bool) -> None:
        if isinstance(result, BlockedCall):
            if rerun:
                return  # still nothing: stays parked, its first deadline and place kept
            self.parked_reads.park(client, result, self.store_of(client.db).watch(result))
            return
        parked = client.parked if rerun else None
        if parked is not None:
            if parked.call.group_read:
                parked.watch.served()
            self.parked_reads.unpark(client)
        self._write_reply(client, argv, result)

    def unblock(self, client: Client, reply: Any) -> None:
        """End a parked read with ``reply`` (a timeout's nil, CLIENT UNBLOCK's)."""
        parked = client.parked
        if parked is None:
            return
        if client.in_flight:  # its read runs again right now: see what that gives first
            client.unblock_reply = (reply,)
            return
        self.parked_reads.unpark(client)
        self.counters.count(parked.call.argv, reply, 0.0)
        self.publish()
        self._write_reply(client, parked.call.argv, reply)
        self._send(client)

    def _timed_out(self, client: Client) -> None:
        """A parked read's BLOCK time ran out: it answers nil."""
        self.unblock(client, NIL_ARRAY)

    def _write_reply(self, client: Client, argv: list[bytes], result: Any) -> None:
        if client.closed:
            return
        if isinstance(result, StreamedEntries):
            client.backlog.append(result.chunks())
            return
        if isinstance(result, (StreamedReads, HistoryReads)):  # framed by the protocol
            client.backlog.append(result.chunks(client.proto))
            return
        if isinstance(result, RespReply):  # written already: the same in RESP2 and RESP3
            data = bytes(result)
        else:
            if client.proto == 3 and not isinstance(result, ResponseError):
                result = resp3(argv, result)
            data = encoded(result, client.proto)
        if client.backlog:  # after a streamed reply: in its turn
            client.backlog.append(iter((data,)))
        else:
            client.out.append(data)

    def _pump(self, client: Client) -> None:
        """Write the next chunks of the client's streamed reply: a few per turn of the loop
        (other clients go on meanwhile), none while its transport's buffer is full (resumed
        by :meth:`resume`); at its end, the replies that came after it, and its next
        commands."""
        client.pump_due = False
        if client.closed:
            return
        backlog = client.backlog
        for _ in range(_CHUNKS_PER_TURN):
            if client.write_paused:
                return
            chunk = None
            while backlog and chunk is None:
                try:
                    chunk = next(backlog[0], None)
                except RuntimeError as exc:  # its length was written: it cannot be mended
                    log.error("closing client %d: %s", client.id, exc)
                    self.close_client(client)
                    return
                if chunk is None:
                    backlog.popleft()
            if chunk is None:
                client.streamed = 0
                self._send(client)  # all written: its next commands
                return
            client.transport.write(chunk)
            client.streamed += len(chunk)
            limit = self.config.client_output_buffer_limit
            if limit and client.streamed > limit:  # as if the reply were buffered whole
                log.warning("closing client %d: output buffer over the limit", client.id)
                self.close_client(client)
                return
        self._kick(client)

    def _kick(self, client: Client) -> None:
        """Have :meth:`_pump` write the client's next chunks in a coming turn (once)."""
        if not client.pump_due and self.loop is not None:
            client.pump_due = True
            self.loop.call_soon(self._pump, client)

    def _send(self, client: Client) -> None:
        if client.backlog:
            if client.out and not client.closed:
                client.transport.write(b"".join(client.out))  # what came before the stream
                client.out.clear()
            self._kick(client)
            return
        if client.out and not client.closed:
            client.transport.write(b"".join(client.out))
            client.out.clear()
            limit = self.config.client_output_buffer_limit
            if limit and client.transport.get_write_buffer_size() > limit:
                log.warning("closing client %d: output buffer over the limit", client.id)
                self.close_client(client)
                return
        if client.closing and not client.closed:
            client.transport.close()
        elif client.queue and client.parked is None and not client.closed:
            self._run_soon(client)

    # -- running -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on the configured addresses."""
        self.loop = asyncio.get_running_loop()
        self._parked_reads = ParkedReads(self.loop, self._run_soon, self._timed_out)
        if self.config.sync == "always" and self._committer is None:
            self._committer = Committer()
        make = lambda: _Connection(self)  # noqa: E731
        config = self.config
        if self.seat is not None:
            self.seat.answer(self._answer)
        if self._listening is not None:  # a worker: the supervisor's sockets
            for listening in self._listening:
                ssl = tls_context(config) if listening.tls else None
                self._servers.append(
                    await self.loop.create_server(make, sock=listening.sock, ssl=ssl)
                )
        if self._listening is None and config.port:
            self._servers.append(await self.loop.create_server(make, config.bind, config.port))
        if self._listening is None and config.unixsocket:
            self._servers.append(await self.loop.create_unix_server(make, config.unixsocket))
        if self._listening is None and config.tls_port:
            context = tls_context(config)
            self._servers.append(
                await self.loop.create_server(make, config.bind, config.tls_port, ssl=context)
            )
        self.loop.call_later(RECHECK_S, self._recheck)
        if self.config.sync == "everysec":
            self.loop.call_later(1.0, self._flush_every_second)
        if config.metrics_port and (self.seat is None or self.seat.index == 0):
            from .metrics_endpoint import MetricsEndpoint  # noqa: PLC0415 - only when asked

            self.metrics = MetricsEndpoint(self, self.loop)
            self.metrics.start(config.metrics_port, config.bind)

    def _recheck(self) -> None:
        """Every :data:`RECHECK_S`: every parked read looks again (a waking process may have
        died); an idle client past ``timeout`` is closed."""
        self.parked_reads.look_again(list(self.clients.values()))
        self.publish()  # what connection commands counted since the last batch
        if self.seat is not None and self.seat.orphaned():
            log.warning("the supervisor is gone: stopping")
            self.stop()
        timeout = self.config.timeout
        if timeout:
            idle = time.monotonic() - timeout
            for client in list(self.clients.values()):
                if client.parked is None and client.last_active < idle and not client.queue:
                    self.close_client(client)
        assert self.loop is not None
        self.loop.call_later(RECHECK_S, self._recheck)

    @property
    def ports(self) -> list[Any]:
        return [s.getsockname() for srv in self._servers for s in getattr(srv, "sockets", ())]

    def _flush_every_second(self) -> None:
        try:
            for store in list(self._stores.values()):
                store.sync()
        except Exception as exc:
            log.error("background flush failed: %s", exc)
        assert self.loop is not None
        self.loop.call_later(1.0, self._flush_every_second)

    async def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until SIGTERM / SIGINT (or :meth:`stop`): then stop accepting, let the
        commands in flight finish and their replies go out, flush, and return."""
        await self.start()
        self._stopping = asyncio.Event()
        assert self.loop is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            # not in the main thread: asyncio raises RuntimeError, uvloop ValueError
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(sig, self._stopping.set)
        if on_ready is not None:
            on_ready()
        await self._stopping.wait()
        await self.shutdown()

    def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    async def shutdown(self) -> None:
        if self.metrics is not None:
            await asyncio.to_thread(self.metrics.stop)  # a scrape in flight asks the loop
        for srv in self._servers:
            srv.close()
        for srv in self._servers:
            await srv.wait_closed()
        self._turn()  # requests already read run, and their replies go out
        while self._running:  # the batches in the committer thread finish and answer
            await asyncio.sleep(0.001)
            self._turn()
        if self._committer is not None:
            self._committer.stop()
        for client in list(self.clients.values()):
            self.parked_reads.unpark(client)
            client.transport.close()
        for _ in range(50):  # let the transports finish closing (TLS ones take a few turns)
            if not self.clients:
                break
            await asyncio.sleep(0.01)
        for client in list(self.clients.values()):  # a TLS peer that never answers the close
            client.transport.abort()
        await asyncio.sleep(0)
        for db, store in list(self._stores.items()):
            with contextlib.suppress(Exception):
                store.sync()
                if db:
                    store.close()  # database 0 is the caller's
