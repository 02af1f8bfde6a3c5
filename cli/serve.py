"""``rstore serve``: a RESP server over the store (a thin front over :mod:`rstore.server`)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import ipaddress
import logging
import os
import sys
from typing import Any

import click

import rstore
from rstore.server import Server, ServerConfig, eventloop
from rstore.server.conffile import ConfigError, apply_setting, read_config
from rstore.server.config import MAX_WORKERS
from rstore.server.limits import (
    AcceptErrors,
    files_needed,
    fit_open_files,
    too_low,
)
from rstore.server.protocol import split_inline
from rstore.server.tls import tls_context
from rstore.server.users import users_of
from rstore.server.workers import Listening, Seat, Supervisor, bind

from .context import StoreOpener, json_option, pass_opener
from .jsonout import echo_json

__all__ = ["COMMANDS"]

_LEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
           "warning": logging.WARNING, "nothing": logging.CRITICAL + 1}  # fmt: skip


def _loopback(address: str) -> bool:
    if address in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _settings(
    opener: StoreOpener, config_file: str | None, given: dict[str, Any], users: tuple[str, ...]
) -> tuple[ServerConfig, bool]:
    """The settings in effect (the file's, then the options ``given`` and the --user rules),
    and whether maxclients was asked for (on the command line or in the file) rather than
    left at its default."""
    config = ServerConfig(store=opener.store_path, maxclients=0)  # 0: not set (a setting is >= 1)
    if config_file is not None:
        config = read_config(config_file, config)
        if opener.path is not None:
            config.store = opener.store_path  # --store wins over the file
    for name, value in given.items():
        if value is not None:
            apply_setting(config, name, [str(value)])
    for rule in users:  # after the file's: a user given here replaces one of the same name
        words = [w.decode() for w in split_inline(rule.encode()) or []]
        apply_setting(config, "user", words)
    asked = config.maxclients != 0
    if not asked:
        config.maxclients = ServerConfig().maxclients
    return config, asked


@click.command("serve", short_help="Serve the store over RESP (redis-cli, any Redis client).")
@click.option("--bind", metavar="ADDRESS", help="The address to listen on (127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), help="The TCP port (6379; 0: none).")
@click.option("--unixsocket", metavar="PATH", help="Also listen on a Unix socket.")
@click.option(
    "--sync",
    "appendfsync",
    type=click.Choice(["always", "everysec", "no"]),
    help="always (default): acknowledge writes once on disk; everysec; no.",
)
@click.option("--requirepass", metavar="PASSWORD", help="Clients must AUTH with it.")
@click.option("--unsafe-no-auth", is_flag=True, help="Allow a non-loopback bind without one.")
@click.option(
    "--user",
    "users",
    multiple=True,
    metavar="'NAME RULES'",
    help="A user, as redis.conf's user directive: 'bob on >pw ~* +@read' (repeatable).",
)
@click.option(
    "--maxclients",
    type=int,
    help="The most clients at once (10000; by default fitted quietly to the open-files limit).",
)
@click.option("--timeout", type=int, help="Close clients idle this many seconds (0: never).")
@click.option(
    "--workers",
    type=click.IntRange(1, MAX_WORKERS),
    help="Processes serving the store on the same addresses (1; docs/server.md#workers).",
)
@click.option("--dir", "dir_", metavar="DIR", help="Where SAVE writes its RDB file (.).")
@click.option("--dbfilename", metavar="NAME", help="SAVE's file name (dump.rdb).")
@click.option(
    "--loglevel",
    type=click.Choice(["debug", "verbose", "notice", "warning"]),
    help="How much to log (notice).",
)
@click.option("--logfile", metavar="PATH", help="Log to this file (default: stderr).")
@click.option("--pidfile", metavar="PATH", help="Write the process ID here while serving.")
@click.option("--tls-port", type=click.IntRange(0, 65535), help="Also serve TLS on this port.")
@click.option("--tls-cert-file", metavar="PEM", help="The server's certificate (TLS).")
@click.option("--tls-key-file", metavar="PEM", help="The server's private key (TLS).")
@click.option("--tls-ca-cert-file", metavar="PEM", help="CA of accepted client certificates.")
@click.option(
    "--tls-auth-clients",
    type=click.Choice(["yes", "no", "optional"]),
    help="With a CA: require (yes), accept (optional) or ignore client certificates.",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    help="Serve Prometheus metrics at http://BIND:N/metrics (0: none, the default).",
)
@click.option("--config", "config_file", metavar="FILE", help="Settings in redis.conf syntax.")
@click.option("--check-config", is_flag=True, help="Check the settings, print them, exit.")
@json_option
@pass_opener
def serve_command(
    opener: StoreOpener,
    bind: str | None,
    port: int | None,
    unixsocket: str | None,
    appendfsync: str | None,
    requirepass: str | None,
    unsafe_no_auth: bool,
    users: tuple[str, ...],
    maxclients: int | None,
    timeout: int | None,
    workers: int | None,
    dir_: str | None,
    dbfilename: str | None,
    loglevel: str | None,
    logfile: str | None,
    pidfile: str | None,
    tls_port: int | None,
    tls_cert_file: str | None,
    tls_key_file: str | None,
    tls_ca_cert_file: str | None,
    tls_auth_clients: str | None,
    metrics_port: int | None,
    config_file: str | None,
    check_config: bool,
    as_json: bool,
) -> None:
    """Serve the store over the Redis protocol (RESP2 and RESP3), so that redis-cli,
    valkey-benchmark and every Redis client library can use it, while embedded Python
    processes keep using the same store directory.  Writes of all clients that arrive
    together share one transaction and one flush (--sync always: each write acknowledged once
    on disk).  SIGTERM or ^C: stop accepting, finish the commands already read, flush, exit 0.

    Listens on 127.0.0.1 by default; another address needs --requirepass (or
    --unsafe-no-auth).  docs/server.md has the details, a systemd unit and the limits.

    \b
    Examples:
      rstore serve
      rstore --store /var/lib/queue serve --port 6380 --sync everysec
      rstore serve --config /etc/rstore/server.conf --check-config
      redis-cli -p 6379 XADD events '*' user 42
    """
    if opener.db is not None:
        raise click.UsageError("serve serves every database of the store (SELECT N): no --db")
    given = {
        "bind": bind, "port": port, "unixsocket": unixsocket, "appendfsync": appendfsync,
        "requirepass": requirepass, "maxclients": maxclients, "timeout": timeout,
        "workers": workers,
        "dir": dir_, "dbfilename": dbfilename, "loglevel": loglevel, "logfile": logfile,
        "pidfile": pidfile, "tls-port": tls_port, "tls-cert-file": tls_cert_file,
        "tls-key-file": tls_key_file, "tls-ca-cert-file": tls_ca_cert_file,
        "tls-auth-clients": tls_auth_clients, "metrics-port": metrics_port,
    }  # fmt: skip
    try:
        config, maxclients_asked = _settings(opener, config_file, given, users)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    _refuse_unprotected(config, unsafe_no_auth)
    if check_config:
        _echo_settings(config, as_json)
        return
    _logging(config)
    opener.note_deprecated()
    _serve(config, maxclients_asked)


def _refuse_unprotected(config: ServerConfig, unsafe_no_auth: bool) -> None:
    """Refuse to listen beyond loopback when a new connection need not AUTH, unless
    --unsafe-no-auth."""
    default = users_of(config.requirepass, config.users)["default"]
    protected = not (default.enabled and default.nopass)  # a new connection must AUTH
    if not _loopback(config.bind) and not protected and not unsafe_no_auth:
        raise click.ClickException(
            f"binding {config.bind} (not loopback) needs --requirepass, or --unsafe-no-auth "
            "to serve without a password"
        )


def _echo_settings(config: ServerConfig, as_json: bool) -> None:
    """--check-config: the settings in effect, the password hidden (text or --json)."""
    shown = dataclasses.asdict(config)
    if shown["requirepass"] is not None:
        shown["requirepass"] = "(set)"
    if as_json:
        echo_json(shown)
    else:
        for key, value in shown.items():
            click.echo(f"{key.replace('_', '-')} {'' if value is None else value}")


def _serve(config: ServerConfig, maxclients_asked: bool) -> None:
    """Open the store, fit the open-files limit, write the pid file, and serve until SIGTERM
    or ^C; the store closed and the pid file removed however it ends."""
    log = logging.getLogger("rstore.server")
    store = rstore.Store(config.store, sync=config.sync == "always")
    try:
        _fit_open_files(config, log, len(store.databases()), maxclients_asked)
    except click.ClickException:
        store.close()
        raise
    if config.workers > 1:
        store.close()  # each worker opens its own, after the fork
        _supervise(config, log)
        return
    if config.pidfile:
        with open(config.pidfile, "w", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")
    try:
        server = Server(store, config)

        def ready() -> None:
            where = ", ".join(_shown(a) for a in server.ports)
            log.info("rstore %s serving %s on %s (sync %s)", rstore.__version__, config.store,
                     where, config.sync)  # fmt: skip

        async def serve() -> None:
            asyncio.get_running_loop().set_exception_handler(AcceptErrors(log))
            await server.serve(on_ready=ready)

        eventloop.run(serve())
        log.info("stopped: flushed and closed")
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        text = getattr(exc, "strerror", None) or str(exc)
        raise click.ClickException(f"cannot serve: {text}") from None
    finally:
        store.close()
        if config.pidfile:
            with contextlib.suppress(OSError):
                os.unlink(config.pidfile)


def _supervise(config: ServerConfig, log: logging.Logger) -> None:
    """--workers N: bind, fork the workers and keep them running until SIGTERM or ^C
    (:mod:`rstore.server.workers`); the sockets, the Unix socket's file and the pid file
    cleaned up however it ends."""
    try:
        if config.tls_port:
            tls_context(config)  # a bad certificate: one line now, not in every worker
        listening = bind(config)
    except (OSError, ValueError) as exc:
        text = getattr(exc, "strerror", None) or str(exc)
        raise click.ClickException(f"cannot serve: {text}") from None
    if config.pidfile:
        with open(config.pidfile, "w", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")
    try:
        where = ", ".join(_shown(item.sock.getsockname()) for item in listening)
        log.info("rstore %s serving %s on %s (sync %s, %d workers)", rstore.__version__,
                 config.store, where, config.sync, config.workers)  # fmt: skip
        code = Supervisor(config, config.workers, functools.partial(_work, config)).run(listening)
    finally:
        for item in listening:
            item.sock.close()
        for path in (config.unixsocket, config.pidfile):
            if path:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    if code:
        raise click.ClickException("the workers could not start (the log says why)")
    log.info("stopped: flushed and closed")


def _work(config: ServerConfig, seat: Seat, listening: list[Listening]) -> int:
    """One worker of --workers N: open the store, serve on the supervisor's sockets until
    SIGTERM, flush and close; its exit status."""
    log = logging.getLogger("rstore.server")
    store = rstore.Store(config.store, sync=config.sync == "always")
    try:
        server = Server(store, config, seat, listening)

        async def serve() -> None:
            asyncio.get_running_loop().set_exception_handler(AcceptErrors(log))
            await server.serve()

        eventloop.run(serve())
    finally:
        store.close()
    return 0


def _shown(address: Any) -> str:
    if isinstance(address, tuple):
        return f"{address[0]}:{address[1]}"
    return str(address)


def _fit_open_files(config: ServerConfig, log: logging.Logger, stores: int, asked: bool) -> None:
    """Raise the open-files limit to what maxclients needs, or lower maxclients to what the
    limit allows (docs/server.md#limits); ``stores``: the databases on disk.  Valkey's three
    warnings when maxclients was ``asked`` for; a default maxclients is fitted quietly (one
    line at debug level)."""
    fitted = fit_open_files(config.maxclients, stores)
    if fitted.maxclients < 1:
        raise click.ClickException(too_low(fitted.limit, files_needed(config.maxclients, stores)))
    if fitted.warnings and not asked:
        log.debug("maxclients is %d: the open-files limit (%d) holds no more clients (give "
                  "--maxclients to ask for more)", fitted.maxclients, fitted.limit)  # fmt: skip
    for line in fitted.warnings if asked else ():
        log.warning("%s", line)
    if fitted.notice:
        log.info("%s", fitted.notice)
    config.maxclients = fitted.maxclients


def _logging(config: ServerConfig) -> None:
    handler: logging.Handler = (
        logging.FileHandler(config.logfile) if config.logfile else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log = logging.getLogger("rstore.server")
    log.addHandler(handler)
    log.setLevel(_LEVELS.get(config.loglevel, logging.INFO))


COMMANDS = [serve_command]
