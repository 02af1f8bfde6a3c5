"""Whole nodes in a replay (rstore.runs_from_store / runs_from_rdb): into a store with the IDs
kept, nodes all of whose entries are selected and live are copied unchanged; everything else
goes entry by entry.  Either way the target, the report and the bookmark are exactly those of
the entry-by-entry replay."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore import Store, StoreSink

_SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _fill(store: Store, n: int, deletes: Sequence[int], streams: int = 2) -> None:
    store.append_entries(
        [(f"s{i % streams}", (10 + i, i % 3), [b"i", b"%d" % i, b"pad", b"x" * (i % 40)])
         for i in range(n)]
    )  # fmt: skip
    for i in deletes:
        if i < n:
            store.execute("XDEL", f"s{i % streams}", f"{10 + i}-{i % 3}")


def _state(store: Store) -> dict[bytes, Any]:
    out = {}
    for key in store.execute("KEYS", "*"):
        info = store.execute("XINFO", "STREAM", key)
        fields = dict(zip(info[::2], info[1::2]))
        out[key] = (
            store.execute("XRANGE", key, "-", "+"),
            [fields[f] for f in (b"length", b"last-generated-id", b"entries-added")],
        )
    return out


def _nodes(store: Store, key: bytes) -> list[tuple[tuple[int, int], bytes]]:
    def read(view: rstore.StoreView) -> list[tuple[tuple[int, int], bytes]]:
        return list(view.nodes(key))

    return store.view(read)


def _report(report: rstore.ReplayReport) -> tuple[Any, ...]:
    tallies = {k: (t.target, t.entries, t.first_id, t.last_id) for k, t in report.streams.items()}
    return report.delivered, report.skipped, report.resumed, tallies


@_SETTINGS
@given(
    n=st.integers(1, 400),
    deletes=st.lists(st.integers(0, 399), max_size=30),
    start=st.integers(0, 420),
    target_last=st.one_of(st.none(), st.integers(0, 420)),
    position=st.one_of(st.none(), st.integers(0, 420)),
    node_max_entries=st.sampled_from([1, 7, 100]),
    batch_entries=st.sampled_from([1, 50, 5000]),
)
def test_runs_give_exactly_the_entry_by_entry_replay(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    deletes: list[int],
    start: int,
    target_last: int | None,
    position: int | None,
    node_max_entries: int,
    batch_entries: int,
) -> None:
    base = tmp_path_factory.mktemp("runs")
    with Store(base / "src", node_max_entries=node_max_entries) as src:
        _fill(src, n, deletes)
        results = []
        for name, read in (
            ("entries", rstore.entries_from_store),
            ("runs", rstore.runs_from_store),
        ):
            with Store(base / name) as dst:
                if target_last is not None:
                    dst.execute("XADD", "s0", f"{10 + target_last}-1", "old", "1")
                if position is not None:
                    cp = {"s0": f"{10 + position}-0", "s1": f"{10 + position}-0"}
                    dst.append_entries([], bookmark=("cp", json.dumps(cp).encode()))
                report = rstore.run_replay(
                    read(src, None, (10 + start, 0)),
                    StoreSink(dst),
                    on_conflict="skip",
                    bookmark="cp",
                    batch_entries=batch_entries,
                )
                results.append((_state(dst), _report(report), dst.bookmark("cp")))
        assert results[0] == results[1]


def test_clean_nodes_into_an_empty_store_are_copied_unchanged(tmp_path: Path) -> None:
    with Store(tmp_path / "src", node_max_entries=10) as src, Store(tmp_path / "dst") as dst:
        _fill(src, 500, deletes=[123])  # one node of s1 has a tombstone
        report = rstore.run_replay(rstore.runs_from_store(src), StoreSink(dst), bookmark="c")
        assert report.delivered == 499
        for key in (b"s0", b"s1"):
            source_nodes = _nodes(src, key)
            copied = _nodes(dst, key)
            clean = [rstore.node_facts(n, m).deleted == 0 for m, n in source_nodes]
            # a clean node followed by one with a tombstone takes that one's live entries
            # (appended entry by entry into the stream's last node): all others are unchanged
            unchanged = [
                node
                for i, node in enumerate(source_nodes)
                if clean[i] and (i + 1 == len(clean) or clean[i + 1])
            ]
            assert len(unchanged) == len(source_nodes) - 2 * (key == b"s1")
            assert set(unchanged) <= set(copied)  # byte for byte, under the same master IDs
        want = {k: (v[0], [v[1][0], v[1][1], v[1][0]]) for k, v in _state(src).items()}
        assert _state(dst) == want  # entries-added counts only the entries replayed


def test_a_write_that_fails_mid_replay_resumes_exactly_once(tmp_path: Path) -> None:
    """A failure in the third write of whole nodes: two committed with their bookmark; the
    rerun delivers the rest, each entry once."""
    with Store(tmp_path / "src", node_max_entries=10) as src, Store(tmp_path / "dst") as dst:
        _fill(src, 300, deletes=[])

        class Failing(StoreSink):
            writes = 0

            def write_nodes(self, nodes: Any, bookmark: Any) -> None:
                Failing.writes += 1
                if Failing.writes == 3:
                    raise OSError("disk gone")
                super().write_nodes(nodes, bookmark)

        with pytest.raises(OSError):
            rstore.run_replay(
                rstore.runs_from_store(src), Failing(dst), bookmark="c", batch_entries=40
            )
        assert 0 < sum(dst.xlen(k) for k in ("s0", "s1")) < 300
        again = rstore.run_replay(rstore.runs_from_store(src), StoreSink(dst), bookmark="c")
        assert again.delivered + again.resumed == 300 and again.skipped == 0
        for key in ("s0", "s1"):
            assert dst.execute("XRANGE", key, "-", "+") == src.execute("XRANGE", key, "-", "+")


def test_runs_from_a_dump_match_the_store(tmp_path: Path) -> None:
    with Store(tmp_path / "src", node_max_entries=10) as src:
        _fill(src, 300, deletes=[5, 77])
        src.save(tmp_path / "dump.rdb")
        with Store(tmp_path / "dst") as dst:
            report = rstore.run_replay(
                rstore.runs_from_rdb(str(tmp_path / "dump.rdb")), StoreSink(dst)
            )
            assert report.delivered == 298
            for key in ("s0", "s1"):
                assert dst.execute("XRANGE", key, "-", "+") == src.execute("XRANGE", key, "-", "+")
