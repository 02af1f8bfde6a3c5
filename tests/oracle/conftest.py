"""Fixtures for the oracle tests: a throw-away valkey-server and a fresh rstore Store per test.

Every test here needs ``valkey-server`` (or ``$RSTORE_ORACLE_SERVER``); without it the tests are
skipped, never failed.  The tests of Redis 8.2's commands use Redis 8.2.3 instead
(:func:`redis8`, :func:`oracle8`; ``.ci/install-redis8`` installs it), skipped without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from valkey_server import HOST, ValkeyServer, find_server_binary

from .blocking import RstoreSide, Scenario, ValkeySide, WorkerPool, run_on_both
from .harness import Oracle, reset_valkey
from .resp import RespClient

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse an unmarked test in this folder: `-m "not oracle"` must deselect all of them."""
    for item in items:
        if HERE in Path(str(item.path)).parents and item.get_closest_marker("oracle") is None:
            raise pytest.UsageError(f"{item.nodeid} lacks @pytest.mark.oracle")


def _running(
    name: str, missing: str, tmp: pytest.TempPathFactory
) -> Iterator[tuple[ValkeyServer, RespClient]]:
    """Server ``name`` of :func:`find_server_binary` started in a fresh directory, and one
    connection to it; skipped with ``missing`` when it is not installed."""
    binary = find_server_binary(name)
    if binary is None:
        pytest.skip(missing)
    server = ValkeyServer(binary, tmp.mktemp(name))
    server.start()
    try:
        with RespClient(HOST, server.port) as client:
            yield server, client
    finally:
        server.stop()


@pytest.fixture(scope="session")
def valkey_running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ValkeyServer, RespClient]]:
    yield from _running("valkey", "valkey-server is not on PATH", tmp_path_factory)


@pytest.fixture(scope="session")
def valkey_server(valkey_running: tuple[ValkeyServer, RespClient]) -> ValkeyServer:
    return valkey_running[0]


@pytest.fixture
def valkey(valkey_running: tuple[ValkeyServer, RespClient]) -> RespClient:
    """The oracle connection, flushed and with the default stream node limits."""
    reset_valkey(valkey_running[1])
    return valkey_running[1]


@pytest.fixture(scope="session")
def redis8_running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ValkeyServer, RespClient]]:
    missing = "Redis 8.2.3 is not installed (run .ci/install-redis8)"
    yield from _running("redis8", missing, tmp_path_factory)


@pytest.fixture(scope="session")
def redis8_server(redis8_running: tuple[ValkeyServer, RespClient]) -> ValkeyServer:
    return redis8_running[0]


@pytest.fixture
def redis8(redis8_running: tuple[ValkeyServer, RespClient]) -> RespClient:
    """A connection to Redis 8.2.3, flushed and with the default stream node limits."""
    reset_valkey(redis8_running[1])
    return redis8_running[1]


@pytest.fixture
def oracle8(redis8: RespClient, tmp_path: Path) -> Iterator[Oracle]:
    """Redis 8.2.3 plus a fresh rstore Store: the oracle of Redis 8.2's stream commands."""
    pair = Oracle(redis8, tmp_path / "store", sync=False)
    try:
        yield pair
    finally:
        pair.close()


@pytest.fixture
def ports(valkey_server: ValkeyServer, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """valkey-server (flushed, its node limits back at their defaults: an earlier test may
    have changed them) and ``rstore serve`` over a fresh store, side by side:
    ``{"valkey": port, "rstore": port, "path": the store's directory}``."""
    from served import ServedStore

    import rstore

    with RespClient(HOST, valkey_server.port) as c:
        reset_valkey(c)
    with (
        rstore.Store(tmp_path / "store", sync=False) as store,
        ServedStore(store, dir=str(tmp_path)) as served,  # BGSAVE writes there
    ):
        yield {"valkey": valkey_server.port, "rstore": served.port, "path": str(store.path)}


@pytest.fixture
def servers(ports: dict[str, Any]) -> tuple[int, int]:
    """The ports of :func:`ports`: ``(valkey, rstore serve)``."""
    return ports["valkey"], ports["rstore"]


@pytest.fixture
def oracle(valkey: RespClient, tmp_path: Path) -> Iterator[Oracle]:
    """valkey plus a fresh rstore Store in ``tmp_path`` (commits not fsynced: replies are what
    is compared here; test_persistence covers sync=True)."""
    pair = Oracle(valkey, tmp_path / "store", sync=False)
    try:
        yield pair
    finally:
        pair.close()


@pytest.fixture
def both(oracle: Oracle) -> Callable[..., Any]:
    """``both(*argv)``: same argv on valkey and rstore, identical reply asserted and returned."""
    return oracle.both


@pytest.fixture(scope="session")
def worker_pool() -> Iterator[WorkerPool]:
    """Worker processes (spawned on first use) that run blocking rstore calls."""
    pool = WorkerPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(params=["thread", "process"])
def scenario(
    request: pytest.FixtureRequest,
    valkey_server: ValkeyServer,
    valkey: RespClient,
    oracle: Oracle,
    worker_pool: WorkerPool,
) -> Callable[[Scenario], None]:
    """``scenario(fn)``: run a blocking scenario on valkey and on rstore, whose blocked calls
    run in threads or in other processes (the parameter); the observations must match."""

    def run(fn: Scenario) -> None:
        run_on_both(
            fn, ValkeySide(valkey_server, valkey), RstoreSide(oracle, request.param, worker_pool)
        )

    return run
