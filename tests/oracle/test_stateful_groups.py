"""Hypothesis state machine with consumer groups: the stream rules of :mod:`.test_stateful`
(XADD, XDEL, XTRIM, XSETID, XRANGE, XREAD, DEL, close/reopen) plus XGROUP, XREADGROUP, XACK,
XPENDING, XCLAIM, XAUTOCLAIM and XINFO GROUPS / CONSUMERS.

Every reply is compared (time fields within a tolerance, :mod:`.timed`); after every step the
invariants compare XINFO STREAM FULL and XINFO GROUPS of every key and require
``Store.check() == []``.  The oracle is Redis 8.2.3, whose lag rules rstore follows
(``test_random_groups.py`` runs group sequences beside valkey-server too).  Idle filters use
thresholds far from every delivery time (recent, or pushed back by ``IDLE 1000000`` / ``TIME
1``), so they are deterministic.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from .harness import Oracle
from .test_stateful import KEYS, StatefulBase, StreamMachine

pytestmark = pytest.mark.oracle

SETTINGS = settings(
    max_examples=30,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

keys = st.sampled_from(KEYS)
GROUP_NAMES = ("g1", "g2", "B")
groups = st.sampled_from(GROUP_NAMES)
consumers = st.sampled_from(["alice", "bob", "B", "a0", ""])
picks = st.lists(st.integers(0, 500), min_size=1, max_size=4)
idle_thresholds = st.sampled_from([0, -1, 500_000])
start_kinds = st.sampled_from(["$", "0", "0", "id", "id", "-", "+", "bad"])
entries_read = st.one_of(st.none(), st.sampled_from([-1, 0, 2, 50, 99999, -2]))


class GroupMachine(StreamMachine):
    """Adds to the stream model what each group has delivered (so acks and claims hit)."""

    def __init__(self, oracle: Oracle) -> None:
        super().__init__(oracle)
        self.delivered: dict[tuple[str, str], list[str]] = {}

    def run(self, *argv: Any) -> Any:
        return self.oracle.both_timed(*argv)

    # ------------------------------------------------------------------ helpers

    def start_id(self, key: str, kind: str, pick: int) -> str:
        if kind == "id":
            return self.id_text(key, pick, 0)
        return kind

    def pending_id(self, key: str, group: str, pick: int) -> str:
        delivered = self.delivered.get((key, group), [])
        if delivered and pick % 4:
            return delivered[pick % len(delivered)]
        return self.id_text(key, pick, pick % 2)

    def remember(self, group: str, reply: Any) -> None:
        if isinstance(reply, list):
            for key, entries in reply:
                if isinstance(entries, list):
                    seen = self.delivered.setdefault((key.decode(), group), [])
                    seen.extend(entry[0].decode() for entry in entries)
                    del seen[:-50]

    # ------------------------------------------------------------------ XGROUP

    @initialize(
        sizes=st.lists(st.integers(0, 12), min_size=len(KEYS), max_size=len(KEYS)),
        starts=st.lists(st.sampled_from(["0", "$", "3-0"]), min_size=3, max_size=3),
    )
    def streams_with_groups(self, sizes: list[int], starts: list[str]) -> None:
        """Start from streams that have entries and all three groups, so that most group
        rules find something to work on."""
        for key, size in zip(KEYS, sizes):
            for i in range(size):
                self.record(key, self.run("XADD", key, f"{i + 1}-{i % 2}", "f", str(i)))
            for group, start in zip(GROUP_NAMES, starts):
                self.run("XGROUP", "CREATE", key, group, start, "MKSTREAM")

    @rule(
        key=keys,
        group=groups,
        kind=start_kinds,
        pick=st.integers(0, 500),
        mkstream=st.booleans(),
        read=entries_read,
    )
    def xgroup_create(
        self, key: str, group: str, kind: str, pick: int, mkstream: bool, read: int | None
    ) -> None:
        argv: list[Any] = ["XGROUP", "CREATE", key, group, self.start_id(key, kind, pick)]
        argv += ["MKSTREAM"] if mkstream else []
        argv += [] if read is None else ["ENTRIESREAD", read]
        self.run(*argv)

    @rule(key=keys, group=groups, kind=start_kinds, pick=st.integers(0, 500), read=entries_read)
    def xgroup_setid(self, key: str, group: str, kind: str, pick: int, read: int | None) -> None:
        argv: list[Any] = ["XGROUP", "SETID", key, group, self.start_id(key, kind, pick)]
        self.run(*argv, *([] if read is None else ["ENTRIESREAD", read]))

    @rule(key=keys, group=groups, sub=st.sampled_from(["DESTROY", "CREATECONSUMER", "DELCONSUMER"]),
          consumer=consumers)  # fmt: skip
    def xgroup_other(self, key: str, group: str, sub: str, consumer: str) -> None:
        self.run("XGROUP", sub, key, group, *([] if sub == "DESTROY" else [consumer]))

    # ------------------------------------------------------------------ reading and acking

    @rule(
        chosen=st.lists(st.tuples(keys, st.integers(-1, 500)), min_size=1, max_size=2),
        group=groups,
        consumer=consumers,
        count=st.one_of(st.none(), st.integers(0, 4)),
        noack=st.booleans(),
    )
    def xreadgroup(
        self,
        chosen: list[tuple[str, int]],
        group: str,
        consumer: str,
        count: int | None,
        noack: bool,
    ) -> None:
        head: list[Any] = ["GROUP", group, consumer]
        head += [] if count is None else ["COUNT", count]
        head += ["NOACK"] if noack else []
        names = [k for k, _ in chosen]
        ids = [">" if p < 0 or p % 3 == 0 else self.id_text(k, p, -1) for k, p in chosen]
        reply = self.run("XREADGROUP", *head, "STREAMS", *names, *ids)
        if not noack:
            self.remember(group, reply)

    @rule(key=keys, group=groups, chosen=picks, bad=st.sampled_from([False] * 4 + [True]))
    def xack(self, key: str, group: str, chosen: list[int], bad: bool) -> None:
        ids = [self.pending_id(key, group, p) for p in chosen]
        self.run("XACK", key, group, *ids, *(["bad"] if bad else []))

    @rule(
        key=keys,
        group=groups,
        form=st.sampled_from(["summary", "range", "idle"]),
        low=st.integers(0, 500),
        count=st.integers(-1, 6),
        consumer=st.one_of(st.none(), consumers),
        idle=idle_thresholds,
    )
    def xpending(
        self,
        key: str,
        group: str,
        form: str,
        low: int,
        count: int,
        consumer: str | None,
        idle: int,
    ) -> None:
        if form == "summary":
            self.run("XPENDING", key, group)
            return
        head: list[Any] = ["IDLE", idle] if form == "idle" else []
        tail = [] if consumer is None else [consumer]
        start = "-" if low % 5 == 0 else self.id_text(key, low, 0)
        self.run("XPENDING", key, group, *head, start, "+", count, *tail)

    # ------------------------------------------------------------------ claiming

    @rule(
        key=keys,
        group=groups,
        consumer=consumers,
        min_idle=idle_thresholds,
        chosen=picks,
        when=st.sampled_from([None, ("IDLE", 1_000_000), ("TIME", 1), ("IDLE", 0)]),
        retry=st.one_of(st.none(), st.integers(0, 5)),
        force=st.booleans(),
        justid=st.booleans(),
        lastid=st.one_of(st.none(), st.integers(0, 500)),
    )
    def xclaim(
        self,
        key: str,
        group: str,
        consumer: str,
        min_idle: int,
        chosen: list[int],
        when: tuple[str, int] | None,
        retry: int | None,
        force: bool,
        justid: bool,
        lastid: int | None,
    ) -> None:
        argv: list[Any] = ["XCLAIM", key, group, consumer, min_idle]
        argv += [self.pending_id(key, group, p) for p in chosen]
        argv += [] if when is None else list(when)
        argv += [] if retry is None else ["RETRYCOUNT", retry]
        argv += (["FORCE"] if force else []) + (["JUSTID"] if justid else [])
        argv += [] if lastid is None else ["LASTID", self.id_text(key, lastid, 0)]
        self.run(*argv)

    @rule(
        key=keys,
        group=groups,
        consumer=consumers,
        min_idle=idle_thresholds,
        start=st.integers(-1, 500),
        count=st.one_of(st.none(), st.integers(0, 5)),
        justid=st.booleans(),
    )
    def xautoclaim(
        self,
        key: str,
        group: str,
        consumer: str,
        min_idle: int,
        start: int,
        count: int | None,
        justid: bool,
    ) -> None:
        begin = "0-0" if start < 0 else self.id_text(key, start, 0)
        argv: list[Any] = ["XAUTOCLAIM", key, group, consumer, min_idle, begin]
        argv += [] if count is None else ["COUNT", count]
        self.run(*argv, *(["JUSTID"] if justid else []))

    @rule(key=keys, group=groups)
    def xinfo_groups_and_consumers(self, key: str, group: str) -> None:
        self.run("XINFO", "GROUPS", key)
        self.run("XINFO", "CONSUMERS", key, group)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def same_groups(self) -> None:
        for key in KEYS:
            self.run("XINFO", "GROUPS", key)

    @invariant()
    def store_is_consistent(self) -> None:
        self.oracle.check()


class GroupStatefulBase(StatefulBase):
    """The group machine under one stream-node-max-entries setting."""

    machine = GroupMachine
    machine_settings = SETTINGS
    server = "redis8"


class TestGroupStatefulNodes1(GroupStatefulBase):
    node_entries = 1


class TestGroupStatefulNodes2(GroupStatefulBase):
    node_entries = 2


class TestGroupStatefulNodes10(GroupStatefulBase):
    node_entries = 10


class TestGroupStatefulNodes100(GroupStatefulBase):
    node_entries = 100
