"""The servers the suites run against: the references -- valkey-server 8.0 for Redis's tcl suite,
Redis 8.2.3 (the Redis whose stream commands rstore implements) for redis-py's -- and the
candidates.

A :class:`ServerFactory` starts one fresh, empty server in a directory it is given and returns
it running (:class:`SuiteServer`: ``host``, ``port``, ``stop()``).  :data:`CANDIDATES` lists
the servers whose results are compared with valkey-server's from the same run; each candidate
lists the tests it is excused from (name -> reason, documented in ``docs/server.md``).

A server given by its command line (``rstore serve``) is one more item of :data:`CANDIDATES`::

    command_factory(
        "rstore",
        [sys.executable, "-m", "rstore_cli.entry", "serve", "--store", "{dir}", "--port", "{port}"],
        tcl_exclusions=RSTORE_TCL_EXCLUSIONS,
        redispy_exclusions=RSTORE_REDISPY_EXCLUSIONS,
    )

(:class:`CommandServer`: a free loopback port, ready when it answers PING, stopped by its PID
with SIGTERM, then SIGKILL after 10 s); or give :class:`ServerFactory` a start function of its
own.  Every ``server_suite`` comparison test is parametrized over that list.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from valkey_server import HOST, ValkeyServer, find_server_binary

from .expectations import RSTORE_REDISPY_EXCLUSIONS, RSTORE_TCL_EXCLUSIONS, RSTORE_TCL_SKIPS


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
    #: Tests of Redis's tcl suite skipped by name on this server (the driver's --skiptest):
    #: the excused ones and others that cannot run on it; name -> reason.
    tcl_skips: Mapping[str, str] = field(default_factory=dict)


class CommandServer(ValkeyServer):
    """A server program started from an ``argv`` template, whose items may hold ``{port}``,
    ``{host}`` and ``{dir}`` (the free port, 127.0.0.1, the data directory).  The rest is the
    launcher's: choosing the port, waiting for PING, the log file, stopping by PID."""

    def __init__(self, argv: Sequence[str], directory: Path) -> None:
        super().__init__(argv[0], directory)
        self.argv = list(argv)

    def command_line(self) -> list[str]:
        return [item.format(port=self.port, host=HOST, dir=self.dir) for item in self.argv]

    @property
    def host(self) -> str:
        return HOST


def command_factory(
    name: str,
    argv: Sequence[str],
    tcl_exclusions: Mapping[str, str] | None = None,
    redispy_exclusions: Mapping[str, str] | None = None,
    tcl_skips: Mapping[str, str] | None = None,
) -> ServerFactory:
    """A factory of :class:`CommandServer` s; missing when ``argv[0]`` is no program here."""

    def start(directory: Path) -> SuiteServer:
        server = CommandServer(argv, directory)
        server.start()
        return server

    def missing() -> str | None:
        return None if shutil.which(argv[0]) else f"{argv[0]} is not installed"

    return ServerFactory(
        name, start, missing, tcl_exclusions or {}, redispy_exclusions or {}, tcl_skips or {}
    )


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


def start_redis8(directory: Path) -> SuiteServer:
    server = ValkeyServer(find_server_binary("redis8"), directory)
    server.start()
    return _Valkey(server)


def redis8_missing() -> str | None:
    if find_server_binary("redis8"):
        return None
    return "Redis 8.2.3 is not installed (run .ci/install-redis8)"


#: The reference of Redis's tcl suite (Redis 7.0.15's tests): every candidate's results are
#: compared with this server's.
REFERENCE = ServerFactory("valkey", start_valkey, valkey_missing)
#: The reference of redis-py's stream tests: a server reporting the version rstore reports
#: (``rstore.REDIS_VERSION``), so that their version marks select the same tests.
REDISPY_REFERENCE = ServerFactory("redis8", start_redis8, redis8_missing)

#: The servers compared with the reference.  valkey-server itself is one, run a second time on
#: a fresh server started from its command line, as ``rstore serve`` will be: that proves the
#: harness (a run compared with another run of the same server finds nothing missing) and
#: :class:`CommandServer`, and shows that the suites give the same results run after run.
CANDIDATES: list[ServerFactory] = [
    command_factory(
        "rstore",
        [
            sys.executable, "-m", "rstore_cli", "--store", "{dir}/store", "serve",
            *("--port", "{port}", "--bind", "{host}", "--dir", "{dir}", "--sync", "always"),
        ],
        tcl_exclusions=RSTORE_TCL_EXCLUSIONS,
        redispy_exclusions=RSTORE_REDISPY_EXCLUSIONS,
        tcl_skips=RSTORE_TCL_SKIPS,
    ),
    command_factory(  # two processes serving one store (issue 25, item 5)
        "rstore-workers-2",
        [
            sys.executable, "-m", "rstore_cli", "--store", "{dir}/store", "serve",
            *("--port", "{port}", "--bind", "{host}", "--dir", "{dir}", "--sync", "always"),
            *("--workers", "2"),
        ],
        tcl_exclusions=RSTORE_TCL_EXCLUSIONS,
        redispy_exclusions=RSTORE_REDISPY_EXCLUSIONS,
        tcl_skips=RSTORE_TCL_SKIPS,
    ),
]  # fmt: skip
