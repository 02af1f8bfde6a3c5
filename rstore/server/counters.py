"""Command and error statistics, as INFO commandstats / errorstats and ``total_error_replies``
show them (reset by CONFIG RESETSTAT).

A command counts once, when it answers: a blocking read when it is served, times out or is
unblocked.  ``rejected_calls`` counts the calls refused before running (a wrong number of
arguments), ``failed_calls`` those that ran and answered an error; errors count by their
first word (``NOGROUP``, ``ERR``, ...).  A container command counts by its subcommand
(``xinfo|stream``); an unknown command or subcommand has no command line, only its error.
"""

from __future__ import annotations

import marshal
from collections import Counter
from typing import Any

from rstore import ResponseError, messages

from .names import full_name

__all__ = ["CommandCounters"]

#: an unknown command, or an unknown subcommand of a known one: an error, no command line
_UNKNOWN = (messages.UNKNOWN_COMMAND_PREFIX, messages.UNKNOWN_SUBCOMMAND.split("{", 1)[0])


class CommandCounters:
    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = {}  # name -> [calls, usec, rejected, failed]
        self.errors: Counter[str] = Counter()
        self.error_replies = 0

    def reset(self) -> None:
        self.calls.clear()
        self.errors.clear()
        self.error_replies = 0

    def count(self, argv: list[bytes], reply: Any, seconds: float) -> None:
        line = None
        if isinstance(reply, ResponseError):
            line = getattr(reply, "line", str(reply))
            self.error_replies += 1
            self.errors[line.split(" ", 1)[0]] += 1
            if line.startswith(_UNKNOWN):
                return
        name = full_name(argv)
        stats = self.calls.setdefault(name, [0, 0.0, 0, 0])
        if line is not None and line.startswith(messages.REJECTED_PREFIXES):
            stats[2] += 1
            return
        stats[0] += 1
        stats[1] += seconds * 1e6
        if line is not None:
            stats[3] += 1

    def snapshot(self) -> bytes:
        """These counts as bytes, for another worker to add (:meth:`add`)."""
        calls = {name: list(stats) for name, stats in list(self.calls.items())}
        return marshal.dumps((calls, dict(self.errors), self.error_replies))

    def add(self, snapshot: bytes) -> None:
        """Add the counts of a :meth:`snapshot` (another worker's) to these."""
        calls, errors, error_replies = marshal.loads(snapshot)
        for name, stats in calls.items():
            mine = self.calls.setdefault(name, [0, 0.0, 0, 0])
            for i, value in enumerate(stats):
                mine[i] += value
        self.errors.update(errors)
        self.error_replies += error_replies

    @property
    def processed(self) -> int:
        """Commands answered since the start or the last reset (``total_commands_processed``)."""
        return int(sum(stats[0] for stats in self.calls.values()))

    def command_lines(self) -> list[str]:
        out = []
        for name, (calls, usec, rejected, failed) in sorted(self.calls.items()):
            per_call = usec / calls if calls else 0.0
            out.append(
                f"cmdstat_{name}:calls={int(calls)},usec={int(usec)},usec_per_call={per_call:.2f},"
                f"rejected_calls={int(rejected)},failed_calls={int(failed)}"
            )
        return out

    def error_lines(self) -> list[str]:
        return [f"errorstat_{kind}:count={n}" for kind, n in sorted(self.errors.items())]
