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
    assert "rstore.worker" not in _modules_after("import rstore\nrstore.Store")


@pytest.mark.parametrize("name", rstore.__all__)
def test_every_public_name_resolves(name: str) -> None:
    value = getattr(rstore, name)
    assert value is not None
    namespace: dict[str, object] = {}
    exec(f"from rstore import {name}", namespace)
    assert namespace[name] is value
    assert name in dir(rstore)


def test_all_lists_exactly_the_public_names() -> None:
    assert set(rstore.__all__) == {*rstore._LAZY, "__version__"}
    assert rstore.Store.__module__ == "rstore.store"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rstore.Nope  # type: ignore[attr-defined]  # noqa: B018
