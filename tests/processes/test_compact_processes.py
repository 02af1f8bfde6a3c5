"""Compaction beside other processes, and killed at every step.

* **Another process has the store open** (a writer, a read-only reader, a database's store):
  the compaction refuses at once, names it, and changes nothing; with ``wait`` it waits for it
  to close.
* **Processes that open the store while a compaction runs wait** for it, then use the
  compacted store: a writer's write lands in it, and a read-only reader -- which LMDB lets
  open ``data.mdb`` *before* it waits for its lock -- reads the new file, not the old one (it
  sees writes made after the compaction).
* **SIGKILL at every step** (``rstore.storage.engine.faults``' ``compact-*`` points, and at random
  moments): the next process to open the store finds every record, the store checks clean,
  and nothing is left behind; the same after a restart (another boot id: the first opener
  recovers from the log); then writes go on and survive a later restart too.
* **Killed after the rename while an opener waits**: the opener gets in without the lock
  table rebuilt by the compaction (LMDB's waiting openers do not take the first opener's part);
  it finds the transaction id the table holds in both meta slots of the copy, and its writes
  land.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import rstore
from rstore.storage.compaction import compact_intent
from tests.storage import compacting
from tests.storage.compacting import state

_COMPACTOR = textwrap.dedent(
    """
    import os, signal, sys
    import rstore
    from rstore.storage.compaction import compact, compact_copy, compact_intent
    path, point = sys.argv[1], sys.argv[2]

    def pause(name):  # at the first database's step (database 3 reaches it again)
        global point
        if name == point:
            point = None
            print("paused", flush=True)
            if sys.stdin.readline().strip() == "die":
                os.kill(os.getpid(), signal.SIGKILL)

    compact.crash_point = compact_copy.crash_point = compact_intent.crash_point = pause
    report = rstore.compact_store(path)
    print("done", report.databases[0].bytes_after, flush=True)
    """
)

_HOLDER = textwrap.dedent(
    """
    import sys, time
    import rstore
    path, readonly = sys.argv[1], sys.argv[2] == "ro"
    store = rstore.Store(path, readonly=readonly, create=False)
    print("open", flush=True)
    time.sleep(float(sys.stdin.readline()))
    store.close()
    print("closed", flush=True)
    """
)

_WRITER = textwrap.dedent(
    """
    import sys
    import rstore
    with rstore.Store(sys.argv[1], create=False) as store:
        print("wrote", store.xadd("kept", {"from": "writer"}).decode(), flush=True)
    """
)

_READER = textwrap.dedent(
    """
    import sys, time
    import rstore
    store = rstore.Store(sys.argv[1], readonly=True, create=False)
    print("opened", store.xlen("kept"), flush=True)
    want = int(sys.stdin.readline())
    deadline = time.monotonic() + 10
    while store.xlen("kept") != want and time.monotonic() < deadline:
        time.sleep(0.02)
    print("saw", store.xlen("kept"), flush=True)
    """
)

# The shared fixtures (tests/storage/compacting.py).
population, populated = compacting.population, compacting.populated


class Child:
    """A Python child running ``script`` with text pipes; killed at teardown."""

    def __init__(self, script: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip

    def line(self) -> str:
        """The next line it prints (a hang fails the test through pytest's timeout, or here)."""
        assert self.proc.stdout is not None
        text = self.proc.stdout.readline().strip()
        assert text, f"the child printed nothing: {self.stderr()}"
        return text

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def silent_for(self, seconds: float) -> bool:
        """Whether the child is still running and has printed nothing after ``seconds``."""
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], seconds)
        return not ready and self.proc.poll() is None

    def wait(self) -> int:
        return self.proc.wait(timeout=60)

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return str(self.proc.stderr.read())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def kids() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.kill()


def start(kids: list[Child], script: str, *args: str, **kw: dict[str, str]) -> Child:
    child = Child(script, *args, **kw)
    kids.append(child)
    return child


def files(path: Path) -> dict[str, tuple[int, int]]:
    """Each file of the store directory: (inode, size)."""
    out = {}
    for name in sorted(os.listdir(path)):
        st = os.stat(path / name)
        out[name] = (st.st_ino, st.st_size)
    return out


