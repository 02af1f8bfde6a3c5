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


# ----------------------------------------------------------------------------- --db N


def test_db_is_a_global_option_for_every_command(
    run: Run, two: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    """--db N, before or after the command, works on database N of the store (as SELECT N of
    ``rstore serve``): reads, writes, exec and the prompt, import and export, and the commands
    whose --db named a dump's database take it for the store's when there is no dump."""
    assert run("--db", "3", "len", "jobs").stdout == "1\n"
    assert run("len", "jobs", "--db", "3").stdout == "1\n"
    assert run("len", "jobs").stdout == "0\n"
    assert sorted(run("--db", "3", "keys").stdout.splitlines()) == ["events", "jobs"]
    assert run("--db", "3", "add", "jobs", "--id", "2-2", "j=2").stdout == "2-2\n"
    assert run("--db", "3", "exec", "XLEN", "jobs").stdout == "2\n"
    assert run("--db", "3", "exec", input="XLEN jobs\n").stdout == "2\n"
    ranged = run("range", "jobs", "--db", "3")  # range's own --db: the store's, without a dump
    assert (ranged.exit_code, ranged.stdout) == (0, "2-1  j=1\n2-2  j=2\n")
    exported = run("export", "--db", "3", "jobs")
    assert exported.exit_code == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 2
    imported = run("--db", "5", "import", input=exported.stdout)
    assert imported.exit_code == 0, imported.stderr
    assert imported.stdout.startswith(f"imported 2 entries to {store_path} (db 5) in ")
    with rstore.Store(store_path) as store:
        assert store.database(5).xlen("jobs") == 2
        assert store.database(3).xlen("jobs") == 2 and store.xlen("jobs") == 0
    replayed = run("--db", "3", "replay", "jobs", "--to-stream", "copy")
    assert replayed.exit_code == 0, replayed.stderr
    assert run("--db", "3", "len", "copy").stdout == "2\n"


def test_db_on_a_database_that_does_not_exist(
    run: Run, two: rstore.Store, store_path: Path
) -> None:
    """Commands that only read never create a database, as they never create a store;
    commands that may create one create it (in the store's format)."""
    result = run("--db", "7", "len", "jobs")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: no database 7 in the store at {store_path} (`rstore inspect` lists its "
        "databases)\n"
    )
    assert not (store_path / "db7").exists()
    assert run("--db", "7", "add", "s", "a=1").exit_code == 0
    assert (store_path / "db7" / "data.mdb").exists()
    for bad in ("16", "-1", "x"):
        refused = run("--db", bad, "len", "s")
        assert refused.exit_code == 2 and "Invalid value for '--db'" in refused.stderr
    missing = run("--store", str(store_path / "nope"), "--db", "3", "len", "s")
    assert missing.stderr == f"Error: no store at {store_path / 'nope'}\n"


def test_save_restore_check_and_serve_with_db(
    run: Run, two: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "three.rdb"
    saved = run("--db", "3", "save", str(out), "--json")
    assert saved.exit_code == 0, saved.stderr
    assert json.loads(saved.stdout)["databases"].keys() == {"3"}
    restored = run("--store", str(tmp_path / "b"), "--db", "4", "restore", str(out), "--db", "3")
    assert restored.exit_code == 0, restored.stderr
    with rstore.Store(tmp_path / "b") as other:
        assert other.database(4).xlen("jobs") == 1 and other.databases() == [0, 4]
    both = run("--db", "4", "restore", str(out), "--all-databases")
    assert both.exit_code == 2 and "--all-databases" in both.stderr
    assert run("--db", "3", "check").stdout == "OK\n"
    for command in (["serve", "--check-config"], ["compact"], ["salvage", "a", "b"]):
        refused = run("--db", "3", *command)  # they work on every database of the store
        assert refused.exit_code == 2 and "no --db" in refused.stderr, command


def test_inspect_of_a_store_lists_its_databases(
    run: Run, two: rstore.Store, store_path: Path
) -> None:
    lines = run("inspect").stdout.splitlines()
    assert lines[:3] == [
        f"{store_path}: store in format {rstore.FORMAT_VERSION} (write-ahead log), "
        "2 databases, 3 streams",
        "db 0: 1 stream, 2 entries",
        "db 3: 2 streams, 2 entries",
    ]
    assert [line for line in lines if line.startswith("stream ")] == [
        "stream events (db 0): length 2, 1 node",
        "stream events (db 3): length 1, 1 node",
        "stream jobs (db 3): length 1, 1 node",
    ]
    report = json.loads(run("inspect", "--json").stdout)
    assert report["databases"] == {
        "0": {"stream": {"keys": 1, "bytes": None, "elements": 2, "expiring": 0}},
        "3": {"stream": {"keys": 2, "bytes": None, "elements": 2, "expiring": 0}},
    }
    assert [(s["db"], s["key"]) for s in report["streams"]] == [
        (0, "events"),
        (3, "events"),
        (3, "jobs"),
    ]
    only = json.loads(run("--db", "3", "inspect", "--json").stdout)
    assert only["databases"].keys() == {"3"} and len(only["streams"]) == 2
    keyed = json.loads(run("inspect", "--key", "jobs", "--json").stdout)
    assert [(s["db"], s["key"]) for s in keyed["streams"]] == [(3, "jobs")]
