"""The tools people point at a Redis server work against ``rstore serve``: ``redis-cli`` /
``valkey-cli`` (a command, ``--pipe`` mass insertion) and
``valkey-benchmark``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from served import ServedStore

import rstore

CLI = shutil.which("valkey-cli") or shutil.which("redis-cli")
BENCHMARK = shutil.which("valkey-benchmark") or shutil.which("redis-benchmark")


@pytest.mark.skipif(CLI is None, reason="needs valkey-cli or redis-cli")
def test_cli_commands_and_pipe_mass_insertion(tmp_path: Path) -> None:
    assert CLI is not None
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        base = [CLI, "-h", "127.0.0.1", "-p", str(served.port)]
        out = subprocess.run([*base, "XADD", "s", "1-1", "f", "v"], capture_output=True,
                             text=True, timeout=60, check=True)  # fmt: skip
        assert out.stdout == "1-1\n"
        lines = "".join(f"XADD bulk * n {i}\r\n" for i in range(5000))
        piped = subprocess.run([*base, "--pipe"], input=lines, capture_output=True, text=True,
                               timeout=120, check=False)  # fmt: skip
        assert piped.returncode == 0, piped.stdout + piped.stderr
        assert "errors: 0, replies: 5000" in piped.stdout
        assert store.xlen("bulk") == 5000


@pytest.mark.skipif(BENCHMARK is None, reason="needs valkey-benchmark or redis-benchmark")
def test_benchmark_runs_against_it(tmp_path: Path) -> None:
    assert BENCHMARK is not None
    with rstore.Store(tmp_path / "s", sync=False) as store, ServedStore(store) as served:
        out = subprocess.run(
            [BENCHMARK, "-h", "127.0.0.1", "-p", str(served.port), "-c", "4", "-n", "2000",
             "-P", "4", "--csv", "XADD", "b", "*", "f", "v"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.count('"XADD') == 1
        assert store.xlen("b") == 2000
