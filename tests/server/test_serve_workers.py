"""``rstore serve --workers N``: several processes serve one store on the same addresses.
Clients land on different workers and see one store; a blocking read in one worker is woken by
a write in another; client IDs are unique across workers; maxclients counts every worker's
clients; a worker killed under load is started again and no acknowledged write is lost;
SIGTERM stops them all; workers that cannot start stop the server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from serve_process import Served, serve_argv

import rstore
from rstore.server import ServerConfig
from rstore.server.workers import Listening, Seat, Supervisor


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def serve(store_dir: Path) -> Iterator[Callable[..., Served]]:
    """``serve(*args)``: ``rstore serve ARGS`` over ``store_dir``, stopped after the test
    whatever happened in it."""
    started: list[Served] = []

    def start(*args: str) -> Served:
        started.append(Served(store_dir, *args))
        return started[-1]

    yield start
    for served in started:
        served.__exit__(None, None, None)


def _by_worker(served: Served, wanted: int, seconds: float = 20) -> dict[int, list[redis.Redis]]:
    """Connections opened until ``wanted`` workers hold one each: pid -> its connections.  A
    worker still starting accepts nothing, and the kernel may hand a burst of connections to
    one worker: a connection that lands where one is held already is closed, and the next
    one tried a little later."""
    found: dict[int, list[redis.Redis]] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client = served.client()
        pid = int(client.info("server")["process_id"])
        if pid in found:
            client.close()
            time.sleep(0.02)
            continue
        found[pid] = [client]
        if len(found) >= wanted:
            return found
    raise AssertionError(f"in {seconds} s, connections reached {len(found)} workers, not {wanted}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_clients_of_different_workers_share_the_store(
    serve: Callable[..., Served], store_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "serve.pid"
    sock = tmp_path / "serve.sock"
    served = serve("--workers", "2", "--pidfile", str(pidfile),
                    "--unixsocket", str(sock))  # fmt: skip
    by_worker = _by_worker(served, 2)
    supervisor = int(pidfile.read_text())
    assert supervisor == served.proc.pid and supervisor not in by_worker
    (a, *_), (b, *_) = by_worker.values()
    assert a.xadd("s", {"f": "1"}, id="1-1") == b"1-1"
    assert b.xadd("s", {"f": "2"}, id="2-1") == b"2-1"
    over_unix = redis.Redis(unix_socket_path=str(sock))
    assert (
        [e[0] for e in a.xrange("s")] == [b"1-1", b"2-1"] == [e[0] for e in over_unix.xrange("s")]
    )
    ids = [c.client_id() for clients in by_worker.values() for c in clients]
    ids += [served.client().client_id() for _ in range(10)]
    assert len(set(ids)) == len(ids)  # unique across workers
    code, err = served.stop()
    assert code == 0, err
    assert "stopped: flushed and closed" in err and not pidfile.exists() and not sock.exists()
    assert not any(_pid_alive(pid) for pid in by_worker)
    with rstore.Store(store_dir) as store:
        assert store.xlen("s") == 2


def test_a_blocked_read_is_woken_by_another_workers_write(
    serve: Callable[..., Served], store_dir: Path
) -> None:
    served = serve("--workers", "2")
    (reader, *_), (writer, *_) = _by_worker(served, 2).values()
    writer.xadd("s", {"f": "0"}, id="1-0")
    writer.xgroup_create("s", "g", id="$")
    got: dict[str, object] = {}

    def read() -> None:
        got["xread"] = reader.xread({"s": "$"}, block=20000)

    def read_group(client: redis.Redis) -> None:
        got["group"] = client.xreadgroup("g", "c", {"s": ">"}, block=20000)

    group_reader = served.client()
    threads = [threading.Thread(target=read), threading.Thread(target=read_group,
                                                               args=(group_reader,))]  # fmt: skip
    for t in threads:
        t.start()
    time.sleep(0.5)  # both parked
    started = time.monotonic()
    writer.xadd("s", {"f": "1"}, id="2-0")
    for t in threads:
        t.join(timeout=10)
    assert time.monotonic() - started < 5
    assert got["xread"] == [[b"s", [(b"2-0", {b"f": b"1"})]]]
    assert got["group"] == [[b"s", [(b"2-0", {b"f": b"1"})]]]
    assert served.stop()[0] == 0


def _another_on(served: Served, pid: int, seconds: float = 20) -> redis.Redis:
    """One more connection that landed on worker ``pid``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client = served.client()
        if int(client.info("server")["process_id"]) == pid:
            return client
        client.close()
        time.sleep(0.02)
    raise AssertionError(f"no connection reached worker {pid} in {seconds} s")


