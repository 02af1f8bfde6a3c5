"""One connected client: its parser, the requests waiting to run, its connection state
(protocol version, name, MULTI queue, authentication), its parked blocking read, and the
replies waiting to be written."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .protocol import ProtocolError, RequestParser

if TYPE_CHECKING:
    from .parked import Parked

__all__ = ["Client"]


class Client:
    """The state of one connection."""

    def __init__(self, cid: int, transport: asyncio.Transport, max_bulk: int) -> None:
        self.id = cid
        self.transport = transport
        self.parser = RequestParser(max_bulk)
        self.queue: deque[list[bytes]] = deque()
        self.out: list[bytes] = []
        self.proto = 2
        self.db = 0
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.authenticated = True
        self.user = b"default"
        self.readonly = False  # a read-only user: writes answer NOPERM
        self.multi: list[list[bytes]] | None = None
        self.multi_failed = False  # a command refused while queueing: EXEC answers EXECABORT
        self.in_exec = False  # EXEC is running the queued commands
        #: WATCH: (database, key) -> (the server's version of it, its fingerprint) then
        self.watched: dict[tuple[int, bytes], tuple[Any, Any]] = {}
        self.parked: Parked | None = None
        #: a batch holding this client's commands runs in a committer thread: nothing else of the
        #: client runs until its replies are in (its order is kept)
        self.in_flight = False
        #: a timeout that fired while the parked read ran again in the worker: given once
        #: that run is back, unless it served the read
        self.unblock_reply: tuple[Any] | None = None
        #: replies written as they are built (a big XRANGE), and those after them, in order:
        #: chunks still to write; nothing else of the client runs until it is empty
        self.backlog: deque[Iterator[bytes]] = deque()
        self.write_paused = False  # the transport's buffer is full: wait for it to drain
        self.pump_due = False  # the stream's next chunks are to be written in a coming turn
        self.streamed = 0  # bytes of the backlog written so far (the output limit counts them)
        self.protocol_error: ProtocolError | None = None
        self.closing = False  # QUIT or a protocol error: close once the replies are out
        self.closed = False
        self.created = time.monotonic()
        self.last_active = self.created
        self.last_command = b"NULL"
        peer: Any = transport.get_extra_info("peername")
        sock: Any = transport.get_extra_info("sockname")
        self.addr = _address(peer)
        self.laddr = _address(sock)
        self.unix = isinstance(peer, str) or (isinstance(sock, str) and not peer)

    def plain(self) -> bool:
        """Whether the client's commands go to the store as they are: authenticated, not
        read-only, not queueing a MULTI."""
        return self.authenticated and not self.readonly and self.multi is None

    def reply(self, chunk: bytes) -> None:
        self.out.append(chunk)


def _address(value: Any) -> str:
    if isinstance(value, tuple) and len(value) >= 2:
        host = value[0]
        return f"[{host}]:{value[1]}" if ":" in str(host) else f"{host}:{value[1]}"
    return str(value or "")
