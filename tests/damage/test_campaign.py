"""The damaged-store campaign in CI, bounded in time (issue 8, section 3).

Random truncations, bit flips, zeroed and random pages and overwritten bytes of a populated
store's ``data.mdb``, each opened, read, checked and written in a child process.  No case may
crash the process (a signal), hang, raise anything but an ``rstore.RStoreError``, or answer
differently from the intact store while ``check()`` reports nothing.

``RSTORE_DAMAGE_SEED`` picks the population and the mutations (default 1; printed);
``RSTORE_DAMAGE_SECONDS`` bounds the default run (about 20 s of cases);
``RSTORE_STRESS_DAMAGE_SECONDS`` the two ``stress`` runs (5 minutes each;
``python -m pytest tests/damage -m stress``).  A failure lists every failing case with the
command that replays it alone: ``python -m tests.damage.campaign --seed S --case N --kind K``.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable

import pytest

from .runner import Prepared, baseline, failure_lines, failures, run_campaign, table

SEED = int(os.environ.get("RSTORE_DAMAGE_SEED", "1"))
SHOWN_FAILURES = 40


def run_bounded(prep: Prepared, seconds: float) -> None:
    print(f"damage campaign: seed {prep.seed} (RSTORE_DAMAGE_SEED={prep.seed} replays it)")
    base = baseline(prep)
    assert base.name == "clean", f"the undamaged copy is {base.name}: {base.reason}"
    results = run_campaign(prep, itertools.count(), deadline=time.monotonic() + seconds)
    print(table(results))
    if len(results) < min(10, seconds):
        pytest.fail(f"only {len(results)} cases in {seconds} s", pytrace=False)
    bad = failures(results)
    if bad:
        lines = failure_lines(results)
        hidden = len(lines) - SHOWN_FAILURES
        more = f"\n... and {hidden} more" if hidden > 0 else ""
        pytest.fail(
            f"{len(bad)} of {len(results)} damaged stores crashed, hung, raised a foreign "
            f"exception or answered wrongly with check() clean (seed {prep.seed}):\n"
            f"{table(results)}\n" + "\n".join(lines[:SHOWN_FAILURES]) + more,
            pytrace=False,
        )


def test_damaged_stores_never_crash_or_lie(prepared: Callable[[int], Prepared]) -> None:
    run_bounded(prepared(SEED), float(os.environ.get("RSTORE_DAMAGE_SECONDS", "20")))


@pytest.mark.stress
@pytest.mark.parametrize("seed", [11, 12])
def test_damaged_stores_never_crash_or_lie_long(
    seed: int, prepared: Callable[[int], Prepared], request: pytest.FixtureRequest
) -> None:
    # Like tests/rdb/test_fuzz.py: the test keeps itself out of runs whose -m does not name it.
    if "stress" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a 5-minute run: select it with -m stress")
    run_bounded(prepared(seed), float(os.environ.get("RSTORE_STRESS_DAMAGE_SECONDS", "300")))
