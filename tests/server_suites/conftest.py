"""Fixtures of the ``server_suite`` tests: suite runs on the reference and on each candidate.

Each run gets a fresh server (:mod:`.servers`), started in a temporary directory and stopped
by its PID when the run is over.  Runs are cached for the session: the reference's once, each
candidate's once, whatever the number of tests that read them.  Redis's tcl suite (about a
minute) and redis-py's (RESP2 then RESP3, about 12 s each) run at the same time, on two
servers of the same kind: the tcl suite flushes every database, so they cannot share one.

Without tclsh, the Redis source, the redis-py sdist or a server program, the tests skip --
except under CI (``$CI`` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
import redis_suite
import redispy_suite
from redis_suite import TclRun
from redispy_suite import PROTOCOLS, RedispyRun

from .servers import CANDIDATES, REDISPY_REFERENCE, REFERENCE, ServerFactory


@dataclass(frozen=True)
class SuiteRuns:
    server: str
    tcl: TclRun
    redispy: dict[int, RedispyRun]  # by protocol


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _tcl_run(factory: ServerFactory, directory: Path, source: Path) -> TclRun:
    server = factory.start(directory)
    try:
        # excused tests are skipped by name: one that fails may leave its connection in a
        # state (inside MULTI, say) that would fail the tests after it
        skips = [arg for name in factory.tcl_skips for arg in ("--skiptest", name)]
        return redis_suite.run_suite(server.host, server.port, source=source, extra=skips)
    finally:
        server.stop()


def _redispy_runs(factory: ServerFactory, directory: Path, suite: Path) -> dict[int, RedispyRun]:
    server = factory.start(directory)
    try:
        return {
            protocol: redispy_suite.run_redispy_suite(
                server.host, server.port, protocol=protocol, suite=suite
            )
            for protocol in PROTOCOLS
        }
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tcl_source() -> Path:
    if shutil.which("tclsh") is None:
        unavailable("tclsh is not installed (Debian package tcl; .ci/install-servers)")
    try:
        return redis_suite.find_source()
    except redis_suite.SuiteUnavailable as exc:
        unavailable(str(exc))


@pytest.fixture(scope="session")
def redispy_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        sdist = redispy_suite.download_sdist()
    except redispy_suite.SuiteUnavailable as exc:
        unavailable(str(exc))
    return redispy_suite.extract_tests(sdist, tmp_path_factory.mktemp("redis-py-tests"))


def _run_both(
    factory: ServerFactory,
    tmp: pytest.TempPathFactory,
    source: Path,
    tests: Path,
    redispy_factory: ServerFactory | None = None,
) -> SuiteRuns:
    """The tcl suite on ``factory``'s server, redis-py's on ``redispy_factory``'s (default: the
    same kind)."""
    redispy_factory = redispy_factory or factory
    for why in (factory.missing(), redispy_factory.missing()):
        if why is not None:
            unavailable(why)
    with ThreadPoolExecutor(max_workers=1) as pool:
        tcl = pool.submit(_tcl_run, factory, tmp.mktemp(f"{factory.name}-tcl"), source)
        redispy = _redispy_runs(
            redispy_factory, tmp.mktemp(f"{redispy_factory.name}-redispy"), tests
        )
        return SuiteRuns(factory.name, tcl.result(), redispy)


@pytest.fixture(scope="session")
def reference_runs(
    tmp_path_factory: pytest.TempPathFactory, tcl_source: Path, redispy_tests: Path
) -> SuiteRuns:
    """Redis's tcl suite on a fresh valkey-server 8.0 and redis-py's on a fresh Redis 8.2.3:
    what every candidate is compared with."""
    return _run_both(REFERENCE, tmp_path_factory, tcl_source, redispy_tests, REDISPY_REFERENCE)


@pytest.fixture(scope="session", params=CANDIDATES, ids=lambda factory: factory.name)
def candidate(request: pytest.FixtureRequest) -> ServerFactory:
    factory: ServerFactory = request.param
    return factory


@pytest.fixture(scope="session")
def candidate_runs(
    candidate: ServerFactory,
    tmp_path_factory: pytest.TempPathFactory,
    tcl_source: Path,
    redispy_tests: Path,
) -> SuiteRuns:
    """Both suites on a fresh server of the candidate's kind."""
    return _run_both(candidate, tmp_path_factory, tcl_source, redispy_tests)
