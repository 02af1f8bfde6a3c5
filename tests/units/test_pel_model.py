"""The pending-entries indexes without a server: a group's PEL and each consumer's PEL (two
indexes in LMDB, kept in step by rstore/storage/records/group_records.py) checked against a plain
Python model through random XADD / XREADGROUP / XACK / XCLAIM / XGROUP DELCONSUMER sequences,
with the store closed and reopened between steps.  After every step XPENDING (summary,
extended, per consumer) and XINFO CONSUMERS answer what the model holds, and Store.check()
finds nothing."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import rstore

GROUPS = ["g1", "g2"]
CONSUMERS = ["alice", "bob", "carol"]


@dataclass
class Group:
    last: tuple[int, int] = (0, 0)
    pel: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)  # id -> owner, count
    consumers: set[str] = field(default_factory=set)


def _id(raw: bytes) -> tuple[int, int]:
    ms, seq = raw.split(b"-")
    return int(ms), int(seq)


class PendingMachine(RuleBasedStateMachine):
    @initialize()
    def open_store(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.store = rstore.Store(self.dir + "/s", sync=False, node_max_entries=3)
        self.ids: list[tuple[int, int]] = []
        self.store.execute("XADD", "s", "1-1", "f", "v")
        self.ids.append((1, 1))
        self.groups = {name: Group() for name in GROUPS}
        for name in GROUPS:
            self.store.execute("XGROUP", "CREATE", "s", name, "0")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(n=st.integers(1, 5))
    def add(self, n: int) -> None:
        for _ in range(n):
            raw = self.store.execute("XADD", "s", "*", "f", "v")
            self.ids.append(_id(raw))

    @rule(
        group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS), count=st.integers(1, 4)
    )
    def read_new(self, group: str, consumer: str, count: int) -> None:
        reply = self.store.execute(
            "XREADGROUP", "GROUP", group, consumer, "COUNT", count, "STREAMS", "s", ">"
        )
        g = self.groups[group]
        g.consumers.add(consumer)
        want = [i for i in self.ids if i > g.last][:count]
        got = [] if reply is rstore.NIL_ARRAY or reply is None else [_id(e[0]) for e in reply[0][1]]
        assert got == want
        for i in want:
            g.pel[i] = (consumer, 1)
        if want:
            g.last = want[-1]

    @rule(group=st.sampled_from(GROUPS), data=st.data())
    def ack(self, group: str, data: st.DataObject) -> None:
        g = self.groups[group]
        known = sorted(g.pel) + self.ids[:2]
        chosen = data.draw(st.lists(st.sampled_from(known), max_size=4)) if known else []
        args = [b"%d-%d" % i for i in chosen]
        if not args:
            return
        n = self.store.execute("XACK", "s", group, *args)
        assert n == len({i for i in chosen if i in g.pel})
        for i in chosen:
            g.pel.pop(i, None)

    @rule(group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS), data=st.data())
    def claim(self, group: str, consumer: str, data: st.DataObject) -> None:
        g = self.groups[group]
        if not g.pel:
            return
        chosen = data.draw(st.lists(st.sampled_from(sorted(g.pel)), min_size=1, max_size=3))
        reply = self.store.execute(
            "XCLAIM", "s", group, consumer, 0, *[b"%d-%d" % i for i in chosen], "JUSTID"
        )
        assert [_id(r) for r in reply] == chosen  # each ID as often as it was given
        g.consumers.add(consumer)
        for i in chosen:
            g.pel[i] = (consumer, g.pel[i][1])  # JUSTID leaves the delivery count alone

    @rule(group=st.sampled_from(GROUPS), consumer=st.sampled_from(CONSUMERS))
    def delete_consumer(self, group: str, consumer: str) -> None:
        g = self.groups[group]
        n = self.store.execute("XGROUP", "DELCONSUMER", "s", group, consumer)
        owned = [i for i, (owner, _) in g.pel.items() if owner == consumer]
        assert n == (len(owned) if consumer in g.consumers else 0)
        for i in owned:
            del g.pel[i]
        g.consumers.discard(consumer)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = rstore.Store(self.dir + "/s", sync=False, node_max_entries=3)

    @invariant()
    def pending_answers_match_the_model(self) -> None:
        if not hasattr(self, "store"):
            return
        for name, g in self.groups.items():
            summary = self.store.execute("XPENDING", "s", name)
            assert summary[0] == len(g.pel)
            if g.pel:
                assert (_id(summary[1]), _id(summary[2])) == (min(g.pel), max(g.pel))
                owners: dict[str, int] = {}
                for owner, _ in g.pel.values():
                    owners[owner] = owners.get(owner, 0) + 1
                assert {c.decode(): int(n) for c, n in summary[3]} == owners
            rows = self.store.execute("XPENDING", "s", name, "-", "+", 1000)
            assert [(_id(r[0]), r[1].decode(), r[3]) for r in rows] == [
                (i, owner, count) for i, (owner, count) in sorted(g.pel.items())
            ]
            infos = self.store.execute("XINFO", "CONSUMERS", "s", name)
            seen = {}
            for info in infos:
                d = dict(zip(info[0::2], info[1::2], strict=True))
                seen[d[b"name"].decode()] = d[b"pending"]
            assert set(seen) == g.consumers
            for consumer in g.consumers:
                mine = self.store.execute("XPENDING", "s", name, "-", "+", 1000, consumer)
                want = sorted(i for i, (owner, _) in g.pel.items() if owner == consumer)
                assert [_id(r[0]) for r in mine] == want
                assert seen[consumer] == len(want)
        assert self.store.check() == []


PendingMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
test_pending_indexes_follow_the_model = PendingMachine.TestCase
