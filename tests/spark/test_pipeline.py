"""docs/examples/clickstream_pipeline.py, the README's one-command pipeline, on small data.

Its results (Parquet files and the streams written back) are compared with the same figures
computed here in plain Python from ``Store.xrange`` of the events it generated: events per
action per minute, and sessions per user (a session ends after the gap without an event).
"""

from __future__ import annotations

import datetime
import importlib.util
import io
import itertools
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rstore

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "clickstream_pipeline.py"
GAP_MINUTES = 10


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("clickstream_pipeline", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_and_bad_arguments_need_no_spark(tmp_path: Path) -> None:
    done = _run("--help")
    assert done.returncode == 0
    for option in ("--store", "--events", "--dumps", "--out", "--master", "--session-gap"):
        assert option in done.stdout
    assert "Reruns give the same results" in " ".join(done.stdout.split())
    assert _run("--events", "many").returncode == 2
    assert _run("--users", "0").returncode == 2
    both = _run("--regenerate", "--dumps", str(tmp_path))
    assert both.returncode == 2 and "--regenerate generates events into the store" in both.stderr
    missing = _run("--dumps", str(tmp_path / "nowhere"), "--store", str(tmp_path / "s"))
    assert missing.returncode == 1
    assert "no such directory" in missing.stderr


class _Stage:
    numTasks = 10
    numCompletedTasks = 4


class _Tracker:
    """Spark's StatusTracker, as far as the progress lines use it: one stage running."""

    def getActiveStageIds(self) -> list[int]:
        return [3]

    def getStageInfo(self, stage: int) -> _Stage:
        return _Stage()


def test_progress_names_each_step_and_speaks_while_it_runs() -> None:
    pipeline = _load_script()
    out = io.StringIO()
    progress = pipeline.Progress(every=0.05, out=out)
    progress.tracker = _Tracker()
    with progress.step("reading 'clicks'"):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("] reading 'clicks' ...")
    beats = lines[1:]
    assert len(beats) >= 2  # at least one line per interval while the step runs
    assert all("still reading 'clicks'" in line for line in beats)
    assert beats[0].endswith(": Spark has done 4 of 10 tasks of 1 stage(s)")
    with progress.step("quick"):
        pass
    time.sleep(0.15)  # a step that is over says nothing more
    after = out.getvalue().splitlines()[len(lines) :]
    assert [line.split("] ", 1)[1] for line in after] == ["quick ..."]


def _expected(store_path: Path) -> tuple[dict[tuple[int, str], int], dict[str, tuple[int, int]]]:
    """From the stored events: {(minute, action): events} and {user: (sessions, events)}."""
    with rstore.Store(store_path, decode_responses=True) as store:
        entries = store.xrange("clicks")
    per_minute: Counter[tuple[int, str]] = Counter()
    times: dict[str, list[int]] = defaultdict(list)
    for entry_id, fields in entries:
        ms = int(entry_id.split("-")[0])
        per_minute[(ms - ms % 60_000, fields["action"])] += 1
        times[fields["user"]].append(ms)  # in ID order
    sessions = {}
    for user, stamps in times.items():
        gaps = sum(1 for a, b in itertools.pairwise(stamps) if b - a > GAP_MINUTES * 60_000)
        sessions[user] = (1 + gaps, len(stamps))
    return dict(per_minute), sessions


def _parquet(out: Path) -> tuple[dict[tuple[int, str], int], dict[str, tuple[int, int]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(out / "actions_per_minute.parquet")
    # Spark writes timestamps as INT96 (read back in ns) or in µs: either way, to Unix ms
    stamps = table.column("minute")
    unit = stamps.type.unit
    ms = [
        v // {"ns": 1_000_000, "us": 1_000, "ms": 1}[unit]
        for v in stamps.cast(pa.int64()).to_pylist()
    ]
    minutes = table.drop_columns(["minute"]).append_column("minute", pa.array(ms)).to_pylist()
    users = pq.read_table(out / "sessions_per_user.parquet").to_pylist()
    return (
        {(r["minute"], r["action"]): r["events"] for r in minutes},
        {r["user"]: (r["sessions"], r["events"]) for r in users},
    )


def _streams(store_path: Path) -> tuple[dict[tuple[int, str], int], dict[str, tuple[int, int]]]:
    """The results the pipeline wrote back into the store, one entry per row (each row once)."""
    with rstore.Store(store_path, decode_responses=True) as store:
        minutes = [f for _, f in store.xrange("stats:actions_per_minute")]
        users = [f for _, f in store.xrange("stats:sessions_per_user")]
    per_minute = {
        (
            int(
                datetime.datetime.strptime(f["minute"], "%Y-%m-%d %H:%M:%S")
                .replace(tzinfo=datetime.timezone.utc)
                .timestamp()
            )
            * 1000,
            f["action"],
        ): int(f["events"])
        for f in minutes
    }
    per_user = {f["user"]: (int(f["sessions"]), int(f["events"])) for f in users}
    assert (len(per_minute), len(per_user)) == (len(minutes), len(users)), "a row written twice"
    return per_minute, per_user


def _part_files(out: Path) -> dict[str, int]:
    return {d.name: len(list(d.glob("part-*.parquet"))) for d in sorted(out.iterdir())}


def _keys(store_path: Path) -> list[bytes]:
    with rstore.Store(store_path) as store:
        return sorted(store.execute("KEYS", "*"))


@pytest.mark.spark
def test_pipeline_reruns_on_the_store_then_on_its_dump(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = _load_script()
    store_path = tmp_path / "rstore-data"
    out = tmp_path / "out"
    common = ["--store", str(store_path), "--out", str(out), "--session-gap", str(GAP_MINUTES)]
    argv = [*common, "--events", "3000", "--users", "40", "--minutes", "90", "--seed", "7"]
    keys = [b"clicks", b"stats:actions_per_minute", b"stats:sessions_per_user"]
    # Spark's default is 200 shuffle partitions (these tests' session has 2): results of a few
    # hundred rows must still be one Parquet file each, whatever the session says.
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    try:
        assert pipeline.main(argv, spark=spark) == 0
        said = capsys.readouterr().out
        expected = _expected(store_path)
        assert sum(expected[0].values()) == 3000
        assert any(sessions > 1 for sessions, _ in expected[1].values())  # the gap rule matters
        assert _parquet(out) == expected
        assert _part_files(out) == {"actions_per_minute.parquet": 1, "sessions_per_user.parquet": 1}
        assert _streams(store_path) == expected
        assert _keys(store_path) == keys  # no temporary stream left behind
        with rstore.Store(store_path, decode_responses=True) as store:  # in the result's order
            rows = [(f["minute"], f["action"]) for _, f in store.xrange("stats:actions_per_minute")]
        assert rows == sorted(rows)
        # Each step is named as it starts.
        steps = ["generating 3000 events", "reading", "writing the results", "writing Parquet"]
        assert [said.find(s) for s in steps] == sorted(said.find(s) for s in steps)
        assert -1 not in [said.find(s) for s in steps]

        # Again on the same store: the events are there, nothing is generated or appended
        # twice, the results are replaced by the same results.
        with rstore.Store(store_path) as store:
            clicks = store.execute("XINFO", "STREAM", "clicks")
        assert pipeline.main(argv, spark=spark) == 0
        assert "already holds 3000 events" in capsys.readouterr().out
        with rstore.Store(store_path) as store:
            assert store.execute("XINFO", "STREAM", "clicks") == clicks
        assert _parquet(out) == expected
        assert _part_files(out) == {"actions_per_minute.parquet": 1, "sessions_per_user.parquet": 1}
        assert _streams(store_path) == expected
        assert _keys(store_path) == keys

        # The same job over a directory of RDB dumps (the store's, saved by rstore), writing its
        # results into the same store: they replace the results already there.
        dumps = tmp_path / "dumps"
        dumps.mkdir()
        with rstore.Store(store_path) as store:
            store.save(dumps / "clicks.rdb")
        assert pipeline.main(["--dumps", str(dumps), *common], spark=spark) == 0
        assert _parquet(out) == expected
        assert _streams(store_path) == expected
        assert _keys(store_path) == keys
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)
