"""The server's settings (``rstore serve`` options, or a redis.conf-style file)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ServerConfig"]


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
