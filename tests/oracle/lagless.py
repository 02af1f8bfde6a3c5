"""Comparisons that leave out a consumer group's ``lag`` and ``entries-read``: rstore computes
them as Redis 8.2.3 does (docs/semantics.md, "Consumer group lag"), and Valkey 8.0 keeps the
older rules, so beside valkey-server those two fields are not compared (the tests beside
Redis 8.2.3 compare them exactly)."""

from __future__ import annotations

from typing import Any

from make_rdb_fixtures import without_fields

from .harness import Oracle, pairs_to_dict
from .randgen import Argv
from .resp import Arg
from .timed import timed_difference

__all__ = ["lagless_difference", "same", "same_state", "without_lag"]

_LAG_FIELDS = (b"lag", b"entries-read")


def without_lag(reply: Any) -> Any:
    """``reply`` with every ``lag`` / ``entries-read`` pair of a group's description left out."""
    return without_fields(reply, _LAG_FIELDS)


def lagless_difference(argv: Argv, expected: Any, actual: Any) -> str | None:
    """:func:`~.timed.timed_difference` of the replies without their lag fields."""
    return timed_difference(argv, without_lag(expected), without_lag(actual))


def same(oracle: Oracle, *argv: Arg) -> Any:
    """Run ``argv`` on both sides; the replies must match (times within the tolerance, lag and
    entries-read left out)."""
    expected, actual = oracle.pair(*argv)
    difference = lagless_difference(argv, expected, actual)
    assert difference is None, f"{argv}: {difference}\n  server: {expected}\n  rstore: {actual}"
    return expected


def same_state(oracle: Oracle) -> None:
    """:meth:`Oracle.assert_same_state` without the lag fields: every key, its entries, groups,
    consumers and pending entries alike on both sides."""
    oracle.both("DBSIZE")
    for key in sorted(oracle.both_keys("*")):
        oracle.both("TYPE", key)
        full = same(oracle, "XINFO", "STREAM", key, "FULL", "COUNT", "0")
        oracle.both("XRANGE", key, "-", "+")
        groups = pairs_to_dict(full).get(b"groups") if isinstance(full, list) else None
        if groups:
            same(oracle, "XINFO", "GROUPS", key)
        for group in groups or ():
            name = pairs_to_dict(group)[b"name"]
            same(oracle, "XINFO", "CONSUMERS", key, name)
            oracle.both("XPENDING", key, name)
            same(oracle, "XPENDING", key, name, "-", "+", 1 << 40)
