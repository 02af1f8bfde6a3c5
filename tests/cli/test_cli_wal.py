"""Every store the CLI creates or writes has the write-ahead log (format 3): ``--wal`` and
``--no-wal`` are deprecated and ignored with one note on stderr; a store of an older format is
read as it is with ``--read-only`` and upgraded by the first command that opens it for
writing; ``inspect`` tells which format a store is in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rstore_cli.main import cli
from store_formats import downgrade

import rstore

Run = Callable[..., Result]

NOTE = (
    "note: --wal/--no-wal are deprecated and ignored: every store has the write-ahead log "
    "(store format 3)\n"
)


@pytest.mark.parametrize("flag", [[], ["--wal"], ["--no-wal"]])
def test_a_new_store_has_the_log_whatever_the_flag(
    run: Run, store_path: Path, flag: list[str]
) -> None:
    first = run(*flag, "add", "s", "--id", "1-1", "f=v")
    second = run("add", "s", "--id", "1-2", "f=w", *flag)  # after the command
    for result in (first, second):
        assert result.exit_code == 0, result.output
        assert result.stderr == (NOTE if flag else "")
    with rstore.Store(store_path, create=False) as store:
        assert (store.format, store.wal, store.xlen("s")) == (rstore.FORMAT_VERSION, True, 2)
    assert (store_path / "wal.log").is_file()
    report = json.loads(run("inspect", "--json").stdout)
    assert (report["format"], report["wal"]) == (rstore.FORMAT_VERSION, True)
    first_line = run("inspect").stdout.splitlines()[0]
    assert first_line == (
        f"{store_path}: store in format {rstore.FORMAT_VERSION} (write-ahead log), "
        "1 database, 1 stream"
    )


def test_a_format_2_store_is_read_as_it_is_and_upgraded_by_a_writer(
    run: Run, store_path: Path
) -> None:
    assert run("add", "s", "--id", "1-1", "f=v").exit_code == 0
    downgrade(str(store_path), 2)
    assert run("--read-only", "range", "s").stdout == "1-1  f=v\n"
    line = run("--read-only", "inspect").stdout.splitlines()[0]
    assert line == f"{store_path}: store in format 2, 1 database, 1 stream"
    assert not (store_path / "wal.log").exists()  # reading changed nothing
    assert run("add", "s", "--id", "1-2", "f=w").exit_code == 0
    with rstore.Store(store_path, readonly=True) as store:
        assert (store.format, store.xrange("s")) == (
            rstore.FORMAT_VERSION, [(b"1-1", {b"f": b"v"}), (b"1-2", {b"f": b"w"})],
        )  # fmt: skip


def test_replay_creates_its_target_with_the_log(run: Run, store_path: Path, tmp_path: Path) -> None:
    assert run("add", "s", "--id", "1-1", "f=v").exit_code == 0
    copy = tmp_path / "copy"
    replayed = CliRunner().invoke(
        cli, ["--store", str(store_path), "--no-wal", "replay", "--to-store", str(copy)]
    )
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stderr.startswith(NOTE)
    with rstore.Store(copy, create=False) as target:
        assert (target.wal, target.xrange("s")) == (True, [(b"1-1", {b"f": b"v"})])
