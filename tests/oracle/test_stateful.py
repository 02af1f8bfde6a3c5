"""Hypothesis state machine: rstore and valkey driven step by step, including close/reopen.

Each step runs one command on both and asserts identical replies; an invariant compares the
full XINFO STREAM of every key after each step.  The "reopen" rule closes the Store and opens a
new one on the same directory (valkey keeps its state), so everything must survive on disk.
One test class per stream-node-max-entries value.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from .harness import Oracle, is_error, reset_valkey
from .randgen import FIELD_NAMES, VALUE_POOL
from .resp import RespClient

pytestmark = pytest.mark.oracle

KEYS = ("s1", "s2", "s3")
U64_MAX = (1 << 64) - 1
SETTINGS = settings(
    max_examples=50,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

keys = st.sampled_from(KEYS)
values = st.one_of(
    st.sampled_from(VALUE_POOL),
    st.binary(max_size=24),
    st.integers(-(2**64), 2**64).map(str),
    st.integers(1000, 5000).map(lambda n: b"\x00x" * (n // 2)),
)
field_lists = st.lists(st.tuples(st.sampled_from(FIELD_NAMES), values), min_size=1, max_size=4)
id_kinds = st.sampled_from(["next"] * 8 + ["same-ms", "ms-*", "stale", "zero", "bad", "huge"])
counts = st.one_of(st.none(), st.integers(-2, 12))
raw_bad_ids = st.sampled_from(["bad", "", "1-2-3", "(5", "-", "+", " 7", "007-01", "1- -5"])


class StreamMachine(RuleBasedStateMachine):
    """Drives one Oracle; the model is just each key's last ID and the IDs handed out."""

    def __init__(self, oracle: Oracle) -> None:
        super().__init__()
        self.oracle = oracle
        self.last: dict[str, tuple[int, int]] = {}
        self.ids: dict[str, list[tuple[int, int]]] = {k: [] for k in KEYS}

    def teardown(self) -> None:
        self.oracle.close()

    # ------------------------------------------------------------------ helpers

    def run(self, *argv: Any) -> Any:
        return self.oracle.both(*argv)

    def record(self, key: str, reply: Any) -> None:
        """Remember the ID an XADD answered (errors and nil change nothing)."""
        if isinstance(reply, bytes):
            ms, seq = reply.split(b"-")
            self.last[key] = (int(ms), int(seq))
            self.ids[key].append(self.last[key])

    def id_text(self, key: str, pick: int, shift: int) -> str:
        ids = self.ids[key]
        if not ids:
            return f"{pick % 7}-{shift % 3}"
        ms, seq = ids[pick % len(ids)]
        return f"{ms}-{max(0, seq + shift)}"

    def new_id(self, key: str, kind: str, delta: int) -> str:
        ms, seq = self.last.get(key, (0, 0))
        if kind == "next":
            return f"{ms + delta}-{delta % 3}"
        if kind == "same-ms":
            return f"{ms}-{seq + delta}"
        if kind == "ms-*":
            return f"{ms + delta % 2}-*"
        if kind == "stale":
            return f"{max(0, ms - delta)}-{seq}"
        if kind == "zero":
            return "0-0"
        if kind == "huge":
            return f"{U64_MAX}-{U64_MAX - delta % 2}"
        return "x-1"

    # ------------------------------------------------------------------ rules

    @rule(
        key=keys,
        kind=id_kinds,
        delta=st.integers(1, 40),
        fields=field_lists,
        nomkstream=st.booleans(),
        trim=st.one_of(
            st.none(),
            st.tuples(
                st.sampled_from(["MAXLEN", "MINID"]),
                st.sampled_from(["", "=", "~"]),
                st.integers(0, 30),
                st.one_of(st.none(), st.integers(0, 20)),
            ),
        ),
    )
    def xadd(
        self,
        key: str,
        kind: str,
        delta: int,
        fields: list[tuple[str | bytes, str | bytes]],
        nomkstream: bool,
        trim: tuple[str, str, int, int | None] | None,
    ) -> None:
        argv: list[Any] = ["XADD", key]
        if nomkstream:
            argv.append("NOMKSTREAM")
        if trim is not None:
            strategy, op, threshold, limit = trim
            argv += [strategy] + ([op] if op else [])
            argv.append(threshold if strategy == "MAXLEN" else self.id_text(key, threshold, 0))
            if limit is not None:
                argv += ["LIMIT", limit]
        argv.append(self.new_id(key, kind, delta))
        for name, value in fields:
            argv += [name, value]
        self.record(key, self.run(*argv))

    @rule(key=keys, count=st.integers(1, 60), fields=field_lists, gap=st.integers(0, 3))
    def append_batch(
        self, key: str, count: int, fields: list[tuple[str | bytes, str | bytes]], gap: int
    ) -> None:
        """Many appends with one field schema: fills nodes so the layout matters."""
        flat = [item for pair in fields for item in pair]
        for i in range(count):
            ms, seq = self.last.get(key, (0, 0))
            sid = f"{ms}-{seq + 1}" if i % (gap + 1) else f"{ms + 1 + i % 3}-0"
            self.record(key, self.run("XADD", key, sid, *flat))

    @rule(key=keys, picks=st.lists(st.integers(0, 500), min_size=1, max_size=4), bad=st.booleans())
    def xdel(self, key: str, picks: list[int], bad: bool) -> None:
        ids = [self.id_text(key, p, p % 2) for p in picks]
        self.run("XDEL", key, *ids, *(["nope"] if bad else []))

    @rule(
        key=keys,
        strategy=st.sampled_from(["MAXLEN", "MINID"]),
        op=st.sampled_from(["", "=", "~"]),
        threshold=st.integers(0, 60),
        limit=st.one_of(st.none(), st.integers(-1, 20)),
    )
    def xtrim(self, key: str, strategy: str, op: str, threshold: int, limit: int | None) -> None:
        argv: list[Any] = ["XTRIM", key, strategy] + ([op] if op else [])
        argv.append(threshold if strategy == "MAXLEN" else self.id_text(key, threshold, 0))
        if limit is not None:
            argv += ["LIMIT", limit]
        self.run(*argv)

    @rule(
        key=keys,
        bump=st.integers(-2, 3),
        added=st.one_of(st.none(), st.integers(-1, 80)),
        maxdel=st.one_of(st.none(), st.integers(0, 500)),
    )
    def xsetid(self, key: str, bump: int, added: int | None, maxdel: int | None) -> None:
        ms, seq = self.last.get(key, (0, 0))
        target = (ms, max(0, seq + bump))
        argv: list[Any] = ["XSETID", key, f"{target[0]}-{target[1]}"]
        if added is not None:
            argv += ["ENTRIESADDED", added]
        if maxdel is not None:
            argv += ["MAXDELETEDID", self.id_text(key, maxdel, 0)]
        if self.run(*argv) == "OK":
            self.last[key] = target

    @rule(
        key=keys,
        reverse=st.booleans(),
        low=st.tuples(st.sampled_from(["-", "id", "(id", "ms"]), st.integers(0, 500)),
        high=st.tuples(st.sampled_from(["+", "id", "(id", "ms"]), st.integers(0, 500)),
        count=counts,
    )
    def xrange(
        self,
        key: str,
        reverse: bool,
        low: tuple[str, int],
        high: tuple[str, int],
        count: int | None,
    ) -> None:
        def bound(spec: tuple[str, int]) -> str:
            form, pick = spec
            if form in ("-", "+"):
                return form
            text = self.id_text(key, pick, 0)
            if form == "ms":
                return text.split("-")[0]
            return "(" + text if form == "(id" else text

        pair = (bound(high), bound(low)) if reverse else (bound(low), bound(high))
        tail = [] if count is None else ["COUNT", count]
        self.run("XREVRANGE" if reverse else "XRANGE", key, *pair, *tail)

    @rule(
        chosen=st.lists(
            st.tuples(keys, st.integers(0, 500), st.booleans()), min_size=1, max_size=3
        ),
        count=counts,
    )
    def xread(self, chosen: list[tuple[str, int, bool]], count: int | None) -> None:
        names = [k for k, _, _ in chosen]
        ids = ["$" if dollar else self.id_text(k, p, -1) for k, p, dollar in chosen]
        head = [] if count is None else ["COUNT", count]
        self.run("XREAD", *head, "STREAMS", *names, *ids)

    @rule(key=keys, raw=raw_bad_ids)
    def odd_ids(self, key: str, raw: str) -> None:
        self.run("XADD", key, raw, "f", "v")
        self.run("XRANGE", key, raw, "+")
        self.run("XDEL", key, raw)

    @rule(key=keys, full=st.booleans(), count=counts)
    def xinfo(self, key: str, full: bool, count: int | None) -> None:
        tail = (["FULL"] + ([] if count is None else ["COUNT", count])) if full else []
        self.run("XINFO", "STREAM", key, *tail)

    @rule(key=keys)
    def xlen_exists_type(self, key: str) -> None:
        self.run("XLEN", key)
        self.run("EXISTS", *KEYS)
        self.run("TYPE", key)

    @precondition(lambda self: any(self.ids.values()))
    @rule(key=keys, unlink=st.booleans())
    def delete(self, key: str, unlink: bool) -> None:
        self.run("UNLINK" if unlink else "DEL", key)
        self.last.pop(key, None)
        self.ids[key].clear()

    @rule()
    def reopen(self) -> None:
        self.oracle.reopen()

    @invariant()
    def same_streams(self) -> None:
        for key in KEYS:
            self.run("XINFO", "STREAM", key, "FULL", "COUNT", "0")
        assert not is_error(self.run("DBSIZE"))


class StatefulBase:
    """A machine under one stream-node-max-entries setting (subclasses choose it, and may
    choose another machine and its settings: see test_stateful_groups.py)."""

    node_entries: ClassVar[int] = 100
    machine: ClassVar[Callable[[Oracle], Any]] = StreamMachine
    machine_settings: ClassVar[settings] = SETTINGS
    #: The oracle's fixture: ``valkey`` (valkey-server 8.0) or ``redis8`` (Redis 8.2.3).
    server: ClassVar[str] = "valkey"

    def test_machine(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        valkey: RespClient = request.getfixturevalue(self.server)
        numbers = itertools.count()

        def factory() -> Any:
            reset_valkey(valkey)
            oracle = Oracle(
                valkey,
                tmp_path / f"store{next(numbers)}",
                sync=False,
                node_max_entries=self.node_entries,
            )
            return type(self).machine(oracle)

        run_state_machine_as_test(factory, settings=self.machine_settings)


class TestStatefulNodes1(StatefulBase):
    node_entries = 1


class TestStatefulNodes2(StatefulBase):
    node_entries = 2


class TestStatefulNodes10(StatefulBase):
    node_entries = 10


class TestStatefulNodes100(StatefulBase):
    node_entries = 100