def leftovers(path: Path) -> list[str]:
    names = (compact_intent.COPY_FILE, compact_intent.INTENT_FILE)
    return [name for name in names if (path / name).exists()]


# ------------------------------------------------------------------- others hold the store


@pytest.mark.parametrize("how", ["writable", "read-only", "database 3"])
def test_refused_while_another_process_has_it_open(
    populated: Path, kids: list[Child], how: str
) -> None:
    target = populated / "db3" if how == "database 3" else populated
    holder = start(kids, _HOLDER, str(target), "ro" if how == "read-only" else "rw")
    assert holder.line() == "open"
    before = files(populated), files(populated / "db3")
    started = time.monotonic()
    with pytest.raises(rstore.StoreInUseError) as info:
        rstore.compact_store(populated)
    assert time.monotonic() - started < 5  # at once
    assert info.value.pids == (holder.proc.pid,)
    assert f"is open in another process (pid {holder.proc.pid})" in str(info.value)
    assert "--wait" in str(info.value)
    assert (files(populated), files(populated / "db3")) == before  # nothing changed
    holder.say("0")
    assert holder.line() == "closed"
    report = rstore.compact_store(populated)
    assert [d.db for d in report.databases] == [0, 3]


def test_waits_for_others_to_close_it(populated: Path, kids: list[Child]) -> None:
    kept = state(populated)
    holder = start(kids, _HOLDER, str(populated), "rw")
    assert holder.line() == "open"
    with pytest.raises(rstore.StoreInUseError, match=r"\(waited 0.3 s\)"):
        rstore.compact_store(populated, wait=0.3)
    started = time.monotonic()
    holder.say("1.0")  # it closes a second from now, while the compaction waits
    report = rstore.compact_store(populated, wait=30)
    assert 0.9 < time.monotonic() - started < 10
    assert holder.line() == "closed"
    assert report.databases[0].bytes_after < report.databases[0].bytes_before
    assert state(populated) == kept


# ------------------------------------------------------------------- openers wait


def test_a_writer_opening_meanwhile_waits_then_writes_into_the_copy(
    populated: Path, kids: list[Child]
) -> None:
    kept = state(populated)
    compactor = start(kids, _COMPACTOR, str(populated), "compact-copied")
    assert compactor.line() == "paused"  # holding the store, the copy written
    writer = start(kids, _WRITER, str(populated))
    assert writer.silent_for(0.5)  # waiting for the compaction
    compactor.say("go")
    assert compactor.line().startswith("done")
    assert writer.line().startswith("wrote")
    assert compactor.wait() == 0 and writer.wait() == 0
    after = state(populated)
    assert after[3] == kept[3]
    assert len(after[0][b"nodes"]) >= len(kept[0][b"nodes"])
    with rstore.Store(populated, create=False) as store:
        assert store.xrange("kept")[-1][1] == {b"from": b"writer"}
    assert leftovers(populated) == []


def test_a_reader_opening_meanwhile_reads_the_copy(populated: Path, kids: list[Child]) -> None:
    """A read-only opener opens data.mdb before it waits for LMDB's lock: once the compaction
    is done it must read the new file -- the old one, unlinked, would never see another
    write."""
    with rstore.Store(populated, create=False) as store:
        length = store.xlen("kept")
    compactor = start(kids, _COMPACTOR, str(populated), "compact-copied")
    assert compactor.line() == "paused"
    reader = start(kids, _READER, str(populated))
    assert reader.silent_for(0.5)
    compactor.say("go")
    assert compactor.line().startswith("done")
    assert reader.line() == f"opened {length}"
    with rstore.Store(populated, create=False) as store:
        store.xadd("kept", {"after": "compaction"})
    reader.say(str(length + 1))
    assert reader.line() == f"saw {length + 1}"


