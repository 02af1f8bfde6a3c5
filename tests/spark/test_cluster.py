"""rstore on a real Spark standalone cluster: a master and two workers on 127.0.0.1 started with
pyspark's own launcher (``fixtures/spark_cluster.py``), executors in their own JVMs with their
own Python workers, reading a directory of RDB dumps written by valkey-server and by rstore,
and writing RDB files back (``option("output", "rdb")``).

The answers must equal local mode's (the ``spark`` fixture) and valkey-server's after it loads
the same files; the files written back must load into valkey-server and hold the same entries.

Marked ``spark_cluster`` (and ``spark``): 1.5 to 3.5 minutes on this 2-core machine (two JVM
daemons, two executors and a driver JVM start), so it is not in the default run; CI runs it as a
step of its own (``.ci/run``): ``python -m pytest -m spark_cluster``.
Bounded in time: the cluster must come up within 120 s and the driver finish within 240 s;
every daemon is stopped by its PID (with its executors and Python workers, by process group),
also when the test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from spark_cluster import SparkCluster, cluster_missing
from valkey_server import ValkeyServer, find_server_binary

import rstore

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster]

HERE = Path(__file__).resolve().parent
ACTIONS = ("view", "click", "add_to_cart", "purchase")
DRIVER_TIMEOUT_S = 240

Entry = list[Any]  # [stream, id, [[field, value], ...]], as cluster_job.py answers


def chain_of_test() -> list[int]:
    from cluster_job import ancestors

    return ancestors()


def _fields(i: int) -> list[str]:
    return ["user", f"u{i % 37}", "action", ACTIONS[(i * 7 + i // 5) % 4], "page", f"/p/{i % 11}"]


def _valkey_dump(path: Path) -> None:
    """A dump written by valkey-server: two streams (one with a consumer group, one trimmed)
    and an empty one."""
    with ValkeyServer() as server:
        commands = [[b"XADD", b"web:clicks", b"*", *(f.encode() for f in _fields(i))]
                    for i in range(1500)]  # fmt: skip
        commands += [[b"XADD", b"web:orders", b"*", *(f.encode() for f in _fields(i))]
                     for i in range(1500, 2300)]  # fmt: skip
        for reply in server.call_many(commands):
            assert isinstance(reply, bytes), reply
        server.call(b"XTRIM", b"web:orders", b"MAXLEN", b"600")
        server.call(b"XGROUP", b"CREATE", b"web:clicks", b"g", b"0")
        server.call(b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"10", b"STREAMS",
                    b"web:clicks", b">")  # fmt: skip
        entry_id = server.call(b"XADD", b"web:empty", b"*", b"a", b"1")
        assert isinstance(entry_id, bytes)
        server.call(b"XDEL", b"web:empty", entry_id)
        server.call(b"SAVE")
        shutil.copyfile(os.path.join(server.dir, "dump.rdb"), path)


def _rstore_dump(path: Path, store_dir: Path) -> None:
    with rstore.Store(store_dir, sync=False) as store:
        with store.pipeline() as pipe:
            for i in range(2000):
                pipe.execute_command("XADD", "app:events", f"1700000000000-{i}", *_fields(i))
            pipe.execute()
        store.save(path)


def _valkey_entries(rdb_file: Path) -> list[Entry]:
    """Every stream entry valkey-server holds after loading ``rdb_file`` at start-up."""
    out: list[Entry] = []
    with ValkeyServer(rdb_file=str(rdb_file)) as server:
        keys = server.call(b"KEYS", b"*")
        assert isinstance(keys, list)
        for key in keys:
            assert isinstance(key, bytes)
            assert server.call(b"TYPE", key) == b"stream"
            entries = server.call(b"XRANGE", key, b"-", b"+")
            assert isinstance(entries, list)
            for entry in entries:
                assert isinstance(entry, list)
                entry_id, flat = entry
                assert isinstance(entry_id, bytes) and isinstance(flat, list)
                words = [w.decode() for w in flat if isinstance(w, bytes)]
                pairs = sorted([words[i], words[i + 1]] for i in range(0, len(words), 2))
                out.append([key.decode(), entry_id.decode(), pairs])
    return out


def _written_entries(output: Path) -> list[Entry]:
    """The entries of every RDB file written under ``output``, each loaded by valkey-server."""
    files = sorted(output.rglob("*.rdb"))
    assert files, f"no RDB file written under {output}"
    return sorted(e for f in files for e in _valkey_entries(f))


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if find_server_binary("valkey") is None:
        pytest.skip("valkey-server not found")
    base = tmp_path_factory.mktemp("cluster-input")
    inputs = base / "dumps"
    inputs.mkdir()
    _valkey_dump(inputs / "valkey.rdb")
    _rstore_dump(inputs / "rstore.rdb", base / "store")
    return inputs


def _run_on_cluster(cluster: SparkCluster, inputs: Path, output: Path, answer: Path) -> None:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    argv = [sys.executable, str(HERE / "cluster_job.py"), cluster.url, str(inputs),
            str(output), str(answer)]  # fmt: skip
    # The driver leads a process group of its own; on a timeout it is killed with its JVM.
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"the driver took over {DRIVER_TIMEOUT_S} s:\n{out.decode()[-3000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert proc.returncode == 0, f"{out.decode()[-4000:]}\n{cluster.logs()}"


def test_dumps_on_a_standalone_cluster_match_local_mode_and_valkey(
    spark: Any, dumps: Path, tmp_path: Path
) -> None:
    missing = cluster_missing()
    if missing:
        pytest.skip(missing)
    from cluster_job import run_job

    # What valkey-server answers after loading each of the same files.
    expected = sorted(e for f in sorted(dumps.glob("*.rdb")) for e in _valkey_entries(f))
    assert {e[0] for e in expected} == {"web:clicks", "web:orders", "app:events"}
    assert len(expected) == 1500 + 600 + 2000
    counts = Counter((e[0], dict(map(tuple, e[2]))["action"]) for e in expected)
    expected_per_action = sorted([s, a, n] for (s, a), n in counts.items())

    local = run_job(spark, str(dumps), str(tmp_path / "out-local"))

    answer = tmp_path / "cluster.json"
    with SparkCluster(workers=2, cores=1, memory="1g", start_timeout_s=120.0) as cluster:
        worker_pids = set(cluster.pids[1:])
        _run_on_cluster(cluster, dumps, tmp_path / "out-cluster", answer)
        remote = json.loads(answer.read_text())
        started = {pid for chain, _ in remote["tasks"] for pid in chain} - set(chain_of_test())
    # every daemon, executor and Python worker of the cluster is gone
    deadline = time.monotonic() + 10
    while [
        pid for pid in started if os.path.exists(f"/proc/{pid}")
    ] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in started if os.path.exists(f"/proc/{pid}")]

    assert remote["entries"] == expected
    assert local["entries"] == expected
    assert remote["per_action"] == local["per_action"] == expected_per_action

    # The work ran in the executors: two of them, each under its own worker, in Python
    # processes that descend from a worker (not from the driver).
    assert remote["executors"] == 2
    assert len(remote["tasks"]) >= 2  # one task per (small) file at least
    under = [worker_pids & set(chain) for chain, _ in remote["tasks"]]
    assert all(len(w) == 1 for w in under), (remote["tasks"], worker_pids)
    assert set().union(*under) == worker_pids  # both workers did some
    assert all(remote["driver_pid"] not in chain for chain, _ in remote["tasks"])
    assert sum(rows for _, rows in remote["tasks"]) == len(expected)

    # The RDB files written back load into valkey-server and hold the same entries.
    assert _written_entries(tmp_path / "out-cluster") == expected
    assert _written_entries(tmp_path / "out-local") == expected
