"""The outcome of one damaged store, from what its child process reported.

Failures (the campaign's target is none of them):

* ``crash`` -- the child died of a signal (SIGBUS, SIGSEGV, SIGABRT, ...) or exited without
  finishing the battery;
* ``hang`` -- the child did not finish in time;
* ``foreign-exception`` -- a step raised something that is not an ``rstore.RStoreError``;
* ``silent-wrong`` -- a read answered differently from the truth and the ``check()`` after the
  reads reported no problem and raised no ``RStoreError``; or what a write returned (an ID that
  does not read back, XACK's count) was wrong and neither ``check()`` (before or after the
  writes) flagged anything.

Acceptable:

* ``flagged`` -- ``check()`` reported problems or raised an ``RStoreError`` (whether or not an
  answer differed: the damage was found);
* ``refused`` -- nothing differed, but a step raised an ``RStoreError`` (the store refused to
  open, a read or a write refused): a clear error;
* ``clean`` -- every answer equal, ``check()`` clean, every write read back (the damage hit
  unused space).
"""

from __future__ import annotations

from dataclasses import dataclass

from .battery import StepRecord
from .isolate import ChildResult, crash_summary

FAILURES = ("crash", "hang", "foreign-exception", "silent-wrong")
ACCEPTABLE = ("flagged", "refused", "clean")
OUTCOMES = FAILURES + ACCEPTABLE


@dataclass(frozen=True)
class Outcome:
    name: str
    reason: str  # a line saying why: the signal and step, the exception, the first difference

    @property
    def failed(self) -> bool:
        return self.name in FAILURES


def _error_line(record: StepRecord) -> str:
    e = record["error"]
    return f"{record['step']}: {e['module']}.{e['class']}: {e['message'][:160]} ({e['where']})"


def _flags(record: StepRecord) -> bool:
    """Whether a check step found the damage."""
    if record["phase"] != "check":
        return False
    if record["status"] == "problems":
        return True
    return record["status"] == "raised" and bool(record["error"]["rstore"])


def classify(result: ChildResult) -> Outcome:
    running = f" during {result.running}" if result.running else ""
    if result.harness_error is not None:
        raise RuntimeError(f"the damage harness itself failed:\n{result.harness_error}")
    if result.hung:
        return Outcome("hang", f"no answer in time{running}")
    if result.signal is not None:
        why = crash_summary(result.stderr)
        return Outcome("crash", f"{result.signal}{running}" + (f": {why}" if why else ""))
    if not result.finished:
        why = crash_summary(result.stderr) or result.stderr.strip()[-200:]
        return Outcome("crash", f"exit {result.exit_code}{running}: {why}")
    records = result.records
    foreign = [r for r in records if r["status"] == "raised" and not r["error"]["rstore"]]
    if foreign:
        return Outcome("foreign-exception", _error_line(foreign[0]))
    different = [r for r in records if r["status"] == "different"]
    flagged = [r for r in records if _flags(r)]
    # A read is judged by the check() that follows the reads; what the writes returned, by
    # either check() (the one after the writes may be the first to meet the damage).
    unflagged = [
        r
        for r in different
        if not (flagged and (r["phase"] != "read" or flagged[0]["step"] == "check"))
    ]
    if unflagged:
        first = unflagged[0]
        return Outcome("silent-wrong", f"{first['step']}: {first['detail']} (check() clean)")
    if flagged:
        first = flagged[0]
        what = f"{first['step']}: {first['detail']}" if "detail" in first else _error_line(first)
        lead = f"{len(different)} answers differ; " if different else ""
        return Outcome("flagged", f"{lead}{what}"[:300])
    raised = [r for r in records if r["status"] == "raised"]
    if raised:
        return Outcome("refused", _error_line(raised[0]))
    return Outcome("clean", "")
