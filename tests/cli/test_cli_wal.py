"""``--wal``: the commands that create a store create it with the write-ahead log (format 3);
given to one of them, a store that exists without a log is refused in one line and left as it
was; commands that only open a store ignore it; ``inspect`` tells which format a store is in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result
from rstore_cli.main import cli

import rstore

Run = Callable[..., Result]


def test_add_with_wal_creates_a_logged_store(run: Run, store_path: Path) -> None:
    assert run("--wal", "add", "s", "--id", "1-1", "f=v").exit_code == 0
    assert run("add", "s", "--id", "1-2", "f=w", "--wal").exit_code == 0  # after the command
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.wal, store.xlen("s")) == (3, True, 2)
    assert (store_path / "wal.log").is_file()
    report = json.loads(run("inspect", "--json").stdout)
    assert (report["format"], report["wal"]) == (3, True)
    first = run("inspect").stdout.splitlines()[0]
    assert first == f"{store_path}: store in format 3 (write-ahead log), 1 stream"


def test_without_wal_a_new_store_has_no_log(run: Run, store_path: Path) -> None:
    assert run("add", "s", "f=v").exit_code == 0
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.wal) == (2, False)
    assert not (store_path / "wal.log").exists()


def test_wal_on_a_store_without_a_log_is_refused_by_writers(run: Run, store_path: Path) -> None:
    assert run("add", "s", "--id", "1-1", "f=v").exit_code == 0
    refused = run("--wal", "add", "s", "--id", "1-2", "f=v")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.startswith("Error: ") and refused.stderr.count("\n") == 1
    assert "without a write-ahead log" in refused.stderr
    # Commands that never create a store open it as it is.
    assert run("--wal", "len", "s").stdout == "1\n"
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.xlen("s")) == (2, 1)


def test_replay_creates_its_target_with_the_log(run: Run, store_path: Path, tmp_path: Path) -> None:
    assert run("add", "s", "--id", "1-1", "f=v").exit_code == 0
    copy = tmp_path / "copy"
    replayed = CliRunner().invoke(
        cli, ["--store", str(store_path), "--wal", "replay", "--to-store", str(copy)]
    )
    assert replayed.exit_code == 0, replayed.output
    with rstore.Store(copy, create=False) as target:
        assert (target.wal, target.xrange("s")) == (True, [(b"1-1", {b"f": b"v"})])
    with rstore.Store(store_path, create=False) as source:  # the source keeps its format
        assert source.format == 2