def _blocked(client: redis.Redis, count: int) -> None:
    deadline = time.monotonic() + 10
    while client.info("clients")["blocked_clients"] < count:
        assert time.monotonic() < deadline, "the readers did not block"
        time.sleep(0.02)


def test_blocked_group_readers_of_two_workers_are_served_in_arrival_order(
    serve: Callable[..., Served],
) -> None:
    """c1 blocks in one worker, then c2 in the other; three XADDs pipelined in one write to
    c2's worker: c1 gets the first entry and c2 the second, as with one process (and Valkey).
    Before, c2's worker served its own reader as it wrote, ahead of the older one."""
    served = serve("--workers", "2")
    (first, *_), (second, *_) = _by_worker(served, 2).values()
    writer = _another_on(served, int(second.info("server")["process_id"]))
    writer.xgroup_create("s", "g", id="$", mkstream=True)
    got: dict[str, object] = {}

    def read(client: redis.Redis, consumer: str) -> None:
        got[consumer] = client.xreadgroup("g", consumer, {"s": ">"}, count=1, block=20000)

    threads = []
    for client, consumer in ((first, "c1"), (second, "c2")):
        threads.append(threading.Thread(target=read, args=(client, consumer)))
        threads[-1].start()
        _blocked(writer, len(threads))
    pipe = writer.pipeline(transaction=False)
    for i in (1, 2, 3):
        pipe.xadd("s", {"n": i}, id=f"{i}-0")
    pipe.execute()
    for thread in threads:
        thread.join(timeout=10)
    assert got == {"c1": [[b"s", [(b"1-0", {b"n": b"1"})]]],
                   "c2": [[b"s", [(b"2-0", {b"n": b"2"})]]]}  # fmt: skip
    assert served.stop()[0] == 0


def test_one_save_at_a_time_across_workers(serve: Callable[..., Served], store_dir: Path) -> None:
    """BGSAVE in one worker: a BGSAVE or SAVE in the other is refused as Valkey refuses one
    during a background save, and INFO there says a save is in progress; once it ended, the
    other worker saves."""
    with rstore.Store(store_dir, sync=False) as store:  # a store that takes a while to save
        store.append_entries(("s", (i + 1, 0), [b"f", b"v" * 20]) for i in range(1_000_000))
    served = serve("--workers", "2", "--dir", str(store_dir.parent))
    (first, *_), (second, *_) = _by_worker(served, 2).values()
    assert first.execute_command("BGSAVE") is True  # redis-py: "Background saving started"
    with pytest.raises(redis.ResponseError, match=r"^Background save already in progress$"):
        second.execute_command("BGSAVE")
    with pytest.raises(redis.ResponseError, match=r"^Background save already in progress$"):
        second.execute_command("SAVE")
    assert second.info("persistence")["rdb_bgsave_in_progress"] == 1
    deadline = time.monotonic() + 60
    while first.info("persistence")["rdb_bgsave_in_progress"]:
        assert time.monotonic() < deadline, "the background save did not end"
        time.sleep(0.05)
    assert second.info("persistence")["rdb_bgsave_in_progress"] == 0
    assert second.execute_command("SAVE") is True
    assert rstore.inspect_rdb(str(store_dir.parent / "dump.rdb")).streams[0].state.length == (
        1_000_000
    )
    assert served.stop()[0] == 0


