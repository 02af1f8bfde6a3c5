"""Ctrl-C ends ``rstore.Consumer.run`` cleanly: the README's queue snippet, run as a program,
exits with status 0 and no traceback; a first Ctrl-C while a handler runs lets it finish (the
message is acknowledged), a second one stops at once (the message stays pending).  Each program
runs in a child process of its own, SIGINT sent to it by its PID."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import rstore

from .children import WAIT_S

ROOT = Path(__file__).resolve().parents[2]

SLOW_WORKER = """
import sys, time, rstore

store = rstore.Store(sys.argv[1])
store.xadd("jobs", {"task": "slow"})


def handle(msg: rstore.Message) -> None:
    print("start", flush=True)
    time.sleep(3)
    print("end", flush=True)


rstore.Consumer(store, "jobs", "workers", name="w", block_ms=60_000).run(handle)
print("returned", flush=True)
"""


def readme_snippet() -> str:
    """The code block of README.md's "A durable local queue in a few lines"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### A durable local queue in a few lines") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def _start(code: str, cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _pending(path: Path) -> int:
    with rstore.Store(path) as store:
        return int(store.xpending("jobs", "workers")["pending"])


def test_the_readme_queue_snippet_ends_cleanly_at_ctrl_c(tmp_path: Path) -> None:
    proc = _start(readme_snippet(), tmp_path)
    try:
        assert proc.stdout is not None
        assert " delivery 1" in proc.stdout.readline()  # handled: now waiting for more
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()  # the child started here, by its PID (a no-op once it exited)
    assert (proc.returncode, err) == (0, "")
    assert _pending(tmp_path / "rstore-data") == 0


def test_a_first_ctrl_c_lets_the_handler_finish_a_second_stops_at_once(tmp_path: Path) -> None:
    for presses, expected, pending in ((1, ["start", "end", "returned"], 0),
                                       (2, ["start", "returned"], 1)):  # fmt: skip
        path = tmp_path / f"store{presses}"
        proc = _start(SLOW_WORKER, tmp_path, str(path))
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "start\n"
            began = time.monotonic()
            for _ in range(presses):
                proc.send_signal(signal.SIGINT)
                time.sleep(0.2)
            out, err = proc.communicate(timeout=WAIT_S)
        finally:
            proc.kill()
        assert (proc.returncode, err) == (0, ""), err
        assert ["start", *out.splitlines()] == expected
        if presses == 2:
            assert time.monotonic() - began < 2.5  # not after the 3 s handler
        assert _pending(path) == pending  # the message the handler never finished is kept
