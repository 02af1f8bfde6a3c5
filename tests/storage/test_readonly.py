"""Reading stores one may not write: ``Store(readonly=True)``, other users' stores, read-only
mounts -- reads work, writes are refused with a clear error, never a raw PermissionError."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

import rstore

from .helpers import in_child, populate, shared_dir  # noqa: F401 - shared_dir is a fixture

_ROOT = os.geteuid() == 0
NOBODY = 65534

WRITES: list[tuple[object, ...]] = [
    ("XADD", "big", "*", "a", "b"),
    ("XDEL", "big", "1-1"),
    ("XTRIM", "big", "MAXLEN", "1"),
    ("XGROUP", "CREATE", "big", "new", "0"),
    ("XREADGROUP", "GROUP", "workers", "alice", "STREAMS", "big", ">"),
    ("XACK", "big", "workers", "1-1"),
    ("DEL", "big"),
    ("FLUSHALL",),
    ("CONFIG", "SET", "stream-node-max-entries", "5"),
]


@pytest.fixture
def store_path(tmp_path: os.PathLike[str]) -> str:
    path = str(tmp_path / "store")
    populate(path, entries=300)
    return path


def _answers(s: rstore.Store) -> object:
    return (s.keys("*"), s.xrange("big"), s.xinfo_stream("big"), s.xpending("big", "workers"))


def test_reads_work_and_every_write_is_refused(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        expected = _answers(s)
    with rstore.Store(store_path, readonly=True) as s:
        assert s.readonly
        assert _answers(s) == expected
        for argv in WRITES:
            with pytest.raises(rstore.ReadOnlyStoreError, match="read-only"):
                s.execute(*argv)
        assert s.check() == []
    with rstore.Store(store_path) as s:
        assert _answers(s) == expected  # nothing was written


def test_a_blocked_read_on_a_readonly_store_is_woken_by_a_writer(store_path: str) -> None:
    script = f"import rstore; rstore.Store({store_path!r}).xadd('big', {{'late': 'entry'}})"
    with rstore.Store(store_path, readonly=True) as reader:
        timer = threading.Timer(
            0.3, lambda: subprocess.run([sys.executable, "-c", script], check=True)
        )
        timer.start()
        reply = reader.xread({"big": "$"}, block=10_000)
        timer.join()
    assert reply and reply[0][1][0][1] == {b"late": b"entry"}


def test_readonly_never_creates_a_store(tmp_path: os.PathLike[str]) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(rstore.StoreNotFoundError):
        rstore.Store(missing, readonly=True)
    assert not os.path.exists(missing)


def _give_to_nobody(path: str, dir_mode: int) -> None:
    for name in os.listdir(path):
        shutil.chown(os.path.join(path, name), NOBODY, NOBODY)
        os.chmod(os.path.join(path, name), 0o644)
    shutil.chown(path, NOBODY, NOBODY)
    os.chmod(path, dir_mode)


@pytest.mark.skipif(not _ROOT, reason="needs root to act as another user")
def test_another_users_store_is_read_with_readonly(shared_dir: str) -> None:  # noqa: F811
    """A service's store (0755 directory, 0644 files): its lock file is not ours, so LMDB's
    read-only open fails; rstore reads without the lock file instead."""
    path = os.path.join(shared_dir, "store")
    populate(path, entries=200)
    with rstore.Store(path) as s:
        expected = _answers(s)
    _give_to_nobody(path, 0o755)

    def as_root_reader() -> object:
        os.setgid(1)  # daemon: neither the owner nor root
        os.setuid(1)
        with rstore.Store(path, readonly=True) as s:
            answers = _answers(s)
        try:
            rstore.Store(path)
        except rstore.RStoreError as exc:
            return answers, type(exc).__name__, str(exc)
        return answers, "opened for writing", ""

    status, died_of, result = in_child(as_root_reader)
    assert (status, died_of) == (0, None)
    assert isinstance(result, tuple) and result[0] == "ok", result
    answers, error, text = result[1]  # type: ignore[misc]
    assert answers == expected
    assert error == "ReadOnlyStoreError"
    assert "permission denied" in text and "readonly=True" in text, text


@pytest.mark.skipif(not _ROOT, reason="needs root to act as another user")
def test_a_private_store_of_another_user_is_a_clear_error(shared_dir: str) -> None:  # noqa: F811
    path = os.path.join(shared_dir, "store")
    populate(path, entries=10)
    _give_to_nobody(path, 0o700)

    def as_other_user() -> object:
        os.setgid(1)
        os.setuid(1)
        errors = []
        for readonly in (False, True):
            try:
                rstore.Store(path, readonly=readonly)
            except rstore.RStoreError as exc:
                errors.append((type(exc).__name__, str(exc)))
        return errors

    status, died_of, result = in_child(as_other_user)
    assert (status, died_of) == (0, None)
    assert isinstance(result, tuple) and result[0] == "ok", result
    for name, text in result[1]:  # type: ignore[union-attr]
        assert name == "ReadOnlyStoreError"
        assert "permission denied" in text and "another user" in text


@pytest.fixture
def readonly_mount(store_path: str) -> Iterator[str]:
    if not _ROOT:
        pytest.skip("a read-only bind mount needs root")
    target = store_path + "-ro"
    os.mkdir(target)
    bound = subprocess.run(
        ["mount", "--bind", store_path, target], capture_output=True, check=False
    )
    if bound.returncode != 0:
        os.rmdir(target)
        pytest.skip(f"cannot bind-mount here: {bound.stderr!r}")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,bind,ro", target], capture_output=True, check=False
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {remount.stderr!r}")
        yield target
    finally:
        subprocess.run(["umount", "-l", target], check=False)
        os.rmdir(target)


def test_a_store_on_read_only_media(store_path: str, readonly_mount: str) -> None:
    with rstore.Store(store_path) as s:
        expected = _answers(s)
    with rstore.Store(readonly_mount, readonly=True) as s:
        assert _answers(s) == expected
        assert s.check() == []
    with pytest.raises(rstore.ReadOnlyStoreError):
        rstore.Store(readonly_mount)
