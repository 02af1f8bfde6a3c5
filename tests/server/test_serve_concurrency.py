"""``rstore serve --sync always`` with many clients at once: batches run in a committer thread
while the loop reads the next requests, and what users rely on still holds -- WATCH sees
every change made through the server, a parked read that times out or is unblocked while it
runs again never loses what that run delivered, each client's replies keep their order."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis
from served import ServedStore

import rstore

WRITERS = 4


def _hammer(
    port: int, stop: threading.Event, errors: list[BaseException], key: str, db: int = 0
) -> None:
    """Write to ``key`` of database ``db`` until ``stop``, a few ms apart (so that a
    check-and-set gets through now and then)."""
    try:
        client = redis.Redis(port=port, db=db)
        n = 0
        while not stop.wait(0.004):
            client.xadd(key, {"by": "writer", "n": n})
            n += 1
    except BaseException as exc:  # the test fails on it
        errors.append(exc)


@pytest.mark.parametrize("dbs", [(0,), (0, 1)], ids=["one database", "two databases"])
def test_watch_sees_every_change_by_other_clients_under_load(
    tmp_path: Path, dbs: tuple[int, ...]
) -> None:
    """Check-and-set on a stream other clients write to all the time: an EXEC that ran must
    have its entry right after the last entry seen under WATCH -- nothing in between (also
    when the writers' turns hold a batch for another database too)."""
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        stop, errors = threading.Event(), []
        writers = [
            threading.Thread(
                target=_hammer, args=(served.port, stop, errors, "k", dbs[n % len(dbs)])
            )
            for n in range(WRITERS)
        ]
        for thread in writers:
            thread.start()
        cas = redis.Redis(port=served.port)
        done: list[tuple[bytes, bytes]] = []
        refused = 0
        try:
            deadline = time.monotonic() + 60
            while len(done) < 20 and time.monotonic() < deadline:
                with cas.pipeline(transaction=True) as pipe:
                    pipe.watch("k")
                    last = pipe.xrevrange("k", count=1)
                    seen = last[0][0] if last else b"0-0"
                    pipe.multi()
                    pipe.xadd("k", {"by": "cas"})
                    try:
                        (added,) = pipe.execute()
                    except redis.WatchError:
                        refused += 1
                        continue
                done.append((seen, added))
        finally:
            stop.set()
            for thread in writers:
                thread.join()
        assert not errors
        assert len(done) == 20, f"only {len(done)} check-and-sets ran ({refused} refused)"
        for seen, added in done:
            between = cas.xrange("k", b"(" + seen, b"(" + added)
            assert between == [], f"{len(between)} entries landed between WATCH and EXEC"


def test_group_readers_timing_out_under_load_lose_no_delivery(tmp_path: Path) -> None:
    """Readers blocked with short timeouts while writers add: every entry reaches exactly one
    reader, and the group's pending list holds exactly what the readers were given (a timeout
    racing a run that delivered must not answer nil for it, nor answer twice)."""
    readers, total = 6, 400
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        admin = redis.Redis(port=served.port)
        admin.xgroup_create("q", "g", id="0", mkstream=True)
        got: list[list[bytes]] = [[] for _ in range(readers)]
        errors: list[BaseException] = []
        finished = threading.Event()

        def read(n: int) -> None:
            try:
                client = redis.Redis(port=served.port)
                k = 0
                while not finished.is_set():
                    reply = client.xreadgroup("g", f"c{n}", {"q": ">"}, count=1, block=3)
                    for _, entries in reply or []:
                        got[n].extend(entry_id for entry_id, _ in entries)
                    k += 1  # one reply per request: the next one is this echo's
                    assert client.echo(str(k)) == str(k).encode()
            except BaseException as exc:
                errors.append(exc)

        def write(half: int) -> None:
            try:
                client = redis.Redis(port=served.port)
                for n in range(total // 2):
                    client.xadd("q", {"half": half, "n": n})
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=read, args=(n,)) for n in range(readers)]
        threads += [threading.Thread(target=write, args=(h,)) for h in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while sum(map(len, got)) < total and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
        finished.set()
        for thread in threads:
            thread.join()
        assert not errors
        received = [entry_id for ids in got for entry_id in ids]
        written = [entry_id for entry_id, _ in admin.xrange("q")]
        assert sorted(received) == written  # each entry once, none missing
        pending = admin.xpending("q", "g")
        assert pending["pending"] == total
        by_consumer = {c["name"]: c["pending"] for c in pending["consumers"]}
        assert by_consumer == {f"c{n}".encode(): len(got[n]) for n in range(readers) if got[n]}


def test_each_client_gets_its_replies_in_order_under_load(tmp_path: Path) -> None:
    """Many clients pipelining store and connection commands mixed: each gets its own replies,
    in its own order."""
    clients, rounds = 12, 30
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        errors: list[BaseException] = []

        def run(n: int) -> None:
            try:
                client = redis.Redis(port=served.port)
                for r in range(rounds):
                    pipe = client.pipeline(transaction=False)
                    pipe.xadd(f"s{n}", {"r": r}, id=f"{r + 1}-1")
                    pipe.echo(f"{n}-{r}")
                    pipe.xlen(f"s{n}")
                    pipe.client_setname(f"c{n}-{r}")
                    pipe.client_getname()
                    pipe.xrange(f"s{n}", count=1, min=f"{r + 1}-1")
                    replies = pipe.execute()
                    assert replies[0] == f"{r + 1}-1".encode()
                    assert replies[1] == f"{n}-{r}".encode()
                    assert replies[2] == r + 1
                    assert replies[4] == f"c{n}-{r}"  # redis-py decodes the name
                    assert replies[5] == [(f"{r + 1}-1".encode(), {b"r": str(r).encode()})]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors[0]


def test_a_parked_read_without_a_wakeup_descriptor_polls(tmp_path: Path, monkeypatch) -> None:
    """When the store cannot give a parked read a wake-up descriptor (its waiter table full,
    descriptors short), the read looks again every few tens of ms: an XADD by another client
    reaches it well before the once-a-second recheck."""
    from rstore.storage.waiting import waiters

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(waiters.Waiter, "__init__", refuse)
    with rstore.Store(tmp_path / "s") as store, ServedStore(store) as served:
        reader, writer = redis.Redis(port=served.port), redis.Redis(port=served.port)
        writer.xadd("k", {"f": "v"}, id="1-1")
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.append(reader.xread({"k": "$"}, block=10_000)))
        thread.start()
        time.sleep(0.3)  # parked by now
        started = time.monotonic()
        writer.xadd("k", {"f": "w"}, id="2-1")
        thread.join(10)
        waited = time.monotonic() - started
        assert got == [[[b"k", [(b"2-1", {b"f": b"w"})]]]]
        assert waited < 0.5, f"the parked read took {waited:.2f} s to see the write"
