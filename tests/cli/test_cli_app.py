"""The group as a whole: help texts, docs coverage, global options, central error handling."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from rstore_cli.main import all_commands, cli

import rstore

Run = Callable[..., Result]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def walk(group: click.Group, prefix: tuple[str, ...] = ("rstore",)) -> Iterator[Any]:
    """``(("rstore", "add"), command)`` for every command, nested groups included."""
    commands = all_commands() if group is cli else group.commands
    for name, command in commands.items():
        path = (*prefix, name)
        yield path, command
        if isinstance(command, click.Group):
            yield from walk(command, path)


COMMANDS = list(walk(cli))


def test_the_cli_has_the_commands_of_the_brief() -> None:
    names = {" ".join(path[1:]) for path, _ in COMMANDS}
    assert {"add", "range", "len", "info", "keys", "del", "trim", "exec"} <= names
    assert {
        "tail",
        "group create",
        "group destroy",
        "group setid",
        "group consumers",
        "group list",
        "read-group",
        "ack",
        "nack",
        "pending",
        "claim",
        "autoclaim",
        "check",
        "upgrade",
        "compact",
        "salvage",
    } <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=str)
def test_every_command_has_help_with_examples(path: tuple[str, ...], command: Any) -> None:
    assert command.short_help, path
    assert command.help and "Examples:" in command.help, path
    assert f"{' '.join(path)} " in command.help, f"{path}: examples should run the command"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{path} {param.opts} has no help"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^#{2,3} ", text[start + len(heading) :], re.MULTILINE)
    return text[start : start + len(heading) + following.start()] if following else text[start:]


def test_every_command_and_option_is_documented() -> None:
    """Fails when a command (or one of its options) is missing from docs/cli.md."""
    text = DOCS.read_text()
    missing = []
    for path, command in COMMANDS:
        heading = f"### `{' '.join(path)}`"
        if heading not in text:
            missing.append(heading)
            continue
        section = _section(text, heading)
        for param in command.params:
            if getattr(param, "hidden", False):  # a global option given after the command
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and f"`{opt}" not in section:
                    missing.append(f"{' '.join(path)} {opt}")
    global_section = _section(text, "## Global options")
    assert "after the command" in global_section
    for param in cli.params:
        for opt in getattr(param, "opts", []):
            if opt.startswith("--") and f"`{opt}" not in global_section:
                missing.append(f"rstore {opt}")
    assert missing == [], f"document these in docs/cli.md: {missing}"


def test_help_and_version(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = re.findall(r"^  (\w[\w-]*)\s", result.stdout.split("Commands:")[1], re.MULTILINE)
    assert listed == [
        "add",
        "range",
        "export",
        "replay",
        "import",
        "len",
        "info",
        "trim",
        "del-entries",
        "setid",
        "tail",
        "group",
        "read-group",
        "ack",
        "nack",
        "pending",
        "claim",
        "autoclaim",
        "keys",
        "del",
        "save",
        "restore",
        "dump",
        "restore-key",
        "inspect",
        "check",
        "upgrade",
        "compact",
        "salvage",
        "retention",
        "exec",
        "serve",
        "top",
        "metrics",
        "report",
    ]
    result = runner.invoke(cli, ["group", "--help"])
    listed = re.findall(r"^  (\w[\w-]*)\s", result.stdout.split("Commands:")[1], re.MULTILINE)
    assert listed == [
        "create",
        "destroy",
        "setid",
        "list",
        "consumers",
        "create-consumer",
        "del-consumer",
    ]
    assert runner.invoke(cli, ["-V"]).stdout == f"rstore, version {rstore.__version__}\n"
    assert runner.invoke(cli, ["range", "-h"]).exit_code == 0


def test_no_command_shows_the_commands(runner: CliRunner, tmp_path: Path) -> None:
    """Bare ``rstore`` prints the help with the commands (stdout, exit 0), also with
    $RSTORE_PATH set; global options without a command print it on stderr and fail (exit 2),
    never a bare "Missing command"."""
    help_text = runner.invoke(cli, ["--help"]).stdout
    for env in ({}, {"RSTORE_PATH": str(tmp_path)}):
        bare = runner.invoke(cli, [], env=env)
        assert (bare.exit_code, bare.stdout, bare.stderr) == (0, help_text, "")
    options_only = runner.invoke(cli, ["--store", str(tmp_path), "--read-only"])
    assert (options_only.exit_code, options_only.stdout) == (2, "")
    assert options_only.stderr.startswith(help_text)
    assert options_only.stderr.endswith("\nError: no command given (the commands are above)\n")
    assert "Missing command" not in options_only.stderr
    assert not any(tmp_path.iterdir())


def test_unknown_command_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["nosuch"])
    assert result.exit_code == 2
    assert "No such command 'nosuch'" in result.stderr


def test_store_from_environment(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "from-env"
    result = runner.invoke(cli, ["add", "s", "a=1"], env={"RSTORE_PATH": str(target)})
    assert result.exit_code == 0, result.stderr
    assert target.is_dir()
    result = runner.invoke(cli, ["len", "s"], env={"RSTORE_PATH": str(target)})
    assert result.stdout == "1\n"
    other = tmp_path / "explicit"
    result = runner.invoke(
        cli, ["--store", str(other), "len", "s"], env={"RSTORE_PATH": str(target)}
    )
    assert result.exit_code == 1 and "no store at" in result.stderr  # --store wins


def test_default_store_is_rstore_data_in_the_working_directory(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RSTORE_PATH", raising=False)
    result = runner.invoke(cli, ["add", "s", "a=1"], env={"RSTORE_PATH": ""})
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "rstore-data").is_dir()


def test_ctrl_c_exits_130_without_traceback(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(rstore.Store, "xlen", interrupted)
    result = run("len", "s")
    assert result.exit_code == 130
    assert "Traceback" not in result.output


def test_unexpected_errors_are_one_line(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(rstore.Store, "xlen", broken)
    monkeypatch.delenv("RSTORE_DEBUG", raising=False)
    result = run("len", "s")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: unexpected ValueError: boom (a bug in rstore;")
    assert result.stderr.count("\n") == 1
    with pytest.raises(ValueError, match="boom"):
        run("len", "s", env={"RSTORE_DEBUG": "1"})


def test_storage_errors_are_one_line_with_status_1(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise rstore.StorageError("/x: the disk is full\n(details)")

    monkeypatch.setattr(rstore.Store, "xlen", failing)
    monkeypatch.setattr(rstore.Store, "execute_raw", failing)
    expected = (1, "", "Error: /x: the disk is full (details)\n")
    result = run("len", "s")
    assert (result.exit_code, result.stdout, result.stderr) == expected
    result = run("exec", "XLEN", "s")  # "(error) " is only for Redis's own refusals
    assert (result.exit_code, result.stdout, result.stderr) == expected


def test_command_index_matches_the_modules() -> None:
    """COMMAND_INDEX (what lets a command's module load only when it runs) names every
    command of every module, in the module that defines it."""
    import importlib

    from rstore_cli.main import COMMAND_INDEX, COMMAND_MODULES

    found = {}
    for module in COMMAND_MODULES:
        for command in importlib.import_module(f"rstore_cli.{module}").COMMANDS:
            found[command.name] = module
    assert found == COMMAND_INDEX


def test_global_options_may_follow_the_command(
    runner: CliRunner, tmp_path: Path, store: rstore.Store, store_path: Path
) -> None:
    """``rstore len s --store PATH`` (once "No such option '--store'"); given both before and
    after the command, the one after wins, as a repeated option does."""
    store.xadd("s", {"a": "1"})
    elsewhere = str(tmp_path / "elsewhere")
    here = str(store_path)

    def rstore_cli(*args: str) -> Result:
        return runner.invoke(cli, list(args), env={"RSTORE_PATH": elsewhere})

    assert rstore_cli("len", "s", "--store", here).stdout == "1\n"
    assert rstore_cli("len", "--store", here, "s").stdout == "1\n"
    assert rstore_cli("--store", elsewhere, "len", "s", "--store", here).stdout == "1\n"
    missing = rstore_cli("--store", here, "len", "s", "--store", elsewhere)
    assert (missing.exit_code, missing.stderr) == (1, f"Error: no store at {elsewhere}\n")
    assert rstore_cli("group", "create", "s", "g", "--store", here).stdout == "OK\n"
    assert rstore_cli("group", "list", "s", "--json", "--store", here).exit_code == 0
    assert rstore_cli("exec", "--store", here, "--raw", "XLEN", "s").stdout == "1\n"
    # After exec's CMD every word is an argument of the command, --store included.
    echoed = runner.invoke(cli, ["--store", here, "exec", "--raw", "ECHO", "--store"])
    assert echoed.stdout == "--store\n"
    assert "--store" not in rstore_cli("len", "--help").stdout  # hidden: see rstore --help


def test_default_store_path_is_the_library_default(runner: CliRunner) -> None:
    assert f"./{rstore.DEFAULT_PATH}" in runner.invoke(cli, ["--help"]).stdout


def test_check_names_the_damage_of_a_store_too_damaged_to_open(tmp_path: Path) -> None:
    """``rstore check`` answers where opening the store is refused: the damaged page, its
    sub-database and the stream it held."""
    store = tmp_path / "store"
    with rstore.Store(store) as s:
        for i in range(2000):
            s.xadd("orders", {"n": str(i), "pad": "x" * 40})
    data = (store / "data.mdb").read_bytes()
    page = 4096
    runner = CliRunner()
    for number in range(2, len(data) // page):  # zero pages until one of the nodes tree
        damaged = data[: number * page] + bytes(page) + data[(number + 1) * page :]
        (store / "data.mdb").write_bytes(damaged)
        result = runner.invoke(cli, ["--store", str(store), "check"])
        if "sub-database nodes" in result.output:
            break
    else:
        raise AssertionError("no page of the nodes tree found")
    assert result.exit_code == 1
    assert re.search(r"data.mdb page \d+ \(sub-database nodes, holding records of stream "
                     r"'orders'", result.output), result.output  # fmt: skip
    refused = runner.invoke(cli, ["--store", str(store), "len", "orders"])
    assert refused.exit_code == 1 and "rstore check" in refused.output


def test_upgrade_and_read_only(tmp_path: Path) -> None:
    from store_formats import downgrade, downgrade_to_format_1

    store = tmp_path / "store"
    with rstore.Store(store) as s:
        s.xadd("orders", {"a": "1"}, id="1-0")
    downgrade_to_format_1(str(store))
    runner = CliRunner()
    read = runner.invoke(cli, ["--store", str(store), "--read-only", "len", "orders"])
    assert read.output == "1\n"
    assert not (store / "wal.log").exists()  # a reader changes nothing
    upgraded = runner.invoke(cli, ["--store", str(store), "upgrade", "--json"])
    assert upgraded.exit_code == 0, upgraded.output
    assert json.loads(upgraded.stdout) == {
        "upgraded": True, "format_before": 1, "format": rstore.FORMAT_VERSION, "records": 5,
        "databases": [{"db": 0, "format_before": 1, "records": 5}],
    }  # fmt: skip
    refused = runner.invoke(cli, ["--store", str(store), "--read-only", "upgrade"])
    assert refused.exit_code == 2 and "cannot run with --read-only" in refused.output
    again = runner.invoke(cli, ["upgrade", "--store", str(store)])
    assert again.output == "already current: nothing to do\n"
    downgrade_to_format_1(str(store))
    upgraded = runner.invoke(cli, ["--store", str(store), "upgrade"])
    assert upgraded.stdout == "upgraded from format 1 to 4; 5 records rewritten with checksums\n"
    with rstore.Store(store) as s:  # a second database, both in format 2: both upgraded
        s.database(4).xadd("four", {"a": "1"})
    for path in (store, store / "db4"):
        downgrade(str(path), 2)
    upgraded = runner.invoke(cli, ["--store", str(store), "upgrade"])
    assert upgraded.stdout == (
        "database 0: upgraded from format 2 to 4\ndatabase 4: upgraded from format 2 to 4\n"
    )
    downgrade(str(store), 2)
    # Any command that may write opens it for writing, and so upgrades it: `len` too.
    assert runner.invoke(cli, ["--store", str(store), "len", "orders"]).output == "1\n"
    with rstore.Store(store, readonly=True) as s:
        assert s.format == rstore.FORMAT_VERSION
    read_only = runner.invoke(cli, ["--store", str(store), "--read-only", "add", "orders", "c=3"])
    assert read_only.exit_code == 1 and "read-only" in read_only.output
    late = runner.invoke(cli, ["add", "orders", "c=3", "--store", str(store), "--read-only"])
    assert late.exit_code == 1 and "read-only" in late.output
    assert runner.invoke(cli, ["--store", str(store), "--read-only", "len", "orders"]).output == (
        "1\n"
    )
    assert runner.invoke(cli, ["--store", str(store), "add", "orders", "c=3"]).exit_code == 0
