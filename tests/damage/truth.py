"""Every answer a user can read from the population, as ``Store.execute`` replies.

A :class:`Read` is one command and a normaliser that drops what changes with time alone (the
``idle`` and ``inactive`` fields of XINFO CONSUMERS, the idle time of XPENDING's extended form)
and the order KEYS does not promise.  Absolute times (delivery and seen times) stay: they
cannot change by themselves.  :func:`record` runs every read on the intact store; the battery
runs the same reads on a damaged copy and compares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rstore

from .population import Population

Normalise = Callable[[Any], Any]
#: What a store must answer: read name -> normalised reply.
Truth = dict[str, Any]

_TIME_DEPENDENT = (b"idle", b"inactive")


def _same(reply: Any) -> Any:
    return reply


def _consumers(reply: Any) -> Any:
    if not isinstance(reply, list):
        return reply
    out = []
    for consumer in reply:
        if not isinstance(consumer, list):
            out.append(consumer)
            continue
        pairs = zip(consumer[0::2], consumer[1::2])
        out.append([x for k, v in pairs if k not in _TIME_DEPENDENT for x in (k, v)])
    return out


def _pending_range(reply: Any) -> Any:
    if not isinstance(reply, list):
        return reply
    return [row[:2] + row[3:] if isinstance(row, list) else row for row in reply]


def _sorted(reply: Any) -> Any:
    return sorted(reply) if isinstance(reply, list) else reply


@dataclass(frozen=True)
class Read:
    """One read: a short name for reports, the argv, and the normaliser of its reply."""

    name: str
    argv: tuple[Any, ...]
    normalise: Normalise = _same

    def run(self, store: rstore.Store) -> Any:
        return self.normalise(store.execute(*self.argv))


def key_label(key: bytes) -> str:
    """A short printable name for a key (the long one is 600 bytes)."""
    text = key.decode("latin-1")
    return text if len(text) <= 24 else f"{text[:16]}..({len(key)}B)"


def reads(pop: Population) -> list[Read]:
    """Every read of the population, keyspace first, then key by key."""
    out = [
        Read("keys", ("KEYS", "*"), _sorted),
        Read("dbsize", ("DBSIZE",)),
    ]
    for key in pop.keys:
        k = key_label(key)
        out += [
            Read(f"type[{k}]", ("TYPE", key)),
            Read(f"exists[{k}]", ("EXISTS", key)),
            Read(f"xlen[{k}]", ("XLEN", key)),
            Read(f"xrange[{k}]", ("XRANGE", key, "-", "+")),
            Read(f"xrevrange[{k}]", ("XREVRANGE", key, "+", "-")),
            Read(f"xinfo-stream[{k}]", ("XINFO", "STREAM", key)),
            Read(f"xinfo-full[{k}]", ("XINFO", "STREAM", key, "FULL", "COUNT", 0)),
            Read(f"xinfo-groups[{k}]", ("XINFO", "GROUPS", key)),
        ]
        for group in pop.groups[key]:
            g = key_label(group)
            out += [
                Read(f"xinfo-consumers[{k}/{g}]", ("XINFO", "CONSUMERS", key, group), _consumers),
                Read(f"xpending[{k}/{g}]", ("XPENDING", key, group)),
                Read(
                    f"xpending-range[{k}/{g}]",
                    ("XPENDING", key, group, "-", "+", 1 << 40),
                    _pending_range,
                ),
            ]
    return out


def record(store: rstore.Store, pop: Population) -> Truth:
    """The intact store's answers."""
    return {read.name: read.run(store) for read in reads(pop)}


def first_difference(expected: Any, got: Any, path: str = "") -> str:
    """Where two replies first differ, in a line short enough for a report."""
    if isinstance(expected, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
        return f"{path or 'reply'}: {len(expected)} items expected, {len(got)} got"
    if isinstance(expected, bytes) and isinstance(got, bytes) and len(expected) > 16:
        at = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), len(got))
        window = slice(max(at - 4, 0), at + 12)
        return (
            f"{path or 'reply'} ({len(expected)} bytes) from byte {at}: "
            f"expected {_short(expected[window])}, got {_short(got[window])} ({len(got)} bytes)"
        )
    return f"{path or 'reply'}: expected {_short(expected)}, got {_short(got)}"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
