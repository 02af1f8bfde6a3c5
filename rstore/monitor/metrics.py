"""A queue's health as Prometheus metrics: :class:`HealthCollector` turns each scrape into a
:func:`~rstore.monitor.health.sample_health` and its metric families, written by the
``prometheus-client`` package (its exposition format, its HTTP server).

Names follow Prometheus's conventions: a ``rstore_`` prefix, base units (seconds, bytes),
``_total`` on counters, one label per dimension (``stream``, ``group``, ``command``,
``error``).  Per stream: ``rstore_stream_length``, ``rstore_stream_entries_added_total``,
``rstore_stream_entries_deleted_total`` (deleted or trimmed),
``rstore_stream_last_entry_age_seconds``; per group: ``rstore_group_lag``,
``rstore_group_pending``, ``rstore_group_delivered_total``, ``rstore_group_consumers``,
``rstore_group_consumers_alive``,
``rstore_group_oldest_pending_seconds`` (the oldest pending entry's age, from its ID) and
``rstore_group_oldest_pending_idle_seconds`` (since it was last delivered); the store's files
and log flushes; from a server, its clients, commands and errors (INFO's fields).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import rstore

from .health import HealthSample, HealthSource, sample_health

__all__ = ["HealthCollector", "metric_families", "metrics_text", "serve_metrics"]

_STREAM = ["stream"]
_GROUP = ["stream", "group"]


class HealthCollector(Collector):
    """Each ``collect()`` (a scrape) takes a new sample of ``source``; ``pattern`` selects
    the streams (a glob; all when ``None``)."""

    def __init__(self, source: HealthSource, pattern: bytes | None = None) -> None:
        self._source = source
        self._pattern = pattern
        self._lock = threading.Lock()  # one sample at a time, however many scrape at once

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            sample = sample_health(self._source, self._pattern)
        yield from metric_families(sample)


def metrics_text(source: HealthSource, pattern: bytes | None = None) -> bytes:
    """One sample of ``source`` in Prometheus's text exposition format (``rstore metrics``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HealthCollector(source, pattern))
    return generate_latest(registry)


