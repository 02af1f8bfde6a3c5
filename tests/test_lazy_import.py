"""``import rstore`` loads nothing but the version; each public name loads its module on first
use (PEP 562), and every name of ``__all__`` resolves as before."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rstore


def _modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return set(out.split())


def test_import_rstore_loads_only_the_version() -> None:
    loaded = {m for m in _modules_after("import rstore") if m.startswith("rstore")}
    assert loaded == {"rstore", "rstore.version"}


def test_a_name_loads_only_what_it_needs() -> None:
    loaded = _modules_after("import rstore\nrstore.ResponseError\nrstore.parse_time_ms")
    assert {"rstore.errors", "rstore.ids"} <= loaded
    assert "rstore.store" not in loaded and "lmdb" not in loaded
    assert "rstore.queue.consumer" not in _modules_after("import rstore\nrstore.Store")


@pytest.mark.parametrize("name", rstore.__all__)
def test_every_public_name_resolves(name: str) -> None:
    value = getattr(rstore, name)
    assert value is not None
    namespace: dict[str, object] = {}
    exec(f"from rstore import {name}", namespace)
    assert namespace[name] is value
    assert name in dir(rstore)


def test_all_lists_exactly_the_public_names() -> None:
    assert set(rstore.__all__) == {*rstore._LAZY, "REDIS_VERSION", "__version__"}
    assert rstore.Store.__module__ == "rstore.store"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rstore.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_the_command_index_names_the_module_of_every_command() -> None:
    """registry.COMMAND_MODULES, which lookup uses to import one command's module on its first
    call, must name exactly the module that defines each command."""
    from rstore.commands import registry

    commands = registry.load_all()
    found = {name: spec_module(spec) for name, spec in commands.items()}
    assert found == {name: f"rstore.commands.{m}" for name, m in registry.COMMAND_MODULES.items()}


def spec_module(spec: object) -> str:
    handler = getattr(spec, "handler", None)
    if handler is None:  # a container: the module of its subcommands
        subs = getattr(spec, "subcommands")  # noqa: B009
        handler = next(iter(subs.values())).handler
    return str(handler.__module__)


def test_running_one_command_loads_only_its_module() -> None:
    code = (
        "import sys, rstore, tempfile; d = tempfile.mkdtemp();"
        "s = rstore.Store(d); s.execute('XLEN', 'k');"
        "print(sorted(m for m in sys.modules if m.startswith('rstore.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(eval(out.stdout))
    assert {"rstore.commands.read", "rstore.store", "rstore.storage.env"} <= loaded
    unneeded = {
        "rstore.commands.claim",
        "rstore.commands.dump",
        "rstore.commands.info",
        "rstore.snapshot.save",
        "rstore.snapshot.restore",
        "rstore.snapshot.inspection",
        "rstore.rdb.reader",
        "rstore.rdb.writer",
    }
    assert not loaded & unneeded, loaded & unneeded


def test_every_error_class_is_public() -> None:
    """Each class of rstore's exception tree can be caught as ``rstore.<Name>``."""
    from rstore import errors

    classes = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    assert classes
    for name in classes:
        assert getattr(rstore, name) is getattr(errors, name), name
        assert name in rstore.__all__, name
