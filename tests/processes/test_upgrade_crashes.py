"""Bringing a store of an older format (2, or 1) to the current format is crash-safe at every step.

The first writable open upgrades (rstore/storage/engine/upgrade.py, wal_recovery.create), under the
log's open lock: ``wal.log`` created without its header; one LMDB transaction records the new format
and the log's position (format 1: first seals every record); ``data.mdb`` flushed; the header
written and flushed; format 2's ``durable.shm`` removed.  The upgrading process is SIGKILLed
at each step (:data:`STEPS`), then

* (a) a read-only open reads every entry, group and pending entry exactly as before;
* (b) the next writable open finishes the upgrade -- new format, a log with its header -- with
  everything exactly as before, ``check()`` clean, and a store that goes on (its log brings it
  back after a restart);
* (c) both again after a simulated machine restart (another boot id: ``RSTORE_TEST_BOOT_ID``),
  where a store whose log has its header must first be recovered by a writable open.

Also: the order of the upgrade commit's writes (traced with strace: its pages flushed before
its meta page, as format 2's commits were -- there is no checkpoint to come back to yet), and a
power loss during that commit, simulated page by page as test_wal_crashes.py does; a store
another process has open is not upgraded; two processes opening a store for writing at once.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import NamedTuple

import lmdb
import pytest
from store_formats import downgrade

import rstore
from rstore.storage.engine import wal, wal_log
from rstore.storage.engine.upgrade import LEGACY_SHARED_FILE

from . import helpers_upgrade as hu
from .children import Children, collect, recv

PAGE = 4096
#: What an upgrade brings a store to.
CURRENT = rstore.FORMAT_VERSION

#: Where the upgrading process is killed, in the order it gets there:
#: "sealing" -- format 1, part of its records sealed in the transaction (its progress report);
#: "before-commit" -- the format recorded in the transaction, not committed;
#: "upgrade-committed" -- the crash point: committed, data.mdb flushed, the header not written;
#: "header-written" -- the header flushed, durable.shm not removed yet;
#: "opened" -- after the open returned.
STEPS = [
    (1, "sealing"),
    (1, "before-commit"),
    (2, "before-commit"),
    (1, "upgrade-committed"),
    (2, "upgrade-committed"),
    (1, "header-written"),
    (2, "header-written"),
    (1, "opened"),
    (2, "opened"),
]
COMMITTED = {"upgrade-committed", "header-written", "opened"}
HEADED = {"header-written", "opened"}

_UPGRADE = textwrap.dedent(
    """
    import os, signal, sys
    import rstore
    from rstore.storage.engine import upgrade
    path, step = sys.argv[1], sys.argv[2]

    def die(*_):
        os.kill(os.getpid(), signal.SIGKILL)

    if step == "sealing":
        def progress(done, total):
            if 0 < done < total:
                die()
        rstore.upgrade_store(path, progress)
    elif step == "before-commit":
        real = upgrade.bring_current
        def bring_current(*args):
            real(*args)
            die()
        upgrade.bring_current = bring_current
        rstore.Store(path)
    elif step == "header-written":
        upgrade.forget_old_files = die
        rstore.Store(path)
    elif step == "opened":
        rstore.Store(path)
        die()
    else:  # a crash point
        rstore.Store(path)
    print("survived", flush=True)
    """
)


class Legacy(NamedTuple):
    """The same data in ``data.mdb`` files of format 1 and 2, and what it is."""

    expected: hu.Contents
    data: dict[int, Path]
    sealed: int  # the records an uninterrupted upgrade of the format-1 store rewrites


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Legacy:
    where = tmp_path_factory.mktemp("legacy")
    source = where / "source"
    with rstore.Store(source) as store:
        hu.fill(store)
        expected = hu.contents(store)
    data = {}
    for version in (2, 1):
        downgrade(str(source), version)
        data[version] = where / f"format{version}.mdb"
        shutil.copyfile(source / "data.mdb", data[version])
    made = Legacy(expected, data, 0)
    baseline = _store_of(where / "baseline", made, 1)
    sealed = rstore.upgrade_store(baseline)
    assert sealed > 2000  # the records of ~1,000 pending entries and more
    with rstore.Store(baseline, readonly=True) as store:
        assert store.format == rstore.FORMAT_VERSION and hu.contents(store) == expected
    return made._replace(sealed=sealed)


def _store_of(path: Path, legacy: Legacy, version: int) -> str:
    """A store of format ``version`` holding the legacy data; format 2 with the shared word
    (``durable.shm``) that rstore left beside it when it wrote format 2 with ``sync=True``."""
    path.mkdir()
    shutil.copyfile(legacy.data[version], path / "data.mdb")
    if version == 2:
        env = lmdb.open(str(path), readonly=True, lock=False, max_dbs=16)
        try:
            txnid = int(env.info()["last_txnid"])
        finally:
            env.close()
        st = os.stat(path / "data.mdb")
        check = st.st_dev ^ st.st_ino ^ txnid ^ 0x5A17_C0DE_D00D_F00D
        word = struct.pack("<8sQQQQ", b"rsdurab1", st.st_dev, st.st_ino, txnid, check)
        (path / LEGACY_SHARED_FILE).write_bytes(word.ljust(PAGE, b"\0"))
    return str(path)


def _killed_upgrading(path: str, step: str) -> None:
    """Run the upgrade of ``path`` in a child killed at ``step`` (see :data:`STEPS`)."""
    env = dict(os.environ)
    if step == "upgrade-committed":
        env["RSTORE_CRASH_AT"] = step
    done = subprocess.run(
        [sys.executable, "-c", _UPGRADE, path, step],
        check=False, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == -9, (done.returncode, done.stdout, done.stderr)


def _header(path: str) -> wal_log.Header | None:
    fd = os.open(os.path.join(path, wal.LOG_FILE), os.O_RDONLY)
    try:
        return wal_log.read_header(fd)
    finally:
        os.close(fd)


def _new_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))


def _read_only(path: str) -> tuple[int, hu.Contents]:
    with rstore.Store(path, readonly=True) as store:
        return store.format, hu.contents(store)


# ------------------------------------------------------------------- killed at each step


@pytest.mark.parametrize("restart", [False, True], ids=["same-boot", "after-restart"])
@pytest.mark.parametrize(("version", "step"), STEPS, ids=[f"format{v}-{s}" for v, s in STEPS])
def test_an_upgrade_killed_at_each_step_is_read_then_finished(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    legacy: Legacy,
    version: int,
    step: str,
    restart: bool,
) -> None:
    """(a), (b) and (c) of the module's docstring, for each step of :data:`STEPS`."""
    path = _store_of(tmp_path / "s", legacy, version)
    before = Path(path, "data.mdb").read_bytes()
    _killed_upgrading(path, step)
    assert (_header(path) is not None) is (step in HEADED)
    if step not in COMMITTED:  # the transaction never reached the file
        assert Path(path, "data.mdb").read_bytes() == before
    if restart:
        _new_boot(monkeypatch)
    if restart and step in HEADED:  # (a) refused until a writable open recovers it
        with pytest.raises(rstore.StorageError, match="the machine restarted since the store"):
            rstore.Store(path, readonly=True)
    else:  # (a)
        assert _read_only(path) == (CURRENT if step in COMMITTED else version, legacy.expected)
    with rstore.Store(path) as store:  # (b)
        assert store.format == rstore.FORMAT_VERSION
        # Records this open rewrote: a format-1 store's all, when its transaction had not
        # committed; else none, or all again (an upgrade may also be done over) -- never part.
        if version == 1 and step not in COMMITTED:
            assert store.upgrade() == legacy.sealed
        else:
            assert store.upgrade() in {0, legacy.sealed if version == 1 else 0}
        assert hu.contents(store) == legacy.expected
        assert store.check() == []
        store.xadd("orders", {"n": "after the upgrade"})
        store.xreadgroup("workers", "c4", {"orders": ">"}, count=10)
        expected = hu.contents(store)
    assert _header(path) is not None
    _new_boot(monkeypatch)  # the log the upgrade gave it brings every write back
    with rstore.Store(path) as store:
        assert hu.contents(store) == expected and store.check() == []
    assert _read_only(path) == (rstore.FORMAT_VERSION, expected)


