"""Comparisons that leave out a consumer group's ``lag`` and ``entries-read``: rstore computes
them as Redis 8.2.3 does (docs/semantics.md, "Consumer group lag"), and Valkey 8.0 keeps the
older rules, so beside valkey-server those two fields are not compared (the tests beside
Redis 8.2.3 compare them exactly)."""

from __future__ import annotations

from typing import Any

from make_rdb_fixtures import without_fields

from .harness import Oracle
from .randgen import Argv
from .timed import timed_difference

__all__ = ["lagless_difference", "same_state", "without_lag"]

_LAG_FIELDS = (b"lag", b"entries-read")


def without_lag(reply: Any) -> Any:
    """``reply`` with every ``lag`` / ``entries-read`` pair of a group's description left out."""
    return without_fields(reply, _LAG_FIELDS)


def lagless_difference(argv: Argv, expected: Any, actual: Any) -> str | None:
    """:func:`~.timed.timed_difference` of the replies without their lag fields."""
    return timed_difference(argv, without_lag(expected), without_lag(actual))


def same_state(oracle: Oracle) -> None:
    """:meth:`Oracle.assert_same_state` without the lag fields."""
    oracle.assert_same_state(normalize=without_lag)
