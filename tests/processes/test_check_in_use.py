"""Checking a store while another process writes to it: every check answers (consistent),
none fails because commits overwrote the meta page of the snapshot it walks -- once one
``rstore check`` in five, on a busy store, ended in "unexpected StaleSnapshot"."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import rstore

WRITER = """
import sys, time, rstore
store = rstore.Store(sys.argv[1], sync=False)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    store.xadd("k", {"f": "v" * 100})
store.close()
"""


def test_checks_of_a_store_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "s"
    rstore.Store(path).close()
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "4"], stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        results = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            results.append(rstore.check_store(path))
        cli = subprocess.run(
            [sys.executable, "-m", "rstore_cli", "--store", str(path), "check"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        running = writer.poll() is None  # the checks ran while it wrote
        writer.wait(timeout=60)
    assert (cli.returncode, cli.stdout, cli.stderr) == (0, "OK\n", "")
    assert running and len(results) >= 5 and all(r == [] for r in results), results
    with rstore.Store(path, create=False) as store:
        assert store.xlen("k") > 100 and store.check() == []
