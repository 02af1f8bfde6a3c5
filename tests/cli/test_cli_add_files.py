"""``rstore add FIELD=@PATH`` / ``FIELD=@-``: values of any size from files or stdin, ``@@`` for
a literal value that starts with ``@``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

import rstore

Run = Callable[..., Result]

BIG = bytes(range(256)) * 800  # 200 KB, every byte value (NUL included)


def _last(store_path: Path, key: str = "s") -> list[bytes]:
    with rstore.Store(str(store_path), create=False) as store:
        return list(store.execute("XREVRANGE", key, "+", "-", "COUNT", "1")[0][1])


def test_a_value_from_a_file(run: Run, store_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(BIG)
    result = run("add", "s", "name=blob", f"data=@{blob}", "after=1")
    assert result.exit_code == 0, result.stderr
    assert _last(store_path) == [b"name", b"blob", b"data", BIG, b"after", b"1"]
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert run("add", "s", f"e=@{empty}").exit_code == 0
    assert _last(store_path) == [b"e", b""]


def test_a_value_from_stdin(run: Run, store_path: Path) -> None:
    result = run("add", "s", "data=@-", "k=v", input=BIG)
    assert result.exit_code == 0, result.stderr
    assert _last(store_path) == [b"data", BIG, b"k", b"v"]
    twice = run("add", "s", "a=@-", "b=@-", input=b"x")
    assert twice.exit_code == 2
    assert "only one value can be read from stdin (@-)" in twice.stderr


def test_a_literal_value_that_starts_with_an_at_sign(run: Run, store_path: Path) -> None:
    assert run("add", "s", "user=@@alice", "at=@@", "mid=a@b").exit_code == 0
    assert _last(store_path) == [b"user", b"@alice", b"at", b"@", b"mid", b"a@b"]
    # with --unescape, an @ written \x40 is literal too, and @@ still works
    assert run("add", "-e", "s", "a=\\x40x", "b=@@\\x41").exit_code == 0
    assert _last(store_path) == [b"a", b"@x", b"b", b"@A"]
    # field names are never read from files
    assert run("add", "s", "@name=v").exit_code == 0
    assert _last(store_path) == [b"@name", b"v"]


def test_an_unreadable_file_is_one_line_and_adds_nothing(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    assert run("add", "s", "k=v").exit_code == 0
    result = run("add", "s", f"data=@{tmp_path / 'missing'}")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: cannot read @{tmp_path / 'missing'}: No such file or directory "
        "(a value that starts with @ is written @@)\n"
    )
    result = run("add", "s", f"data=@{tmp_path}")
    assert result.exit_code == 1 and "Is a directory" in result.stderr
    with rstore.Store(str(store_path), create=False) as store:
        assert store.xlen("s") == 1


def test_a_value_too_big_for_a_command_line(tmp_path: Path) -> None:
    """The issue's case: a 200 KB value, which Linux refuses as one argument (128 KB at
    most), through a pipe into a real process."""
    store_path = tmp_path / "store"
    cmd = [sys.executable, "-m", "rstore_cli", "--store", str(store_path), "add", "s", "v=@-"]
    done = subprocess.run(cmd, input=BIG, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert _last(store_path) == [b"v", BIG]