def test_info_sums_every_worker_and_resetstat_resets_them_all(
    serve: Callable[..., Served], store_dir: Path
) -> None:
    """INFO's clients, stats, commandstats and errorstats are every worker's, whichever
    worker answers; CONFIG RESETSTAT in one resets the counts of all."""
    served = serve("--workers", "2")
    by_worker = _by_worker(served, 2)
    (a, *_), (b, *_) = by_worker.values()
    a.xadd("s", {"f": "1"})
    b.xadd("s", {"f": "2"})
    b.xadd("s", {"f": "3"})
    with pytest.raises(redis.ResponseError, match="NOGROUP"):
        b.xreadgroup("nogroup", "c", {"s": ">"})
    blocked = served.client()
    parked = threading.Thread(target=lambda: blocked.xread({"s": "$"}, block=3000))
    parked.start()
    time.sleep(0.5)
    connections = sum(len(clients) for clients in by_worker.values()) + 1
    for client in (a, b):
        # (the connections _by_worker closed leave their worker a moment later)
        deadline = time.monotonic() + 5
        while (clients := client.info("clients"))["connected_clients"] != connections:
            assert time.monotonic() < deadline, clients
            time.sleep(0.05)
        assert clients["blocked_clients"] == 1
        assert client.info("commandstats")["cmdstat_xadd"]["calls"] == 3
        errors = client.info("errorstats")
        assert errors["errorstat_NOGROUP"] == {"count": 1}
        # (redis-py's handshake draws an ERR per connection, from valkey too)
        total = sum(kind["count"] for kind in errors.values())
        assert client.info("stats")["total_error_replies"] == total
    assert a.config_resetstat()
    for client in (a, b):
        assert "errorstat_NOGROUP" not in client.info("errorstats")
        assert "cmdstat_xadd" not in client.info("commandstats")
    parked.join(10)
    assert served.stop()[0] == 0


def test_client_list_kill_and_unblock_reach_every_worker(
    serve: Callable[..., Served], store_dir: Path
) -> None:
    """CLIENT LIST shows the clients of every worker, by ID; CLIENT KILL and CLIENT UNBLOCK
    from one worker act on another's client."""
    served = serve("--workers", "2")
    by_worker = _by_worker(served, 2)
    (a, *_), (b, *_) = by_worker.values()
    a.client_setname("alpha")
    b.client_setname("beta")
    a_id, b_id = a.client_id(), b.client_id()
    # a client whose last command holds a newline (unknown, as a fuzzer sends): its line
    # crosses from one worker to the other whole
    odd = socket.create_connection(("127.0.0.1", served.port))
    odd.sendall(b"*1\r\n$5\r\nab\ncd\r\n")
    assert odd.recv(1024).startswith(b"-ERR unknown command")
    for client in (a, b):
        listed = client.client_list()
        assert {c["name"] for c in listed} >= {"alpha", "beta"}
        assert [int(c["id"]) for c in listed] == sorted(int(c["id"]) for c in listed)
        assert [c["name"] for c in client.client_list(client_id=[b_id])] == ["beta"]
    parked = served.client()
    parked_id = parked.client_id()
    parked_pid = int(parked.info("server")["process_id"])
    # a client of the other worker unblocks it
    other = next(c[0] for pid, c in by_worker.items() if pid != parked_pid)
    got: dict[str, object] = {}
    reader = threading.Thread(target=lambda: got.update(r=parked.xread({"s": "$"}, block=20000)))
    reader.start()
    time.sleep(0.5)
    assert other.client_unblock(parked_id) is True
    reader.join(10)
    assert got == {"r": []}  # unblocked: an empty reply, as a timeout's
    assert other.client_unblock(parked_id) is False  # no longer blocked
    assert a.client_kill_filter(_id=b_id) == 1  # b's worker closes it
    time.sleep(0.2)
    assert b_id not in [int(c["id"]) for c in a.client_list()]
    assert a_id in [int(c["id"]) for c in a.client_list()]
    assert a.client_kill_filter(_id=10**9) == 0
    odd.close()
    assert served.stop()[0] == 0


def test_maxclients_counts_the_clients_of_every_worker(
    serve: Callable[..., Served], store_dir: Path
) -> None:
    served = serve("--workers", "2", "--maxclients", "4")
    held = [served.client() for _ in range(4)]
    for client in held:
        client.ping()
    with pytest.raises(redis.ConnectionError, match="max number of clients reached"):
        served.client().ping()
    held.pop().close()
    time.sleep(0.2)
    held.append(served.client())
    held[-1].ping()
    assert held[0].config_set("maxclients", "5")  # set in one worker: the limit of all
    fifth = served.client()
    assert fifth.ping() and fifth.config_get("maxclients") == {"maxclients": "5"}
    for client in held:
        assert client.config_get("maxclients") == {"maxclients": "5"}
    assert served.stop()[0] == 0


