"""Pipelines of XADDs: runs of ``XADD key * ...`` are appended together (the batch path of
rstore.commands.append, rstore.streams.append.add_auto, in C when it is built), and every
command still gets exactly the reply, error, IDs, nodes and counters it gets run alone.

The clock is frozen so that both sides choose the same automatic IDs; run alone, XADD is
checked against valkey-server by the oracle tests (and the batch path too, in
tests/oracle/test_xadd_pipeline.py)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from appenders import python_appenders
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore import ResponseError
from rstore.codec import stream_node as sn
from rstore.commands import executor

pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
)

NOW = 1_700_000_000_000
KEYS = ["a", "b"]


@contextmanager
def frozen_clock() -> Iterator[None]:
    saved = executor.now_ms
    executor.now_ms = lambda: NOW
    try:
        yield
    finally:
        executor.now_ms = saved


value = st.one_of(
    st.sampled_from(["v", "12345", "-7", "007", "", "x" * 70, "y" * 300]),
    st.integers(-(2**63), 2**63 - 1).map(str),
)
fields = st.one_of(
    st.just(["user", "action"]),
    st.just(["user", "action"]),
    st.lists(st.sampled_from(["user", "action", "page", "1"]), min_size=1, max_size=3),
)
plain = st.builds(
    lambda key, names, vals: ["XADD", key, "*", *[x for n, v in zip(names, vals) for x in (n, v)]],
    st.sampled_from(KEYS),
    fields,
    st.lists(value, min_size=3, max_size=3),
)
other = st.one_of(
    st.builds(lambda k: ["XADD", k, "*", "f", "v", "g"], st.sampled_from(KEYS)),  # odd: refused
    st.builds(
        lambda k, s: ["XADD", k, f"{NOW}-{s}", "f", "v"],
        st.sampled_from(KEYS),
        st.sampled_from([0, 1, 50, 2**64 - 1]),
    ),
    st.builds(lambda k: ["XADD", k, f"{NOW + 1}-*", "f", "v"], st.sampled_from(KEYS)),
    st.builds(lambda k: ["XADD", k, "MAXLEN", "~", "5", "*", "f", "v"], st.sampled_from(KEYS)),
    st.builds(lambda k: ["XADD", k, "NOMKSTREAM", "*", "f", "v"], st.sampled_from(["a", "c"])),
    st.builds(
        lambda k: ["XADD", k, "18446744073709551615-18446744073709551615", "f", "v"],
        st.sampled_from(KEYS),
    ),  # then "*" finds no ID left
    st.builds(lambda k: ["XDEL", k, f"{NOW}-1", f"{NOW}-3"], st.sampled_from(KEYS)),
    st.builds(lambda k: ["XTRIM", k, "MAXLEN", "3"], st.sampled_from(KEYS)),
    st.builds(lambda k: ["DEL", k], st.sampled_from(KEYS)),
)
commands = st.lists(st.one_of(*[plain] * 12, other), min_size=1, max_size=400)
limits = st.tuples(st.sampled_from([None, 1, 2, 7, 100, 0]), st.sampled_from([None, 60, 500, 0]))


def _one_by_one(store: rstore.Store, batch: list[list[str]]) -> list[Any]:
    out: list[Any] = []
    for argv in batch:
        try:
            out.append(store.execute(*argv))
        except ResponseError as exc:
            out.append(exc.line)
    return out


def _as_batch(store: rstore.Store, batch: list[list[str]]) -> list[Any]:
    return [r.line if isinstance(r, ResponseError) else r for r in store.execute_batch(batch)]


def _state(store: rstore.Store) -> dict[str, Any]:
    """Per key: the DUMP payload (every node's bytes and the stream's counters) and XINFO."""
    return {
        k: (store.dump(k), store.execute("XINFO", "STREAM", k) if store.exists(k) else None)
        for k in KEYS
    }


def _run(tmp: Path, name: str, limit: tuple[int | None, int | None], fn: Any, batch: Any) -> Any:
    with rstore.Store(tmp / name, node_max_entries=limit[0], node_max_bytes=limit[1]) as store:
        replies = fn(store, batch)
        assert store.check() == []
        return replies, _state(store)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands, limits)
def test_a_pipeline_of_xadds_is_the_xadds_one_by_one(
    batch: list[list[str]], limit: tuple[int | None, int | None]
) -> None:
    with tempfile.TemporaryDirectory() as tmp, frozen_clock():
        path = Path(tmp)
        alone = _run(path, "alone", limit, _one_by_one, batch)
        together = _run(path, "batch", limit, _as_batch, batch)
        assert together == alone
        with python_appenders():
            assert _run(path, "python", limit, _as_batch, batch) == alone


def test_a_pipeline_fills_nodes_as_single_xadds_do(tmp_path: Path) -> None:
    """1000 plain XADDs on one stream through the redis-py-style pipeline: the IDs XADD's ``*``
    gives under one time snapshot, the default node rule (100 entries a node), counters."""
    entry = {"user": "12345", "action": "click", "page": "/products/42"}
    with frozen_clock(), rstore.Store(tmp_path / "s") as store:
        pipe = store.pipeline()
        for _ in range(1000):
            pipe.xadd("s", entry)
        assert pipe.execute() == [b"%d-%d" % (NOW, i) for i in range(1000)]
        info = store.xinfo_stream("s")
        assert info["length"] == 1000 and info["entries-added"] == 1000
        assert info["radix-tree-keys"] == 10  # 100 entries a node
        assert info["last-generated-id"] == b"%d-999" % NOW
        nodes = store.view(lambda v: list(v.nodes(b"s")))
        assert [sn.node_counts(node) for _, node in nodes] == [(100, 0)] * 10
        assert store.check() == []