def serve_metrics(
    source: HealthSource, port: int, addr: str = "127.0.0.1", pattern: bytes | None = None
) -> tuple[Any, threading.Thread]:
    """Serve ``/metrics`` over HTTP on ``addr:port`` from a daemon thread (prometheus-client's
    server; port 0 picks a free one: ``server.server_port``).  Returns ``(server, thread)``;
    ``server.shutdown()`` stops it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HealthCollector(source, pattern))
    server, thread = start_http_server(port, addr, registry)
    return server, thread


def metric_families(sample: HealthSample) -> list[Metric]:
    """The metric families of one sample (see the module docstring)."""
    families = _stream_families(sample) + _group_families(sample)
    usage = sample.usage if sample.usage is not None else _usage_of_info(sample.info)
    if usage is not None:
        families += _usage_families(usage)
    if sample.info:
        families += _server_families(sample.info)
    return families


def _stream_families(sample: HealthSample) -> list[Metric]:
    length = GaugeMetricFamily("rstore_stream_length", "Entries in the stream.", labels=_STREAM)
    added = CounterMetricFamily(
        "rstore_stream_entries_added", "Entries ever added to the stream.", labels=_STREAM
    )
    deleted = CounterMetricFamily(
        "rstore_stream_entries_deleted",
        "Entries deleted or trimmed from the stream (entries added minus its length).",
        labels=_STREAM,
    )
    age = GaugeMetricFamily(
        "rstore_stream_last_entry_age_seconds",
        "Seconds since the time of the stream's last ID (its newest entry).",
        labels=_STREAM,
    )
    for stream in sample.streams:
        label = [_label(stream.key)]
        length.add_metric(label, stream.length)
        added.add_metric(label, stream.entries_added)
        deleted.add_metric(label, max(stream.entries_added - stream.length, 0))
        last_age = stream.age_ms(sample.now_ms)
        if last_age is not None:
            age.add_metric(label, last_age / 1000)
    count = GaugeMetricFamily("rstore_streams", "Streams sampled.", value=len(sample.streams))
    return [count, length, added, deleted, age]


def _group_families(sample: HealthSample) -> list[Metric]:
    def gauge(name: str, text: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, text, labels=_GROUP)

    lag = gauge("rstore_group_lag", "Entries of the stream not yet delivered to the group.")
    pending = gauge("rstore_group_pending", "Entries delivered and not acknowledged.")
    delivered = CounterMetricFamily(
        "rstore_group_delivered", "Entries delivered to the group (its read counter).",
        labels=_GROUP,
    )  # fmt: skip
    consumers = gauge("rstore_group_consumers", "Consumers of the group.")
    alive = gauge("rstore_group_consumers_alive", "Consumers that read in the last minute.")
    oldest = gauge("rstore_group_oldest_pending_seconds",
                   "Age of the oldest pending entry, from the time of its ID.")  # fmt: skip
    idle = gauge("rstore_group_oldest_pending_idle_seconds",
                 "Seconds since the oldest pending entry was last delivered.")  # fmt: skip
    for stream in sample.streams:
        for group in stream.groups:
            label = [_label(stream.key), _label(group.name)]
            if group.lag is not None:
                lag.add_metric(label, group.lag)
            pending.add_metric(label, group.pending)
            if group.entries_read is not None:
                delivered.add_metric(label, group.entries_read)
            consumers.add_metric(label, group.consumers)
            alive.add_metric(label, group.consumers_alive)
            age = group.oldest_pending_age_ms(sample.now_ms)
            if age is not None and group.oldest_pending_idle_ms is not None:
                oldest.add_metric(label, age / 1000)
                idle.add_metric(label, group.oldest_pending_idle_ms / 1000)
    return [lag, pending, delivered, consumers, alive, oldest, idle]


def _usage_families(usage: rstore.StoreUsage) -> list[Metric]:
    return [
        GaugeMetricFamily("rstore_data_file_bytes", "Size of the store's data file.",
                          value=usage.data_bytes),
        GaugeMetricFamily("rstore_live_bytes", "Bytes of the data file's pages in use.",
                          value=usage.live_bytes),
        GaugeMetricFamily("rstore_log_file_bytes", "Size of the write-ahead log.",
                          value=usage.log_bytes),
        CounterMetricFamily("rstore_log_flushes", "Flushes (fsync) of the write-ahead log "
                            "made by the sampled process.", value=usage.flushes),
    ]  # fmt: skip


def _usage_of_info(info: dict[str, dict[str, str]]) -> rstore.StoreUsage | None:
    """A server's store files, from the ``rstore_*`` fields of its INFO persistence section
    (``rstore serve``; Valkey has none)."""
    fields = info.get("persistence", {})
    names = ("rstore_data_bytes", "rstore_live_bytes", "rstore_log_bytes", "rstore_log_flushes")
    if not all(name in fields for name in names):
        return None
    return rstore.StoreUsage(*(int(fields[name]) for name in names))


def _server_families(info: dict[str, dict[str, str]]) -> list[Metric]:
    clients, stats = info.get("clients", {}), info.get("stats", {})
    families: list[Metric] = []
    for name, text, value in (
        ("rstore_connected_clients", "Clients connected.", clients.get("connected_clients")),
        ("rstore_blocked_clients", "Clients blocked in a read.", clients.get("blocked_clients")),
    ):
        if value is not None:
            families.append(GaugeMetricFamily(name, text, value=float(value)))
    for name, text, value in (
        ("rstore_commands_processed", "Commands processed.",
         stats.get("total_commands_processed")),
        ("rstore_error_replies", "Error replies sent.", stats.get("total_error_replies")),
        ("rstore_connections_received", "Connections accepted.",
         stats.get("total_connections_received")),
    ):  # fmt: skip
        if value is not None:
            families.append(CounterMetricFamily(name, text, value=float(value)))
    return (
        families
        + _commandstats(info.get("commandstats", {}))
        + _errorstats(info.get("errorstats", {}))
    )


def _commandstats(section: dict[str, str]) -> list[Metric]:
    calls = CounterMetricFamily("rstore_commands", "Calls of each command.", labels=["command"])
    seconds = CounterMetricFamily(
        "rstore_command_seconds", "Time spent in each command.", labels=["command"]
    )
    failed = CounterMetricFamily(
        "rstore_command_failures", "Calls of each command that were rejected or failed.",
        labels=["command"],
    )  # fmt: skip
    for name, value in section.items():
        fields = _fields(value)
        command = [name.removeprefix("cmdstat_")]
        calls.add_metric(command, fields.get("calls", 0))
        seconds.add_metric(command, fields.get("usec", 0) / 1e6)
        failed.add_metric(command, fields.get("rejected_calls", 0) + fields.get("failed_calls", 0))
    return [calls, seconds, failed]


def _errorstats(section: dict[str, str]) -> list[Metric]:
    errors = CounterMetricFamily("rstore_errors", "Error replies by error code.", labels=["error"])
    for name, value in section.items():
        errors.add_metric([name.removeprefix("errorstat_")], _fields(value).get("count", 0))
    return [errors]


def _fields(value: str) -> dict[str, float]:
    """``calls=3,usec=10,usec_per_call=3.33`` as numbers."""
    out = {}
    for part in value.split(","):
        name, _, number = part.partition("=")
        try:
            out[name] = float(number)
        except ValueError:
            continue
    return out


def _label(name: bytes) -> str:
    """A stream or group name as a label value: UTF-8, other bytes as ``\\xHH``."""
    return name.decode("utf-8", "backslashreplace")
