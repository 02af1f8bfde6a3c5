"""Salvage of randomly damaged stores, bounded in time: the damage campaign's mutations
(truncations, bit flips, zeroed and random pages, overwritten bytes), each salvaged in a forked
child.  No case may crash the child (a signal), hang, raise anything but an
``rstore.RStoreError``, write a byte of the source, or give a new store that :mod:`.salvaging`
faults: one that fails ``check``, holds an entry the intact store did not, or misses entries its
report does not name (or names entries it holds).

``RSTORE_DAMAGE_SEED`` picks the population and the mutations (default 1);
``RSTORE_SALVAGE_DAMAGE_SECONDS`` bounds the run (default 15 s of cases).
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable

import pytest

import rstore

from . import mutations
from .isolate import run_in_child
from .runner import Prepared, damaged_copy
from .salvaging import Entries, digests, entries_of, violations

SEED = int(os.environ.get("RSTORE_DAMAGE_SEED", "1"))
CASE_TIMEOUT = 20.0


def _case(prep: Prepared, original: Entries, case: int) -> tuple[str, str]:
    """The outcome of case ``case`` and a line saying why."""
    kind = mutations.kind_of_case(case)
    mutation = mutations.make(prep.seed, case, kind, prep.file_size)
    src = damaged_copy(prep, prep.workdir / "salvage-case", mutation)
    dst = prep.workdir / "salvage-case-out"
    shutil.rmtree(dst, ignore_errors=True)
    replay = f"seed {prep.seed} case {case} ({mutation.describe()})"

    def body(recorder: object) -> None:
        before = digests(src)
        outcome, detail = "refused", ""
        try:
            report = rstore.salvage_store(src, dst)
        except rstore.RStoreError as exc:
            detail = str(exc)
        else:
            problems = violations(original, report, dst)
            outcome = "wrong" if problems else "complete" if report.complete else "partial"
            detail = "; ".join(problems[:3])
        if digests(src) != before:
            outcome, detail = "wrong", "the source was written"
        recorder.done({"outcome": outcome, "detail": detail})  # type: ignore[attr-defined]

    child = run_in_child(body, CASE_TIMEOUT)
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(dst, ignore_errors=True)
    if child.signal is not None:
        return "crash", f"{replay}: {child.signal}: {child.stderr[:300]}"
    if child.hung:
        return "hang", replay
    if child.harness_error is not None:
        return "foreign-exception", f"{replay}: {child.harness_error[-600:]}"
    if not child.records:
        return "crash", f"{replay}: exit {child.exit_code}: {child.stderr[:300]}"
    record = child.records[-1]
    return record["outcome"], f"{replay}: {record['detail']}"


def test_salvage_of_damaged_stores_never_crashes_or_lies(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    original = entries_of(prep.pristine)
    deadline = time.monotonic() + float(os.environ.get("RSTORE_SALVAGE_DAMAGE_SECONDS", "15"))
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    for case in itertools.count():
        if time.monotonic() >= deadline:
            break
        outcome, why = _case(prep, original, case)
        outcomes[outcome] += 1
        if outcome in ("crash", "hang", "foreign-exception", "wrong"):
            failures.append(f"{outcome}: {why}")
    cases = sum(outcomes.values())
    print(f"salvage campaign, seed {prep.seed}: {cases} cases: {dict(outcomes)}")
    assert cases >= 10, f"only {cases} cases ran"
    assert outcomes["complete"] and outcomes["partial"], outcomes  # the damage mattered
    if failures:
        pytest.fail(f"{len(failures)} of {cases} cases failed:\n" + "\n".join(failures[:20]),
                    pytrace=False)  # fmt: skip
