"""``read-group``, ``ack``, ``pending``, ``claim``, ``autoclaim`` and ``check``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rstore_cli.pending
from click.testing import Result

import rstore

Run = Callable[..., Result]

NOGROUP_READ = (
    "Error: NOGROUP No such key 'events' or consumer group 'nope' in XREADGROUP with GROUP option\n"
)


def pending_ids(store: rstore.Store, consumer: str | None = None) -> list[bytes]:
    rows = store.xpending_range("events", "billing", "-", "+", 100, consumer)
    return [row["message_id"] for row in rows]


# ----------------------------------------------------------------------------- read-group


def test_read_group_prints_like_range_and_leaves_entries_pending(
    run: Run, events: rstore.Store
) -> None:
    events.xgroup_create("events", "billing", "0")
    result = run("read-group", "events", "billing", "carol", "--count", "2")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == '1-0  user=42 action=login\n2-0  user=7 msg="hello world"\n'
    assert pending_ids(events, "carol") == [b"1-0", b"2-0"]
    result = run("read-group", "events", "billing", "carol", "--json")
    assert json.loads(result.stdout) == {
        "stream": "events",
        "entries": [{"id": "3-0", "fields": [["blob", {"base64": "AP8="}], ["empty", ""]]}],
    }
    # Nothing left: no output, exit 0.
    result = run("read-group", "events", "billing", "carol")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    result = run("read-group", "events", "billing", "carol", "--json")
    assert json.loads(result.stdout) == {"stream": "events", "entries": []}


def test_read_group_ack_and_noack(run: Run, events: rstore.Store) -> None:
    events.xgroup_create("events", "billing", "0")
    result = run("read-group", "events", "billing", "carol", "--count", "1", "--ack")
    assert result.stdout == "1-0  user=42 action=login\n"
    assert pending_ids(events) == []
    result = run("read-group", "events", "billing", "carol", "--count", "1", "--ack", "--json")
    assert [e["id"] for e in json.loads(result.stdout)["entries"]] == ["2-0"]
    assert pending_ids(events) == []
    assert run("read-group", "events", "billing", "carol", "--noack").stdout.startswith("3-0  ")
    assert pending_ids(events) == []
    assert events.xinfo_groups("events")[0]["last-delivered-id"] == b"3-0"
    result = run("read-group", "events", "billing", "carol", "--noack", "--ack")
    assert result.exit_code == 2


def test_read_group_history_shows_deleted_entries(run: Run, billing: rstore.Store) -> None:
    billing.execute("XDEL", "events", "2-0")
    result = run("read-group", "events", "billing", "alice", "--id", "0")
    assert result.stdout == "1-0  user=42 action=login\n2-0  (deleted)\n"
    data = json.loads(
        run("read-group", "events", "billing", "alice", "--id", "1-0", "--json").stdout
    )
    assert data["entries"] == [{"id": "2-0", "fields": None}]
    run("read-group", "events", "billing", "alice", "--id", "0", "--ack")
    assert pending_ids(billing) == [b"3-0"]  # bob's


def test_read_group_block_times_out_quietly(run: Run, billing: rstore.Store) -> None:
    result = run("read-group", "events", "billing", "alice", "--block", "50")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_read_group_errors(run: Run, events: rstore.Store, store_path: Path) -> None:
    result = run("read-group", "events", "nope", "c")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", NOGROUP_READ)
    result = run("read-group", "events", "nope", "c", "--id", "bad")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert run("read-group", "events", "g", "c", "--count", "0").exit_code == 2


# ----------------------------------------------------------------------------- ack


def test_ack(run: Run, billing: rstore.Store) -> None:
    result = run("ack", "events", "billing", "1-0", "3-0", "9-0")
    assert (result.exit_code, result.stdout) == (0, "2\n")
    assert run("ack", "events", "billing", "1-0", "--json").stdout == "0\n"
    assert pending_ids(billing) == [b"2-0"]
    assert run("ack", "events", "nope", "2-0").stdout == "0\n"
    result = run("ack", "events", "billing", "bad")
    assert result.exit_code == 1
    assert result.stderr == "Error: ERR Invalid stream ID specified as stream command argument\n"
    assert run("ack", "events", "billing").exit_code == 2  # ID... is required


# ----------------------------------------------------------------------------- pending


def test_pending_summary(run: Run, billing: rstore.Store) -> None:
    result = run("pending", "events", "billing")
    assert result.exit_code == 0
    assert result.stdout == (
        "pending: 3\n"
        "min: 1-0\n"
        "max: 3-0\n"
        "consumers:\n"
        "  - name: alice\n"
        "    pending: 2\n"
        "  - name: bob\n"
        "    pending: 1\n"
    )
    assert json.loads(run("pending", "events", "billing", "--json").stdout) == {
        "pending": 3,
        "min": "1-0",
        "max": "3-0",
        "consumers": [{"name": "alice", "pending": 2}, {"name": "bob", "pending": 1}],
    }
    billing.xack("events", "billing", "1-0", "2-0", "3-0")
    assert run("pending", "events", "billing").stdout == (
        "pending: 0\nmin: (nil)\nmax: (nil)\nconsumers: (empty)\n"
    )
    assert json.loads(run("pending", "events", "billing", "--json").stdout) == {
        "pending": 0,
        "min": None,
        "max": None,
        "consumers": [],
    }


def test_pending_detail(run: Run, billing: rstore.Store) -> None:
    result = run("pending", "events", "billing", "--start", "-")
    lines = result.stdout.splitlines()
    assert lines[0] == "ID   CONSUMER  IDLE  DELIVERY-COUNT"
    assert [line.split()[:2] + line.split()[3:] for line in lines[1:]] == [
        ["1-0", "alice", "1"],
        ["2-0", "alice", "1"],
        ["3-0", "bob", "1"],
    ]
    rows = json.loads(run("pending", "events", "billing", "--consumer", "alice", "--json").stdout)
    assert [(r["id"], r["consumer"], r["delivery-count"]) for r in rows] == [
        ("1-0", "alice", 1),
        ("2-0", "alice", 1),
    ]
    assert all(isinstance(r["idle"], int) for r in rows)

    def ids(*args: str) -> list[str]:
        result = run("pending", "events", "billing", *args, "--json")
        assert result.exit_code == 0, result.stderr
        return [row["id"] for row in json.loads(result.stdout)]

    assert ids("--start", "(1-0") == ["2-0", "3-0"]
    assert ids("--end", "2") == ["1-0", "2-0"]
    assert ids("--count", "1") == ["1-0"]
    assert ids("--count", "0") == []
    assert ids("--idle", "3600000") == []
    assert ids("--consumer", "nobody") == []
    empty = run("pending", "events", "billing", "--idle", "3600000")
    assert empty.stdout == "ID  CONSUMER  IDLE  DELIVERY-COUNT\n"


def test_pending_reads_in_pages(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rstore_cli.pending, "PENDING_PAGE", 2)
    for i in range(1, 8):
        store.execute("XADD", "s", f"{i}-0", "n", str(i))
    store.xgroup_create("s", "g", "0")
    store.execute("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")

    def ids(*args: str) -> list[str]:
        result = run("pending", "s", "g", *args, "--json")
        return [row["id"] for row in json.loads(result.stdout)]

    assert ids("--start", "-") == [f"{i}-0" for i in range(1, 8)]
    assert ids("--count", "5") == [f"{i}-0" for i in range(1, 6)]
    assert ids("--start", "(2-0", "--end", "(6-0") == ["3-0", "4-0", "5-0"]


def test_pending_errors(run: Run, billing: rstore.Store) -> None:
    for args in (["pending", "events", "nope"], ["pending", "events", "nope", "--count", "1"]):
        result = run(*args)
        assert result.exit_code == 1
        assert result.stderr.startswith("Error: NOGROUP ") and result.stderr.count("\n") == 1
    result = run("pending", "events", "billing", "--start", "bad")
    assert result.exit_code == 2
    assert "Invalid value for '--start': bad is neither an ID nor a time: give " in result.stderr


# ----------------------------------------------------------------------------- claim


def test_claim(run: Run, billing: rstore.Store) -> None:
    result = run("claim", "events", "billing", "carol", "--min-idle", "0", "1-0", "3-0", "9-0")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == '1-0  user=42 action=login\n3-0  blob="\\x00\\xff" empty=""\n'
    assert pending_ids(billing, "carol") == [b"1-0", b"3-0"]
    result = run("claim", "events", "billing", "dave", "--min-idle", "0", "1-0", "--justid")
    assert result.stdout == "1-0\n"
    result = run("claim", "events", "billing", "dave", "--min-idle", "0", "2-0", "--json")
    assert json.loads(result.stdout) == [
        {"id": "2-0", "fields": [["user", "7"], ["msg", "hello world"]]}
    ]
    result = run(
        "claim", "events", "billing", "dave", "--min-idle", "0", "3-0", "--justid", "--json"
    )
    assert json.loads(result.stdout) == ["3-0"]
    # Not idle long enough: nothing claimed.
    result = run("claim", "events", "billing", "erin", "--min-idle", "3600000", "1-0")
    assert (result.exit_code, result.stdout) == (0, "")
    assert pending_ids(billing, "dave") == [b"1-0", b"2-0", b"3-0"]


def test_claim_errors(run: Run, billing: rstore.Store) -> None:
    assert run("claim", "events", "billing", "c", "1-0").exit_code == 2  # --min-idle required
    assert run("claim", "events", "billing", "c", "--min-idle", "0").exit_code == 2  # no ID
    result = run("claim", "events", "nope", "c", "--min-idle", "0", "1-0")
    assert result.exit_code == 1 and result.stderr.startswith("Error: NOGROUP ")


# ----------------------------------------------------------------------------- autoclaim


def test_autoclaim(run: Run, billing: rstore.Store) -> None:
    result = run("autoclaim", "events", "billing", "carol", "--min-idle", "0", "--count", "1")
    assert result.exit_code == 0
    assert result.stdout == "1-0  user=42 action=login\n"
    assert result.stderr == "next: 2-0; run again with --start 2-0\n"
    billing.execute("XDEL", "events", "2-0")
    args = ("autoclaim", "events", "billing", "carol", "--min-idle", "0", "--start", "2-0")
    result = run(*args)
    assert result.stdout == '3-0  blob="\\x00\\xff" empty=""\n'
    assert result.stderr == "deleted from the stream, no longer pending: 2-0\n"
    assert pending_ids(billing, "carol") == [b"1-0", b"3-0"]
    data = json.loads(run(*args[:-2], "--json").stdout)
    assert data["next"] == "0-0" and data["deleted"] == []
    assert [e["id"] for e in data["entries"]] == ["1-0", "3-0"]
    result = run(*args[:-2], "--justid")
    assert (result.stdout, result.stderr) == ("1-0\n3-0\n", "")
    data = json.loads(run(*args[:-2], "--justid", "--json").stdout)
    assert data == {"next": "0-0", "entries": ["1-0", "3-0"], "deleted": []}


def test_autoclaim_errors(run: Run, billing: rstore.Store) -> None:
    assert run("autoclaim", "events", "billing", "c").exit_code == 2  # --min-idle required
    assert (
        run("autoclaim", "events", "billing", "c", "--min-idle", "0", "--count", "0").exit_code == 2
    )
    result = run("autoclaim", "events", "nope", "c", "--min-idle", "0")
    assert result.exit_code == 1 and result.stderr.startswith("Error: NOGROUP ")


# ----------------------------------------------------------------------------- check


def test_check_ok(run: Run, billing: rstore.Store) -> None:
    assert run("check").stdout == "OK\n"
    assert json.loads(run("check", "--json").stdout) == {"ok": True, "problems": []}


def test_check_problems_exit_1(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = ["stream 'a': length 3 but 2 entries", "group 'g':\npending count 1"]

    def broken(self: Any) -> list[str]:
        return problems

    monkeypatch.setattr(rstore.Store, "check", broken)
    result = run("check")
    assert result.exit_code == 1
    assert result.stdout == "stream 'a': length 3 but 2 entries\ngroup 'g': pending count 1\n"
    assert result.stderr == "Error: the store has 2 problems\n"
    result = run("check", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"ok": False, "problems": problems}


# ----------------------------------------------------------------------------- missing store


@pytest.mark.parametrize(
    "args",
    [
        ["read-group", "s", "g", "c"],
        ["ack", "s", "g", "1-0"],
        ["pending", "s", "g"],
        ["claim", "s", "g", "c", "--min-idle", "0", "1-0"],
        ["autoclaim", "s", "g", "c", "--min-idle", "0"],
        ["check"],
        ["tail", "s", "--max", "1"],
    ],
)
def test_group_commands_never_create_a_store(run: Run, store_path: Path, args: list[str]) -> None:
    result = run(*args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: no store at {os.path.realpath(store_path)}\n"
    assert not store_path.exists()
