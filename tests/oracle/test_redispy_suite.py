"""redis-py's own stream tests, from its sdist, pass on ``rstore.Store`` wherever they pass on
valkey-server.

The sdist of the installed redis-py (pinned in the ``test`` extra) is downloaded by pip from the
package index into a cache outside the repository (``$RSTORE_TEST_CACHE``, else
``~/.cache/rstore-tests``), never stored here.  Its ``tests/`` are run twice in subprocesses,
at the same time: once against a throw-away valkey-server, once with every client fixture giving
an ``rstore.Store`` (``redispy/rstore_redispy_plugin.py``).  Selected: the stream tests, every
``test_x*`` test of ``tests/test_commands.py`` (the sync suite's only stream tests).

Skipped when valkey-server is missing, or when pip cannot download the sdist -- except under CI
(``$CI`` set), where a failed download fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest
from valkey_server import HOST, ValkeyServer, find_server_binary

from .resp import RespClient

pytestmark = pytest.mark.oracle

PLUGIN_DIR = Path(__file__).parent / "redispy"
SELECT = ["tests/test_commands.py", "-k", "test_x"]
RUN_TIMEOUT_S = 300


def _cache_dir() -> Path:
    configured = os.environ.get("RSTORE_TEST_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "rstore-tests"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _download_sdist(redis_version: str) -> Path:
    """The sdist of redis-py ``redis_version``, downloaded by pip once and kept in the cache."""
    cache = _cache_dir()
    sdist = cache / f"redis-{redis_version}.tar.gz"
    if sdist.exists():
        return sdist
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        argv = [sys.executable, "-m", "pip", "download", f"redis=={redis_version}"]
        argv += ["--no-deps", "--no-binary", ":all:", "--dest", scratch, "--quiet"]
        try:
            result = subprocess.run(
                argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"pip could not download the redis-py sdist: {exc}")
        downloaded = Path(scratch) / sdist.name
        if result.returncode != 0 or not downloaded.exists():
            _unavailable(f"pip could not download the redis-py sdist: {result.stderr[-2000:]}")
        downloaded.replace(sdist)  # atomic: a half-written sdist is never seen
    return sdist


@pytest.fixture(scope="module")
def redispy_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding ``tests/`` and ``pyproject.toml`` (its pytest settings) of the
    installed redis-py's sdist.  Its own ``redis/`` is left out: the installed one runs."""
    redis_version = version("redis")
    sdist = _download_sdist(redis_version)
    root = tmp_path_factory.mktemp("redis-py-suite")
    top = f"redis-{redis_version}/"
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            inner = member.name.removeprefix(top)
            if inner.startswith("tests/") or inner == "pyproject.toml":
                member.name = inner
                members.append(member)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # 3.10.12+
        archive.extractall(root, members=members, **safe)  # type: ignore[arg-type]
    assert (root / "tests" / "test_commands.py").exists(), f"no tests/ in {sdist}"
    return root


def _outcomes(junit: Path) -> dict[str, str]:
    """``{test name: "passed" | "failed" | "skipped"}`` from a JUnit XML report."""
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            outcome = "failed"
        elif "skipped" in kinds:
            outcome = "skipped"
        else:
            outcome = "passed"
        outcomes[case.get("name", "?")] = outcome
    return outcomes


def _failure_texts(junit: Path) -> dict[str, str]:
    texts = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                texts[case.get("name", "?")] = (child.text or child.get("message", ""))[-1500:]
    return texts


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


def test_redis_py_stream_tests_pass_on_rstore_where_they_pass_on_valkey(
    redispy_suite: Path, tmp_path: Path
) -> None:
    binary = find_server_binary()
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    server = ValkeyServer(binary, tmp_path)
    server.start()
    try:
        with RespClient(HOST, server.port) as client:
            info = client.execute("INFO", "server")
        facts = dict(line.split(":", 1) for line in info.decode().splitlines() if ":" in line)
        on_valkey = tmp_path / "valkey.xml"
        on_rstore = tmp_path / "rstore.xml"
        valkey_run = _start(
            redispy_suite, on_valkey, ["--redis-url", f"redis://{HOST}:{server.port}/0"], {}
        )
        # No server is reachable from the rstore run: the version its skip marks read is
        # valkey's, given by the plugin.
        unreachable = f"redis://{HOST}:1"
        pythonpath = os.pathsep.join(filter(None, [str(PLUGIN_DIR), os.environ.get("PYTHONPATH")]))
        rstore_run = _start(
            redispy_suite,
            on_rstore,
            ["-p", "rstore_redispy_plugin", "--redis-url", unreachable],
            {
                "PYTHONPATH": pythonpath,
                "RSTORE_REDISPY_SERVER_VERSION": facts["redis_version"].strip(),
            },
        )
        _finish(valkey_run, on_valkey)
        rstore_output = _finish(rstore_run, on_rstore)
    finally:
        server.stop()

    valkey, rstore = _outcomes(on_valkey), _outcomes(on_rstore)
    assert valkey and all(name.startswith("test_x") for name in valkey), sorted(valkey)
    assert set(rstore) == set(valkey), "both runs must select the same tests"
    skipped = {name for name, outcome in valkey.items() if outcome == "skipped"}
    assert skipped == {name for name, outcome in rstore.items() if outcome == "skipped"}
    passed_valkey = {name for name, outcome in valkey.items() if outcome == "passed"}
    passed_rstore = {name for name, outcome in rstore.items() if outcome == "passed"}
    print(
        f"\nredis-py {version('redis')} stream tests: {len(valkey)} selected, "
        f"{len(skipped)} skipped by server version; passed: {len(passed_valkey)} on valkey "
        f"{facts.get('valkey_version', '?').strip()}, {len(passed_rstore)} on rstore"
    )
    assert len(passed_valkey) >= 25, "valkey passes too few: is the suite running at all?"
    texts = _failure_texts(on_rstore)
    missing = sorted(passed_valkey - passed_rstore)
    assert missing == [], "pass on valkey, not on rstore:\n" + "\n\n".join(
        f"{name}:\n{texts.get(name, rstore_output[-2000:])}" for name in missing
    )
