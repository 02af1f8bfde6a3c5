"""``rstore exec``: redis-cli's reply format, the JSON mapping, errors, argument handling."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

import rstore

Run = Callable[..., Result]


def tty(run: Run, *args: str) -> Result:
    """``rstore exec --no-raw ...``: the terminal format, which the runner's pipe would not get
    by default (a pipe gets the raw format, as with redis-cli; see test_cli_exec_raw.py)."""
    return run("exec", "--no-raw", *args)


def test_scalar_replies(run: Run, store: rstore.Store) -> None:
    assert tty(run, "XADD", "s", "1-0", "a", "1").stdout == '"1-0"\n'
    assert tty(run, "XLEN", "s").stdout == "(integer) 1\n"
    assert tty(run, "PING").stdout == "PONG\n"
    assert tty(run, "ECHO", "").stdout == '""\n'
    assert tty(run, "XREAD", "STREAMS", "s", "$").stdout == "(nil)\n"  # nil array
    assert tty(run, "XRANGE", "nope", "-", "+").stdout == "(empty array)\n"


def test_nested_arrays_align_like_redis_cli(run: Run, store: rstore.Store) -> None:
    for i in range(1, 11):
        store.execute("XADD", "s", f"{i}-0", "f", str(i))
    store.execute("XADD", "t", "1-0", *[x for i in range(5) for x in (f"k{i}", f"v{i}")])
    out = tty(run, "XRANGE", "s", "-", "+").stdout.splitlines()
    assert out[:3] == [' 1) 1) "1-0"', '    2) 1) "f"', '       2) "1"']
    assert out[-3:] == ['10) 1) "10-0"', '    2) 1) "f"', '       2) "10"']
    out = tty(run, "XREAD", "STREAMS", "t", "0").stdout.splitlines()
    assert out[:4] == [
        '1) 1) "t"',
        '   2) 1) 1) "1-0"',
        '         2)  1) "k0"',
        '             2) "v0"',
    ]
    assert out[-1] == '            10) "v4"'


def test_bulk_strings_are_escaped_like_redis_cli(run: Run, store: rstore.Store) -> None:
    store.execute("XADD", "s", "1-0", "v", bytes(range(256)))
    line = tty(run, "XRANGE", "s", "-", "+").stdout.splitlines()[-1]
    assert line.startswith('      2) "\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\a\\b\\t\\n\\x0b\\x0c\\r')
    assert ' !\\"#$%&' in line and "[\\\\]^_`" in line and "~\\x7f\\x80" in line
    assert line.endswith('\\xfe\\xff"')
    assert tty(run, "ECHO", "café").stdout == '"caf\\xc3\\xa9"\n'


def test_json_mapping(run: Run, store: rstore.Store) -> None:
    """exec --json gives the mapping of docs/cli.md, the JSON the friendly command of the same
    reply gives: entries as objects, XINFO and CONFIG GET maps as objects, XPENDING and
    XAUTOCLAIM as pending and autoclaim give them (not RESP2's bare arrays)."""
    store.execute("XADD", "s", "1-0", "text", "café", "bin", b"\x00\xff")
    store.execute("XADD", "s", "2-0", "n", "2")
    store.execute("XGROUP", "CREATE", "s", "g", "0")
    store.execute("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")

    def as_json(*argv: str) -> Any:
        result = run("exec", "--json", *argv)
        assert result.exit_code == 0, result.stderr
        assert result.stdout.count("\n") == 1
        return json.loads(result.stdout)

    def friendly(*argv: str) -> Any:
        result = run(*argv, "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    def no_idle(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k not in ("idle", "inactive")} for row in rows]

    entry = {"id": "1-0", "fields": [["text", "café"], ["bin", {"base64": "AP8="}]]}
    assert as_json("XRANGE", "s", "-", "1") == [entry] == friendly("range", "s", "-", "1")
    assert as_json("XREVRANGE", "s", "+", "-") == friendly("range", "s", "--rev")
    assert as_json("XREAD", "STREAMS", "s", "1-0") == [
        {"stream": "s", "entries": [{"id": "2-0", "fields": [["n", "2"]]}]}
    ]
    assert as_json("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0") == [
        friendly("read-group", "s", "g", "c", "--id", "0")
    ]
    assert as_json("XINFO", "STREAM", "s") == friendly("info", "s")
    assert as_json("XINFO", "STREAM", "s", "FULL") == friendly("info", "s", "--full")
    assert as_json("XINFO", "GROUPS", "s") == friendly("group", "list", "s")
    consumers = as_json("XINFO", "CONSUMERS", "s", "g")
    assert no_idle(consumers) == no_idle(friendly("group", "consumers", "s", "g"))
    assert as_json("XPENDING", "s", "g") == friendly("pending", "s", "g")
    rows = as_json("XPENDING", "s", "g", "-", "+", "10")
    assert no_idle(rows) == no_idle(friendly("pending", "s", "g", "--count", "10"))
    assert as_json("CONFIG", "GET", "stream-node-max-*") == {
        "stream-node-max-entries": "100",
        "stream-node-max-bytes": "4096",
    }
    assert as_json("XCLAIM", "s", "g", "d", "0", "1-0", "JUSTID") == ["1-0"]
    assert as_json("XCLAIM", "s", "g", "d", "0", "1-0") == [entry]
    assert as_json("XAUTOCLAIM", "s", "g", "c", "0", "0", "JUSTID") == {
        "next": "0-0",
        "entries": ["1-0"],
        "deleted": [],
    }
    store.execute("XDEL", "s", "1-0")
    assert as_json("xautoclaim", "s", "g", "c", "0", "0") == {
        "next": "0-0",
        "entries": [],
        "deleted": ["1-0"],
    }
    assert as_json("PING") == "PONG"
    assert as_json("XLEN", "s") == 1
    assert as_json("XREAD", "STREAMS", "s", "$") is None
    assert as_json("XADD", "s", "3-0", "a", "b") == "3-0"


def test_refused_command_prints_redis_error_on_stderr(run: Run, store: rstore.Store) -> None:
    result = run("exec", "XADD", "s")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "(error) ERR wrong number of arguments for 'xadd' command\n"
    result = run("exec", "NOSUCH", "x")
    assert result.exit_code == 1
    assert result.stderr.startswith("(error) ERR unknown command 'NOSUCH'")
    result = run("exec", "--json", "XINFO", "STREAM", "nope")
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", "(error) ERR no such key\n")


def test_arguments_after_cmd_are_passed_verbatim(run: Run, store: rstore.Store) -> None:
    assert tty(run, "ECHO", "--json").stdout == '"--json"\n'
    assert tty(run, "ECHO", "-h").stdout == '"-h"\n'
    assert tty(run, "ECHO", "-").stdout == '"-"\n'
    assert tty(run, "ECHO", os.fsdecode(b"\xff\xfe")).stdout == '"\\xff\\xfe"\n'
    assert tty(run, "--", "ECHO", "x").stdout == '"x"\n'


def test_unescape(run: Run, store: rstore.Store) -> None:
    assert tty(run, "-e", "ECHO", r"a\x00b\n\"\\\q\xZZ").stdout == '"a\\x00b\\n\\"\\\\qxZZ"\n'
    assert tty(run, "ECHO", r"a\x00b").stdout == '"a\\\\x00b"\n'  # not unescaped by default
    result = tty(run, "-e", "ECHO", "a\\")
    assert result.exit_code == 2
    assert "trailing backslash" in result.stderr


def test_without_cmd_commands_are_read_from_stdin(run: Run, store: rstore.Store) -> None:
    result = run("exec", input="XADD s 1-0 a 1\nXLEN s\n")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "1-0\n1\n", "")
    assert run("exec").stdout == ""  # no input: nothing to do


def test_store_created_only_for_commands_that_add_data(run: Run, store_path: Path) -> None:
    assert tty(run, "PING").exit_code == 1
    assert not store_path.exists()
    assert tty(run, "xadd", "s", "1-0", "a", "1").stdout == '"1-0"\n'
    assert store_path.is_dir()
    assert tty(run, "XLEN", "s").stdout == "(integer) 1\n"
