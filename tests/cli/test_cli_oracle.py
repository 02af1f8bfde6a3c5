"""``rstore exec`` prints exactly what ``valkey-cli`` prints for the same commands: in its
terminal format (``--no-raw``), its raw format (``--raw``, and by default into a pipe), and for
lines read from stdin (quoting, errors, ``quit``).

Needs ``valkey-server`` and ``valkey-cli`` (or ``redis-cli``); skipped without them.  The server
is a throw-away one on a free loopback port, never the default port
(``fixtures/valkey_server.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest
from click.testing import Result
from newer_fields import cli_as_older_server
from valkey_server import ValkeyServer, find_server_binary

Run = Callable[..., Result]

pytestmark = pytest.mark.oracle

ALL_BYTES = bytes(range(1, 256))  # a command line cannot carry NUL

COMMANDS: list[list[bytes]] = [
    [b"XADD", b"s", b"1-0", b"a", b"1", b"b", b"x\x01y"],
    [b"XADD", b"s", b"2-0", b"caf\xc3\xa9", b'q"\\t', b"nl", b"a\nb", b"e", b""],
    *[[b"XADD", b"s", b"%d-0" % i, b"f", b"%d" % i] for i in range(3, 13)],
    [b"XADD", b"bytes", b"1-0", b"all", ALL_BYTES, b"bad", b"\xff\xfe"],
    [b"XRANGE", b"s", b"-", b"+"],
    [b"XRANGE", b"s", b"-", b"+", b"COUNT", b"2"],
    [b"XREVRANGE", b"s", b"+", b"-", b"COUNT", b"3"],
    [b"XRANGE", b"bytes", b"-", b"+"],
    [b"XRANGE", b"nope", b"-", b"+"],
    [b"XREAD", b"STREAMS", b"s", b"$"],
    [b"XREAD", b"COUNT", b"2", b"STREAMS", b"s", b"bytes", b"10-0", b"0"],
    [b"XLEN", b"s"],
    [b"XINFO", b"STREAM", b"s"],
    [b"XINFO", b"STREAM", b"s", b"FULL"],
    [b"XDEL", b"s", b"1-0", b"99-0"],
    [b"XTRIM", b"s", b"MAXLEN", b"5"],
    [b"PING"],
    [b"XADD", b"missing", b"NOMKSTREAM", b"*", b"a", b"b"],
    [b"ECHO", b""],
    [b"CONFIG", b"GET", b"stream-node-max-entries"],
    [b"EXISTS", b"s", b"nope"],
    [b"TYPE", b"s"],
]

ERRORS: list[list[bytes]] = [
    [b"XADD", b"s"],
    [b"XADD", b"s", b"1-0", b"a", b"b"],
    [b"XRANGE", b"s", b"bad", b"+"],
    [b"XINFO", b"STREAM", b"nope"],
]


@pytest.fixture(scope="module")
def valkey_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., bytes]]:
    binary = find_server_binary("valkey")
    client = shutil.which("valkey-cli") or shutil.which("redis-cli")
    if binary is None or client is None:
        pytest.skip("valkey-server and valkey-cli (or redis-cli) are not on PATH")
    server = ValkeyServer(binary, tmp_path_factory.mktemp("valkey-cli"))

    def cli(*args: bytes, mode: bytes | None = b"--no-raw", stdin: bytes | None = None) -> bytes:
        flags = [] if mode is None else [mode]
        cmd = [client.encode(), b"-p", str(server.port).encode(), *flags, *args]
        return subprocess.run(cmd, input=stdin, capture_output=True, timeout=30, check=True).stdout

    with server:
        yield cli


def test_exec_output_matches_valkey_cli(run: Run, valkey_cli: Callable[..., bytes]) -> None:
    valkey_cli(b"FLUSHALL")
    for argv in COMMANDS:
        expected = valkey_cli(*argv)
        result = run("exec", "--no-raw", *(os.fsdecode(a) for a in argv))
        assert result.exit_code == 0, (argv, result.stderr)
        assert cli_as_older_server(argv, result.stdout_bytes) == expected, argv


@pytest.mark.parametrize("mode", [b"--raw", None], ids=["--raw", "pipe"])
def test_exec_raw_output_matches_valkey_cli(
    run: Run, valkey_cli: Callable[..., bytes], mode: bytes | None
) -> None:
    """``--raw``, and the default when stdout is not a terminal (valkey-cli's own rule: the
    runner's stdout, like valkey-cli's here, is a pipe)."""
    valkey_cli(b"FLUSHALL")
    run("exec", "FLUSHALL")
    flags = [] if mode is None else [mode.decode()]
    for argv in COMMANDS:
        expected = valkey_cli(*argv, mode=mode)
        result = run("exec", *flags, *(os.fsdecode(a) for a in argv))
        assert result.exit_code == 0, (argv, result.stderr)
        assert cli_as_older_server(argv, result.stdout_bytes) == expected, argv


STDIN_LINES = rb"""XADD q 1-0 a 1 b "x y"
  XRANGE q - +
ECHO "tab\there \x41\x4a\x00\xff"
ECHO 'single \' quote \n'
ECHO a"b c"
ECHO "tab\there" 'x' a"b c"d
ECHO "\xZZ\q"
XLEN
XRANGE q bad +

