"""``rstore exec`` without a command: commands from stdin, and the prompt on a terminal (a
pseudo-terminal here) with its history file.  The line splitting itself is compared with
valkey-cli in test_cli_oracle.py."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from rstore_cli.repl import COMMAND_NAMES

import rstore

Run = Callable[..., Result]


def test_a_missing_store_is_created_only_by_a_command_that_adds_data(
    run: Run, store_path: Path
) -> None:
    result = run("exec", "--no-raw", input="PING\nXADD s 1-0 a 1\nXLEN s\nPING\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"(error) no store at {store_path}",
        '"1-0"',
        "(integer) 1",
        "PONG",
    ]
    assert store_path.is_dir()


def test_errors_print_like_replies_and_the_loop_goes_on(run: Run, store: rstore.Store) -> None:
    lines = "XLEN\nXADD s 1-0 a 1\nXADD s 1-0 a 1\nexit\nXLEN s\n"
    assert run("exec", input=lines).stdout == (  # raw, as into any pipe
        "ERR wrong number of arguments for 'xlen' command\n\n"
        "1-0\n"
        "ERR The ID specified in XADD is equal or smaller than the target stream top item\n\n"
    )
    as_json = run("exec", "--json", input="XADD s 2-0 a b\nXRANGE s 2 2\n").stdout.splitlines()
    assert [json.loads(line) for line in as_json] == [
        "2-0",
        [{"id": "2-0", "fields": [["a", "b"]]}],
    ]


def test_help_lists_every_command_the_library_answers(run: Run, store: rstore.Store) -> None:
    from rstore.commands.registry import load_all

    listed = {name for names in COMMAND_NAMES.values() for name in names.split()}
    assert listed == {name.decode().upper() for name in load_all()}
    shown = run("exec", input="help\n").stdout
    assert all(name in shown for name in listed)
    assert '"quit"' in shown


# ----------------------------------------------------------------------------- a terminal


class Terminal:
    """``rstore exec`` on a pseudo-terminal: type lines, read what it shows."""

    def __init__(self, store: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rstore_cli", "--store", str(store), "exec"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
        )
        os.close(slave)
        self.seen = b""

    def expect(self, text: bytes, timeout: float = 30) -> bytes:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"never saw {text!r}; saw {self.seen[-500:]!r}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the other end closed
                    chunk = b""
                assert chunk, f"closed before {text!r}; saw {self.seen[-500:]!r}"
                self.seen += chunk
        before, _, self.seen = self.seen.partition(text)
        return before

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> int:
        code = self.proc.wait(timeout=30)
        os.close(self.master)
        return code


@pytest.mark.slow
def test_the_prompt_keeps_a_history_across_sessions(store_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm"}
    env.pop("RSTORE_HISTFILE", None)
    prompt = f"{store_path}> ".encode()

    first = Terminal(store_path, env)
    first.expect(prompt)
    first.type(b"XADD s 1-0 name 'a b'\r")
    first.expect(b'"1-0"')
    first.expect(prompt)
    first.type(b"XLEN s\r")
    first.expect(b"(integer) 1")
    first.expect(prompt)
    first.type(b"\x04")  # Ctrl-D
    assert first.close() == 0
    history = tmp_path / "state" / "rstore" / "history"
    assert history.read_text().splitlines()[-2:] == ["XADD s 1-0 name 'a b'", "XLEN s"]

    second = Terminal(store_path, env)
    second.expect(prompt)
    second.type(b"\x10\r")  # Ctrl-P: the previous line of the history, XLEN s
    second.expect(b"(integer) 1")
    second.expect(prompt)
    second.type(b"quit\r")
    assert second.close() == 0
