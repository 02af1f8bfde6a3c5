"""Fixtures of the process tests: the children a test starts (killed at teardown, whatever
happened), the store's path in the test's temporary directory, and a Store open on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import rstore

from .children import Children


@pytest.fixture
def children() -> Iterator[Children]:
    """Child processes (``spawn`` unless a test says otherwise); any still alive at teardown
    are killed and reaped."""
    kids = Children()
    try:
        yield kids
    finally:
        kids.kill_all()


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "store")


@pytest.fixture
def store(path: str) -> Iterator[rstore.Store]:
    with rstore.Store(path) as s:
        yield s
