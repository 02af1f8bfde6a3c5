"""redis-py's own stream tests, from its sdist, pass on ``rstore.Store`` wherever they pass on
Redis 8.2.3, and so do those that need a newer Redis, up to ``rstore.REDIS_VERSION`` (the
newest Redis whose stream commands rstore implements), which Redis 8.2.3 skips.

The sdist of the installed redis-py (pinned in the ``test`` extra) is downloaded by pip from the
package index into a cache outside the repository (``$RSTORE_TEST_CACHE``, else
``~/.cache/rstore-tests``), never stored here.  Its ``tests/`` are run twice in subprocesses,
at the same time: once against a throw-away Redis 8.2.3, once with every client fixture giving
an ``rstore.Store`` (``redispy/rstore_redispy_plugin.py``) whose version, as redis-py's skip
marks see it, is ``rstore.REDIS_VERSION``.  Selected: the stream tests, every
``test_x*`` test of ``tests/test_commands.py`` (the sync suite's only stream tests).

Skipped when Redis 8.2.3 is missing (``.ci/install-redis8``), or when pip cannot download the
sdist -- except under CI (``$CI`` set), where either fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from redispy_suite import SELECT, SuiteUnavailable, download_sdist, extract_tests, junit_outcomes
from valkey_server import HOST, ValkeyServer, find_server_binary

from rstore import REDIS_VERSION

from .resp import RespClient

pytestmark = pytest.mark.oracle

#: the server redis-py's tests are compared with (its stream tests for later versions are
#: skipped there, and run on rstore, which reports ``REDIS_VERSION``)
REFERENCE_VERSION = "8.2.3"

PLUGIN_DIR = Path(__file__).parent / "redispy"
RUN_TIMEOUT_S = 300


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def redispy_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tests/`` and ``pyproject.toml`` (its pytest settings) of the installed redis-py's
    sdist (:mod:`redispy_suite`, shared with the server suites)."""
    try:
        sdist = download_sdist()
        return extract_tests(sdist, tmp_path_factory.mktemp("redis-py-suite"))
    except SuiteUnavailable as exc:
        _unavailable(str(exc))
        raise


def _start(
    suite: Path, junit: Path, extra: list[str], env: dict[str, str]
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "pytest", *SELECT, "-q", "--tb=native", "-o", "addopts="]
    argv += ["-p", "no:cacheprovider", "-p", "no:randomly", "--junitxml", str(junit), *extra]
    return subprocess.Popen(
        argv,
        cwd=suite,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], junit: Path) -> str:
    try:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        pytest.fail(f"redis-py's tests did not finish in {RUN_TIMEOUT_S} s:\n{output[-3000:]}")
    # pytest exits 1 when some tests failed; anything else means the run itself broke
    assert proc.returncode in (0, 1) and junit.exists(), output[-3000:]
    return output


def test_redis_py_stream_tests_pass_on_rstore_where_they_pass_on_redis(
    redispy_suite: Path, tmp_path: Path
) -> None:
    binary = find_server_binary("redis8")
    if binary is None:
        _unavailable("Redis 8.2.3 is not installed (run .ci/install-redis8)")
    assert binary is not None
    server = ValkeyServer(binary, tmp_path)
    server.start()
    try:
        with RespClient(HOST, server.port) as client:
            info = client.execute("INFO", "server")
        facts = dict(line.split(":", 1) for line in info.decode().splitlines() if ":" in line)
        assert facts["redis_version"].strip() == REFERENCE_VERSION, facts["redis_version"]
        on_redis = tmp_path / "redis.xml"
        on_rstore = tmp_path / "rstore.xml"
        redis_run = _start(
            redispy_suite, on_redis, ["--redis-url", f"redis://{HOST}:{server.port}/0"], {}
        )
        # No server is reachable from the rstore run: the version its skip marks read is
        # rstore's, given by the plugin.
        unreachable = f"redis://{HOST}:1"
        pythonpath = os.pathsep.join(filter(None, [str(PLUGIN_DIR), os.environ.get("PYTHONPATH")]))
        rstore_run = _start(
            redispy_suite,
            on_rstore,
            ["-p", "rstore_redispy_plugin", "--redis-url", unreachable],
            {
                "PYTHONPATH": pythonpath,
                "RSTORE_REDISPY_SERVER_VERSION": REDIS_VERSION,
            },
        )
        _finish(redis_run, on_redis)
        rstore_output = _finish(rstore_run, on_rstore)
    finally:
        server.stop()

    reference, _ = junit_outcomes(on_redis)
    rstore, texts = junit_outcomes(on_rstore)
    assert reference and all(name.split("::")[-1].startswith("test_x") for name in reference)
    assert set(rstore) == set(reference), "both runs must select the same tests"
    skipped = {name for name, outcome in reference.items() if outcome == "skipped"}
    skipped_rstore = {name for name, outcome in rstore.items() if outcome == "skipped"}
    assert skipped_rstore <= skipped, "rstore is newer: it skips no test Redis 8.2.3 runs"
    passed_redis = {name for name, outcome in reference.items() if outcome == "passed"}
    passed_rstore = {name for name, outcome in rstore.items() if outcome == "passed"}
    newer = skipped - skipped_rstore  # for Redis 8.3 to REDIS_VERSION: run on rstore only
    print(
        f"\nredis-py {version('redis')} stream tests: {len(reference)} selected; on Redis "
        f"{REFERENCE_VERSION}: {len(passed_redis)} passed, {len(skipped)} skipped by version; "
        f"on rstore as {REDIS_VERSION}: {len(passed_rstore)} passed, {len(skipped_rstore)} "
        "skipped by version"
    )
    assert len(passed_redis) >= 30, "Redis passes too few: is the suite running at all?"
    assert len(newer) >= 26, "rstore as a newer Redis runs too few of the newer tests"
    missing = sorted((passed_redis | newer) - passed_rstore)
    assert missing == [], "pass on Redis 8.2.3 or need a newer Redis, not passed on rstore:\n" + (
        "\n\n".join(f"{name}:\n{texts.get(name, rstore_output[-2000:])}" for name in missing)
    )
