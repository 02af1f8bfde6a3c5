"""Start-up: a Ctrl-C while Python loads the CLI exits 130 without a traceback, and a command
loads only what it needs (``rstore len`` does not load the other commands, the RDB writer's
callers, the worker ...).  The time it takes is measured by ``bench/cli_startup.py``."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_subprocess import _script

import rstore


def _names(importtime: bytes) -> set[str]:
    """The modules in complete ``-X importtime`` lines."""
    lines = importtime.decode(errors="replace").split("\n")[:-1]
    return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}


def _imported(store: Path, *args: str) -> set[str]:
    """``sys.modules`` when one run of the CLI ends (``-X importtime`` does not see modules
    imported through importlib, as the lazy ones are)."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
        "from rstore_cli.entry import main\n"
        f"sys.argv = ['rstore', '--store', {str(store)!r}, *{list(args)!r}]\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    [line] = [x for x in result.stderr.decode().splitlines() if x.startswith("MODULES ")]
    return set(line.split()[1:])


def test_len_loads_only_its_own_command_module(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        store.xadd("s", {"a": "1"})
    loaded = _imported(tmp_path / "s", "len", "s")
    assert {"rstore_cli.main", "rstore_cli.streams", "rstore.store"} <= loaded
    others = {f"rstore_cli.{m}" for m in ("tail", "groups", "pending", "snapshots", "inspecting")}
    assert loaded.isdisjoint(others | {"rstore_cli.repl", "rstore.queue.consumer", "rstore.ranges"})


@pytest.mark.parametrize("after", ["click", "rstore_cli.context", "lmdb"])
def test_ctrl_c_while_loading_exits_130_quietly(tmp_path: Path, after: str) -> None:
    """SIGINT right after ``after`` has been imported (``-X importtime`` reports each import
    as it completes, on stderr), i.e. while the rest is still being imported.  (Only the
    few microseconds between the console script's import of rstore_cli.entry and its call of
    main() are outside the guard: that code is written by pip.)"""
    with rstore.Store(tmp_path / "s"):
        pass
    argv = [sys.executable, "-X", "importtime", _script(), "--store", str(tmp_path / "s")]
    with subprocess.Popen(
        [*argv, "tail", "s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stderr is not None
        err = b""
        deadline = time.monotonic() + 30
        while after not in _names(err):
            assert time.monotonic() < deadline, err[-2000:]
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, (proc.wait(), err[-2000:])
                err += chunk
        proc.send_signal(signal.SIGINT)
        rest, more = proc.communicate(timeout=30)
    err += more
    assert proc.returncode == 130, err[-2000:]
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err[-2000:]
    assert rest == b""
