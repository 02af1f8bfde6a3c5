"""``rstore group create|destroy|setid|list|consumers``: tables, JSON, errors."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]

NOGROUP_SETID = "Error: NOGROUP No such consumer group 'nope' for key name 'events'\n"
BUSYGROUP = "Error: BUSYGROUP Consumer Group name already exists\n"
NO_KEY = (
    "Error: ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
    "want to use the MKSTREAM option to create an empty stream automatically.\n"
)


def test_create_and_list(run: Run, events: rstore.Store) -> None:
    result = run("group", "create", "events", "billing", "--id", "0")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "OK\n", "")
    assert run("group", "create", "events", "audit", "--json").stdout == '"OK"\n'
    result = run("group", "list", "events")
    assert result.exit_code == 0
    assert result.stdout == (
        "NAME     CONSUMERS  PENDING  LAST-DELIVERED-ID  ENTRIES-READ  LAG\n"
        "audit    0          0        3-0                (nil)         0\n"
        "billing  0          0        0-0                (nil)         3\n"
    )
    assert json.loads(run("group", "list", "events", "--json").stdout)[1] == {
        "name": "billing",
        "consumers": 0,
        "pending": 0,
        "last-delivered-id": "0-0",
        "entries-read": None,
        "lag": 3,
    }


def test_create_busygroup_is_one_line_exit_1(run: Run, billing: rstore.Store) -> None:
    result = run("group", "create", "events", "billing")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", BUSYGROUP)


def test_create_on_a_missing_stream(run: Run, store: rstore.Store) -> None:
    result = run("group", "create", "nope", "g")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", NO_KEY)
    assert run("group", "create", "nope", "g", "--mkstream").stdout == "OK\n"
    assert store.xlen("nope") == 0
    assert store.xinfo_groups("nope")[0]["name"] == b"g"


def test_only_create_with_mkstream_creates_a_store(run: Run, store_path: Path) -> None:
    result = run("group", "create", "s", "g")
    assert result.exit_code == 1
    assert result.stderr == f"Error: no store at {os.path.realpath(store_path)}\n"
    assert not store_path.exists()
    assert run("group", "create", "s", "g", "--mkstream").exit_code == 0
    with rstore.Store(store_path, create=False) as s:
        assert s.exists("s") == 1


def test_create_with_entries_read(run: Run, events: rstore.Store) -> None:
    args = ("group", "create", "events", "g", "--id", "2-0", "--entries-read", "2")
    assert run(*args).exit_code == 0
    assert events.xinfo_groups("events")[0]["lag"] == 1
    result = run("group", "create", "events", "h", "--entries-read", "-2")
    assert result.exit_code == 2  # refused by the option's range, before anything runs


def test_setid(run: Run, billing: rstore.Store) -> None:
    assert run("group", "setid", "events", "billing", "1-0").stdout == "OK\n"
    assert billing.xinfo_groups("events")[0]["last-delivered-id"] == b"1-0"
    result = run("group", "setid", "events", "billing", "$", "--entries-read", "3", "--json")
    assert (result.exit_code, result.stdout) == (0, '"OK"\n')
    info = billing.xinfo_groups("events")[0]
    assert (info["last-delivered-id"], info["entries-read"], info["lag"]) == (b"3-0", 3, 0)
    assert billing.xpending("events", "billing")["pending"] == 3  # pending untouched
    result = run("group", "setid", "events", "nope", "0")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", NOGROUP_SETID)


def test_destroy(run: Run, billing: rstore.Store) -> None:
    assert run("group", "destroy", "events", "billing").stdout == "1\n"
    assert run("group", "destroy", "events", "billing", "--json").stdout == "0\n"
    assert billing.xlen("events") == 3  # the entries stay
    assert run("group", "list", "events").stdout == (
        "NAME  CONSUMERS  PENDING  LAST-DELIVERED-ID  ENTRIES-READ  LAG\n"
    )
    assert run("group", "list", "events", "--json").stdout == "[]\n"
    result = run("group", "destroy", "nope", "g")
    assert (result.exit_code, result.stderr) == (1, NO_KEY)


def test_consumers(run: Run, billing: rstore.Store) -> None:
    result = run("group", "consumers", "events", "billing")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "NAME   PENDING  IDLE  INACTIVE"
    assert [line.split()[:2] for line in lines[1:]] == [["alice", "2"], ["bob", "1"]]
    rows = json.loads(run("group", "consumers", "events", "billing", "--json").stdout)
    assert [(r["name"], r["pending"]) for r in rows] == [("alice", 2), ("bob", 1)]
    assert all(r["idle"] >= 0 and r["inactive"] >= 0 for r in rows)
    result = run("group", "consumers", "events", "nope")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: NOGROUP ")
    assert result.stderr.count("\n") == 1


def test_list_errors(run: Run, events: rstore.Store) -> None:
    result = run("group", "list", "nope")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "Error: ERR no such key\n")


def test_names_that_need_quoting(run: Run, events: rstore.Store) -> None:
    assert run("group", "create", "-e", "events", r"two words\xff").exit_code == 0
    assert run("group", "list", "events").stdout.splitlines()[1].startswith('"two words\\xff"  0 ')
    data = json.loads(run("group", "list", "events", "--json").stdout)
    assert data[0]["name"] == {"base64": "dHdvIHdvcmRz/w=="}
    assert run("group", "destroy", "-e", "events", r"two words\xff").stdout == "1\n"


@pytest.mark.parametrize(
    "args",
    [
        ["group", "list", "s"],
        ["group", "consumers", "s", "g"],
        ["group", "destroy", "s", "g"],
        ["group", "setid", "s", "g", "0"],
    ],
)
def test_group_commands_never_create_a_store(run: Run, store_path: Path, args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 1
    assert result.stderr == f"Error: no store at {os.path.realpath(store_path)}\n"
    assert not store_path.exists()
