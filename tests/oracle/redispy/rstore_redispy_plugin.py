"""A pytest plugin for redis-py's own test suite: its client fixtures give an ``rstore.Store``.

Loaded with ``-p rstore_redispy_plugin`` by ``test_redispy_suite.py`` when it runs the tests of
redis-py's sdist a second time.  redis-py's ``tests/conftest.py`` builds every client fixture
(``r``, ``r2``, ``decoded_r``, ...) through its module function ``_get_client``; this plugin
replaces that function, so each test gets a Store in a fresh directory of its own (the fixtures
of one test share it, as they share one server).  Keyword arguments are passed to ``Store``
as they are: ``decode_responses=True`` works, an argument rstore lacks fails the test.

No server is asked anything in this run: the server facts the suite's checks read
(``skip_if_server_version_lt``) come from ``$RSTORE_REDISPY_SERVER_VERSION`` (the ``redis_version``
that the valkey-server the same tests ran on reports in INFO, which is what the suite reads from
a server), so both runs skip the same tests; and the URLs given are never reachable, so no
client can reach a real server by accident.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import rstore

VERSION_ENV = "RSTORE_REDISPY_SERVER_VERSION"


def _store_client(
    cls: Any,
    request: pytest.FixtureRequest,
    single_connection_client: bool = True,
    flushdb: bool = True,
    from_url: str | None = None,
    **kwargs: Any,
) -> rstore.Store:
    """Stands in for redis-py's ``tests.conftest._get_client``."""
    base: Path = request.getfixturevalue("tmp_path")
    return rstore.Store(base / "rstore-store", sync=False, **kwargs)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Runs before the suite's own ``pytest_sessionstart``, which asks ``_get_info`` about the
    server: it is told valkey's version, and every client fixture gives a Store."""
    suite = sys.modules.get("tests.conftest")
    if suite is None:
        raise pytest.UsageError("rstore_redispy_plugin: redis-py's tests/conftest.py not loaded")
    version = os.environ.get(VERSION_ENV)
    if not version:
        raise pytest.UsageError(f"rstore_redispy_plugin: set ${VERSION_ENV}")
    info = {"redis_version": version, "arch_bits": 64, "cluster_enabled": False}
    suite._get_info = lambda url: {**info, "enterprise": False}
    suite._get_client = _store_client
