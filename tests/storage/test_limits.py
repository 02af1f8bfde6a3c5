"""Full disks, an address-space limit, killed saves, files that are not files: a clear error,
the store consistent, and writable again once the cause is gone."""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import rstore

from .helpers import in_child

_ROOT = os.geteuid() == 0


def _mount(*args: str) -> Iterator[str]:
    target = tempfile.mkdtemp(prefix="rstore-fs-")
    result = subprocess.run(["mount", *args, target], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        os.rmdir(target)
        pytest.skip(f"cannot mount a file system here: {result.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", target], check=False)
        os.rmdir(target)


@pytest.fixture
def small_tmpfs() -> Iterator[str]:
    if not _ROOT:
        pytest.skip("mounting a small file system needs root")
    yield from _mount("-t", "tmpfs", "-o", "size=3m", "tmpfs")


@pytest.fixture
def small_ext4(tmp_path: os.PathLike[str]) -> Iterator[str]:
    if not _ROOT or shutil.which("mkfs.ext4") is None:
        pytest.skip("a loop-mounted ext4 needs root and mkfs.ext4")
    image = os.path.join(str(tmp_path), "fs.img")
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True, capture_output=True)
    yield from _mount("-o", "loop", image)


def _fill(path: str, leave: int) -> str:
    """A file taking all but about ``leave`` bytes of the file system."""
    filler = os.path.join(path, "filler")
    st = os.statvfs(path)
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        f.write(bytes(max(st.f_bavail * st.f_frsize - leave, 0)))
        f.flush()
        os.fsync(f.fileno())
    return filler


def _write_until_full(store: rstore.Store) -> tuple[list[bytes], BaseException]:
    written: list[bytes] = []
    for i in range(100_000):
        try:
            written.append(store.xadd("s", {"i": str(i), "pad": os.urandom(3000)}))
        except rstore.RStoreError as exc:
            return written, exc
    pytest.fail("the disk never filled up")


@pytest.mark.parametrize("fs", ["small_tmpfs", "small_ext4"])
def test_a_full_disk_is_reported_as_such_and_the_store_recovers(
    fs: str, request: pytest.FixtureRequest
) -> None:
    mount = request.getfixturevalue(fs)
    path = os.path.join(mount, "store")

    def scenario() -> object:
        filler = _fill(mount, 600_000)
        with rstore.Store(path) as s:
            written, error = _write_until_full(s)
            assert isinstance(error, rstore.DiskFullError), repr(error)
            assert "disk is full" in str(error)
            assert s.xlen("s") == len(written)  # nothing half-written; every ID returned is there
            assert [e for e, _ in s.xrange("s")] == written
            os.unlink(filler)
            after = s.xadd("s", {"after": "space freed"})
            assert s.xrange("s", after, after)[0][1] == {b"after": b"space freed"}
            return len(written), s.check()

    status, died_of, result = in_child(scenario)
    assert died_of is None, f"died of signal {died_of}"
    assert status == 0 and isinstance(result, tuple) and result[0] == "ok", result
    count, problems = result[1]  # type: ignore[misc]
    assert count > 0 and problems == []


def test_creating_a_store_on_a_full_tmpfs_is_an_error_not_sigbus(small_tmpfs: str) -> None:
    def scenario() -> object:
        _fill(small_tmpfs, 0)
        try:
            with rstore.Store(os.path.join(small_tmpfs, "store")) as s:
                s.xadd("s", {"a": "b"})
                s.xread({"s": "0"}, block=10)
        except rstore.RStoreError as exc:
            return type(exc).__name__
        return "stored"

    status, died_of, result = in_child(scenario)
    assert died_of is None, f"died of signal {died_of}"
    assert status == 0 and isinstance(result, tuple) and result[0] == "ok", result
    assert result[1] in ("DiskFullError", "stored")


def test_a_compaction_on_a_full_disk_is_an_error_and_changes_nothing(small_tmpfs: str) -> None:
    """The copy does not fit: DiskFullError, the store and its files as they were, no copy
    left behind; once space is freed the compaction goes through."""
    path = os.path.join(small_tmpfs, "store")
    with rstore.Store(path) as s:
        s.append_entries(("kept", None, [b"pad", os.urandom(900)]) for _ in range(600))
        s.append_entries(("gone", None, [b"pad", os.urandom(900)]) for _ in range(300))
        s.delete("gone")
        before = (s.xrange("kept"), sorted(os.listdir(path)))
    data = Path(path, "data.mdb")
    raw = data.read_bytes()
    filler = _fill(small_tmpfs, 200_000)
    with pytest.raises(rstore.DiskFullError, match="disk is full"):
        rstore.compact_store(path)
    assert data.read_bytes() == raw
    os.unlink(filler)
    with rstore.Store(path) as s:
        assert (s.xrange("kept"), sorted(os.listdir(path))) == before
    report = rstore.compact_store(path)
    assert report.databases[0].bytes_after < len(raw)
    with rstore.Store(path) as s:
        assert s.xrange("kept") == before[0] and s.check() == []


def test_a_failed_map_growth_fails_that_write_only(tmp_path: os.PathLike[str]) -> None:
    """Under an address-space limit the map cannot double: that write fails with a clear error,
    and the store goes on working in place (it once failed every later command)."""
    path = str(tmp_path)

    def scenario() -> object:
        s = rstore.Store(path, sync=False, map_size=32 << 20)
        s.xadd("keep", {"a": "b"})
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (24 << 20), resource.RLIM_INFINITY))
        written, error = _write_until_full(s)
        assert isinstance(error, rstore.StorageError) and "could not grow" in str(error), error
        assert s.xlen("s") == len(written)
        assert s.xrange("keep")[0][1] == {b"a": b"b"}  # reads go on
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        s.xadd("keep", {"c": "d"})  # the same Store writes again: the map grows now
        return s.xlen("keep"), s.check()

    status, died_of, result = in_child(scenario)
    assert died_of is None and status == 0, (status, died_of)
    assert result == ("ok", (2, [])), result


def test_killed_saves_leave_no_temporaries_behind(tmp_path: os.PathLike[str]) -> None:
    path = str(tmp_path / "store")
    target = os.path.join(str(tmp_path), "dump.rdb")
    stale = os.path.join(str(tmp_path), ".dump.rdb.999999.tmp")  # a save that was killed
    busy = os.path.join(str(tmp_path), ".dump.rdb.888888.tmp")  # a save still running
    for name in (stale, busy):
        with open(name, "wb") as f:
            f.write(b"partial")
    holder = os.open(busy, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with rstore.Store(path) as s:
            s.xadd("s", {"a": "b"})
            s.save(target)
        assert not os.path.exists(stale)
        assert os.path.exists(busy)
        assert sorted(os.listdir(str(tmp_path))) == [".dump.rdb.888888.tmp", "dump.rdb", "store"]
    finally:
        os.close(holder)


@pytest.mark.parametrize("name", ["data.mdb", "lock.mdb"])
def test_a_store_file_that_is_not_a_regular_file_is_refused(
    tmp_path: os.PathLike[str], name: str
) -> None:
    """``data.mdb`` symlinked to /dev/null let ``rstore add`` print an ID for a write that went
    nowhere."""
    path = str(tmp_path)
    rstore.Store(path).close()
    os.unlink(os.path.join(path, name))
    os.symlink("/dev/null", os.path.join(path, name))
    with pytest.raises(rstore.NotAStoreError, match=f"{name} is not a regular file"):
        rstore.Store(path)
