"""``rstore exec`` prints exactly what ``valkey-cli --no-raw`` prints for the same commands.

Needs ``valkey-server`` and ``valkey-cli`` (or ``redis-cli``); skipped without them.  The server
is a throw-away one on a free loopback port, never the default port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from click.testing import Result

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return port if port != 6379 else _free_port()


@pytest.fixture(scope="module")
def valkey_cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., bytes]]:
    server = shutil.which(os.environ.get("RSTORE_ORACLE_SERVER") or "valkey-server")
    client = shutil.which("valkey-cli") or shutil.which("redis-cli")
    if server is None or client is None:
        pytest.skip("valkey-server and valkey-cli (or redis-cli) are not on PATH")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("valkey-cli")
    argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    proc = subprocess.Popen(
        [*argv, "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def cli(*args: bytes) -> bytes:
        cmd = [client.encode(), b"-p", str(port).encode(), b"--no-raw", *args]
        return subprocess.run(cmd, capture_output=True, timeout=30, check=True).stdout

    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if cli(b"PING") == b"PONG\n":
                    break
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        else:
            pytest.skip("valkey-server did not start")
        yield cli
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_exec_output_matches_valkey_cli(run: Run, valkey_cli: Callable[..., bytes]) -> None:
    valkey_cli(b"FLUSHALL")
    for argv in COMMANDS:
        expected = valkey_cli(*argv)
        result = run("exec", *(os.fsdecode(a) for a in argv))
        assert result.exit_code == 0, (argv, result.stderr)
        assert result.stdout_bytes == expected, argv


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
