"""INFO's text and CLIENT LIST's lines, with Valkey's section and field names."""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from typing import TYPE_CHECKING

from rstore import REDIS_VERSION, __version__

from .eventloop import LOOP_NAME

if TYPE_CHECKING:
    from .client import Client
    from .server import Server

__all__ = ["client_line", "info_text"]

_DEFAULT = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu",
            "modules", "errorstats", "cluster", "keyspace"]  # fmt: skip


def _server(server: Server) -> list[str]:
    up = int(time.time() - server.started)
    port = server.config.port
    return [
        f"redis_version:{REDIS_VERSION}",
        "server_name:rstore",
        f"rstore_version:{__version__}",
        "redis_mode:standalone",
        f"os:{platform.system()} {platform.release()} {platform.machine()}",
        f"arch_bits:{64 if sys.maxsize > 2**32 else 32}",
        f"multiplexing_api:{LOOP_NAME}",
        f"process_id:{os.getpid()}",
        f"tcp_port:{port}",
        f"uptime_in_seconds:{up}",
        f"uptime_in_days:{up // 86400}",
        f"executable:{sys.argv[0]}",
        f"store_dir:{os.path.abspath(server.config.store)}",
    ]


def _clients(server: Server) -> list[str]:
    clients = list(server.clients.values())
    parked = [c.parked for c in clients if c.parked is not None]
    connected, blocked = len(clients), len(parked)
    if server.seat is not None:  # every worker's (--workers)
        server.publish()
        connected, blocked = server.seat.total("clients"), server.seat.total("blocked")
    return [
        f"connected_clients:{connected}",
        "cluster_connections:0",
        f"maxclients:{server.maxclients}",
        f"blocked_clients:{blocked}",
        "tracking_clients:0",
        "pubsub_clients:0",
        "watching_clients:0",
        f"clients_in_timeout_table:{sum(p.call.deadline is not None for p in parked)}",
        f"total_blocking_keys:{len({k for p in parked for k in p.call.keys})}",
    ]


def human_bytes(n: int) -> str:
    """Valkey's ``_human`` fields: bytes below 1 KiB, else two decimals of K, M, G, T or P."""
    if n < 1024:
        return f"{n}B"
    for power, unit in enumerate("KMGTP", start=1):
        if n < 1024 ** (power + 1):
            return f"{n / 1024**power:.2f}{unit}"
    return f"{n}B"


def peak_rss() -> int:
    """The most memory the process ever had resident, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # kilobytes elsewhere


def current_rss() -> int:
    """The memory the process has resident now, in bytes: ``/proc/self/statm`` (Linux); where
    there is none, the peak (the standard library has nothing better)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss()


def _system_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _memory(server: Server) -> list[str]:
    """Valkey's allocator figures are the process's resident memory here: ``used_memory`` and
    ``used_memory_rss`` what it holds now, ``used_memory_peak`` the most it ever held."""
    rss = current_rss()
    peak = max(peak_rss(), rss)
    system = _system_memory()
    return [
        f"used_memory:{rss}",
        f"used_memory_human:{human_bytes(rss)}",
        f"used_memory_rss:{rss}",
        f"used_memory_rss_human:{human_bytes(rss)}",
        f"used_memory_peak:{peak}",
        f"used_memory_peak_human:{human_bytes(peak)}",
        f"used_memory_peak_perc:{100 * rss / peak if peak else 100:.2f}%",
        f"total_system_memory:{system}",
        f"total_system_memory_human:{human_bytes(system)}",
        "maxmemory:0",
        "maxmemory_human:0B",
        "maxmemory_policy:noeviction",
    ]


def _persistence(server: Server) -> list[str]:
    always = server.config.sync == "always"
    return [
        "loading:0",
        "async_loading:0",
        f"rdb_bgsave_in_progress:{int(server.bgsave_running())}",
        f"rdb_last_save_time:{server.last_save}",
        f"rdb_last_bgsave_status:{'ok' if server.last_bgsave_ok else 'err'}",
        f"aof_enabled:{int(server.config.sync != 'no')}",
        f"rstore_sync:{server.config.sync}",
        f"rstore_durable_acks:{int(always)}",
        *_usage(server),
    ]


