"""The server's settings (``rstore serve`` options, or a redis.conf-style file), and CONFIG
GET / SET of those a client may read or change (``maxclients``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rstore import ResponseError, key_matches
from rstore import messages as m

from .limits import fit_open_files

if TYPE_CHECKING:
    from .client import Client
    from .server import Server

__all__ = ["ServerConfig", "config_handler"]

log = logging.getLogger("rstore.server")
Handler = Callable[[], Any]


#: the most worker processes ``--workers`` takes
MAX_WORKERS = 256


@dataclass
class ServerConfig:
    """What ``rstore serve`` runs with; the names follow redis.conf's where one exists."""

    store: str = "rstore-data"
    bind: str = "127.0.0.1"
    port: int = 6379
    unixsocket: str | None = None
    #: ``always``: a write is acknowledged once on disk (the writes of every client that
    #: arrived together share one flush); ``everysec``: flushed every second; ``no``: by the OS
    sync: str = "always"
    requirepass: str | None = None
    #: ``user`` directives, each as its words (``["alice", "on", ">pw", "~*", "+@read"]``)
    users: list[list[str]] = field(default_factory=list)
    maxclients: int = 10000
    databases: int = 16
    timeout: int = 0  # seconds a client may stay idle; 0 = forever
    proto_max_bulk_len: int = 512 * 1024 * 1024
    client_query_buffer_limit: int = 1024 * 1024 * 1024
    #: a client whose unread replies exceed this many bytes is disconnected (0 = no limit)
    client_output_buffer_limit: int = 0
    #: TLS: a second listening port, its certificate and key, and the CA that signs client
    #: certificates (``tls_auth_clients``: ``yes`` requires one, ``optional``, ``no``)
    tls_port: int = 0
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_ca_cert_file: str | None = None
    tls_auth_clients: str = "yes"
    #: where SAVE and BGSAVE write their RDB file
    dir: str = "."
    dbfilename: str = "dump.rdb"
    loglevel: str = "notice"
    logfile: str = ""
    pidfile: str = ""
    #: processes serving the store (``--workers``; rstore's own setting: :mod:`.workers`)
    workers: int = 1
    #: Prometheus's /metrics over HTTP on this port of ``bind`` (``--metrics-port``; 0: none)
    metrics_port: int = 0


# -- CONFIG GET / SET of the server's own settings ------------------------------------------------
#
# The store answers CONFIG for its node limits (kept in the store, so every process sees
# them); ``maxclients`` belongs to this server, so a CONFIG GET whose pattern matches it, or a
# CONFIG SET that names it, is answered here, with the store's part asked of the store.

_MAXCLIENTS = b"maxclients"
_UINT_MAX = 4294967295
_INTEGER = re.compile(rb"-?[1-9][0-9]{0,18}|0")


def _name(arg: bytes) -> bytes:
    return arg.split(b"\0", 1)[0].lower()


def _matches(pattern: bytes, name: bytes) -> bool:
    lowered = _name(pattern)
    return lowered == name or (any(c in lowered for c in b"*?[") and key_matches(lowered, name))


def config_handler(server: Server, client: Client, argv: list[bytes]) -> Handler | None:
    """The function answering CONFIG GET / SET when it concerns ``maxclients``, else ``None``
    (the store answers)."""
    sub = argv[1].lower() if len(argv) > 1 else b""
    if sub == b"get" and len(argv) > 2 and any(_matches(p, _MAXCLIENTS) for p in argv[2:]):
        return lambda: _config_get(server, client, argv)
    named = sub == b"set" and len(argv) > 3 and len(argv) % 2 == 0
    if named and any(_name(n) == _MAXCLIENTS for n in argv[2::2]):
        return lambda: _config_set(server, client, argv)
    return None


def _config_get(server: Server, client: Client, argv: list[bytes]) -> Any:
    reply = server.store_of(client.db).execute_many([argv])[0]
    if isinstance(reply, ResponseError):
        return reply
    for pattern in argv[2:]:
        if _matches(pattern, _MAXCLIENTS):
            exact = _name(pattern) == _MAXCLIENTS
            reply += [pattern if exact else _MAXCLIENTS, b"%d" % server.maxclients]
            break
    return reply


def _failed(typed: bytes, reason: str) -> ResponseError:
    shown = typed.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    shown = shown.replace("\r", " ").replace("\n", " ")
    return ResponseError(m.CONFIG_SET_FAILED.format(name=shown, reason=reason))


def _config_set(server: Server, client: Client, argv: list[bytes]) -> Any:
    """CONFIG SET with ``maxclients``: checked, then fitted to the open-files limit (raised
    when it may be: Valkey's rule, docs/server.md#limits) before the store's part is set, so
    that a refusal changes nothing."""
    pairs = list(zip(argv[2::2], argv[3::2]))
    rest: list[bytes] = []
    value: int | None = None
    for typed, raw in pairs:
        if _name(typed) != _MAXCLIENTS:
            rest += [typed, raw]
            continue
        if value is not None:
            return _failed(typed, "duplicate parameter")
        if not _INTEGER.fullmatch(raw):
            return _failed(typed, "argument couldn't be parsed into an integer")
        value = int(raw)
        if not 1 <= value <= _UINT_MAX:
            return _failed(typed, f"argument must be between 1 and {_UINT_MAX} inclusive")
    assert value is not None
    fitted = fit_open_files(value, len(server.store.databases()))
    if fitted.maxclients < value:
        for line in fitted.warnings:
            log.warning("%s", line)
        log.warning("Failed applying new configuration. Possibly related to new maxclients "
                    "setting. Restoring previous settings.")  # fmt: skip
        typed = next(t for t, _ in pairs if _name(t) == _MAXCLIENTS)
        return _failed(typed, m.MAXCLIENTS_UNFIT.format(clients=max(fitted.maxclients, 0)))
    if fitted.notice:
        log.info("%s", fitted.notice)
    if rest:
        reply = server.store_of(client.db).execute_many([[argv[0], argv[1], *rest]])[0]
        if isinstance(reply, ResponseError):
            return reply
    server.maxclients = value
    return "OK"
