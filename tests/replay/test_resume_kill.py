"""A replay into a store killed with SIGKILL mid-way, then rerun, delivers every entry exactly
once (the bookmark is recorded in each batch's own transaction)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import rstore

ENTRIES = 4000


def _replay(src: Path, dst: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "rstore_cli", "--store", str(src), "replay",
        "--to-store", str(dst), "--bookmark", "copy", "--no-progress", *extra,
    ]  # fmt: skip


def test_sigkill_mid_replay_then_rerun_delivers_each_entry_once(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    with rstore.Store(src) as store:
        store.append_entries(
            [
                ("s1" if i % 3 else "s2", f"{1000 + i}-{i % 5}", ["i", str(i), "pad", "x" * 50])
                for i in range(ENTRIES)
            ]
        )
        expected = {k: store.execute("XRANGE", k, "-", "+") for k in (b"s1", b"s2")}
    # Paced at 3000/s, the replay writes an entry or a few per transaction: killed at a
    # moment when some of them are in and others are not.
    child = subprocess.Popen(_replay(src, dst, "--rate", "3000/s"), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        seen = 0
        while time.monotonic() < deadline and seen < 300:
            time.sleep(0.05)
            if dst.exists():
                with rstore.Store(dst) as peek:
                    seen = sum(peek.xlen(k) for k in ("s1", "s2"))
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
        assert child.stderr is not None
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    with rstore.Store(dst) as target:
        got = sum(target.xlen(k) for k in ("s1", "s2"))
        assert 300 <= got < ENTRIES, "the kill did not land mid-way"
        position = json.loads(target.bookmark("copy") or b"{}")
        # the bookmark is exactly the last entry committed (s1 is replayed first)
        last_s1 = target.execute("XREVRANGE", "s1", "+", "-", "COUNT", 1)[0][0].decode()
        assert position["s1"] == last_s1
    rerun = subprocess.run(
        _replay(src, dst, "--json"), capture_output=True, timeout=120, check=False
    )
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["resumed"] == got and report["delivered"] == ENTRIES - got
    with rstore.Store(dst) as target:
        for key, entries in expected.items():
            assert target.execute("XRANGE", key, "-", "+") == entries
