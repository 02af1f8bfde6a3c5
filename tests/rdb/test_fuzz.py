"""Bounded-time fuzzing of RDB files and DUMP payloads (the loop is tests/rdb/fuzz_worker.py).

The loop runs in a child process with a hard timeout, so a hang fails the test with the case
it reached instead of stopping the run.  ``RSTORE_FUZZ_SEED`` replays a run; the default run is
about 12 s (``RSTORE_FUZZ_SECONDS``), the ``stress`` ones 5 minutes each
(``RSTORE_STRESS_FUZZ_SECONDS``; ``python -m pytest tests/rdb/test_fuzz.py -m stress``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("fuzz_worker.py")
SEED = int(os.environ.get("RSTORE_FUZZ_SEED", "4"))


def run_fuzz(seconds: float, seed: int, workdir: Path) -> str:
    try:
        done = subprocess.run(
            [sys.executable, str(WORKER), str(seconds), str(seed), str(workdir)],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        last = out.strip().splitlines()[-1:] or ["before the first case"]
        pytest.fail(f"the fuzz loop hung at {last[0]} (seed {seed})")
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-30:])
        why = f"fuzz run failed (seed {seed}, exit {done.returncode})"
        pytest.fail(f"{why}:\n{tail}\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def test_fuzz_files_and_payloads(tmp_path: Path) -> None:
    summary = run_fuzz(float(os.environ.get("RSTORE_FUZZ_SECONDS", "12")), SEED, tmp_path)
    assert summary.startswith("done:")
    cases = int(summary.split()[1])
    assert cases > 50, summary


@pytest.mark.stress
@pytest.mark.parametrize("seed", [11, 12])
def test_fuzz_files_and_payloads_long(
    seed: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Nothing in the configuration deselects the marker, so the test keeps itself out of
    # the default run: it runs when the -m expression names stress.
    if "stress" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a 5-minute run: select it with -m stress")
    summary = run_fuzz(float(os.environ.get("RSTORE_STRESS_FUZZ_SECONDS", "300")), seed, tmp_path)
    assert summary.startswith("done:")


def test_a_failure_is_reported_with_its_case(tmp_path: Path) -> None:
    """The harness itself: a worker that cannot start fails loudly, never passes."""
    with pytest.raises(pytest.fail.Exception, match="fuzz run failed"):
        (tmp_path / "a-file").write_bytes(b"")
        run_fuzz(1, 0, tmp_path / "a-file")  # no store can be made under a file