@pytest.mark.parametrize("version", [1, 2])
def test_each_open_that_goes_on_with_an_upgrade_killed_in_turn(
    tmp_path: Path, legacy: Legacy, version: int
) -> None:
    """An upgrade done over is killed again, one step further each time up to its commit:
    every open starts from what the last one left, and the store is read whole in between."""
    path = _store_of(tmp_path / "s", legacy, version)
    for v, step in STEPS:
        if v == version and step not in HEADED:
            _killed_upgrading(path, step)
            assert _read_only(path) == (CURRENT if step in COMMITTED else version, legacy.expected)
    with rstore.Store(path) as store:
        assert store.format == rstore.FORMAT_VERSION and store.check() == []
        assert hu.contents(store) == legacy.expected
    assert _header(path) is not None


@pytest.mark.parametrize(
    "step",
    [
        "before-commit",
        "upgrade-committed",
        "header-written",
        "opened",
    ],
)
def test_the_open_that_finishes_an_upgrade_removes_format_2s_shared_word(
    tmp_path: Path, legacy: Legacy, step: str
) -> None:
    path = _store_of(tmp_path / "s", legacy, 2)
    _killed_upgrading(path, step)
    rstore.Store(path).close()
    names = set(os.listdir(path))
    assert wal.LOG_FILE in names and LEGACY_SHARED_FILE not in names


