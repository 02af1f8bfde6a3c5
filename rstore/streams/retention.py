"""Retention policies (rstore's own; Redis has none): limits a stream keeps without any
producer passing MAXLEN or MINID, modelled on NATS JetStream's stream limits and Kafka's
``retention.ms``.

A policy names streams by a Redis glob pattern (or an exact name).  The policy of a stream is
the one whose pattern is its exact name, else the longest matching pattern (ties: the
bytewise smaller).  It is applied as ``~`` trimming is -- whole nodes from the head, at most
:func:`rstore.streams.trim.default_limit` entries per pass -- by every XADD that opens a node
and by each ``append_entries`` call, and fully to the matching streams when it is set.  Under
``acked`` a node goes only when no consumer group references any of its entries, and the walk
stops at the first node that stays (entries are never removed out of order).
"""

from __future__ import annotations

from rstore import glob
from rstore.ids import ID
from rstore.model import Retention
from rstore.storage.records import retention_records as records
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef, keys, lookup_stream
from rstore.streams.references import Policy
from rstore.streams.trim import TrimSpec, trim

__all__ = ["apply", "clear", "node_bytes", "policies", "policy_for", "set_policy"]

_CODES = {Policy.KEEPREF: 0, Policy.DELREF: 1, Policy.ACKED: 2}
_POLICIES = {code: policy for policy, code in _CODES.items()}


def _retention(pattern: bytes, packed: records.Packed) -> Retention:
    age, entries, code, size = packed
    return Retention(pattern, age, entries, _POLICIES[code].value.decode(), size)


def policies(txn: Txn) -> list[Retention]:
    """Every policy, in pattern order."""
    return [_retention(pattern, packed) for pattern, packed in records.items(txn)]


def policy_for(txn: Txn, name: bytes) -> Retention | None:
    """The policy of the stream ``name``: its exact name's, else the longest matching
    pattern's (ties: the bytewise smaller pattern), or ``None``."""
    best: tuple[bytes, records.Packed] | None = None
    for pattern, packed in records.items(txn):
        if pattern == name:
            return _retention(pattern, packed)
        if glob.match(pattern, name) and (best is None or len(pattern) > len(best[0])):
            best = (pattern, packed)
    return None if best is None else _retention(*best)


def set_policy(txn: Txn, policy: Retention, now_ms: int) -> dict[bytes, int]:
    """Store ``policy`` (replacing one of the same pattern) and apply it, without a work limit,
    to the streams it now governs; the entries removed from each."""
    if not 0 < len(policy.pattern) <= records.MAX_PATTERN:
        raise ValueError(f"a pattern is 1 to {records.MAX_PATTERN} bytes")
    ref = Policy.parse(policy.ref.lower().encode())
    if ref is None:
        raise ValueError(f"ref must be keepref, delref or acked, not {policy.ref!r}")
    limits = (
        ("max_age_ms", policy.max_age_ms), ("max_entries", policy.max_entries),
        ("max_bytes", policy.max_bytes),
    )  # fmt: skip
    for what, value in limits:
        if value is not None and not 0 <= value < (1 << 63):
            raise ValueError(f"{what} must be a non-negative integer, not {value!r}")
    packed = (policy.max_age_ms, policy.max_entries, _CODES[ref], policy.max_bytes)
    records.put(txn, policy.pattern, packed)
    stored = _retention(policy.pattern, packed)
    names = set(keys(txn, policy.pattern))
    if lookup_stream(txn, policy.pattern) is not None:
        names.add(policy.pattern)  # an exact name with glob characters in it
    return {
        name: apply(txn, name, now_ms, unlimited=True)
        for name in sorted(names)
        if policy_for(txn, name) == stored
    }


def clear(txn: Txn, pattern: bytes) -> bool:
    """Remove the policy of ``pattern``; whether there was one."""
    return records.delete(txn, pattern)


def node_bytes(txn: Txn, name: bytes) -> int:
    """The listpack bytes of the stream ``name``'s nodes (what a maximum in bytes counts);
    0 when there is no such stream."""
    stream = lookup_stream(txn, name)
    return 0 if stream is None else txn.stream_bytes(stream.handle)


def apply(txn: Txn, name: bytes, now_ms: int, *, unlimited: bool = False) -> int:
    """Trim the stream ``name`` as its policy says (nothing without one); entries removed."""
    policy = policy_for(txn, name)
    if policy is None:
        return 0
    stream = lookup_stream(txn, name)
    if stream is None or not stream.meta.length:
        return 0
    return sum(trim(txn, stream, spec) for spec in _specs(policy, stream, now_ms, unlimited))


def _specs(policy: Retention, stream: StreamRef, now_ms: int, unlimited: bool) -> list[TrimSpec]:
    ref = Policy.parse(policy.ref.encode()) or Policy.KEEPREF
    limit = 0 if unlimited else None
    specs = []
    if policy.max_entries is not None and stream.meta.length > policy.max_entries:
        specs.append(TrimSpec("maxlen", maxlen=policy.max_entries, approx=True, limit=limit,
                              policy=ref, retention=True))  # fmt: skip
    if policy.max_age_ms is not None:
        oldest: ID = (max(now_ms - policy.max_age_ms, 0), 0)
        specs.append(TrimSpec("minid", minid=oldest, approx=True, limit=limit, policy=ref,
                              retention=True))  # fmt: skip
    if policy.max_bytes is not None:
        specs.append(TrimSpec("maxbytes", maxbytes=policy.max_bytes, approx=True, limit=limit,
                              policy=ref, retention=True))  # fmt: skip
    return specs
