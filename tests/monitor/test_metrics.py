"""Prometheus metrics: the exposition text (read back with prometheus-client's own parser)
says what the queue holds; ``rstore metrics`` prints it or serves it; ``rstore serve
--metrics-port`` serves it with the server's commands and errors, summed over workers."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from rstore_cli.main import cli
from serve_process import Served
from valkey_server import free_port

import rstore

Values = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _values(text: str) -> Values:
    """Every sample of the exposition text as ``(name, sorted labels) -> value``."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _queue(store: rstore.Store) -> None:
    for i in range(1, 6):
        store.execute("XADD", "jobs", f"{i}000-0", "n", str(i))
    store.execute("XGROUP", "CREATE", "jobs", "workers", "0")
    store.execute("XREADGROUP", "GROUP", "workers", "w1", "COUNT", "3", "STREAMS", "jobs", ">")
    store.execute("XACK", "jobs", "workers", "1000-0")
    store.execute("XTRIM", "jobs", "MAXLEN", "4")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "s") as s:
        yield s


JOBS = (("stream", "jobs"),)
WORKERS = (("group", "workers"), ("stream", "jobs"))


def test_the_exposition_says_what_the_queue_holds(store: rstore.Store) -> None:
    _queue(store)
    values = _values(rstore.metrics_text(rstore.store_health_source(store)).decode())
    assert values[("rstore_streams", ())] == 1
    assert values[("rstore_stream_length", JOBS)] == 4
    assert values[("rstore_stream_entries_added_total", JOBS)] == 5
    assert values[("rstore_stream_entries_deleted_total", JOBS)] == 1
    assert values[("rstore_group_pending", WORKERS)] == 2
    assert values[("rstore_group_delivered_total", WORKERS)] == 3
    assert values[("rstore_group_consumers", WORKERS)] == 1
    assert values[("rstore_group_consumers_alive", WORKERS)] == 1
    now = time.time()
    oldest = values[("rstore_group_oldest_pending_seconds", WORKERS)]
    assert abs(oldest - (now - 2.0)) < 60  # 2000-0: the oldest pending entry's ID time
    assert 0 <= values[("rstore_group_oldest_pending_idle_seconds", WORKERS)] < 60
    assert values[("rstore_group_lag", WORKERS)] == 2  # trimmed behind the group: still known
    assert values[("rstore_live_bytes", ())] > 0
    assert values[("rstore_data_file_bytes", ())] >= values[("rstore_live_bytes", ())]


def test_names_of_any_bytes_are_label_values(store: rstore.Store) -> None:
    odd = b'q"uo\\te\nline \xff'
    store.execute("XADD", odd, "1-0", "f", "v")
    store.execute("XGROUP", "CREATE", odd, "g\xe9".encode(), "0")
    values = _values(rstore.metrics_text(rstore.store_health_source(store)).decode())
    name = odd.decode("utf-8", "backslashreplace")
    assert values[("rstore_stream_length", (("stream", name),))] == 1
    assert values[("rstore_group_lag", (("group", "g\xe9"), ("stream", name)))] == 1


def test_rstore_metrics_prints_the_exposition(store: rstore.Store) -> None:
    _queue(store)
    store.execute("XADD", "other", "1-0", "f", "v")
    store.close()  # the command opens it read-only (one handle per process and path)
    result = CliRunner().invoke(cli, ["--store", store.path, "metrics", "--match", "jo*"])
    assert result.exit_code == 0, result.output
    values = _values(result.output)
    assert values[("rstore_stream_length", JOBS)] == 4
    assert ("rstore_stream_length", (("stream", "other"),)) not in values


def test_rstore_metrics_of_a_missing_store_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "none"), "metrics"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: no store at {tmp_path / 'none'}"]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()


