"""The servers the suites run against: a reference valkey-server 8.0 and the candidates.

A :class:`ServerFactory` starts one fresh, empty server in a directory it is given and returns
it running (:class:`SuiteServer`: ``host``, ``port``, ``stop()``).  :data:`CANDIDATES` lists
the servers whose results are compared with valkey-server's from the same run; each candidate
lists the tests it is excused from (name -> reason, documented in ``docs/server.md``).

To add a server (``rstore serve``): write a start function (start the server on a free loopback
port with its data in the given directory, wait until it answers PING, return an object with
``host``, ``port`` and ``stop()``), and append
``ServerFactory("rstore", start, missing, tcl_exclusions=..., redispy_exclusions=...)`` to
:data:`CANDIDATES`.  Every ``server_suite`` comparison test is parametrized over that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from valkey_server import HOST, ValkeyServer, find_server_binary


class SuiteServer(Protocol):
    """A running server: where it listens, and how to stop it (by the PID it started)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class ServerFactory:
    name: str
    #: Starts a fresh empty server whose data lives in the given (empty) directory.
    start: Callable[[Path], SuiteServer]
    #: Why the server cannot run here (a program is missing), or ``None``.
    missing: Callable[[], str | None]
    #: Tests of Redis's tcl suite this server is excused from: name -> reason.
    tcl_exclusions: Mapping[str, str] = field(default_factory=dict)
    #: Tests of redis-py's suite (``Class::test``) this server is excused from: name -> reason.
    redispy_exclusions: Mapping[str, str] = field(default_factory=dict)


class _Valkey:
    """:class:`valkey_server.ValkeyServer` seen as a :class:`SuiteServer`."""

    def __init__(self, server: ValkeyServer) -> None:
        self._server = server

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        return self._server.port

    def stop(self) -> None:
        self._server.stop()


def start_valkey(directory: Path) -> SuiteServer:
    server = ValkeyServer(find_server_binary(), directory)
    server.start()
    return _Valkey(server)


def valkey_missing() -> str | None:
    return None if find_server_binary() else "valkey-server is not on PATH"


#: The reference: every candidate's results are compared with this server's.
REFERENCE = ServerFactory("valkey", start_valkey, valkey_missing)

#: The servers compared with the reference.  valkey-server itself is one, run a second time on
#: a fresh server: that proves the harness (a run compared with another run of the same server
#: finds nothing missing), and shows the suites are stable from one run to the next.
CANDIDATES: list[ServerFactory] = [
    ServerFactory("valkey", start_valkey, valkey_missing),
]
