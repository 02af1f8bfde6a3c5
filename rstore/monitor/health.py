"""A queue's health, sampled through Redis commands: per stream its length, counters and last
ID; per consumer group its lag, pending count, read counter, consumers and its oldest pending
entry.  The same functions read an embedded store (:meth:`rstore.Store.execute`) and any
server that speaks RESP (``rstore serve``, Valkey, Redis) through redis-py, so that ``rstore
top``, ``rstore metrics`` and a server's ``/metrics`` say the same thing the same way.

A sample only reads: ``SCAN ... TYPE stream``, ``XINFO STREAM``, ``XINFO GROUPS``, ``XINFO
CONSUMERS``, ``XPENDING key group - + 1`` (and ``INFO`` from a server).  Each command sees the
store at its own moment, not one snapshot of the whole store; rates come from two samples
(:func:`health_rates`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import rstore

if TYPE_CHECKING:
    from rstore import Store

__all__ = [
    "ALIVE_MS",
    "GroupHealth",
    "GroupRates",
    "HealthSample",
    "HealthSource",
    "Runner",
    "StreamHealth",
    "StreamRates",
    "health_rates",
    "parse_info",
    "reply_id",
    "reply_map",
    "sample_health",
    "server_health_source",
    "store_health_source",
]

#: A command runner: argv in, the raw reply out (bytes, ints, lists), errors raised.
Runner = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class HealthSource:
    """Where samples come from: ``run`` runs a command; ``refused`` is the class of the
    error it raises for a command the store refused (a key deleted meanwhile); ``info``
    gives INFO's text (a server; ``None`` for an embedded store); ``usage`` the store's
    files (an embedded store, or a server's own store); ``name`` what titles call it (the
    store's path, the server's URL without its password)."""

    run: Runner
    refused: type[Exception]
    info: Callable[[], str] | None = None
    usage: Callable[[], rstore.StoreUsage] | None = None
    name: str = ""
    #: the errors that say the source cannot be read now (a server gone): a sample raises
    #: :class:`rstore.RStoreError` for them, naming the source
    failures: tuple[type[Exception], ...] = ()


def store_health_source(store: Store) -> HealthSource:
    """Samples of an embedded store (read-only is enough)."""
    name = os.fsencode(store.path).decode("utf-8", "backslashreplace")
    return HealthSource(store.execute, rstore.ResponseError, usage=store.usage, name=name)


def server_health_source(url: str) -> HealthSource:
    """Samples of a server (``redis://host:port/db``, ``unix:///path``) through redis-py
    (``pip install 'rstore[redis]'``), replies left raw."""
    from rstore.replay.remote import connect, response_error, shown_url  # noqa: PLC0415

    client, failures = connect(url)
    for command in ("XINFO STREAM", "XINFO GROUPS", "XINFO CONSUMERS", "XPENDING", "SCAN",
                    "INFO"):  # fmt: skip
        client.set_response_callback(command, lambda reply, **_: reply)
    info = lambda: _text(client.execute_command("INFO", "everything"))  # noqa: E731
    return HealthSource(
        client.execute_command, response_error(), info=info, name=shown_url(url),
        failures=failures,
    )  # fmt: skip


#: A consumer counts as alive when it tried to read or claim within this many milliseconds
#: (XINFO CONSUMERS ``idle``).  A consumer blocked for longer in one call looks idle too: Redis
#: keeps its seen-time at the moment the call began.
ALIVE_MS = 60_000

_SCAN_COUNT = 1000


@dataclass(frozen=True, slots=True)
class GroupHealth:
    """A consumer group at the moment it was sampled.  ``lag``: entries of the stream the
    group has not been delivered yet (``None`` when Redis cannot tell, after deletions);
    ``entries_read``: the group's read counter (``None`` when unknown); the oldest pending
    entry is the first by ID, ``oldest_pending_idle_ms`` the time since it was last
    delivered."""

    name: bytes
    lag: int | None
    pending: int
    entries_read: int | None
    last_delivered_id: bytes
    consumers: int
    consumers_alive: int
    oldest_pending_id: bytes | None
    oldest_pending_idle_ms: int | None

    def oldest_pending_age_ms(self, now_ms: int) -> int | None:
        """How long before ``now_ms`` the oldest pending entry was added (its ID's time)."""
        if self.oldest_pending_id is None:
            return None
        return max(now_ms - reply_id(self.oldest_pending_id)[0], 0)


@dataclass(frozen=True, slots=True)
class StreamHealth:
    """A stream at the moment it was sampled: ``entries_added`` counts every entry ever added
    (deleted and trimmed ones too), ``last_id`` the last ID generated."""

    key: bytes
    length: int
    entries_added: int
    last_id: bytes
    groups: tuple[GroupHealth, ...] = ()

    def age_ms(self, now_ms: int) -> int | None:
        """Milliseconds since the last ID's time (``None`` for a stream never written)."""
        ms = reply_id(self.last_id)[0]
        return None if ms == 0 and self.entries_added == 0 else max(now_ms - ms, 0)


@dataclass(frozen=True, slots=True)
class HealthSample:
    """Every stream (matching the sample's pattern), with the time it was taken
    (``now_ms``, Unix milliseconds of this machine's clock); from a server its INFO sections
    (section name in lower case -> field -> text value), from a store its files."""

    now_ms: int
    streams: tuple[StreamHealth, ...]
    info: dict[str, dict[str, str]] = field(default_factory=dict)
    usage: rstore.StoreUsage | None = None


@dataclass(frozen=True, slots=True)
class GroupRates:
    """A group's rates between two samples, per second.  ``delivered``: new entries handed
    to its consumers (its read counter's growth; redeliveries and claims not counted);
    ``acknowledged``: delivered minus the growth of its pending entries -- XACK's rate when
    nothing else changes the PEL (a claim does not; XNACK, deleting or trimming pending
    entries, and NOACK reads make it an estimate)."""

    delivered: float
    acknowledged: float


@dataclass(frozen=True, slots=True)
class StreamRates:
    """A stream's rates between two samples: entries added per second, and its groups'."""

    added: float
    groups: dict[bytes, GroupRates]


def sample_health(source: HealthSource, pattern: bytes | None = None) -> HealthSample:
    """Sample every stream whose name matches the glob ``pattern`` (all when ``None``), and
    the server's INFO and the store's files when the source has them.  A stream deleted
    between the listing and its own commands is left out."""
    now_ms = time.time_ns() // 1_000_000
    try:
        streams = [_stream(source, key) for key in sorted(_stream_keys(source.run, pattern))]
        info = parse_info(source.info()) if source.info is not None else {}
    except source.failures as exc:
        raise rstore.RStoreError(f"cannot read {source.name}: {exc}") from exc
    usage = source.usage() if source.usage is not None else None
    return HealthSample(now_ms, tuple(s for s in streams if s is not None), info, usage)


def health_rates(before: HealthSample, after: HealthSample) -> dict[bytes, StreamRates]:
    """Per stream present in both samples, its rates between them (nothing when no time
    passed); a counter that went back (a stream deleted and made again) counts from zero."""
    seconds = (after.now_ms - before.now_ms) / 1000
    if seconds <= 0:
        return {}
    old = {s.key: s for s in before.streams}
    out = {}
    for stream in after.streams:
        prior = old.get(stream.key)
        if prior is None:
            continue
        groups = {g.name: g for g in prior.groups}
        out[stream.key] = StreamRates(
            _growth(prior.entries_added, stream.entries_added) / seconds,
            {g.name: _group_rates(groups[g.name], g, seconds) for g in stream.groups
             if g.name in groups},
        )  # fmt: skip
    return out


def parse_info(text: str) -> dict[str, dict[str, str]]:
    """INFO's text as ``{section: {field: value}}`` (section names in lower case)."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            current = sections.setdefault(line[1:].strip().lower(), {})
        elif ":" in line:
            name, _, value = line.partition(":")
            current[name] = value.strip()
    return sections


# ---------------------------------------------------------------------------------- reading


def _stream_keys(run: Runner, pattern: bytes | None) -> Iterator[bytes]:
    cursor: Any = b"0"
    match = [] if pattern is None else ["MATCH", pattern]
    while True:
        cursor, keys = run("SCAN", cursor, *match, "COUNT", _SCAN_COUNT, "TYPE", "stream")
        yield from (_bytes(key) for key in keys)
        if int(cursor) == 0:
            return


def _stream(source: HealthSource, key: bytes) -> StreamHealth | None:
    run = source.run
    try:
        info = reply_map(run("XINFO", "STREAM", key))
        groups = tuple(_group(run, key, reply_map(g)) for g in run("XINFO", "GROUPS", key))
    except source.refused as exc:  # deleted meanwhile: no such key, or NOGROUP
        if "no such key" in str(exc) or "NOGROUP" in str(exc):
            return None
        raise
    length = int(info[b"length"])
    return StreamHealth(
        key, length, int(info.get(b"entries-added", length)),
        _bytes(info[b"last-generated-id"]), groups,
    )  # fmt: skip


def _group(run: Runner, key: bytes, info: dict[bytes, Any]) -> GroupHealth:
    name = _bytes(info[b"name"])
    pending = int(info[b"pending"])
    alive = 0
    consumers = run("XINFO", "CONSUMERS", key, name) if int(info[b"consumers"]) else []
    for consumer in consumers:
        alive += int(reply_map(consumer)[b"idle"]) <= ALIVE_MS
    oldest_id = oldest_idle = None
    if pending:
        first = run("XPENDING", key, name, "-", "+", 1)
        if first:
            oldest_id, oldest_idle = _bytes(first[0][0]), int(first[0][2])
    return GroupHealth(
        name, _optional_int(info.get(b"lag")), pending,
        _optional_int(info.get(b"entries-read")), _bytes(info[b"last-delivered-id"]),
        len(consumers), alive, oldest_id, oldest_idle,
    )  # fmt: skip


def _group_rates(before: GroupHealth, after: GroupHealth, seconds: float) -> GroupRates:
    delivered = _growth(before.entries_read or 0, after.entries_read or 0)
    acknowledged = max(delivered - (after.pending - before.pending), 0)
    return GroupRates(delivered / seconds, acknowledged / seconds)


def _growth(before: int, after: int) -> int:
    return after - before if after >= before else after


def reply_map(flat: Sequence[Any] | dict[Any, Any]) -> dict[bytes, Any]:
    """A reply of alternating names and values (XINFO's), or a RESP3 map, as a dict with
    names as bytes."""
    if isinstance(flat, dict):  # a RESP3 map
        return {_bytes(k): v for k, v in flat.items()}
    return {_bytes(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


def _bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def reply_id(raw: bytes) -> tuple[int, int]:
    """An ``ms-seq`` ID as a reply gives it, as ``(ms, seq)``."""
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)
