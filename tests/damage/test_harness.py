"""The campaign's own machinery: it must see each kind of failure, and only real ones."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rstore

from . import mutations
from .battery import Recorder, StepRecord
from .isolate import ChildResult, run_in_child
from .outcome import OUTCOMES, classify
from .runner import Prepared, baseline, damaged_copy, run_copy

ROOT = Path(__file__).resolve().parents[2]
SEED = 1


def test_an_undamaged_copy_is_clean(prepared: Callable[[int], Prepared]) -> None:
    outcome = baseline(prepared(SEED))
    assert (outcome.name, outcome.reason) == ("clean", "")


def test_a_store_that_answers_otherwise_with_check_clean_is_silent_wrong(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    path = damaged_copy(prep, prep.workdir / "one-more-entry", None)
    with rstore.Store(path, sync=False, create=False) as store:
        store.xadd("mixed", {"extra": "entry"})
        assert store.check() == []
    outcome = classify(run_copy(prep, path, timeout=10))
    assert outcome.name == "silent-wrong"
    assert outcome.reason.startswith("xlen[mixed]: reply: expected 250, got 251")


def _child(body: Callable[[Recorder], None], timeout: float = 10) -> ChildResult:
    return run_in_child(body, timeout)


def test_a_signal_is_a_crash_named_after_it() -> None:
    def body(recorder: Recorder) -> None:
        recorder.start("xrange[somewhere]")
        os.kill(os.getpid(), signal.SIGBUS)

    outcome = classify(_child(body))
    assert outcome.name == "crash"
    assert outcome.reason.startswith("SIGBUS during xrange[somewhere]: Fatal Python error: Bus")


def test_a_child_that_does_not_finish_in_time_is_a_hang() -> None:
    def body(recorder: Recorder) -> None:
        recorder.start("sleeping")
        time.sleep(60)

    started = time.monotonic()
    outcome = classify(_child(body, timeout=0.5))
    assert (outcome.name, outcome.reason) == ("hang", "no answer in time during sleeping")
    assert time.monotonic() - started < 10


def test_a_child_that_exits_without_finishing_is_a_crash() -> None:
    def body(recorder: Recorder) -> None:
        recorder.start("open")
        os._exit(7)

    outcome = classify(_child(body))
    assert outcome.name == "crash"
    assert outcome.reason.startswith("exit 7 during open")


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "class": type(exc).__qualname__,
        "module": type(exc).__module__,
        "message": str(exc),
        "rstore": isinstance(exc, rstore.RStoreError),
        "where": "here",
    }


def _finished(*records: StepRecord) -> ChildResult:
    return ChildResult(records=list(records), finished=True, exit_code=0)


READ_EQUAL = {"step": "xlen[a]", "phase": "read", "status": "equal"}
READ_DIFFERENT = {"step": "xlen[b]", "phase": "read", "status": "different", "detail": "2 vs 3"}
WRITE_DIFFERENT = {"step": "xack", "phase": "write", "status": "different", "detail": "0"}
CHECK_CLEAN = {"step": "check", "phase": "check", "status": "clean"}
CHECK_PROBLEMS = {"step": "check", "phase": "check", "status": "problems", "detail": "1: bad"}
AFTER_WRITES_CLEAN = {**CHECK_CLEAN, "step": "check-after-writes"}
AFTER_WRITES_PROBLEMS = {**CHECK_PROBLEMS, "step": "check-after-writes"}


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([READ_EQUAL, CHECK_CLEAN], "clean"),
        ([READ_DIFFERENT, CHECK_CLEAN], "silent-wrong"),
        ([READ_DIFFERENT, CHECK_PROBLEMS], "flagged"),
        ([READ_EQUAL, CHECK_PROBLEMS], "flagged"),
        ([READ_DIFFERENT, CHECK_CLEAN, AFTER_WRITES_PROBLEMS], "silent-wrong"),
        ([READ_EQUAL, CHECK_CLEAN, WRITE_DIFFERENT, AFTER_WRITES_PROBLEMS], "flagged"),
        ([READ_EQUAL, CHECK_CLEAN, WRITE_DIFFERENT, AFTER_WRITES_CLEAN], "silent-wrong"),
        (
            [
                READ_DIFFERENT,
                {**CHECK_CLEAN, "status": "raised", "error": _error(rstore.CorruptDataError("x"))},
            ],
            "flagged",
        ),
        (
            [{**READ_EQUAL, "status": "raised", "error": _error(rstore.StorageError("no"))}],
            "refused",
        ),
        (
            [
                {**READ_EQUAL, "status": "raised", "error": _error(IndexError("list index"))},
                CHECK_PROBLEMS,
            ],
            "foreign-exception",
        ),
        (
            [
                READ_DIFFERENT,
                {**CHECK_CLEAN, "status": "raised", "error": _error(AssertionError())},
            ],
            "foreign-exception",
        ),
    ],
)
def test_classification(records: list[StepRecord], expected: str) -> None:
    assert classify(_finished(*records)).name == expected


@pytest.mark.parametrize("kind", mutations.KINDS)
def test_a_mutation_replays_and_changes_only_what_it_describes(kind: str, tmp_path: Path) -> None:
    size = 40 * mutations.PAGE
    original = random.Random(0).randbytes(size)
    for case in range(20):
        mutation = mutations.make(7, case, kind, size)
        assert mutation == mutations.make(7, case, kind, size)
        path = tmp_path / "data.mdb"
        path.write_bytes(original)
        mutation.apply(path)
        damaged = path.read_bytes()
        if kind == "truncate":
            assert damaged == original[: mutation.truncate_to]
            continue
        changed = [i for i in range(size) if damaged[i] != original[i]]
        if kind == "bitflip":
            assert changed == sorted({b // 8 for b in mutation.bits})
            assert all(f"byte {b // 8} bit {b % 8}" in mutation.describe() for b in mutation.bits)
            continue
        end = mutation.offset + len(mutation.data)
        assert all(mutation.offset <= i < end for i in changed)
        assert damaged[mutation.offset : end] == mutation.data
        assert mutation.offset // mutations.PAGE == (end - 1) // mutations.PAGE  # one page
        assert f"page {mutation.offset // mutations.PAGE}" in mutation.describe()


def test_the_command_line_runs_a_campaign() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.damage.campaign",
            "--mutations",
            "3",
            "--seed",
            "2",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert [c["case"] for c in report["cases"]] == [0, 1, 2]
    assert [c["kind"] for c in report["cases"]] == list(mutations.KINDS[:3])
    assert all(c["outcome"] in OUTCOMES for c in report["cases"])
    assert (done.returncode == 1) == any(
        c["outcome"] in ("crash", "hang", "foreign-exception", "silent-wrong")
        for c in report["cases"]
    )
    assert report["cases"][1]["replay"] == (
        "python -m tests.damage.campaign --seed 2 --case 1 --kind bitflip"
    )
