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
                    assert words[1].split(".")[1] in ("codec", "errors", "numbers", "model"), line


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


def _third_party_imports(folder: str) -> dict[str, str]:
    """Top-level modules imported anywhere under ``folder`` that are neither the standard
    library nor this project's own packages, each with one file that imports it."""
    import ast

    own = {"rstore", "rstore_cli", "tests", "fixtures", "bench", "cli"}
    # bench scripts and test helpers import their siblings by bare name
    own |= {p.stem for p in ROOT.joinpath(folder).rglob("*.py")}
    own |= {p.name for p in ROOT.joinpath(folder).rglob("*") if p.is_dir()}
    found: dict[str, str] = {}
    for path in ROOT.joinpath(folder).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in own:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_checked_import_is_installable_from_an_extra() -> None:
    """mypy and the tests import what rstore, cli/, bench/ and tests/ import: each third-party
    module must come from a dependency or an extra, so a fresh `pip install -e ".[test]"` has
    it (bench/ once imported pyinstrument, which nothing installed)."""
    tomllib = pytest.importorskip("tomllib")
    import re
    from importlib.metadata import packages_distributions

    project = tomllib.loads(ROOT.joinpath("pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    declared = {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}
    declared = {name.replace("_", "-") for name in declared}
    providers = packages_distributions()
    missing = []
    for folder in ("rstore", "cli", "bench", "tests"):
        for module, where in _third_party_imports(folder).items():
            dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
            if not dists & declared:
                missing.append(f"{module} (imported by {where}; provided by {sorted(dists)})")
    assert missing == [], "not installable from pyproject's dependencies or extras: " + ", ".join(
        missing
    )