# ------------------------------------------------------------------- the upgrade's commit


def _pages(data: bytes) -> list[bytes]:
    return [data[i : i + PAGE] for i in range(0, len(data), PAGE)]


# One system call of the trace (``strace -y``): the call, its descriptor's file, its arguments.
_CALL = re.compile(r"^(\w+)\(\d+<([^>]*)>(?:, (.*))?\) += (-?\d+)")
_FLUSHES = {"fdatasync", "fsync"}  # sync_file_range flushes no disk cache: not understood


def _writes_of(trace: str, data: str) -> list[tuple[str, int, int]]:
    """The writes to the file ``data`` and its flushes, in order: ``(kind, offset, length)``,
    ``kind`` ``"meta"`` (a meta page: the first two pages) or ``"page"`` or ``"flush"``."""
    out: list[tuple[str, int, int]] = []
    offset = 0
    for line in trace.splitlines():
        found = _CALL.match(line)
        if found is None or found[2] != data:
            assert data not in line, f"a call on {data} not understood: {line}"
            continue
        call, args, result = found[1], found[3] or "", int(found[4])
        if call == "lseek":
            offset = result
            continue
        if call in _FLUSHES:
            out.append(("flush", 0, 0))
            continue
        assert call in {"pwrite64", "pwritev", "writev", "write"}, f"not understood: {line}"
        at = int(args.rsplit(", ", 1)[1]) if call.startswith("pwrite") else offset
        out.append(("meta" if at < 2 * PAGE else "page", at, result))
        if not call.startswith("pwrite"):
            offset += result
    return out


