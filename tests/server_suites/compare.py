"""Comparing a candidate server's run of a suite with the reference server's run.

The rule: every test the reference passes, the candidate passes -- except the tests the
candidate is excused from (name -> reason).  An excuse must stay true: excusing a test the
reference does not pass, or one the candidate passes anyway, is reported too, so that the
documented list never outlives its reasons.  Works for both suites: a run is a mapping
``test name -> outcome``, and ``passed`` names the outcome that counts as a pass (``"ok"`` for
Redis's tcl suite, ``"passed"`` for redis-py's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    #: passed on the reference, not on the candidate, not excused: name -> candidate outcome
    missing: dict[str, str]
    #: passed on the reference, not on the candidate, excused: name -> reason
    excused: dict[str, str]
    #: excuses that are not needed: name -> why (reference does not pass / candidate passes)
    stale: dict[str, str]
    #: passed on the candidate only (informational: a server may do better)
    extra: list[str]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.stale

    def report(self, details: Mapping[str, str] | None = None) -> str:
        """What went wrong, one test a paragraph (``details``: the candidate's failure texts)."""
        lines = []
        for name, outcome in sorted(self.missing.items()):
            text = (details or {}).get(name, "").strip()
            lines.append(f"passes on the reference, {outcome} on the candidate: {name}")
            if text:
                lines.append("    " + text.replace("\n", "\n    "))
        lines += [f"stale exclusion: {name}: {why}" for name, why in sorted(self.stale.items())]
        return "\n".join(lines)


def compare_runs(
    reference: Mapping[str, str],
    candidate: Mapping[str, str],
    *,
    passed: str,
    exclusions: Mapping[str, str] | None = None,
) -> Comparison:
    """Compare two runs of one suite (``test name -> outcome``); a test the candidate did not
    run at all counts as ``"not run"``."""
    exclusions = exclusions or {}
    missing: dict[str, str] = {}
    excused: dict[str, str] = {}
    for name, outcome in reference.items():
        if outcome != passed:
            continue
        got = candidate.get(name, "not run")
        if got == passed:
            continue
        if name in exclusions:
            excused[name] = exclusions[name]
        else:
            missing[name] = got
    stale: dict[str, str] = {}
    for name in exclusions:
        if reference.get(name) != passed:
            stale[name] = f"the reference does not pass it ({reference.get(name, 'not run')})"
        elif candidate.get(name) == passed:
            stale[name] = "the candidate passes it"
    extra = sorted(
        name
        for name, outcome in candidate.items()
        if outcome == passed and reference.get(name) != passed
    )
    return Comparison(missing, excused, stale, extra)