def test_rstore_metrics_serve_answers_each_scrape_with_a_new_sample(store: rstore.Store) -> None:
    _queue(store)
    argv = [sys.executable, "-m", "rstore_cli", "--store", store.path, "metrics", "--serve", "0"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        assert port is not None, line
        url = f"http://127.0.0.1:{port.group(1)}/metrics"
        assert _values(_get(url))[("rstore_stream_length", JOBS)] == 4
        store.execute("XADD", "jobs", "9000-0", "n", "9")  # this process writes meanwhile
        assert _values(_get(url))[("rstore_stream_length", JOBS)] == 5
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


def _served_metrics(tmp_path: Path, *args: str) -> tuple[Served, str]:
    port = free_port()
    served = Served(tmp_path / "served", "--metrics-port", str(port), *args)
    return served, f"http://127.0.0.1:{port}/metrics"


@pytest.mark.parametrize("workers", [1, 2])
def test_rstore_serve_metrics_port_counts_every_workers_commands(
    tmp_path: Path, workers: int
) -> None:
    served, url = _served_metrics(tmp_path, "--workers", str(workers))
    with served:
        clients = [served.client() for _ in range(8)]  # spread over the workers
        for i, client in enumerate(clients):
            client.xadd("jobs", {"n": i})
        clients[0].xgroup_create("jobs", "workers", id="0")
        clients[1].xreadgroup("workers", "w1", {"jobs": ">"}, count=3)
        errors = _values(_get(url)).get(("rstore_errors_total", (("error", "ERR"),)), 0)
        with pytest.raises(redis.ResponseError):
            clients[2].execute_command("XADD", "jobs", "bad-id", "f", "v")
        values = _values(_get(url))
        assert values[("rstore_commands_total", (("command", "xadd"),))] == 9
        assert values[("rstore_command_failures_total", (("command", "xadd"),))] == 1
        assert values[("rstore_errors_total", (("error", "ERR"),))] == errors + 1
        assert values[("rstore_stream_length", JOBS)] == 8
        assert values[("rstore_group_pending", WORKERS)] == 3
        assert values[("rstore_connected_clients", ())] >= 8
        assert values[("rstore_live_bytes", ())] > 0
        for client in clients:
            client.close()
        code, err = served.stop()
    assert code == 0, err


def test_rstore_metrics_of_a_server_adds_its_counts_and_files(tmp_path: Path) -> None:
    """``rstore metrics --url``: the same families through redis-py, with the server's
    commands (by Valkey's names) and the store's files from INFO's ``rstore_*`` fields."""
    with Served(tmp_path / "served") as served:
        client = served.client()
        client.xadd("jobs", {"n": 1}, id="1-0")
        client.xgroup_create("jobs", "workers", id="0")
        client.xinfo_stream("jobs")
        argv = [sys.executable, "-m", "rstore_cli", "metrics", "--url",
                f"redis://127.0.0.1:{served.port}"]  # fmt: skip
        result = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
        client.close()
        served.stop()
    assert result.returncode == 0, result.stderr
    values = _values(result.stdout)
    assert values[("rstore_stream_length", JOBS)] == 1
    assert values[("rstore_group_lag", WORKERS)] == 1
    assert values[("rstore_commands_total", (("command", "xadd"),))] == 1
    assert values[("rstore_commands_total", (("command", "xgroup|create"),))] == 1
    assert values[("rstore_commands_total", (("command", "xinfo|stream"),))] >= 1
    assert values[("rstore_live_bytes", ())] > 0
    assert values[("rstore_log_flushes_total", ())] >= 1  # sync always: the XADD was flushed


def test_rstore_serve_metrics_port_in_use_is_one_line(tmp_path: Path) -> None:
    served, url = _served_metrics(tmp_path)
    with served:
        port = url.split(":")[2].split("/")[0]
        other = subprocess.run(
            [sys.executable, "-m", "rstore_cli", "--store", str(tmp_path / "other"), "serve",
             "--port", str(free_port()), "--metrics-port", port],
            check=False, capture_output=True, text=True, timeout=60, env={**os.environ},
        )  # fmt: skip
    assert other.returncode == 1
    assert other.stderr.strip().splitlines()[-1] == "Error: cannot serve: Address already in use"
