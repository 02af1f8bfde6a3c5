"""The replay engine (rstore.run_replay / plan_replay) through its sinks."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import rstore
from rstore import LinesSink, Pacer, PaceSchedule, ReplayConflict, Store, StoreSink

from .test_pacing import FakeClock


def _fill(store: Store) -> None:
    rows: list[tuple[str, str, list[str | bytes]]] = [
        ("a", f"{ms}-0", ["n", str(ms), "kind", "click" if ms % 2 else "view"])
        for ms in range(1, 51)
    ]
    rows += [("b", f"{ms}-1", ["n", str(ms), "raw", b"\x00\xff"]) for ms in range(100, 130)]
    store.append_entries(rows)


def _all(store: Store, key: str) -> list[tuple[bytes, list[bytes]]]:
    return [
        (entry_id, list(flat)) for entry_id, flat in store.execute_command("XRANGE", key, "-", "+")
    ]


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "src") as store:
        _fill(store)
        yield store


def test_store_to_store_keeps_ids_fields_and_order(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        report = rstore.run_replay(
            rstore.entries_from_store(source), StoreSink(dst), batch_entries=7
        )
        assert report.delivered == 80 and not report.interrupted
        for key in ("a", "b"):
            assert _all(dst, key) == _all(source, key)
        assert report.streams[b"a"].first_id == (1, 0) and report.streams[b"b"].last_id == (129, 1)


def test_rename_where_count_into_the_same_store(source: Store) -> None:
    report = rstore.run_replay(
        rstore.entries_from_store(source, [b"a"]),
        StoreSink(source),
        target=lambda name: b"copy:" + name,
        where=[b"kind=cl*"],
        count=5,
    )
    assert report.delivered == 5
    got = _all(source, "copy:a")
    assert [e[0] for e in got] == [b"1-0", b"3-0", b"5-0", b"7-0", b"9-0"]
    assert got[0][1] == [b"n", b"1", b"kind", b"click"]


def test_conflict_policies(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        dst.xadd("a", {"x": "1"}, id="10-0")
        with pytest.raises(
            ReplayConflict, match="entry 1-0 of 'a' is not above the last ID of 'a' \\(10-0\\)"
        ):
            rstore.run_replay(rstore.entries_from_store(source, [b"a"]), StoreSink(dst))
        assert dst.xlen("a") == 1  # nothing of the batch was written
        skipped = rstore.run_replay(
            rstore.entries_from_store(source, [b"a"]), StoreSink(dst), on_conflict="skip"
        )
        assert (skipped.delivered, skipped.skipped) == (40, 10)
        assert [e[0] for e in _all(dst, "a")][:2] == [b"10-0", b"11-0"]
    with Store(tmp_path / "dst2") as dst:
        dst.xadd("a", {"x": "1"}, id="10-0")
        renum = rstore.run_replay(
            rstore.entries_from_store(source, [b"a"]), StoreSink(dst), on_conflict="new-id"
        )
        assert renum.renumbered == 50 and dst.xlen("a") == 51  # past a new ID, all are new
        ids = [e[0] for e in _all(dst, "a")]
        assert (
            ids == sorted(ids, key=lambda i: tuple(map(int, i.split(b"-")))) and len(set(ids)) == 51
        )
    with Store(tmp_path / "dst3") as dst:
        report = rstore.run_replay(
            rstore.entries_from_store(source, [b"b"]), StoreSink(dst), new_ids=True
        )
        assert report.delivered == 30 and [e[1] for e in _all(dst, "b")] == [
            e[1] for e in _all(source, "b")
        ]
        assert _all(dst, "b")[0][0] != b"100-1"


def _broken(entries: Iterator[rstore.ReplayEntry], after: int) -> Iterator[rstore.ReplayEntry]:
    for i, entry in enumerate(entries):
        if i == after:
            raise rstore.RStoreError("source broke")
        yield entry


@pytest.mark.parametrize("batch", [1, 2, 5000])
def test_a_stream_that_comes_back_below_what_was_delivered_is_a_conflict(
    tmp_path: Path, batch: int
) -> None:
    """Entries a:5-0, b:1-0, a:3-0 with no bookmark: a:3-0 is below what this run already wrote
    to 't:a', whatever the batch size -- a conflict (refused by default, skipped with 'skip'),
    never counted as resumed (which only entries at or below a bookmark's position are)."""
    entries = [
        (b"a", (5, 0), [b"f", b"v"]),
        (b"b", (1, 0), [b"f", b"v"]),
        (b"a", (3, 0), [b"f", b"w"]),
    ]

    def target(stream: bytes) -> bytes:
        return b"t:" + stream

    with (
        Store(tmp_path / "fail", sync=False) as store,
        pytest.raises(ReplayConflict, match="3-0 of 'a' is not above"),
    ):
        rstore.run_replay(iter(entries), StoreSink(store), target=target, batch_entries=batch)
    with Store(tmp_path / "skip", sync=False) as store:
        report = rstore.run_replay(
            iter(entries), StoreSink(store), target=target, batch_entries=batch,
            on_conflict="skip",
        )  # fmt: skip
        assert (report.delivered, report.skipped, report.resumed) == (2, 1, 0)
        assert store.xrange("t:a") == [(b"5-0", {b"f": b"v"})]


def test_bookmark_into_a_store_resumes_exactly_once(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        with pytest.raises(rstore.RStoreError, match="source broke"):
            rstore.run_replay(
                _broken(rstore.entries_from_store(source), 63),
                StoreSink(dst),
                bookmark="job",
                batch_entries=10,
            )
        assert dst.xlen("a") + dst.xlen("b") == 60  # six whole batches
        assert json.loads(dst.bookmark("job") or b"") == {"a": "50-0", "b": "109-1"}
        again = rstore.run_replay(
            rstore.entries_from_store(source), StoreSink(dst), bookmark="job", batch_entries=10
        )
        assert (again.resumed, again.delivered) == (60, 20)
        for key in ("a", "b"):
            assert _all(dst, key) == _all(source, key)
        third = rstore.run_replay(rstore.entries_from_store(source), StoreSink(dst), bookmark="job")
        assert (third.resumed, third.delivered) == (80, 0)


def test_bookmark_file_for_lines_and_interrupt(source: Store, tmp_path: Path) -> None:
    cp = str(tmp_path / "cp.json")
    out = io.BytesIO()

    def interrupted(entries: Iterator[rstore.ReplayEntry]) -> Iterator[rstore.ReplayEntry]:
        for i, entry in enumerate(entries):
            if i == 25:
                raise KeyboardInterrupt
            yield entry

    report = rstore.run_replay(
        interrupted(rstore.entries_from_store(source)),
        LinesSink(out),
        bookmark=cp,
        batch_entries=10,
    )
    assert report.interrupted and report.delivered == 25  # the entries already due were written
    assert rstore.load_bookmark_file(cp) == {b"a": (25, 0)}
    rest = io.BytesIO()
    rstore.run_replay(rstore.entries_from_store(source), LinesSink(rest), bookmark=cp)
    whole = b"".join(rstore.encode_columns(k, c) for k, c in rstore.batches_from_store(source))
    assert out.getvalue() + rest.getvalue() == whole


def test_pacing_through_the_engine_on_a_fake_clock(source: Store) -> None:
    clock = FakeClock()
    written: list[tuple[float, int]] = []

    class Timed(LinesSink):
        def write(self, batch, bookmark):  # type: ignore[no-untyped-def]
            written.extend((clock.now, i[0]) for _s, i, _f in batch)

    pacer = Pacer(PaceSchedule(speed=2.0), clock=clock.clock, sleep=clock.sleep, spin=0.0)
    report = rstore.run_replay(
        rstore.entries_from_store(source, [b"a"]), Timed(io.BytesIO()), pacer=pacer
    )
    assert report.delivered == 50
    t0 = written[0][0]
    # entry of ms k (1 ms apart, at speed 2: 0.5 ms apart) is released at t0 + (k - 1) / 2000
    for at, ms in written:
        assert at >= t0 + (ms - 1) / 2000 - 1e-9
    assert report.max_lag < 1e-6 and len({at for at, _ in written}) == 50


def test_plan_writes_nothing(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        dst.xadd("a", {"x": "1"}, id="10-0")
        plans, seconds = rstore.plan_replay(
            rstore.entries_from_store(source), StoreSink(dst), schedule=PaceSchedule(speed=1.0)
        )
        by = plans
        assert (by[b"a"].entries, by[b"a"].conflicts, by[b"a"].target_last_id) == (50, 10, (10, 0))
        assert (by[b"b"].first_id, by[b"b"].last_id, by[b"b"].conflicts) == ((100, 1), (129, 1), 0)
        assert by[b"b"].bytes == 30 * (1 + 3 + 3 + 2)
        # one timeline of ID times at 1x: from 1 ms (first of a) to 129 ms (last of b)
        assert seconds == pytest.approx(0.128)
        assert dst.xlen("a") == 1 and dst.xlen("b") == 0