def _usage(server: Server) -> list[str]:
    """The store's files (database 0's) and this process's log flushes (``rstore metrics``
    reads them from a server)."""
    usage = server.store.usage()
    return [
        f"rstore_data_bytes:{usage.data_bytes}",
        f"rstore_live_bytes:{usage.live_bytes}",
        f"rstore_log_bytes:{usage.log_bytes}",
        f"rstore_log_flushes:{usage.flushes}",
    ]


def _stats(server: Server) -> list[str]:
    totals = [server.stats["connections"], server.counters.processed, server.stats["rejected"],
              server.counters.error_replies]  # fmt: skip
    if server.seat is not None:  # every worker's (--workers)
        server.publish()
        totals = [server.seat.total(name) for name in ("connections", "commands", "rejected",
                                                       "errors")]  # fmt: skip
    connections, commands, rejected, errors = totals
    return [
        f"total_connections_received:{connections}",
        f"total_commands_processed:{commands}",
        "instantaneous_ops_per_sec:0",
        f"rejected_connections:{rejected}",
        f"total_error_replies:{errors}",
        "expired_keys:0",
        "evicted_keys:0",
        "keyspace_hits:0",
        "keyspace_misses:0",
        "pubsub_channels:0",
        f"rstore_batches:{server.stats['batches']}",
        f"rstore_largest_batch:{server.commands_per_batch_max}",
    ]


def _replication(server: Server) -> list[str]:
    return ["role:master", "connected_slaves:0", "master_repl_offset:0"]


def _cpu(server: Server) -> list[str]:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return [f"used_cpu_sys:{use.ru_stime:.6f}", f"used_cpu_user:{use.ru_utime:.6f}"]


def _keyspace(server: Server) -> list[str]:
    lines = []
    for db, store in sorted(server.existing_stores().items()):
        keys = store.execute("DBSIZE")
        if keys:
            lines.append(f"db{db}:keys={keys},expires=0,avg_ttl=0")
    return lines


def _commandstats(server: Server) -> list[str]:
    return server.all_counters().command_lines()


def _errorstats(server: Server) -> list[str]:
    return server.all_counters().error_lines()


_SECTIONS = {
    "server": ("Server", _server),
    "clients": ("Clients", _clients),
    "memory": ("Memory", _memory),
    "persistence": ("Persistence", _persistence),
    "stats": ("Stats", _stats),
    "replication": ("Replication", _replication),
    "cpu": ("CPU", _cpu),
    "modules": ("Modules", lambda s: []),
    "commandstats": ("Commandstats", _commandstats),
    "errorstats": ("Errorstats", _errorstats),
    "cluster": ("Cluster", lambda s: ["cluster_enabled:0"]),
    "keyspace": ("Keyspace", _keyspace),
}


def info_text(server: Server, wanted: list[bytes]) -> str:
    """INFO [section ...]: the default sections, ``all``/``everything``, or those named."""
    names = [w.decode("ascii", "replace") for w in wanted]
    if not names or "default" in names:
        chosen = list(_DEFAULT)
    elif "all" in names or "everything" in names:
        chosen = list(_SECTIONS)
    else:
        chosen = [n for n in _SECTIONS if n in names]
    blocks = []
    for key in chosen:
        title, lines = _SECTIONS[key]
        blocks.append("\r\n".join([f"# {title}", *lines(server)]))
    return "\r\n\r\n".join(blocks) + "\r\n" if blocks else ""


def client_line(server: Server, client: Client) -> str:
    """One line of CLIENT LIST / CLIENT INFO."""
    now = time.monotonic()
    flags = ("b" if client.parked is not None else "") + ("x" if client.multi is not None else "")
    return (
        f"id={client.id} addr={client.addr} laddr={client.laddr} fd=-1 "
        f"name={client.name.decode('utf-8', 'replace')} age={int(now - client.created)} "
        f"idle={int(now - client.last_active)} flags={flags or 'N'} db={client.db} sub=0 psub=0 "
        f"ssub=0 multi={-1 if client.multi is None else len(client.multi)} watch=0 "
        f"qbuf={client.parser.pending_bytes} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 "
        f"obl=0 oll=0 omem={client.transport.get_write_buffer_size()} tot-mem=0 events=r "
        f"cmd={client.last_command.decode('utf-8', 'replace')} user=default redir=-1 "
        f"resp={client.proto} lib-name={client.lib_name.decode('utf-8', 'replace')} "
        f"lib-ver={client.lib_ver.decode('utf-8', 'replace')}"
    )
