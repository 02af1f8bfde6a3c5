"""``rstore tail`` in-process: output formats, group mode, options, the stop machinery.

The live part -- another process writing while tail waits, signals, a closed pipe -- is in
test_cli_tail_process.py.  Here every run is bounded: the ``bounded`` fixture makes tail's
first idle wait end the run (as a closed stdout does), so no test can hang.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable

import pytest
import rstore_cli.tail
from click.testing import Result
from rstore_cli.tail import Stopper, _Stop

import rstore

Run = Callable[..., Result]


@pytest.fixture
def bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits last 20 ms, and the first one that finds nothing ends tail like a closed stdout
    (exit status 1, nothing on stderr)."""
    monkeypatch.setattr(rstore_cli.tail, "BLOCK_SLICE_MS", 20)
    monkeypatch.setattr(rstore_cli.tail, "_stdout_closed", lambda: True)


def test_tail_from_zero_prints_like_range(run: Run, events: rstore.Store, bounded: None) -> None:
    result = run("tail", "events", "--from", "0", "--max", "2")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == '1-0  user=42 action=login\n2-0  user=7 msg="hello world"\n'
    result = run("tail", "events", "--from", "(1-0", "--max", "2", "--json")
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"id": "2-0", "fields": [["user", "7"], ["msg", "hello world"]]},
        {"id": "3-0", "fields": [["blob", {"base64": "AP8="}], ["empty", ""]]},
    ]


def test_tail_from_reads_start_as_range_does(run: Run, events: rstore.Store, bounded: None) -> None:
    """--from takes range's START grammar: inclusive, (ID exclusive, -, MS alone, times."""

    def first_ids(*args: str, n: int = 2) -> list[str]:
        result = run("tail", "events", *args, "--max", str(n))
        assert (result.exit_code, result.stderr) == (0, ""), args
        return [line.split()[0] for line in result.stdout.splitlines()]

    for start in ("-", "0", "0-0", "1", "1-0", "1970-01-01T00:00:00.001Z"):
        assert first_ids("--from", start) == ["1-0", "2-0"], start
    assert first_ids("--from", "2-0") == ["2-0", "3-0"]  # inclusive, as range
    assert first_ids("--from", "(1-0") == ["2-0", "3-0"]  # exclusive, as range
    assert first_ids("--from", "(1") == ["2-0", "3-0"]  # (1 is after 1-0
    assert first_ids("--since", "2") == ["2-0", "3-0"]
    for start in ("-", "2-0", "(1-0", "2"):
        expected = run("range", "events", start, "--count", "2").stdout
        assert run("tail", "events", "--from", start, "--max", "2").stdout == expected
    new = events.execute("XADD", "events", "*", "fresh", "1")
    assert first_ids("--since", "1h", n=1) == [new.decode()]
    refused = run("tail", "events", "--from", "x", "--max", "1")
    assert refused.exit_code == 2
    assert "Invalid value for '--from': x is neither an ID nor a time: " in refused.stderr
    refused = run("tail", "events", "--since", "yesterday", "--max", "1")
    assert "Invalid value for '--since': yesterday is neither an ID nor" in refused.stderr
    assert run("tail", "events", "--from", "1", "--since", "1").exit_code == 2


def test_tail_reads_in_batches_of_count(
    run: Run, store: rstore.Store, bounded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(1, 8):
        store.execute("XADD", "s", f"{i}-0", "n", str(i))
    reads: list[tuple[object, ...]] = []
    execute = rstore.Store.execute

    def spy(self: rstore.Store, *argv: object) -> object:
        reads.append(argv)
        return execute(self, *argv)

    monkeypatch.setattr(rstore.Store, "execute", spy)
    result = run("tail", "s", "--from", "0", "--count", "3", "--max", "7")
    assert result.stdout.splitlines()[-1] == "7-0  n=7"
    counts = [argv[2] for argv in reads if argv[0] == b"XREAD"]
    assert counts == [b"3", b"3", b"1"]  # the last read asks only for what --max still allows


def test_tail_without_max_follows_until_stopped(
    run: Run, events: rstore.Store, bounded: None
) -> None:
    result = run("tail", "events", "--from", "0")
    assert (result.exit_code, result.stderr) == (1, "")  # "stdout closed" while idle
    assert len(result.stdout.splitlines()) == 3


def test_tail_from_dollar_skips_existing_entries(
    run: Run, events: rstore.Store, bounded: None
) -> None:
    result = run("tail", "events", "--json")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    result = run("tail", "nope")  # a missing stream is waited for, not an error
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")


def test_tail_group_prints_history_then_new_entries_and_acks(
    run: Run, billing: rstore.Store, bounded: None
) -> None:
    billing.execute("XADD", "events", "4-0", "n", "4")
    billing.execute("XDEL", "events", "2-0")
    # alice has 1-0 and 2-0 (now deleted) pending; 4-0 is new to the group.
    result = run("tail", "events", "--group", "billing", "--consumer", "alice", "--max", "3")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "1-0  user=42 action=login\n2-0  (deleted)\n4-0  n=4\n"
    pending = billing.xpending("events", "billing")
    assert (pending["pending"], pending["consumers"]) == (1, [{"name": b"bob", "pending": 1}])


def test_tail_group_no_ack_leaves_entries_pending(
    run: Run, events: rstore.Store, bounded: None
) -> None:
    events.xgroup_create("events", "g", "0")
    args = ("tail", "events", "--group", "g", "--consumer", "c", "--no-ack", "--json")
    result = run(*args, "--max", "2")
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["1-0", "2-0"]
    assert events.xpending("events", "g")["pending"] == 2
    # A later run prints the consumer's pending history again, then goes on.
    result = run(*args)
    assert result.exit_code == 1  # ended by the idle wait (see `bounded`)
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["1-0", "2-0", "3-0"]
    assert events.xpending("events", "g")["pending"] == 3


def test_tail_group_errors(run: Run, events: rstore.Store, bounded: None) -> None:
    result = run("tail", "events", "--group", "nope", "--consumer", "c")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: NOGROUP ") and result.stderr.count("\n") == 1
    result = run("tail", "events", "--from", "bad")
    assert result.exit_code == 2 and "bad is neither an ID nor a time: give " in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--consumer", "c"],
        ["--no-ack"],
        ["--group", "g"],
        ["--group", "g", "--consumer", "c", "--from", "0"],
        ["--max", "0"],
        ["--count", "0"],
    ],
)
def test_tail_usage_errors(run: Run, events: rstore.Store, args: list[str]) -> None:
    result = run("tail", "events", *args)
    assert result.exit_code == 2
    assert "Error:" in result.stderr


def test_tail_restores_signal_handlers(run: Run, events: rstore.Store, bounded: None) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    run("tail", "events", "--from", "0", "--max", "1")
    assert {s: signal.getsignal(s) for s in before} == before


# ----------------------------------------------------------------------------- Stopper


def test_stopper_stops_at_once_outside_critical_sections() -> None:
    with Stopper() as stopper, pytest.raises(_Stop):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between two bytecodes
            pass
    assert stopper.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_stopper_defers_a_signal_until_the_critical_section_ends() -> None:
    finished = False
    with Stopper() as stopper, pytest.raises(_Stop), stopper.critical():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass
        assert stopper.signum == signal.SIGINT
        finished = True
    assert finished
    assert stopper.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_stopper_second_signal_stops_at_once() -> None:
    finished = False
    with Stopper() as stopper, pytest.raises(_Stop), stopper.critical():
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass
        finished = True
    assert not finished
    assert stopper.exit_code == 143  # the first signal decides the status
