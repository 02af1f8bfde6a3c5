"""``rstore save`` / ``rstore restore`` with several databases: every database saved, --db for
one, --all-databases to import every one; text and --json; refusals in one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from databases import database_contents

import rstore

Run = Callable[..., Result]


def contents(path: Path) -> dict[int, dict[bytes, bytes | None]]:
    with rstore.Store(path, create=False) as store:
        return database_contents(store)


@pytest.fixture
def two(store: rstore.Store) -> rstore.Store:
    """Database 0: ``events`` (2 entries); database 3: ``jobs`` (1 entry), ``events`` (1)."""
    store.xadd("events", {"a": "1"}, id="1-1")
    store.xadd("events", {"a": "2"}, id="1-2")
    store.database(3).xadd("jobs", {"j": "1"}, id="2-1")
    store.database(3).xadd("events", {"in": "3"}, id="3-1")
    store.close()
    return store


def test_save_writes_every_database(run: Run, two: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "all.rdb"
    result = run("save", str(out))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"saved 3 streams (4 entries) to {out}: RDB 11, ")
    assert lines[1:] == [
        "loads in Redis 7.2+ and Valkey 7.2+ (Redis 7.0 needs --rdb-version 10, Redis 5.0-6.2 "
        "--rdb-version 9)",
        "databases: db 0: 1 stream (2 entries), db 3: 2 streams (2 entries)",
    ]
    report = json.loads(run("save", str(out), "--force", "--json").stdout)
    assert report["db"] is None
    assert report["databases"] == {
        "0": {"streams": 1, "entries": 2, "replaced": [], "expired": [], "ttl-dropped": [],
              "skipped": {}},
        "3": {"streams": 2, "entries": 2, "replaced": [], "expired": [], "ttl-dropped": [],
              "skipped": {}},
    }  # fmt: skip
    one = json.loads(run("save", str(tmp_path / "db3.rdb"), "--db", "3", "--json").stdout)
    assert (one["db"], one["streams"], list(one["databases"])) == (3, 2, ["3"])
    assert list(rstore.inspect_rdb(str(tmp_path / "db3.rdb")).databases) == [3]


def test_restore_takes_database_0_and_says_how_to_get_the_others(
    run: Run, two: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "all.rdb"
    assert run("save", str(out)).exit_code == 0
    other = tmp_path / "other"
    result = run("--store", str(other), "restore", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "not imported, other databases: db 3: 2 keys (--all-databases imports them)"
    ]
    assert list(contents(other)) == [0]


def test_restore_all_databases(
    run: Run, two: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "all.rdb"
    assert run("save", str(out)).exit_code == 0
    other = tmp_path / "other"
    result = run("--store", str(other), "restore", str(out), "--all-databases")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"restored 3 streams (4 entries) from 2 databases of {out}: RDB 11")
    assert lines[1:] == ["db 0: 1 stream (2 entries)", "db 3: 2 streams (2 entries)"]
    assert contents(other) == contents(store_path)
    again = run(
        "--store", str(other), "restore", str(out), "--all-databases", "--replace", "--json"
    )
    report = json.loads(again.stdout)
    assert (report["db"], report["streams"], report["entries"]) == (None, 3, 4)
    assert report["databases"]["3"]["replaced"] == ["jobs", "events"]
    assert report["replaced"] == ["events", "jobs", "events"]


def test_restore_all_databases_refusals_are_one_line_and_change_nothing(
    run: Run, two: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "all.rdb"
    assert run("save", str(out)).exit_code == 0
    other = tmp_path / "other"
    with rstore.Store(other) as target:
        target.xadd("mine", {"k": "v"}, id="1-1")
        target.database(3).xadd("jobs", {"taken": "yes"}, id="1-1")
    before = contents(other)
    data = out.read_bytes()
    cut = tmp_path / "cut.rdb"
    cut.write_bytes(data[: len(data) - 30])
    cases = [
        (["restore", str(out), "--all-databases"],
         "Error: stream 'jobs' already exists in database 3 of the store; nothing was restored "
         "(add --replace to overwrite it)\n"),
        (["restore", str(cut), "--all-databases"], "Error: "),
    ]  # fmt: skip
    for args, start in cases:
        result = run("--store", str(other), *args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(start), result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stdout == ""
        assert contents(other) == before
    assert (
        "runs past the end"
        in run("--store", str(other), "restore", str(cut), "--all-databases").stderr
    )
    both = run("--store", str(other), "restore", str(out), "--all-databases", "--db", "3")
    assert both.exit_code == 2
    assert "give --db or --all-databases, not both" in both.stderr
