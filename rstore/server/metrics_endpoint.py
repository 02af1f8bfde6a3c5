"""``rstore serve --metrics-port N``: Prometheus's ``/metrics`` over HTTP, served by a thread of
the server's process (of the first worker with ``--workers``), from the same samples as
``rstore metrics`` (:mod:`rstore.monitor.metrics`): the streams and groups of database 0 read
through the server's store, and INFO's fields (clients, commands, errors, the store's files)
asked of the event loop, so that they are what INFO says -- summed over the workers."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import rstore
from rstore.server.info import info_text

if TYPE_CHECKING:
    from rstore.server.server import Server

__all__ = ["MetricsEndpoint"]

log = logging.getLogger("rstore.server")

#: how long a scrape waits for the event loop's INFO (a loop that busy is itself the news)
INFO_WAIT_S = 10.0


class MetricsEndpoint:
    """The HTTP endpoint of one server process; :meth:`start` in the loop, :meth:`stop` at
    shutdown."""

    def __init__(self, server: Server, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self._loop = loop
        self._http: Any = None

    def start(self, port: int, bind: str) -> None:
        """Listen on ``bind:port``; ``OSError`` when the address cannot be used."""
        source = rstore.HealthSource(
            self._server.store.execute, rstore.ResponseError, info=self._info
        )
        self._http, _ = rstore.serve_metrics(source, port, bind)
        log.info("metrics on http://%s:%d/metrics", bind, self.port)

    @property
    def port(self) -> int:
        return int(self._http.server_port) if self._http is not None else 0

    def _info(self) -> str:
        """INFO everything, computed in the event loop (the counters live there)."""

        async def info() -> str:
            return info_text(self._server, [b"everything"])

        return asyncio.run_coroutine_threadsafe(info(), self._loop).result(INFO_WAIT_S)

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
