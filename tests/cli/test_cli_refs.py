"""Redis 8.2's reference policies from the command line: ``--ref`` on ``add``, ``trim`` and
``del-entries``, and ``ack --delete`` (XACKDEL)."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import Result

import rstore

Run = Callable[..., Result]


def ids(store: rstore.Store) -> list[bytes]:
    return [entry_id for entry_id, _ in store.xrange("events")]


def pending(store: rstore.Store) -> list[bytes]:
    rows = store.xpending_range("events", "billing", "-", "+", 100)
    return [row["message_id"] for row in rows]


def test_del_entries_with_a_policy_reports_each_id(run: Run, billing: rstore.Store) -> None:
    billing.xack("events", "billing", "1-0")
    result = run("del-entries", "events", "1-0", "2-0", "0-5", "--ref", "acked")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == ("1-0 deleted\n2-0 kept (a group still references it)\n0-5 not found\n")
    assert ids(billing) == [b"2-0", b"3-0"]
    result = run("del-entries", "events", "2-0", "--ref", "DELREF", "--json")
    assert json.loads(result.stdout) == [{"id": "2-0", "code": 1, "result": "deleted"}]
    assert pending(billing) == [b"3-0"]  # its reference went with it


def test_ack_delete_acknowledges_and_deletes(run: Run, billing: rstore.Store) -> None:
    billing.xgroup_create("events", "audit", "0")  # has read nothing: references every entry
    result = run("ack", "events", "billing", "1-0", "3-0", "--delete", "--ref", "acked")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "1-0 acknowledged, kept (a group still references it)\n"
        "3-0 acknowledged, kept (a group still references it)\n"
    )
    assert pending(billing) == [b"2-0"]
    assert ids(billing) == [b"1-0", b"2-0", b"3-0"]
    result = run("ack", "events", "billing", "2-0", "1-0", "--delete", "--json")
    assert json.loads(result.stdout) == [
        {"id": "2-0", "code": 1, "result": "acknowledged, deleted"},
        {"id": "1-0", "code": -1, "result": "not pending"},
    ]
    assert ids(billing) == [b"1-0", b"3-0"]


def test_trim_and_add_with_a_policy(run: Run, billing: rstore.Store) -> None:
    billing.xack("events", "billing", "2-0")
    result = run("trim", "events", "--maxlen", "0", "--ref", "acked")
    assert (result.exit_code, result.stdout) == (0, "1\n")
    assert ids(billing) == [b"1-0", b"3-0"]  # pending ones stay, the trim went past them
    result = run("add", "events", "--id", "4-0", "--maxlen", "1", "--ref", "delref", "n=4")
    assert (result.exit_code, result.stdout) == (0, "4-0\n")
    assert ids(billing) == [b"4-0"]
    assert pending(billing) == []


def test_a_policy_that_would_do_nothing_is_refused(run: Run, billing: rstore.Store) -> None:
    for args, message in (
        (("trim", "events", "--maxlen", "0", "--approx", "--ref", "acked"), "drop --approx"),
        (("add", "events", "--ref", "acked", "n=1"), "--ref needs --maxlen or --minid"),
        (("ack", "events", "billing", "1-0", "--ref", "acked"), "--ref needs --delete"),
        (("del-entries", "events", "1-0", "--ref", "sometimes"), "Invalid value for '--ref'"),
    ):
        result = run(*args)
        assert result.exit_code == 2, (args, result.stdout)
        assert message in result.stderr, (args, result.stderr)
    assert ids(billing) == [b"1-0", b"2-0", b"3-0"]
    assert pending(billing) == [b"1-0", b"2-0", b"3-0"]