ECHO "unterminated
ECHO 'closing'x
PING
quit
PING
"""


@pytest.mark.parametrize("mode", [b"--no-raw", None], ids=["--no-raw", "pipe"])
def test_commands_from_stdin_match_valkey_cli(
    run: Run, valkey_cli: Callable[..., bytes], mode: bytes | None
) -> None:
    """``rstore exec`` with no command reads lines as ``valkey-cli`` does: the same splitting
    and quoting, errors printed like replies, blank lines skipped, ``quit`` stops."""
    valkey_cli(b"FLUSHALL")
    expected = valkey_cli(mode=mode, stdin=STDIN_LINES)
    flags = [] if mode is None else [mode.decode()]
    result = run("exec", *flags, input=STDIN_LINES)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected


def test_exec_errors_match_valkey_cli(run: Run, valkey_cli: Callable[..., bytes]) -> None:
    valkey_cli(b"FLUSHALL")
    valkey_cli(b"XADD", b"s", b"5-0", b"a", b"b")
    run("exec", "XADD", "s", "5-0", "a", "b")
    for argv in ERRORS:
        expected = valkey_cli(*argv)  # valkey-cli writes the error line on stdout
        result = run("exec", *(os.fsdecode(a) for a in argv))
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr.encode() == expected, argv


# (friendly command, the same on valkey); run in order on both sides after SETUP.
SETUP: list[list[bytes]] = [
    [b"XADD", b"s", b"1-0", b"a", b"1"],
    [b"XADD", b"s", b"2-0", b"a", b"2"],
    [b"XADD", b"s", b"3-0", b"a", b"3"],
    [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
]
FRIENDLY: list[tuple[list[str], list[bytes]]] = [
    (["del-entries", "s", "2-0", "9-0"], [b"XDEL", b"s", b"2-0", b"9-0"]),
    (["del-entries", "nope", "1-0"], [b"XDEL", b"nope", b"1-0"]),
    (["del-entries", "s", "bad"], [b"XDEL", b"s", b"bad"]),
    (["setid", "s", "5-0"], [b"XSETID", b"s", b"5-0"]),
    (["setid", "s", "1-0"], [b"XSETID", b"s", b"1-0"]),
    (["setid", "nope", "1-0"], [b"XSETID", b"nope", b"1-0"]),
    (
        ["setid", "s", "6-0", "--entries-added", "1"],
        [b"XSETID", b"s", b"6-0", b"ENTRIESADDED", b"1"],
    ),
    (
        ["setid", "s", "7-0", "--entries-added", "10", "--max-deleted-id", "3-0"],
        [b"XSETID", b"s", b"7-0", b"ENTRIESADDED", b"10", b"MAXDELETEDID", b"3-0"],
    ),
    (
        ["setid", "s", "8-0", "--max-deleted-id", "9-0"],
        [b"XSETID", b"s", b"8-0", b"MAXDELETEDID", b"9-0"],
    ),
    (
        ["group", "create-consumer", "s", "g", "c1"],
        [b"XGROUP", b"CREATECONSUMER", b"s", b"g", b"c1"],
    ),
    (
        ["group", "create-consumer", "s", "g", "c1"],
        [b"XGROUP", b"CREATECONSUMER", b"s", b"g", b"c1"],
    ),
    (
        ["group", "create-consumer", "s", "nog", "c1"],
        [b"XGROUP", b"CREATECONSUMER", b"s", b"nog", b"c1"],
    ),
    (["exec", "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"], []),
    (["group", "del-consumer", "s", "g", "c1"], [b"XGROUP", b"DELCONSUMER", b"s", b"g", b"c1"]),
    (
        ["group", "del-consumer", "s", "g", "nobody"],
        [b"XGROUP", b"DELCONSUMER", b"s", b"g", b"nobody"],
    ),
    (
        ["group", "del-consumer", "nope", "g", "c1"],
        [b"XGROUP", b"DELCONSUMER", b"nope", b"g", b"c1"],
    ),
    (["exec", "XINFO", "STREAM", "s", "FULL"], [b"XINFO", b"STREAM", b"s", b"FULL"]),
]


def test_friendly_commands_answer_as_valkey(run: Run, valkey_cli: Callable[..., bytes]) -> None:
    """del-entries (XDEL), setid (XSETID), group create-consumer / del-consumer: the reply
    printed bare (a count, OK), or Valkey's error line after ``Error: ``."""
    valkey_cli(b"FLUSHALL")
    for argv in SETUP:
        valkey_cli(*argv)
        assert run("exec", *(a.decode() for a in argv)).exit_code == 0
    for friendly, command in FRIENDLY:
        if friendly[0] == "exec":  # a step on both sides, and XINFO to compare the state
            result = run("exec", "--no-raw", *friendly[1:])
            expected = valkey_cli(*command) if command else None
            if command:
                assert cli_as_older_server(command, result.stdout_bytes) == expected, friendly
            else:
                valkey_cli(*(a.encode() for a in friendly[1:]))
            continue
        expected = valkey_cli(*command)
        result = run(*friendly)
        if expected.startswith(b"(error) "):
            assert result.exit_code == 1, friendly
            assert result.stderr_bytes == b"Error: " + expected[len(b"(error) ") :], friendly
        else:
            assert result.exit_code == 0, (friendly, result.stderr)
            reply = expected.removeprefix(b"(integer) ")
            assert result.stdout_bytes == reply, friendly
