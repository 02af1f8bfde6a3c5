"""A committed write returns its result whatever fails after the commit, and a broken waiter
table never breaks a write or a blocked read (issue: notify.shm unwritable, a directory,
garbage, or on a full disk gave PermissionError / IsADirectoryError / SIGBUS after XADD had
committed)."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

import rstore

from .helpers import in_child, shared_dir  # noqa: F401 - a fixture


def _blocked_read_is_served(path: str, *, within_s: float) -> None:
    """A reader blocked on ``s`` in this process gets the entry a writer adds 0.2 s later."""
    with rstore.Store(path) as reader, rstore.Store(path) as writer:
        writer.xadd("s", {"n": 0})
        timer = threading.Timer(0.2, lambda: writer.xadd("s", {"n": 1}))
        timer.start()
        started = time.monotonic()
        reply = reader.xread({"s": "$"}, block=10_000)
        waited = time.monotonic() - started
        timer.join()
    assert reply and reply[0][1][0][1] == {b"n": b"1"}
    assert waited < within_s


def _notify_file(path: str) -> str:
    return os.path.join(path, "notify.shm")


def test_a_directory_in_place_of_the_table(tmp_path: os.PathLike[str],
                                          caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    path = str(tmp_path)
    rstore.Store(path).close()
    os.mkdir(_notify_file(path))
    with rstore.Store(path) as s:
        entry_id = s.xadd("s", {"a": "b"})  # committed: the ID comes back, no IsADirectoryError
        assert s.xrange("s") == [(entry_id, {b"a": b"b"})]
    _blocked_read_is_served(path, within_s=2.0)  # by polling
    assert any("waiter table cannot be used" in r.message for r in caplog.records)


@pytest.mark.parametrize("damage", [b"garbage!" * 100, b"", b"rsnotify" + bytes(10)])
def test_a_damaged_table_is_rebuilt(tmp_path: os.PathLike[str], damage: bytes,
                                    caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    path = str(tmp_path)
    _blocked_read_is_served(path, within_s=2.0)  # creates the table
    with open(_notify_file(path), "wb") as f:
        f.write(damage)
    _blocked_read_is_served(path, within_s=0.6)  # woken, not polling: the table was rebuilt
    assert not any("cannot be used" in r.message for r in caplog.records)
    assert os.path.getsize(_notify_file(path)) > 100_000


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_table_this_user_may_not_write(shared_dir: str) -> None:  # noqa: F811
    """The store belongs to another user who lets us write the data but not the table."""
    path = os.path.join(shared_dir, "store")
    _blocked_read_is_served(path, within_s=2.0)
    nobody = 65534
    shutil.chown(path, nobody, nobody)
    for name in os.listdir(path):
        shutil.chown(os.path.join(path, name), nobody, nobody)
    os.chmod(os.path.join(path, "data.mdb"), 0o666)
    os.chmod(os.path.join(path, "lock.mdb"), 0o666)
    os.chmod(path, 0o777)
    os.chmod(_notify_file(path), 0o444)

    def as_another_user() -> object:
        os.setgid(nobody)
        os.setuid(nobody)
        with rstore.Store(path) as s:
            entry_id = s.xadd("s", {"by": "nobody"})
            found = s.xrange("s", entry_id, entry_id)
        _blocked_read_is_served(path, within_s=2.0)
        return entry_id, found

    status, died_of, result = in_child(as_another_user)
    assert (status, died_of) == (0, None)
    assert isinstance(result, tuple) and result[0] == "ok", result
    entry_id, found = result[1]  # type: ignore[misc]
    assert found == [(entry_id, {b"by": b"nobody"})]


def test_waking_readers_can_fail_without_failing_the_write(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the wake-up path raises after the commit, the caller gets the ID of the entry
    that was stored."""
    from rstore.storage.waiting import notify

    path = str(tmp_path)
    _blocked_read_is_served(path, within_s=2.0)

    def broken(self: object, keys: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(notify.Notifier, "notify", broken)
    monkeypatch.setattr(notify.Notifier, "anyone_waiting", lambda self: True)
    with rstore.Store(path) as s:
        entry_id = s.xadd("s", {"after": "failure"})
        assert s.xrange("s", entry_id, entry_id)[0][1] == {b"after": b"failure"}
        with s.pipeline() as pipe:
            pipe.xadd("s", {"in": "pipeline"})
            assert pipe.execute()[0] is not None


def test_closing_wakes_a_blocked_reader_with_store_closed(tmp_path: os.PathLike[str]) -> None:
    store = rstore.Store(str(tmp_path))
    outcome: list[BaseException | object] = []

    def read() -> None:
        try:
            outcome.append(store.xread({"s": "$"}, block=0))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.3)
    started = time.monotonic()
    store.close()
    reader.join(5)
    assert not reader.is_alive()
    assert time.monotonic() - started < 2.0
    assert len(outcome) == 1 and isinstance(outcome[0], rstore.StoreClosedError)


def test_close_while_other_threads_run_commands(tmp_path: os.PathLike[str]) -> None:
    """Closing raced commands in flight and segfaulted (2 of 30 trials).  Now: every command
    either completes or raises StoreClosedError, and the process lives."""

    def trials() -> object:
        outcomes: set[str] = set()
        for trial in range(30):
            store = rstore.Store(os.path.join(str(tmp_path), f"s{trial}"), sync=False)
            store.xadd("s", {"n": 0})
            stop = threading.Event()

            def hammer(
                kind: int, store: rstore.Store = store, stop: threading.Event = stop
            ) -> None:
                while not stop.is_set():
                    try:
                        if kind == 0:
                            store.xadd("s", {"n": 1})
                        elif kind == 1:
                            store.xrange("s", count=50)
                        else:
                            store.xread({"s": "$"}, block=20)
                        outcomes.add("ok")
                    except rstore.StoreClosedError:
                        outcomes.add("closed")
                        return

            threads = [threading.Thread(target=hammer, args=(i % 3,)) for i in range(6)]
            for t in threads:
                t.start()
            time.sleep(0.02)
            store.close()
            time.sleep(0.05)
            stop.set()
            for t in threads:
                t.join(5)
            assert not any(t.is_alive() for t in threads)
        return sorted(outcomes)

    status, died_of, result = in_child(trials)
    assert died_of is None and status == 0
    assert result == ("ok", ["closed", "ok"]), result