def test_a_killed_worker_is_started_again_and_no_acknowledged_write_is_lost(
    serve: Callable[..., Served],
    store_dir: Path,
) -> None:
    served = serve("--workers", "2")
    by_worker = _by_worker(served, 2)
    victim = next(iter(by_worker))
    acked: dict[int, list[bytes]] = {i: [] for i in range(4)}
    stop = threading.Event()

    def write(i: int) -> None:
        client = served.client()
        n = 0
        while not stop.is_set():
            try:
                acked[i].append(client.xadd("s", {"w": str(i), "n": str(n)}))
            except redis.ConnectionError:  # its worker was killed: a new connection
                client = served.client()
            n += 1

    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in writers:
        t.start()
    time.sleep(0.5)
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.5)
    stop.set()
    for t in writers:
        t.join(timeout=30)
    deadline = time.monotonic() + 20
    while True:  # a new worker took the killed one's place
        try:
            pids = set(_by_worker(served, 2, seconds=5))
            if victim not in pids:
                break
        except AssertionError:
            pass
        assert time.monotonic() < deadline, "no worker was started in the killed one's place"
        time.sleep(0.2)
    present = {entry_id for entry_id, _ in served.client().xrange("s")}
    assert all(acked.values())
    assert {entry_id for ids in acked.values() for entry_id in ids} <= present
    code, err = served.stop()
    assert code == 0, err
    assert f"(pid {victim}) was killed by signal {signal.SIGKILL}: starting it again" in err


def test_workers_stop_when_the_supervisor_is_killed(
    serve: Callable[..., Served], store_dir: Path
) -> None:
    """SIGKILL to the supervisor: its workers notice within a few seconds and stop as on
    SIGTERM (flushed, closed), leaving the store whole."""
    served = serve("--workers", "2")
    by_worker = _by_worker(served, 2)
    (a, *_), _ = by_worker.values()
    assert a.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
    served.proc.kill()
    _, err = served.proc.communicate(timeout=20)  # its pipes close when the workers exit
    assert b"the supervisor is gone: stopping" in err
    deadline = time.monotonic() + 15
    while any(_pid_alive(pid) for pid in by_worker):
        assert time.monotonic() < deadline, "workers outlived their supervisor"
        time.sleep(0.1)
    with rstore.Store(store_dir) as store:
        assert store.xlen("s") == 1


def test_workers_that_cannot_start_stop_the_server() -> None:
    """The supervisor starts a worker again when it ends, but not forever: workers that end
    as they start stop it (status 1), with no worker left behind."""

    def work(seat: Seat, listening: list[Listening]) -> int:
        return 3  # as a worker that cannot open its store

    # in a process of its own: its waits see its workers only, not this test run's servers
    pid = os.fork()
    if pid == 0:
        status = 2
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                status = Supervisor(ServerConfig(), 2, work).run([Listening(sock)])
            try:
                os.wait()
                status = 4  # a worker was left behind, not waited for
            except ChildProcessError:
                pass
        finally:
            os._exit(status)
    deadline = time.monotonic() + 30
    while (status := os.waitpid(pid, os.WNOHANG)[1]) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if time.monotonic() >= deadline:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("the supervisor went on starting workers that fail")
    assert os.waitstatus_to_exitcode(status) == 1


def test_workers_is_checked_and_shown(store_dir: Path, tmp_path: Path) -> None:
    bad = subprocess.run(serve_argv(store_dir, "--workers", "0"), capture_output=True, text=True,
                         check=False)  # fmt: skip
    assert bad.returncode == 2 and "Invalid value for '--workers'" in bad.stderr
    assert "Traceback" not in bad.stderr
    conf = tmp_path / "serve.conf"
    conf.write_text("workers 3\n")
    shown = subprocess.run(serve_argv(store_dir, "--config", str(conf), "--check-config"),
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert shown.returncode == 0 and "workers 3" in shown.stdout.splitlines()
    with socket.socket() as taken:  # an address in use: one line, no worker forked
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        busy = subprocess.run(serve_argv(store_dir, "--workers", "2", "--port", port),
                              capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    assert busy.returncode == 1 and "Traceback" not in busy.stderr
    assert busy.stderr.strip().splitlines()[-1].startswith("Error: cannot serve: ")
    assert "worker 0 started" not in busy.stderr
