"""``--wal`` / ``--no-wal``: the commands that create a store create it with the write-ahead log
(format 3, the default) or without it (format 2); given to one of them, a store that exists in
the other format is refused in one line and left as it was; commands that only open a store
ignore them; ``inspect`` tells which format a store is in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rstore_cli.main import cli

import rstore

Run = Callable[..., Result]


@pytest.mark.parametrize("flag", [[], ["--wal"]])
def test_a_new_store_has_the_log_by_default_and_with_wal(
    run: Run, store_path: Path, flag: list[str]
) -> None:
    assert run(*flag, "add", "s", "--id", "1-1", "f=v").exit_code == 0
    assert run("add", "s", "--id", "1-2", "f=w", *flag).exit_code == 0  # after the command
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.wal, store.xlen("s")) == (3, True, 2)
    assert (store_path / "wal.log").is_file()
    report = json.loads(run("inspect", "--json").stdout)
    assert (report["format"], report["wal"]) == (3, True)
    first = run("inspect").stdout.splitlines()[0]
    assert first == f"{store_path}: store in format 3 (write-ahead log), 1 database, 1 stream"


def test_no_wal_creates_a_store_without_a_log(run: Run, store_path: Path) -> None:
    assert run("--no-wal", "add", "s", "--id", "1-1", "f=v").exit_code == 0
    assert run("add", "s", "--id", "1-2", "f=w", "--no-wal").exit_code == 0
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.wal, store.xlen("s")) == (2, False, 2)
    assert not (store_path / "wal.log").exists()
    assert (
        run("inspect").stdout.splitlines()[0]
        == f"{store_path}: store in format 2, 1 database, 1 stream"
    )
    assert run("add", "s", "--id", "1-3", "f=x").exit_code == 0  # no flag: the store's format


@pytest.mark.parametrize(
    ("created", "given", "refusal"),
    [
        ("--no-wal", "--wal", "is a store without a write-ahead log"),
        ("--wal", "--no-wal", "is a store with a write-ahead log"),
    ],
)
def test_the_other_format_is_refused_by_writers(
    run: Run, store_path: Path, created: str, given: str, refusal: str
) -> None:
    assert run(created, "add", "s", "--id", "1-1", "f=v").exit_code == 0
    before = rstore.Store(store_path, create=False)
    form = before.format
    before.close()
    refused = run(given, "add", "s", "--id", "1-2", "f=v")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert refused.stderr.startswith("Error: ") and refused.stderr.count("\n") == 1
    assert f"{store_path} {refusal} (the log is chosen when a store is created)" in refused.stderr
    # Commands that never create a store open it as it is.
    assert run(given, "len", "s").stdout == "1\n"
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.xlen("s")) == (form, 1)


def test_replay_creates_its_target_in_the_format_asked(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    assert run("add", "s", "--id", "1-1", "f=v").exit_code == 0
    copy = tmp_path / "copy"
    replayed = CliRunner().invoke(
        cli, ["--store", str(store_path), "--no-wal", "replay", "--to-store", str(copy)]
    )
    assert replayed.exit_code == 0, replayed.output
    with rstore.Store(copy, create=False) as target:
        assert (target.wal, target.xrange("s")) == (False, [(b"1-1", {b"f": b"v"})])
    with rstore.Store(store_path, create=False) as source:  # the source keeps its format
        assert source.format == 3