@pytest.mark.parametrize("point", ["compact-renamed", "compact-copied"])
def test_killed_while_a_writer_waits(populated: Path, kids: list[Child], point: str) -> None:
    """Killed with an opener waiting: after the rename (the lock table not rebuilt) the
    opener gets in on the copy; before it, on the old file; either way its write lands."""
    kept = state(populated)
    compactor = start(kids, _COMPACTOR, str(populated), point)
    assert compactor.line() == "paused"
    writer = start(kids, _WRITER, str(populated))
    assert writer.silent_for(0.5)
    compactor.say("die")
    assert compactor.wait() == -9
    assert writer.line().startswith("wrote")
    assert writer.wait() == 0
    with rstore.Store(populated, create=False) as store:
        store.xadd("kept", {"and": "more"})
        assert [f for _, f in store.xrange("kept")[-2:]] == [{b"from": b"writer"},
                                                             {b"and": b"more"}]  # fmt: skip
        assert store.check() == []
    after = state(populated)
    assert after[3] == kept[3]
    assert leftovers(populated) == []
    compacted = os.path.getsize(populated / "data.mdb")
    assert (compacted < 1 << 20) == (point == "compact-renamed")


# ------------------------------------------------------------------- SIGKILL at each step

_KILLED = "import sys, rstore\nrstore.compact_store(sys.argv[1])\n"
_POINTS = ["compact-copied", "compact-intent-written", "compact-renamed", "compact-header-written"]


def _kill_at(path: Path, point: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, str(path)], check=False, capture_output=True, text=True,
        timeout=120, env={**os.environ, "RSTORE_CRASH_AT": point},
    )  # fmt: skip
    assert done.returncode == -9, done.stderr


@pytest.mark.parametrize("restart", [False, True], ids=["same-boot", "after-restart"])
@pytest.mark.parametrize("point", _POINTS)
def test_killed_at_each_step(
    tmp_path: Path, population: Path, monkeypatch: pytest.MonkeyPatch, point: str, restart: bool,
) -> None:  # fmt: skip
    populated = tmp_path / "store"
    shutil.copytree(population, populated)
    kept = state(populated)
    with rstore.Store(populated, create=False) as store:
        length = store.xlen("kept")
    _kill_at(populated, point)
    if restart:  # the page cache is gone: the first opener recovers (format 3)
        monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))
    assert state(populated) == kept
    assert leftovers(populated) == []
    small = os.path.getsize(populated / "data.mdb") < 1 << 20
    assert small == (point != "compact-copied")  # past its point of no return: finished
    with rstore.Store(populated, create=False, sync=False) as store:
        for i in range(30):
            store.xadd("kept", {"after": i})
        store.sync()
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", str(uuid.uuid4()))  # and a restart after
    with rstore.Store(populated, create=False) as store:
        assert store.xlen("kept") == length + 30
        assert store.check() == []
    report = rstore.compact_store(populated)  # and it compacts again
    assert report.databases[0].bytes_after <= 1 << 20


_TIMED = textwrap.dedent(
    """
    import sys, time
    import rstore
    compact_store = rstore.compact_store  # imported before the clock starts
    print("start", flush=True)
    started = time.monotonic()
    compact_store(sys.argv[1])
    print(time.monotonic() - started, flush=True)
    """
)


def test_killed_at_random_moments(tmp_path: Path, population: Path, kids: list[Child]) -> None:
    """SIGKILL from outside at random moments of compactions of a store whose live data takes
    a while to copy (a first compaction is timed): each time the store is whole, old or new."""
    rng = random.Random(int(os.environ.get("RSTORE_COMPACT_SEED", "5")))
    source = tmp_path / "source"
    shutil.copytree(population, source)
    with rstore.Store(source, sync=False) as store:
        for _ in range(4):
            store.append_entries(("live", None, [b"f", b"x" * 200]) for _ in range(20_000))
    kept = state(source)
    timed = start(kids, _TIMED, str(shutil.copytree(source, tmp_path / "timed")))
    assert timed.line() == "start"
    seconds = float(timed.line())
    for trial in range(6):
        path = shutil.copytree(source, tmp_path / f"t{trial}")
        child = start(kids, _TIMED, str(path))
        assert child.line() == "start"
        time.sleep(rng.uniform(0, seconds))
        child.kill()
        assert state(Path(path)) == kept, trial
        assert leftovers(Path(path)) == []
