"""The populated store and its truth, built once per seed per test session."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .runner import Prepared, prepare


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Prepared]:
    """``prepared(seed)``: the intact store of ``seed`` and its truth (shared: copy, never
    write to it)."""
    cache: dict[int, Prepared] = {}

    def get(seed: int) -> Prepared:
        if seed not in cache:
            cache[seed] = prepare(seed, tmp_path_factory.mktemp(f"damage-{seed}"))
        return cache[seed]

    return get
