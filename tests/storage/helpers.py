"""Stores to damage, and ways to look at and damage their files."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstore
from rstore.storage.records import layout

PAGE = 4096


def populate(path: str, *, entries: int = 3000) -> None:
    """A store with what every sub-database holds: streams of several node shapes (one large
    enough for branch and overflow pages), deletions, groups with consumers and pending
    entries, a long key name and long group/consumer names."""
    with rstore.Store(path, node_max_entries=100) as s:
        for i in range(entries):
            s.xadd("big", {"user": str(i), "action": "click", "page": f"/products/{i % 97}"})
        for k in range(30):
            s.xadd(f"small:{k}", {"k": str(k), "blob": bytes(range(k, k + 40))})
        s.xadd("big", {"user": "needle", "action": "a-value-found-once-in-the-file"})
        s.xdel("big", *[entry_id for entry_id, _ in s.xrange("big", count=20)][::3])
        s.xgroup_create("big", "workers", "0")
        s.xreadgroup("workers", "alice", {"big": ">"}, count=500)
        s.xreadgroup("workers", "bob", {"big": ">"}, count=300)
        pending = s.xpending_range("big", "workers", "-", "+", 100)
        s.xack("big", "workers", *[p["message_id"] for p in pending[:40]])
        if pending[40:60]:
            s.xclaim("big", "workers", "carol", 0, [p["message_id"] for p in pending[40:60]])
        long_key = "L" * 600
        s.xadd(long_key, {"x": "y"})
        s.xgroup_create(long_key, "G" * 450, "0")
        s.xreadgroup("G" * 450, "C" * 450, {long_key: ">"})


def copy_store(source: str, target: str) -> str:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return target


def data_file(path: str) -> str:
    return os.path.join(path, "data.mdb")


def flip_bit(path: str, offsets: list[int], delta: int = 0, bit: int = 0) -> None:
    """Flip one bit at ``offset + delta`` for each offset."""
    with open(data_file(path), "r+b") as f:
        for offset in offsets:
            f.seek(offset + delta)
            byte = f.read(1)[0]
            f.seek(offset + delta)
            f.write(bytes([byte ^ (1 << bit)]))


def write_page(path: str, page: int, data: bytes) -> None:
    with open(data_file(path), "r+b") as f:
        f.seek(page * PAGE)
        f.write(data)


def find(path: str, needle: bytes) -> list[int]:
    """Every offset of ``needle`` in the data file (at least one).  Old copies of a page that
    LMDB freed (copy-on-write) may hold it too: damage them all."""
    with open(data_file(path), "rb") as f:
        data = f.read()
    found = []
    offset = data.find(needle)
    while offset >= 0:
        found.append(offset)
        offset = data.find(needle, offset + 1)
    assert found, f"{needle!r} is not in the file"
    return found


def stored_value(store: rstore.Store, db: bytes, key: bytes) -> bytes:
    """The exact bytes LMDB holds for a record (payload and checksum)."""

    def read(txn: Any) -> bytes:
        payload = txn.get(db, key)
        assert payload is not None
        return layout.seal(key, payload)

    return store._live_env().read(read)


def in_child(fn: Callable[[], object]) -> tuple[int | None, int | None, object]:
    """Run ``fn`` in a forked child; ``(exit status, signal, what fn returned or raised)``
    -- a crash of the child (SIGBUS, SIGABRT, SIGSEGV) shows as the signal, not as a dead
    test run."""
    import pickle

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            result: object = ("ok", fn())
        except BaseException as exc:
            result = ("raised", type(exc).__name__, str(exc))
        try:
            data = pickle.dumps(result)
        except Exception:
            data = pickle.dumps(("ok", repr(result)))
        with os.fdopen(write_end, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status), None
    return os.WEXITSTATUS(status), None, pickle.loads(data) if data else None


@pytest.fixture
def shared_dir() -> Iterator[str]:
    """A directory every user may enter (pytest's own are private to their owner), for tests
    that act as another user."""
    path = tempfile.mkdtemp(prefix="rstore-shared-")
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
