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


def test_codec_is_pure() -> None:
    """codec/ does no I/O and reads no clock: it imports only the stdlib basics and layer 0."""
    allowed = {
        "__future__",
        "collections",
        "functools",
        "itertools",
        "struct",
        "typing",
        "crcmod",
        "lzf",
        "rstore",
    }
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


#: The longest a function of the package or the CLI may be, in lines (its ``def`` to its end).
_FUNCTION_LINES = 80


def test_functions_stay_short() -> None:
    """A module is one concept, however long; a function reads at one sitting: none of the
    package's or the CLI's functions is over _FUNCTION_LINES lines (a class is never split
    across modules to keep a module short)."""
    import ast

    found = {}
    for folder in ("rstore", "cli"):
        for path in ROOT.joinpath(folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > _FUNCTION_LINES:
                        found[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert found == {}, f"functions over {_FUNCTION_LINES} lines: {found}"


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
    # fixtures/ is on the path of the tests and the benchmarks (valkey_server.py, the launcher)
    own |= {p.stem for p in ROOT.joinpath("fixtures").glob("*.py")}
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


#: The first words of Redis/Valkey error replies.
_ERROR_CODES = (
    "ERR", "WRONGTYPE", "NOGROUP", "BUSYGROUP", "BUSYKEY", "NOSCRIPT", "EXECABORT", "NOPERM",
    "READONLY", "LOADING", "NOAUTH", "WRONGPASS", "NOPROTO", "OOM", "MISCONF", "UNBLOCKED",
)  # fmt: skip


def _reply_texts(path: Path) -> list[str]:
    """String literals of ``path`` (docstrings aside) that start like an error reply."""
    import ast
    import re

    starts = re.compile(rf"^({'|'.join(_ERROR_CODES)}) ")
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
        if (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and id(first) not in docstrings
            and starts.match(first.value)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {first.value[:60]!r}")
    return found


#: The one table of reply texts (DEVELOPERS.md): the only module allowed to write them.
_MESSAGES = ROOT / "rstore" / "messages.py"


def test_every_reply_text_is_in_messages() -> None:
    """Every error line rstore answers with, the server's included, is written once, in
    rstore/messages.py (as DEVELOPERS.md promises): none in another module of the library or
    the CLI -- exempt by path, so a second table under the same file name is caught."""
    outside = [
        text
        for folder in ("rstore", "cli")
        for path in ROOT.joinpath(folder).rglob("*.py")
        if path != _MESSAGES
        for text in _reply_texts(path)
    ]
    assert outside == [], "move these texts to rstore/messages.py:\n" + "\n".join(outside)


#: Who may import whom inside the library (DEVELOPERS.md "Layers").  Each module belongs to the
#: first prefix that matches its dotted name; it may import the standard library, the
#: third-party packages listed for its layer, and the rstore modules whose prefixes are listed.
_LAYER0 = ("rstore.errors", "rstore.messages", "rstore.ids", "rstore.numbers", "rstore.glob",
           "rstore.model", "rstore.version", "rstore.interrupts", "rstore.logs",
           "rstore.atomic_files", "rstore.renames", "rstore.keywords")  # fmt: skip
_IMPORT_TABLE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # layer: (rstore modules it may import, third-party packages it may import)
    "layer0": (_LAYER0, ()),
    "rstore.codec": (("rstore.codec", *_LAYER0), ("crcmod", "lzf")),
    # storage/, folder by folder (DEVELOPERS.md, "storage/"): LMDB's page format checked
    # from the file stands alone; the records on it; the wake-ups; the durability engine on
    # the records; the checks and the compaction on the engine; the environment on them all.
    "rstore.storage.checks.pagecheck": (("rstore.storage.checks._pagecheck", *_LAYER0), ()),
    "rstore.storage.records": (
        ("rstore.storage.records", "rstore.storage.checks.pagecheck", "rstore.codec", *_LAYER0),
        ("lmdb",),
    ),
    "rstore.storage.waiting": (
        ("rstore.storage.waiting", "rstore.storage.gate", "rstore.codec", *_LAYER0),
        (),
    ),
    "rstore.storage.engine": (
        (
            "rstore.storage.engine",
            "rstore.storage.records",
            "rstore.storage.checks.pagecheck",
            "rstore.storage.opening",
            "rstore.storage.failures",
            "rstore.codec",
            *_LAYER0,
        ),
        ("lmdb",),
    ),
    "rstore.storage.checks": (
        (
            "rstore.storage.checks",
            "rstore.storage.engine",
            "rstore.storage.records",
            "rstore.storage.opening",
            "rstore.storage.failures",
            "rstore.codec",
            *_LAYER0,
        ),
        ("lmdb",),
    ),
    "rstore.storage.compaction": (
        (
            "rstore.storage.compaction",
            "rstore.storage.engine",
            "rstore.storage.records",
            "rstore.storage.checks",
            "rstore.storage.opening",
            "rstore.storage.failures",
            "rstore.storage.registry",
            *_LAYER0,
        ),
        ("lmdb",),
    ),
    "rstore.storage": (("rstore.storage", "rstore.codec", *_LAYER0), ("lmdb",)),
    "rstore.streams": (("rstore.streams", "rstore.storage", "rstore.codec", *_LAYER0), ()),
    "rstore.rdb": (("rstore.rdb", "rstore.codec", *_LAYER0), ()),
    "rstore.client": (("rstore.client", *_LAYER0), ()),
    "rstore.commands": (
        (
            "rstore.commands",
            "rstore.streams",
            "rstore.storage",
            "rstore.rdb",
            "rstore.codec",
            *_LAYER0,
        ),
        (),
    ),
    "rstore.snapshot": (
        (
            "rstore.snapshot",
            "rstore.streams",
            "rstore.storage",
            "rstore.rdb",
            "rstore.codec",
            *_LAYER0,
        ),
        (),
    ),
    "rstore.queue": (
        (
            "rstore.queue",
            "rstore.commands",
            "rstore.streams",
            "rstore.storage",
            "rstore.store",
            *_LAYER0,
        ),
        (),
    ),
    "facade": (("rstore",), ()),  # store.py, pipeline.py, ranges.py, __init__.py: anything
    "rstore_cli": (("rstore_cli", "rstore"), ("click",)),
    "rstore.spark": (("rstore.spark", "rstore"), ("pyspark", "pyarrow")),
    "rstore.server": (("rstore.server", "rstore"), ()),
    # replay: public names and its own modules; redis-py (an extra) in the server source only
    "rstore.replay.remote": (("rstore.replay", "rstore"), ("redis",)),
    "rstore.replay": (("rstore.replay", "rstore"), ()),
    # monitoring: public names and its own modules; prometheus-client writes the metrics
    "rstore.monitor": (("rstore.monitor", "rstore"), ("prometheus_client",)),
}
#: The outer layers (public names of ``rstore`` only) and the package each one's own imports
#: come from.
_OUTER = {
    "rstore_cli": "rstore_cli",
    "rstore.spark": "rstore.spark",
    "rstore.replay": "rstore.replay",
    "rstore.replay.remote": "rstore.replay",
    "rstore.server": "rstore.server",
    "rstore.monitor": "rstore.monitor",
}
#: What an outer layer may use besides rstore's public names: ``rstore serve`` is the CLI's
#: front of the server package; the server writes its replies' texts from the one table of
#: reply texts (layer 0), not from a copy of its own.
_OUTER_ALSO = {
    "rstore_cli": ("rstore.server",),
    "rstore.server": ("rstore.messages",),
    # the deprecation helpers of renamed public names (not public names themselves)
    "rstore.replay": ("rstore.renames",),
    # a server's health through the one redis-py client of a URL (``rstore top --url``)
    "rstore.monitor": ("rstore.replay.remote",),
}
_FACADE = ("rstore.store", "rstore.databases", "rstore.pipeline", "rstore.ranges", "rstore")


def _public(name: str) -> bool:
    """Whether ``name`` is ``rstore`` or one of its public names (``rstore.Store``)."""
    import rstore

    parts = name.split(".")
    return parts == ["rstore"] or (len(parts) == 2 and parts[1] in rstore.__all__)


def _layer_of(module: str) -> str:
    if module in _LAYER0:
        return "layer0"
    if module in _FACADE:
        return "facade"
    for prefix in _IMPORT_TABLE:
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    raise AssertionError(f"{module} is in no layer of the import table")


def _imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    import ast

    out = []
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def test_layers_import_only_what_the_table_allows() -> None:
    """The layer table above, checked over every import of every module (function-level
    imports included): the rules DEVELOPERS.md states, enforced."""
    bad = []
    for folder, dotted in (("rstore", "rstore"), ("cli", "rstore_cli")):
        for path in ROOT.joinpath(folder).rglob("*.py"):
            parts = path.relative_to(ROOT.joinpath(folder)).with_suffix("").parts
            module = ".".join((dotted, *parts)).removesuffix(".__init__")
            layer = _layer_of(module)
            allowed, third_party = _IMPORT_TABLE[layer]
            for line, name in _imports_of(path, module):
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                if top in ("rstore", "rstore_cli"):
                    own = _OUTER.get(layer)
                    also = _OUTER_ALSO.get(layer, ())
                    if any(name == a or name.startswith(a + ".") for a in also):
                        continue
                    if own and not name.startswith(own) and not _public(name):
                        bad.append(f"{path.relative_to(ROOT)}:{line}: {name} ({layer} uses the "
                                   "public names of `rstore` only)")  # fmt: skip
                    elif not any(name == a or name.startswith(a + ".") for a in allowed):
                        bad.append(f"{path.relative_to(ROOT)}:{line}: {layer} imports {name}")
                elif top not in third_party:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {layer} imports {top}")
    assert bad == [], "imports the layer table forbids:\n" + "\n".join(sorted(bad))


def test_cli_command_modules_do_not_import_each_other() -> None:
    """Each CLI command module stands on the shared helpers (context, params, format, output,
    ...), never on another command module: what two commands share lives in a helper."""
    from rstore_cli.main import COMMAND_MODULES

    commands = {f"rstore_cli.{m}" for m in COMMAND_MODULES}
    sideways = []
    for module in COMMAND_MODULES:
        path = ROOT / "cli" / f"{module}.py"
        for line, name in _imports_of(path, f"rstore_cli.{module}"):
            target = name.rsplit(".", 1)[0] if name.count(".") > 1 else name
            if target in commands and target != f"rstore_cli.{module}":
                sideways.append(f"cli/{module}.py:{line}: {name}")
    assert sideways == [], "move what they share into a helper module:\n" + "\n".join(sideways)
