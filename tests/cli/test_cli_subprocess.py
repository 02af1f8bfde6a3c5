"""The installed ``rstore`` console script, end to end, in fresh processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

import rstore


def _script() -> str:
    beside = Path(sys.executable).with_name("rstore")
    found = str(beside) if beside.exists() else shutil.which("rstore")
    if found is None:
        pytest.skip("the rstore console script is not installed (pip install -e .)")
    return found


def rstore_cli(store: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [_script(), "--store", str(store), *args], capture_output=True, timeout=60, check=False
    )


def big_store(tmp_path: Path) -> Path:
    """A store whose stream ``big`` prints far more than a pipe buffer holds (~350 KB)."""
    store_path = tmp_path / "store"
    with rstore.Store(store_path) as store, store.pipeline() as pipe:
        for i in range(1, 3001):
            pipe.xadd("big", {"n": i, "pad": "x" * 100}, id=f"{i}-0")
        pipe.execute()
    return store_path


def test_end_to_end(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = rstore_cli(store, "add", "orders", "--id", "1-0", "item=book", "qty=1")
    assert (first.returncode, first.stdout, first.stderr) == (0, b"1-0\n", b"")
    # A second process opens the existing store.
    second = rstore_cli(store, "add", "orders", "--id", "2-0", "item=pen", b"raw=\xff")
    assert (second.returncode, second.stdout, second.stderr) == (0, b"2-0\n", b"")

    result = rstore_cli(store, "range", "orders")
    assert result.stdout == b'1-0  item=book qty=1\n2-0  item=pen raw="\\xff"\n'
    result = rstore_cli(store, "range", "orders", "--nl")
    assert [json.loads(line) for line in result.stdout.splitlines()][1] == {
        "id": "2-0",
        "fields": [["item", "pen"], ["raw", {"base64": "/w=="}]],
    }
    assert rstore_cli(store, "len", "orders").stdout == b"2\n"
    assert b"last-entry: 2-0  item=pen" in rstore_cli(store, "info", "orders").stdout
    assert rstore_cli(store, "keys").stdout == b"orders\n"
    assert rstore_cli(store, "exec", "XLEN", "orders").stdout == b"2\n"  # a pipe: raw
    assert rstore_cli(store, "exec", "--no-raw", "XLEN", "orders").stdout == b"(integer) 2\n"
    assert rstore_cli(store, "trim", "orders", "--maxlen", "1").stdout == b"1\n"
    assert rstore_cli(store, "del", "orders").stdout == b"1\n"


FORMS = (
    b"give an ID (1700000000000-0, 1700000000000, - or +; (ID to exclude it), a date and time "
    b"(2026-11-01, 2026-11-01T10:00, local time unless followed by Z or an offset such as "
    b"+01:00) or a time ago (90s, 15m, 1h30m, 7d)"
)


def test_errors_end_to_end(tmp_path: Path) -> None:
    store = tmp_path / "store"
    missing = rstore_cli(store, "range", "s")
    assert missing.returncode == 1
    assert missing.stderr.decode() == f"Error: no store at {store.resolve()}\n"
    assert not store.exists()

    rstore_cli(store, "add", "s", "a=1")
    refused = rstore_cli(store, "exec", "XADD", "s")
    assert (refused.returncode, refused.stdout) == (1, b"")
    assert refused.stderr == b"(error) ERR wrong number of arguments for 'xadd' command\n"
    bad_id = rstore_cli(store, "del-entries", "s", "nope")
    assert bad_id.returncode == 1
    assert bad_id.stderr.count(b"\n") == 1 and b"Traceback" not in bad_id.stderr
    not_a_bound = rstore_cli(store, "range", "s", "nope")
    assert not_a_bound.returncode == 2 and b"Traceback" not in not_a_bound.stderr
    assert not_a_bound.stderr.endswith(b"nope is neither an ID nor a time: " + FORMS + b"\n")
    usage = rstore_cli(store, "add", "s")
    assert usage.returncode == 2 and b"Traceback" not in usage.stderr


@pytest.mark.slow
def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    store_path = big_store(tmp_path)
    with subprocess.Popen(
        [_script(), "--store", str(store_path), "range", "big"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.read(1) == b"1"  # printing has begun; the pipe fills, then it blocks
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err


def test_terminal_encoding_that_cannot_show_a_value(tmp_path: Path) -> None:
    store = tmp_path / "store"
    rstore_cli(store, "add", "s", "--id", "1-0", "price=€5")
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    run = partial(subprocess.run, capture_output=True, timeout=60, check=False, env=env)
    text = run([_script(), "--store", str(store), "range", "s"])
    assert (text.returncode, text.stdout) == (0, b"1-0  price=\\u20ac5\n")
    as_json = run([_script(), "--store", str(store), "range", "s", "--nl"])
    assert json.loads(as_json.stdout.decode("utf-8"))["fields"] == [["price", "€5"]]


@pytest.mark.slow
def test_closed_stdout_is_quiet(tmp_path: Path) -> None:
    store_path = big_store(tmp_path)
    with subprocess.Popen(
        [_script(), "--store", str(store_path), "range", "big"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith(b"1-0  ")  # like `rstore range big | head -1`
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=60)
    assert err == b""


def test_a_store_whose_path_is_not_utf8(tmp_path: Path) -> None:
    """A store directory named with bytes that are not UTF-8 is created, read and checked; a
    missing one is named with \\xHH in the error (it once failed with UnicodeEncodeError)."""
    root = os.fsencode(str(tmp_path))
    store = Path(os.fsdecode(root + b"/st\xff\xfeore"))
    missing = Path(os.fsdecode(root + b"/no\xffne"))
    added = rstore_cli(store, "add", "s", "a=1")
    assert added.returncode == 0, added.stderr
    assert rstore_cli(store, "len", "s").stdout.strip() == b"1"
    assert rstore_cli(store, "check").stdout.strip() == b"OK"
    gone = rstore_cli(missing, "len", "s")
    assert gone.returncode == 1
    assert gone.stderr.strip().endswith(b"no\\xffne"), gone.stderr
