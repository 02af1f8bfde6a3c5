"""Reading a server configuration in redis.conf's syntax (``rstore serve --config FILE``).

One setting per line, ``name value``, words split and quoted as inline commands are; ``#``
starts a comment line.  Names are redis.conf's where rstore has the setting (``bind``,
``port``, ``unixsocket``, ``appendfsync``, ``requirepass``, ``maxclients``, ``timeout``,
``proto-max-bulk-len``, ``client-query-buffer-limit``, ``dir``, ``dbfilename``,
``loglevel``, ``logfile``, ``pidfile``, ``tls-port``, ``tls-cert-file``, ``tls-key-file``,
``tls-ca-cert-file``, ``tls-auth-clients``, ``user`` -- see :mod:`.users`) plus ``store``
(the store directory) and
``client-output-buffer-limit`` (one size: a client whose unread replies exceed it is
disconnected).  Sizes take redis.conf's units (``1k`` = 1000, ``1kb`` = 1024, ``mb``, ``gb``).
"""

from __future__ import annotations

import dataclasses
import re

from .config import MAX_WORKERS, ServerConfig
from .protocol import split_inline
from .users import parse_user

__all__ = ["ConfigError", "apply_setting", "parse_size", "read_config"]

_UNITS = {"": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3}
_SYNC = ("always", "everysec", "no")
_LEVELS = ("debug", "verbose", "notice", "warning", "nothing")


class ConfigError(ValueError):
    """A setting that cannot be used: one line naming it and why."""


def parse_size(text: str) -> int:
    """A byte size as redis.conf writes one (``512mb``, ``1gb``, ``1000``)."""
    found = re.fullmatch(r"([0-9]+)([a-z]*)", text.strip().lower())
    if found is None or found[2] not in _UNITS:
        raise ConfigError(f"'{text}' is not a size (1000, 64kb, 512mb, 1gb)")
    return int(found[1]) * _UNITS[found[2]]


def _int(text: str, low: int, high: int) -> int:
    if not re.fullmatch(r"-?[0-9]+", text) or not low <= int(text) <= high:
        raise ConfigError(f"'{text}' is not an integer in [{low}, {high}]")
    return int(text)


def apply_setting(config: ServerConfig, name: str, values: list[str]) -> None:
    """Set one redis.conf-style setting on ``config``; :class:`ConfigError` if it cannot be."""
    key = name.lower()
    if key == "user":
        try:
            parse_user(values)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        config.users.append(list(values))
        return
    if key == "bind":
        if not values:
            raise ConfigError("bind needs an address")
        config.bind = values[0]  # the first address (one listening address for now)
        return
    if len(values) != 1:
        raise ConfigError(f"'{name}' takes one value")
    value = values[0]
    if key == "port":
        config.port = _int(value, 0, 65535)
    elif key == "appendfsync":
        if value.lower() not in _SYNC:
            raise ConfigError(f"appendfsync must be always, everysec or no, not '{value}'")
        config.sync = value.lower()
    elif key == "maxclients":
        config.maxclients = _int(value, 1, 1 << 20)
    elif key == "timeout":
        config.timeout = _int(value, 0, 1 << 31)
    elif key == "workers":
        config.workers = _int(value, 1, MAX_WORKERS)
    elif key == "metrics-port":
        config.metrics_port = _int(value, 0, 65535)
    elif key == "proto-max-bulk-len":
        config.proto_max_bulk_len = max(1024 * 1024, parse_size(value))
    elif key == "client-query-buffer-limit":
        config.client_query_buffer_limit = max(1024 * 1024, parse_size(value))
    elif key == "client-output-buffer-limit":
        config.client_output_buffer_limit = parse_size(value)
    elif key == "loglevel":
        if value.lower() not in _LEVELS:
            raise ConfigError(f"loglevel must be one of {', '.join(_LEVELS)}, not '{value}'")
        config.loglevel = value.lower()
    elif key == "tls-port":
        config.tls_port = _int(value, 0, 65535)
    elif key == "tls-auth-clients":
        if value.lower() not in ("yes", "no", "optional"):
            raise ConfigError(f"tls-auth-clients must be yes, no or optional, not '{value}'")
        config.tls_auth_clients = value.lower()
    elif key in ("tls-cert-file", "tls-key-file", "tls-ca-cert-file"):
        setattr(config, key.replace("-", "_"), value or None)
    elif key in ("unixsocket", "requirepass", "dir", "dbfilename", "logfile", "pidfile", "store"):
        setattr(config, key, value or None if key in ("unixsocket", "requirepass") else value)
    else:
        raise ConfigError(f"unknown setting '{name}'")


def read_config(path: str, base: ServerConfig | None = None) -> ServerConfig:
    """The settings of the file at ``path`` over ``base`` (defaults)."""
    config = dataclasses.replace(base) if base is not None else ServerConfig()
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        words = split_inline(text.encode("utf-8", "surrogateescape"))
        if words is None:
            raise ConfigError(f"{path} line {number}: unbalanced quotes")
        decoded = [w.decode("utf-8", "surrogateescape") for w in words]
        try:
            apply_setting(config, decoded[0], decoded[1:])
        except ConfigError as exc:
            raise ConfigError(f"{path} line {number}: {exc}") from None
    return config
