"""``bench/write_path.py``, the write path's call counter (issue 22, item 5): it runs on the
current rstore, and its ``--json`` report has the keys docs/benchmarks.md documents, with
figures that hold whatever shape the path takes (its counts are published, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import rstore

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "write_path.py"

REPORT_KEYS = {
    "command", "measured", "rstore", "package_dir", "c_extensions", "no_speedups",
    "store_formats", "python", "py_lmdb", "cpu", "cores", "kernel", "load_average", "results",
}  # fmt: skip
CASE_KEYS = {
    "case", "operation", "store_format", "samples", "python_calls", "modules", "entries",
    "c_calls", "other_python_calls", "resumes", "lmdb_commits", "store_commits",
    "durable_commits", "flushes", "waits", "range", "per_sample", "module_calls", "other_files",
    "target", "met", "sequence",
}  # fmt: skip


def run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def check_consistent(result: dict[str, Any]) -> None:
    """The figures of one case agree with its module list and its call sequence."""
    assert result.keys() >= CASE_KEYS
    assert result["store_format"] == rstore.FORMAT_VERSION  # the default store: the write-ahead log
    modules = result["module_calls"]
    assert result["python_calls"] == sum(m["calls"] for m in modules) > 0
    assert result["modules"] == len(modules) == len({m["module"] for m in modules})
    assert result["entries"] == sum(m["entries"] for m in modules)
    assert all(m["module"].startswith("rstore") for m in modules)
    calls = [e for e in result["sequence"] if e["kind"] == "call"]
    assert len(calls) == result["python_calls"]
    assert len(result["sequence"]) - len(calls) == result["waits"]
    assert len(result["per_sample"]) == result["samples"] == 2
    low, high = result["range"]["python_calls"]
    assert low <= result["python_calls"] <= high


def test_json_report(tmp_path: Path) -> None:
    done = run_script(
        tmp_path,
        *("--json", "--verbose", "--samples", "2", "--warmup", "1"),
        *("--cases", "xadd-durable,xreadgroup-woken"),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) >= REPORT_KEYS
    assert Path(report["package_dir"]) == Path(rstore.__file__).parent  # this rstore is counted
    assert report["command"].startswith("python bench/write_path.py --json")
    xadd, woken = report["results"]
    assert (xadd["case"], woken["case"]) == ("xadd-durable", "xreadgroup-woken")
    for result in (xadd, woken):
        check_consistent(result)
    # one write command, one write transaction, on disk before it returns
    assert xadd["lmdb_commits"] == xadd["store_commits"] == xadd["durable_commits"] == 1
    assert xadd["waits"] == 0
    assert xadd["met"] == (xadd["python_calls"] <= 35 and xadd["modules"] <= 12)
    # the reader blocked, was woken by the other process's XADD and committed its delivery
    assert woken["waits"] >= 1
    assert 1 <= woken["store_commits"] <= woken["lmdb_commits"]
    # its delivery waited for the disk; recording its consumer before it blocked did not
    assert woken["durable_commits"] == 1
    assert woken["met"] == (woken["durable_commits"] <= 1)


def test_unknown_case_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run_script(tmp_path, "--cases", "xadd-durable,xdel")
    assert done.returncode == 2
    assert "unknown case xdel; the cases: xadd-durable, xadd-relaxed" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # refused before any store was made
