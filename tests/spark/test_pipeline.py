"""docs/examples/clickstream_pipeline.py, the README's one-command pipeline, on small data.

Its results (Parquet files and the streams written back) are compared with the same figures
computed here in plain Python from ``Store.xrange`` of the events it generated: events per
action per minute, and sessions per user (a session ends after the gap without an event).
"""

from __future__ import annotations

import datetime
import importlib.util
import itertools
import subprocess
import sys
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
    assert _run("--events", "many").returncode == 2
    assert _run("--users", "0").returncode == 2
    missing = _run("--dumps", str(tmp_path / "nowhere"), "--store", str(tmp_path / "s"))
    assert missing.returncode == 1
    assert "no such directory" in missing.stderr


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
    """The results the pipeline wrote back into the store, one entry per row."""
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
    return per_minute, {f["user"]: (int(f["sessions"]), int(f["events"])) for f in users}


@pytest.mark.spark
def test_pipeline_on_the_store_then_on_its_dump(spark: Any, tmp_path: Path) -> None:
    pipeline = _load_script()
    store_path = tmp_path / "rstore-data"
    common = ["--session-gap", str(GAP_MINUTES)]
    argv = ["--store", str(store_path), "--events", "3000", "--users", "40", "--minutes", "90",
            "--seed", "7", "--out", str(tmp_path / "out"), *common]  # fmt: skip
    assert pipeline.main(argv, spark=spark) == 0

    expected = _expected(store_path)
    assert sum(expected[0].values()) == 3000
    assert any(sessions > 1 for sessions, _ in expected[1].values())  # the gap rule matters
    assert _parquet(tmp_path / "out") == expected
    assert _streams(store_path) == expected

    # The same job over a directory of RDB dumps (the store's, saved by rstore).
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    with rstore.Store(store_path) as store:
        store.save(dumps / "clicks.rdb")
    results = tmp_path / "results-store"
    argv = ["--dumps", str(dumps), "--store", str(results), "--out", str(tmp_path / "out2"),
            *common]  # fmt: skip
    assert pipeline.main(argv, spark=spark) == 0
    assert _parquet(tmp_path / "out2") == expected
    assert _streams(results) == expected
