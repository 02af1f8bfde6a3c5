"""``rstore serve`` as a process: it answers redis-py over TCP and a Unix socket, stops cleanly
on SIGTERM (exit 0, pid file removed), loses no acknowledged write when killed with SIGKILL
under load from several clients, shares commits between clients, and refuses bad settings with
one line."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import redis
from serve_process import Served, serve_argv
from store_formats import downgrade

import rstore


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_serve_upgrades_an_older_store_and_ignores_no_wal(store_dir: Path) -> None:
    """The server opens its store for writing: a store of format 2 (an older rstore's) is
    upgraded to the current format at start-up, and ``--no-wal`` (deprecated) only prints a note."""
    with rstore.Store(store_dir) as store:
        store.xadd("s", {"f": "v"}, id="1-1")
    downgrade(str(store_dir), 2)
    served = Served(store_dir, "--no-wal")
    assert served.client().xadd("s", {"f": "w"}, id="1-2") == b"1-2"
    code, err = served.stop()
    assert code == 0, err
    assert "--wal/--no-wal are deprecated and ignored" in err
    with rstore.Store(store_dir, readonly=True) as store:
        assert (store.format, store.wal, store.xlen("s")) == (rstore.FORMAT_VERSION, True, 2)


def _default_loop() -> str:
    speedups = os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0")
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop" if speedups else "asyncio"


@pytest.mark.parametrize("loop", ["default", "asyncio"])
def test_sigterm_stops_cleanly(store_dir: Path, tmp_path: Path, loop: str) -> None:
    """On either event loop (uvloop where installed, asyncio's with RSTORE_EVENT_LOOP=asyncio,
    named by INFO's multiplexing_api), TCP and Unix socket clients are served and SIGTERM
    stops the server with everything flushed."""
    pidfile = tmp_path / "serve.pid"
    sock = tmp_path / "serve.sock"
    env = {} if loop == "default" else {"RSTORE_EVENT_LOOP": loop}
    served = Served(store_dir, "--pidfile", str(pidfile), "--unixsocket", str(sock), env=env)
    assert int(pidfile.read_text()) == served.proc.pid
    expected = _default_loop() if loop == "default" else loop
    assert served.client().info("server")["multiplexing_api"] == expected
    r = served.client()
    assert r.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    over_unix = redis.Redis(unix_socket_path=str(sock))
    assert over_unix.xlen("s") == 1
    r3 = served.client(protocol=3)
    assert r3.xread({"s": "0"}) == {b"s": [[(b"1-1", {b"f": b"v"})]]}
    code, err = served.stop()
    assert code == 0, err
    assert "stopped: flushed and closed" in err and not pidfile.exists()
    with rstore.Store(store_dir) as store:
        assert store.xlen("s") == 1


def test_sigkill_under_load_loses_no_acknowledged_write(store_dir: Path) -> None:
    served = Served(store_dir)
    acked: dict[int, list[bytes]] = {i: [] for i in range(4)}
    stop = threading.Event()

    def writer(i: int) -> None:
        client = served.client()
        n = 0
        try:
            while not stop.is_set():
                n += 1
                acked[i].append(client.xadd(f"w{i}", {"n": str(n)}))
        except (redis.ConnectionError, OSError):
            pass

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while sum(map(len, acked.values())) < 200 and time.monotonic() < deadline:
        time.sleep(0.02)
    code, _ = served.stop(signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join(30)
    assert code == -signal.SIGKILL
    assert sum(map(len, acked.values())) >= 200
    with rstore.Store(store_dir) as store:
        for i, ids in acked.items():
            stored = {entry_id for entry_id, _ in store.xrange(f"w{i}")}
            assert set(ids) <= stored, f"writer {i} lost acknowledged entries"


def test_clients_share_commits(store_dir: Path) -> None:
    served = Served(store_dir)
    try:

        def writer(i: int) -> None:
            client = served.client()
            for n in range(60):
                client.xadd("shared", {"w": str(i), "n": str(n)})

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        stats = served.client().info("stats")
        assert served.client().xlen("shared") == 480
        # several clients' XADDs went into one transaction (one flush) at least once
        assert stats["rstore_largest_batch"] > 1
        assert stats["rstore_batches"] < stats["total_commands_processed"]
    finally:
        served.stop()


def test_bad_settings_are_one_line_errors(store_dir: Path, tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text("port 7000\nappendfsync sometimes\n")
    out = subprocess.run(
        serve_argv(store_dir, "--config", str(conf), "--check-config"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stderr == (
        f"Error: {conf} line 2: appendfsync must be always, everysec or no, not 'sometimes'\n"
    )
    conf.write_text("# a comment\nport 7000\nappendfsync everysec\nrequirepass 's3 cret'\n")
    good = subprocess.run(
        serve_argv(store_dir, "--config", str(conf), "--check-config", "--json"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert good.returncode == 0, good.stderr
    assert '"port": 7000' in good.stdout and '"requirepass": "(set)"' in good.stdout
    assert '"sync": "everysec"' in good.stdout
    open_bind = subprocess.run(
        serve_argv(store_dir, "--bind", "0.0.0.0"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert open_bind.returncode == 1
    assert "needs --requirepass" in open_bind.stderr and "Traceback" not in open_bind.stderr


def test_a_user_given_on_the_command_line_wins_over_the_config_file(
    store_dir: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text("user bob on >from-file ~* +@all\n")
    served = Served(store_dir, "--config", str(conf), "--user", "bob on >from-cli ~* +@read")
    try:
        bob = served.client(username="bob", password="from-cli")
        assert bob.xlen("s") == 0
        with pytest.raises(redis.exceptions.NoPermissionError):
            bob.xadd("s", {"f": "v"})
        with pytest.raises(redis.AuthenticationError):
            served.client(username="bob", password="from-file").ping()
    finally:
        served.stop()
