"""The project's own checks run with the tests: ruff (lint and format) and mypy (strict)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is installed by the test extras")
def test_ruff_lint_is_clean() -> None:
    result = _run("ruff", "check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is installed by the test extras")
def test_ruff_format_is_clean() -> None:
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_only_storage_imports_lmdb() -> None:
    offenders = []
    for path in ROOT.joinpath("rstore").rglob("*.py"):
        if "storage" in path.parts:
            continue
        text = path.read_text()
        if "import lmdb" in text or "from lmdb" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_codec_is_pure() -> None:
    """codec/ does no I/O and reads no clock: it imports only the stdlib basics and layer 0."""
    allowed = {"__future__", "collections", "struct", "typing", "crcmod", "lzf", "rstore"}
    for path in ROOT.joinpath("rstore", "codec").rglob("*.py"):
        # speedups.py only reads RSTORE_NO_SPEEDUPS, once, to choose C or Python
        permitted = allowed | {"os"} if path.name == "speedups.py" else allowed
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from"):
                top = words[1].split(".")[0]
                assert top in permitted, f"{path.name} imports {words[1]}"
                if top == "rstore":
                    assert words[1].split(".")[1] in ("codec", "errors", "numbers"), line


def test_cli_uses_only_the_public_facade() -> None:
    internal = ("rstore.storage", "rstore.codec", "rstore.streams", "rstore.commands")
    for path in ROOT.joinpath("cli").rglob("*.py"):
        text = path.read_text()
        for name in internal:
            assert name not in text, f"{path.name} reaches into {name}"


def test_modules_stay_small() -> None:
    """Small modules named after concepts: none of the package's modules reaches 500 lines."""
    for folder in ("rstore", "cli"):
        for path in [*ROOT.joinpath(folder).rglob("*.py"), *ROOT.joinpath(folder).rglob("*.c")]:
            lines = len(path.read_text().splitlines())
            assert lines < 500, f"{path.relative_to(ROOT)} has {lines} lines"


def test_every_package_is_installed() -> None:
    """A package missing from pyproject's list works in an editable install and is absent from
    a wheel (rstore.rdb once was)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    listed = set(
        tomllib.loads(ROOT.joinpath("pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in ROOT.joinpath("rstore").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert "rstore_cli" in listed