@pytest.mark.parametrize("version", [1, 2])
def test_the_upgrade_flushes_its_pages_before_its_meta_page(
    tmp_path: Path, legacy: Legacy, version: int
) -> None:
    """Until the log has its header there is no checkpoint to come back to: the upgrade's
    commit writes its meta page only once every page it wrote is flushed (traced)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("needs strace to see the order of the upgrade's writes")
    path = _store_of(tmp_path / "s", legacy, version)
    trace = tmp_path / "trace"
    done = subprocess.run(
        [strace, "-qq", "-y", "-o", str(trace),
         "-e", "trace=lseek,write,writev,pwrite64,pwritev,fdatasync,fsync,sync_file_range",
         sys.executable, "-c", "import sys, rstore\nrstore.Store(sys.argv[1])", path],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "RSTORE_CRASH_AT": "upgrade-committed"},
    )  # fmt: skip
    if "ptrace" in done.stderr or not trace.exists():
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode in (-9, 128 + 9), done.stderr  # killed after the commit's flush
    writes = _writes_of(trace.read_text(), os.path.realpath(os.path.join(path, "data.mdb")))
    kinds = [kind for kind, _, _ in writes]
    assert "page" in kinds and "meta" in kinds, writes
    for i, kind in enumerate(kinds):
        if kind == "meta":
            last_page = max(j for j in range(i) if kinds[j] == "page")
            assert "flush" in kinds[last_page + 1 : i], writes


@pytest.mark.parametrize("version", [1, 2])
def test_power_loss_during_the_upgrade_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, legacy: Legacy, version: int
) -> None:
    """What a power cut during the upgrade's commit leaves, its pages being flushed before its
    meta page (the test above): any mix of the pages it wrote with the meta page before it --
    the snapshot before the upgrade, whose pages it did not overwrite -- or all of them with
    either meta page.  A reader reads the data exactly; the next writable open upgrades it
    (again) and gives it exactly."""
    path = _store_of(tmp_path / "s", legacy, version)
    base = _pages(Path(path, "data.mdb").read_bytes())
    _killed_upgrading(path, "upgrade-committed")  # the file as the flush left it, whole
    final = _pages(Path(path, "data.mdb").read_bytes())
    changed = {i for i in range(len(final)) if i >= len(base) or base[i] != final[i]}
    metas = {i for i in changed if i < 2}
    written = changed - metas
    assert len(metas) == 1 and written
    _new_boot(monkeypatch)
    rng = random.Random(version)
    mixes = [set(), written, changed]
    mixes += [{i for i in written if rng.random() < 0.5} for _ in range(8)]
    for trial, on_disk in enumerate(mixes):
        pages = [
            page if i in on_disk or i not in changed else base[i] if i < len(base) else bytes(PAGE)
            for i, page in enumerate(final)
        ]
        image = tmp_path / f"image{trial}"
        shutil.copytree(path, image)  # every file as the kill left it, but data.mdb's pages
        (image / "data.mdb").write_bytes(b"".join(pages))
        committed = metas <= on_disk
        assert _read_only(str(image)) == (CURRENT if committed else version, legacy.expected), trial
        with rstore.Store(image) as store:
            assert store.format == rstore.FORMAT_VERSION and store.check() == [], trial
            assert hu.contents(store) == legacy.expected, trial
            resealed = version == 1 and not committed
            assert store.upgrade() == (legacy.sealed if resealed else 0), trial


# ------------------------------------------------------------------- other processes


def _refused_while_held(path: str, children: Children, holder: str) -> None:
    """A writable open while a child holds the store open (``holder``, see
    :func:`helpers_upgrade.hold_open`) is refused naming the child."""
    parent_end, child_end = children.ctx.Pipe()
    proc = children.start(hu.hold_open, path, holder, child_end)
    assert recv(parent_end) == ("open", 2 if holder == "reader" else None)
    with pytest.raises(rstore.StoreInUseError) as info:
        rstore.Store(path)
    assert proc.pid is not None
    assert info.value.pids == (proc.pid,)
    assert f"is open in another process (pid {proc.pid})" in str(info.value)
    parent_end.send("close")
    assert recv(parent_end) == "closed"
    children.join()


@pytest.mark.parametrize("holder", ["reader", "older"])
def test_a_store_another_process_has_open_is_not_upgraded(
    tmp_path: Path, legacy: Legacy, children: Children, holder: str
) -> None:
    """Held by a reader of this rstore, or by an older rstore that may be writing it without
    the log: refused, nothing changed; once the other process closed it, upgraded."""
    path = _store_of(tmp_path / "s", legacy, 2)
    files = ("data.mdb", LEGACY_SHARED_FILE)
    before = {name: Path(path, name).read_bytes() for name in files}
    _refused_while_held(path, children, holder)
    assert {name: Path(path, name).read_bytes() for name in files} == before
    assert wal.LOG_FILE not in os.listdir(path)  # the log the refused open made, removed
    assert _read_only(path) == (2, legacy.expected)
    with rstore.Store(path) as store:
        assert store.format == rstore.FORMAT_VERSION and store.check() == []
        assert hu.contents(store) == legacy.expected


@pytest.mark.parametrize("version", [1, 2])
def test_two_processes_opening_for_writing_at_once_both_succeed(
    tmp_path: Path, legacy: Legacy, children: Children, version: int
) -> None:
    """One of them upgrades (the open lock makes the other wait), the other opens the result:
    both see the current format and every entry, group and pending entry."""
    path = _store_of(tmp_path / "s", legacy, version)
    start = children.ctx.Barrier(2)
    results = children.ctx.Queue()
    for who in range(2):
        children.start(hu.open_for_writing, path, start, who, results)
    seen = collect(results, 2, children)
    children.join()
    assert [seen[who][0] for who in range(2)] == [rstore.FORMAT_VERSION] * 2
    assert sorted(seen[who][1] for who in range(2)) == [0, legacy.sealed if version == 1 else 0]
    assert [seen[who][2] for who in range(2)] == [legacy.expected] * 2
    assert _header(path) is not None and LEGACY_SHARED_FILE not in os.listdir(path)
    with rstore.Store(path) as store:
        assert store.check() == []
