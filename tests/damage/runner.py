"""The campaign as a library: prepare the store and its truth once, then run damaged cases.

Case ``N`` of seed ``S`` uses mutation kind ``kinds[N % len(kinds)]`` and the mutation
``mutations.make(S, N, kind, size)``: the replay line of a case names all three, so it replays
alone, on any machine, whatever else the campaign ran.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import rstore

from . import battery, mutations, population
from .battery import Recorder
from .isolate import ChildResult, run_in_child
from .outcome import OUTCOMES, Outcome, classify
from .population import Population
from .truth import Truth, record

CASE_TIMEOUT = 10.0
REPLAY = "python -m tests.damage.campaign"


@dataclass
class Prepared:
    """The intact store, what was built into it, and its answers."""

    seed: int
    workdir: Path
    pop: Population
    truth: Truth
    build_seconds: float

    @property
    def pristine(self) -> Path:
        return self.workdir / "pristine"

    @property
    def file_size(self) -> int:
        return (self.pristine / "data.mdb").stat().st_size


def prepare(seed: int, workdir: Path) -> Prepared:
    """Build the population of ``seed`` in ``workdir/pristine`` and record its truth."""
    started = time.monotonic()
    pop = population.build(workdir / "pristine", seed)
    with rstore.Store(workdir / "pristine", create=False) as store:
        truth = record(store, pop)
    return Prepared(seed, workdir, pop, truth, time.monotonic() - started)


@dataclass(frozen=True)
class CaseResult:
    seed: int
    case: int
    kind: str
    mutation: str
    outcome: Outcome
    seconds: float

    @property
    def replay(self) -> str:
        return f"{REPLAY} --seed {self.seed} --case {self.case} --kind {self.kind}"


def damaged_copy(prep: Prepared, target: Path, mutation: mutations.Mutation | None) -> Path:
    """A copy of the intact store in the directory ``target``, its ``data.mdb`` damaged: the
    data file and, for a store with the write-ahead log, the log (its header names the
    checkpoint the data file holds; the other files are rebuilt by the first open)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in ("data.mdb", "wal.log"):
        if (prep.pristine / name).exists():
            shutil.copyfile(prep.pristine / name, target / name)
    if mutation is not None:
        mutation.apply(target / "data.mdb")
    return target


def run_copy(prep: Prepared, path: Path, timeout: float) -> ChildResult:
    """The battery on the store in ``path``, in a child process."""

    def body(recorder: Recorder) -> None:
        battery.run(path, prep.pop, prep.truth, recorder)

    return run_in_child(body, timeout)


def run_case(
    prep: Prepared, case: int, kind: str, timeout: float = CASE_TIMEOUT
) -> tuple[CaseResult, ChildResult]:
    mutation = mutations.make(prep.seed, case, kind, prep.file_size)
    path = damaged_copy(prep, prep.workdir / "case", mutation)
    child = run_copy(prep, path, timeout)
    shutil.rmtree(path, ignore_errors=True)
    result = CaseResult(prep.seed, case, kind, mutation.describe(), classify(child), child.seconds)
    return result, child


def baseline(prep: Prepared, timeout: float = CASE_TIMEOUT) -> Outcome:
    """The battery on an undamaged copy: anything but ``clean`` is a fault of the harness (or a
    store that answers differently after a copy)."""
    path = damaged_copy(prep, prep.workdir / "baseline", None)
    outcome = classify(run_copy(prep, path, timeout))
    shutil.rmtree(path, ignore_errors=True)
    return outcome


def run_campaign(
    prep: Prepared,
    cases: Iterable[int],
    kinds: tuple[str, ...] = mutations.KINDS,
    timeout: float = CASE_TIMEOUT,
    deadline: float | None = None,
    progress: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run ``cases`` in order, stopping early at ``deadline`` (a ``time.monotonic()`` value)."""
    results: list[CaseResult] = []
    for case in cases:
        if deadline is not None and time.monotonic() >= deadline:
            break
        result, _ = run_case(prep, case, mutations.kind_of_case(case, kinds), timeout)
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def failures(results: list[CaseResult]) -> list[CaseResult]:
    return [r for r in results if r.outcome.failed]


def table(results: list[CaseResult]) -> str:
    """Outcome counts per mutation kind, then totals."""
    kinds = [k for k in mutations.KINDS if any(r.kind == k for r in results)]
    lines = [f"{'kind':<12} {'cases':>5}  " + "  ".join(OUTCOMES)]
    for label, rows in [(k, [r for r in results if r.kind == k]) for k in kinds] + [
        ("total", results)
    ]:
        counts = Counter(r.outcome.name for r in rows)
        cells = "  ".join(f"{counts.get(o, 0):>{len(o)}}" for o in OUTCOMES)
        lines.append(f"{label:<12} {len(rows):>5}  {cells}")
    signals = Counter(r.outcome.reason.split()[0] for r in results if r.outcome.name == "crash")
    if signals:
        lines.append("crashes: " + ", ".join(f"{s} {n}" for s, n in signals.most_common()))
    foreign = Counter(
        r.outcome.reason.split(": ", 2)[1] for r in results if r.outcome.name == "foreign-exception"
    )
    if foreign:
        lines.append("foreign: " + ", ".join(f"{e} {n}" for e, n in foreign.most_common()))
    return "\n".join(lines)


def failure_lines(results: list[CaseResult]) -> list[str]:
    """One block per failing case: its replay command, outcome and reason, and the damage."""
    return [
        f"{r.replay}\n    {r.outcome.name}: {r.outcome.reason}\n    damage: {r.mutation}"
        for r in failures(results)
    ]
