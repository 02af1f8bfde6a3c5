"""``rstore compact``: the sizes before and after (text and --json), one clear line when other
processes hold the store (exit 1, nothing changed), --wait, --read-only refused, a progress bar
on request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]

_HOLDER = textwrap.dedent(
    """
    import sys, time
    import rstore
    store = rstore.Store(sys.argv[1], create=False)
    print("open", flush=True)
    time.sleep(float(sys.argv[2]))
    store.close()
    """
)


@pytest.fixture
def grown(store_path: Path) -> Path:
    """A store whose data.mdb grew for 50,000 entries that were then deleted, and a second
    database."""
    with rstore.Store(store_path) as store:
        store.xadd("kept", {"f": "v"})
        store.append_entries(("gone", None, [b"f", b"v"]) for _ in range(50_000))
        store.delete("gone")
        store.database(2).xadd("two", {"f": "v"})
    return store_path


def test_prints_each_database_before_and_after(run: Run, grown: Path) -> None:
    before = os.path.getsize(grown / "data.mdb")
    result = run("compact")
    assert result.exit_code == 0, result.stderr
    db0, db2, total = result.stdout.splitlines()
    assert db0.startswith(f"db0: data.mdb {before / (1 << 20):.1f} MiB -> ")
    assert " KiB (" in db0 and " pages), wal.log " in db0
    assert db2.startswith("db2: data.mdb ")
    assert total.startswith("compacted: ") and total.endswith(" s")
    assert result.stderr == ""
    assert os.path.getsize(grown / "data.mdb") < before // 10
    with rstore.Store(grown) as store:
        assert (store.xlen("kept"), store.exists("gone"), store.database(2).xlen("two")) == (
            1,
            0,
            1,
        )


def test_json(run: Run, grown: Path) -> None:
    before = os.path.getsize(grown / "data.mdb")
    result = run("compact", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"path", "bytes-before", "bytes-after", "seconds", "databases"}
    assert [d["db"] for d in report["databases"]] == [0, 2]
    db0 = report["databases"][0]
    current = rstore.FORMAT_VERSION
    assert (db0["path"], db0["format"], db0["bytes-before"]) == (str(grown), current, before)
    assert db0["bytes-after"] == os.path.getsize(grown / "data.mdb")
    assert db0["log-bytes-after"] == os.path.getsize(grown / "wal.log")
    assert db0["pages-after"] < db0["pages-before"]
    assert report["bytes-after"] < report["bytes-before"]


def _holder(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "open\n"
    return proc


def test_refused_in_one_line_while_another_process_holds_it(run: Run, grown: Path) -> None:
    holder = _holder(grown, 30)
    try:
        before = os.stat(grown / "data.mdb")
        result = run("compact")
        assert result.exit_code == 1
        assert result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {grown} is open in another process (pid {holder.pid}); ")
        assert "--wait SECONDS" in line
        after = os.stat(grown / "data.mdb")
        assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_wait_for_the_other_process(run: Run, grown: Path) -> None:
    holder = _holder(grown, 0.5)
    try:
        result = run("compact", "--wait", "30")
        assert result.exit_code == 0, result.stderr
        assert holder.wait(10) == 0
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_refusals(run: Run, grown: Path, tmp_path: Path) -> None:
    result = run("--read-only", "compact")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: compact rewrites the store's files: it cannot run with --read-only"
    )
    result = run("compact", "--wait", "-1")
    assert result.exit_code == 2 and "--wait" in result.stderr
    result = run("compact", "--store", str(tmp_path / "missing"))
    assert (result.exit_code, result.stderr) == (1, f"Error: no store at {tmp_path / 'missing'}\n")


def test_progress_bar_on_request(run: Run, grown: Path) -> None:
    result = run("compact", "--progress")
    assert result.exit_code == 0
    assert "compacting" in result.stderr
