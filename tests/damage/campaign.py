"""The damaged-store campaign for people (run from the repository root).

    python -m tests.damage.campaign --mutations 280 --seed 1 [--kind KIND] [--json]
    python -m tests.damage.campaign --seed 1 --case 17 --kind bitflip      # replay one case

A campaign prints a table of outcomes per mutation kind and the replay line of every failing
case; it exits with status 1 when any case failed.  A replay runs that one case *in this
process* (a crash kills it, with faulthandler's Python traceback on stderr), prints every step
that did not answer as the truth did, with full tracebacks, and keeps the damaged copy and the
intact store in a directory it names.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import battery, mutations
from .battery import StepRecord
from .isolate import ChildResult
from .outcome import classify
from .runner import (
    CASE_TIMEOUT,
    CaseResult,
    Prepared,
    baseline,
    damaged_copy,
    failure_lines,
    prepare,
    run_campaign,
    table,
)


class _Printer:
    """Prints each step that did not go as the truth says, as it happens."""

    def __init__(self) -> None:
        self.records: list[StepRecord] = []

    def start(self, step: str) -> None:
        if sys.stderr.isatty():
            print(f"\r\033[K... {step}", end="", file=sys.stderr, flush=True)

    def done(self, record: StepRecord) -> None:
        self.records.append(record)
        if sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr, flush=True)
        status = record["status"]
        if status in ("equal", "ok", "clean"):
            return
        print(f"  {record['step']}: {status}  {record.get('detail', '')}".rstrip())
        error = record.get("error")
        if error is not None:
            print("    " + error.get("traceback", "").replace("\n", "\n    ").rstrip())


def replay(prep: Prepared, case: int, kind: str) -> int:
    mutation = mutations.make(prep.seed, case, kind, prep.file_size)
    print(f"case {case} of seed {prep.seed}: {mutation.describe()}")
    path = damaged_copy(prep, prep.workdir / "damaged", mutation)
    print(f"damaged copy: {path} (the intact store beside it: {prep.pristine})")
    faulthandler.enable()
    printer = _Printer()
    battery.run(path, prep.pop, prep.truth, printer, full_tracebacks=True)
    outcome = classify(ChildResult(records=printer.records, finished=True))
    print(f"outcome: {outcome.name}  {outcome.reason}")
    return 1 if outcome.failed else 0


def _as_json(prep: Prepared, results: list[CaseResult], seconds: float) -> dict[str, Any]:
    return {
        "seed": prep.seed,
        "file_size": prep.file_size,
        "seconds": round(seconds, 2),
        "cases": [
            {
                "case": r.case,
                "kind": r.kind,
                "mutation": r.mutation,
                "outcome": r.outcome.name,
                "reason": r.outcome.reason,
                "seconds": round(r.seconds, 3),
                "replay": r.replay,
            }
            for r in results
        ],
    }


def campaign(prep: Prepared, args: argparse.Namespace) -> int:
    kinds = (args.kind,) if args.kind else mutations.KINDS
    base = baseline(prep, args.timeout)
    if base.name != "clean":
        print(f"the undamaged copy is not clean ({base.name}: {base.reason}): harness fault")
        return 2
    deadline = time.monotonic() + args.seconds if args.seconds else None

    def progress(result: CaseResult) -> None:
        if sys.stderr.isatty():
            line = f"case {result.case} {result.kind}: {result.outcome.name}"
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)

    started = time.monotonic()
    results = run_campaign(prep, range(args.mutations), kinds, args.timeout, deadline, progress)
    seconds = time.monotonic() - started
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(_as_json(prep, results, seconds), indent=1))
    else:
        size = prep.file_size
        print(
            f"damage campaign, seed {prep.seed}: {len(results)} mutations of a {size}-byte "
            f"data.mdb ({size // mutations.PAGE} pages), store built in {prep.build_seconds:.1f} s"
        )
        print(table(results))
        per_case = seconds / max(len(results), 1)
        slowest = max((r.seconds for r in results), default=0.0)
        print(f"time: {seconds:.1f} s, {per_case:.2f} s per case (slowest {slowest:.2f} s)")
        lines = failure_lines(results)
        print(f"failures: {len(lines)}")
        for line in lines:
            print(line)
    return 1 if any(r.outcome.failed for r in results) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.damage.campaign", description=__doc__)
    parser.add_argument("--seed", type=int, default=1, help="population and mutation seed")
    parser.add_argument("--mutations", type=int, default=280, help="number of cases")
    parser.add_argument("--kind", choices=mutations.KINDS, help="only this kind of damage")
    parser.add_argument("--case", type=int, help="replay this case in-process")
    parser.add_argument("--seconds", type=float, help="stop starting cases after this long")
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT, help="per case, s")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = parser.parse_args(argv)
    if args.case is not None:  # the files stay, for `rstore check` and a debugger
        keep = Path(tempfile.mkdtemp(prefix=f"rstore-damage-{args.seed}-{args.case}-"))
        kind = args.kind or mutations.kind_of_case(args.case)
        return replay(prepare(args.seed, keep), args.case, kind)
    with tempfile.TemporaryDirectory(prefix="rstore-damage-") as tmp:
        return campaign(prepare(args.seed, Path(tmp)), args)


if __name__ == "__main__":
    sys.exit(main())
