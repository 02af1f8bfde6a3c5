"""INFO commandstats and errorstats name and count commands as Valkey 8.0 does: a container
command by its subcommand (``xinfo|stream``, ``client|setname``), a container without one and a
wrong number of arguments as rejected calls, an unknown subcommand as an error only (the
oracle: the same calls on a real valkey-server, compared)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import redis
from serve_process import Served
from valkey_server import ValkeyServer, find_server_binary

pytestmark = pytest.mark.skipif(find_server_binary() is None, reason="needs valkey-server")

CALLS: list[tuple[str, ...]] = [
    ("XADD", "s", "1-0", "f", "v"),
    ("XADD", "s", "bad", "f", "v"),
    ("XADD", "s"),
    ("XINFO", "STREAM", "s"),
    ("XINFO", "STREAM", "nokey"),
    ("XINFO", "GROUPS", "s"),
    ("XINFO", "FOO"),
    ("XINFO",),
    ("XINFO", "HELP"),
    ("XGROUP", "CREATE", "s", "g", "$"),
    ("XGROUP", "CREATE", "s"),
    ("XGROUP", "CREATE", "s", "g", "$"),
    ("XGROUP", "FOO", "x"),
    ("XINFO", "CONSUMERS", "s", "g"),
    ("XREADGROUP", "GROUP", "nogroup", "c", "STREAMS", "s", ">"),
    ("CLIENT", "SETNAME", "x"),
    ("CLIENT", "FOO"),
    ("CLIENT",),
    ("CONFIG", "GET", "maxclients"),
    ("COMMAND", "COUNT"),
    ("NOSUCHCOMMAND", "x"),
]


def _stats(port: int) -> tuple[dict[str, Any], dict[str, Any]]:
    client = redis.Redis(port=port, protocol=2)
    client.set_response_callback("COMMAND", lambda reply, **_: reply)  # COUNT: a number
    client.execute_command("CONFIG", "RESETSTAT")
    for call in CALLS:
        with contextlib.suppress(redis.ResponseError):  # the errors are counted too
            client.execute_command(*call)
    commands = {name: (s["calls"], s["rejected_calls"], s["failed_calls"])
                for name, s in client.info("commandstats").items()}  # fmt: skip
    errors = client.info("errorstats")
    client.close()
    return commands, errors


def test_commandstats_and_errorstats_are_valkeys(tmp_path: Path) -> None:
    with ValkeyServer() as valkey:
        expected = _stats(valkey.port)
    with Served(tmp_path / "s") as served:
        got = _stats(served.port)
        served.stop()
    assert got == expected
    assert expected[0]["cmdstat_xinfo|stream"] == (2, 0, 1)  # the oracle says what we think
