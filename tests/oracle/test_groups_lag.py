"""``entries-read`` and ``lag`` (§1.7): every scenario step is followed by XINFO GROUPS and the
groups of XINFO STREAM FULL on both sides -- beside **Redis 8.2.3**, whose rules rstore follows
(docs/semantics.md, "Consumer group lag"): Valkey 8.0.1 still computes these with the 7.0
algorithm, which ignores trimming and lets ENTRIESREAD go past the entries added."""

from __future__ import annotations

import pytest

from .harness import Oracle

pytestmark = pytest.mark.oracle

Step = tuple[str | int, ...]


def read(group: str, count: int | None = None, key: str = "x") -> Step:
    head: tuple[str | int, ...] = ("COUNT", count) if count is not None else ()
    return ("XREADGROUP", "GROUP", group, "c", *head, "STREAMS", key, ">")


def add(*ids: str, key: str = "x") -> list[Step]:
    return [("XADD", key, sid, "f", sid) for sid in ids]


SCENARIOS: dict[str, list[Step]] = {
    "tombstone in the middle": [
        *add("1-0", "2-0", "3-0", "4-0", "5-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        ("XDEL", "x", "3-0"),
        read("g1", 1),
        read("g1", 1),
        read("g1", 1),
        read("g1", 1),
    ],
    "tombstones around a reading group": [
        ("XGROUP", "CREATE", "x", "g1", "$", "MKSTREAM"),
        *add("1-0"),
        read("g1"),
        *add("2-0", "3-0"),
        ("XDEL", "x", "2-0"),
        ("XDEL", "x", "1-0"),
        read("g1"),
        *add("4-0"),
        read("g1"),
    ],
    "trimming below a group": [
        *add("1-0", "2-0", "3-0", "4-0", "5-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        read("g1", 1),
        ("XTRIM", "x", "MAXLEN", "1"),
        ("XTRIM", "x", "MAXLEN", "0"),
        *add("6-0"),
        read("g1"),
    ],
    "empty stream with history": [
        ("XGROUP", "CREATE", "x", "g1", "0", "MKSTREAM"),
        *add("1-0"),
        ("XDEL", "x", "1-0"),
        ("XGROUP", "CREATE", "x", "g2", "0"),
        ("XGROUP", "CREATE", "x", "g3", "$"),
        *add("2-0"),
        read("g1"),
        read("g2"),
    ],
    "entriesread beyond entries-added": [
        *add("1-0", "2-0", "3-0"),
        ("XGROUP", "CREATE", "x", "g1", "0", "ENTRIESREAD", "99999"),
        ("XGROUP", "CREATE", "x", "g2", "$", "ENTRIESREAD", "1"),
        ("XGROUP", "CREATE", "x", "g3", "2-0", "ENTRIESREAD", "-1"),
        read("g1", 1),
        *add("4-0"),
        read("g2"),
        read("g3"),
        ("XGROUP", "SETID", "x", "g1", "0", "ENTRIESREAD", "0"),
        read("g1", 2),
    ],
    "setid without entriesread": [
        *add("1-0", "2-0", "3-0", "4-0"),
        ("XGROUP", "CREATE", "x", "g1", "0", "ENTRIESREAD", "0"),
        read("g1", 2),
        ("XGROUP", "SETID", "x", "g1", "1-0"),
        ("XGROUP", "SETID", "x", "g1", "$"),
        ("XGROUP", "SETID", "x", "g1", "+"),
        ("XGROUP", "SETID", "x", "g1", "-"),
        read("g1", 1),
        ("XGROUP", "SETID", "x", "g1", "2-0", "ENTRIESREAD", "2"),
        read("g1"),
    ],
    "group created in the future": [
        *add("1-0", "2-0"),
        ("XGROUP", "CREATE", "x", "g1", "50-0"),
        ("XGROUP", "CREATE", "x", "g2", "1-0"),
        ("XGROUP", "CREATE", "x", "g3", "0-1"),
        *add("60-0"),
        read("g1"),
        read("g2"),
        read("g3"),
    ],
    "xsetid and lag": [
        *add("1-0", "2-0", "3-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        read("g1", 1),
        ("XSETID", "x", "10-0", "ENTRIESADDED", "20", "MAXDELETEDID", "5-0"),
        read("g1", 1),
        ("XSETID", "x", "10-0", "ENTRIESADDED", "3", "MAXDELETEDID", "1-0"),
        read("g1"),
        *add("11-0"),
        read("g1"),
    ],
    "claim lastid keeps entries-read": [
        *add("1-0", "2-0", "3-0", "4-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        read("g1", 1),
        ("XCLAIM", "x", "g1", "c", "0", "LASTID", "3-0"),
        read("g1"),
    ],
    "noack reads count as well": [
        *add("1-0", "2-0", "3-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        ("XREADGROUP", "GROUP", "g1", "c", "NOACK", "COUNT", "2", "STREAMS", "x", ">"),
        ("XDEL", "x", "3-0"),
        *add("4-0"),
        read("g1"),
    ],
    "xsetid below the groups": [
        *add("1-0", "2-0", "3-0"),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        ("XGROUP", "CREATE", "x", "g2", "$", "ENTRIESREAD", "3"),
        read("g1"),
        ("XTRIM", "x", "MAXLEN", "0"),
        ("XSETID", "x", "1-5"),
        *add("2-5"),
        read("g1"),
        read("g2"),
        *add("4-0"),
        read("g1"),
        ("XGROUP", "SETID", "x", "g1", "10-0", "ENTRIESREAD", "5"),
    ],
    "trim with tombstones": [
        *add(*[f"{i}-0" for i in range(1, 11)]),
        ("XGROUP", "CREATE", "x", "g1", "0"),
        ("XGROUP", "CREATE", "x", "g2", "0", "ENTRIESREAD", "0"),
        read("g1", 3),
        read("g2", 6),
        ("XDEL", "x", "5-0", "8-0"),
        ("XTRIM", "x", "MINID", "6"),
        read("g1", 1),
        read("g2", 1),
        ("XTRIM", "x", "MAXLEN", "1"),
        read("g1"),
        read("g2"),
    ],
}


@pytest.mark.parametrize("node_entries", [1, 100])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_lag_scenarios(oracle8: Oracle, name: str, node_entries: int) -> None:
    oracle8.set_node_limits(node_entries, None)
    for step in SCENARIOS[name]:
        oracle8.both(*step)
        oracle8.both("XINFO", "GROUPS", "x")
        oracle8.both_timed("XINFO", "STREAM", "x", "FULL")
    oracle8.assert_same_state()
    oracle8.check()
    oracle8.reopen()
    oracle8.both("XINFO", "GROUPS", "x")
