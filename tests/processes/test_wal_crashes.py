"""The write-ahead log under crashes: SIGKILL at every step, and a simulated power loss.

No test can pull the plug.  What they do instead:

* **SIGKILL at every step** of a write, a checkpoint and a recovery
(``rstore.storage.engine.faults``
  crash points), then open the store as the next process would -- and as the first process after
  a restart would (a different boot id makes it recover from the log).
* **A simulated power loss.**  With ``MDB_NOSYNC`` the kernel may write ``data.mdb``'s pages back
  in any order, so after a power cut the file can hold any mix of what was there at the last
  checkpoint and what was written since, meta pages included.  The test builds such files page
  by page, cuts the log inside its last record at every byte, and checks that recovery gives a
  store that ``check`` passes, holding every acknowledged write.
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
from pathlib import Path

import pytest

import rstore
from rstore.storage.engine import wal, wal_capture, wal_checkpoints, wal_log, wal_position

PAGE = 4096


def _new_boot(monkeypatch: pytest.MonkeyPatch) -> str:
    boot = str(uuid.uuid4())
    monkeypatch.setenv("RSTORE_TEST_BOOT_ID", boot)
    return boot


def _records_after_checkpoint(path: str) -> list[wal_log.Record]:
    """The records a recovery of ``path`` would redo (from its log header's checkpoint)."""
    fd = os.open(os.path.join(path, "wal.log"), os.O_RDONLY)
    try:
        header = wal_log.read_header(fd)
        assert header is not None
        return list(wal_log.redoable(fd, header.position))
    finally:
        os.close(fd)


def _entries(path: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    with rstore.Store(path) as s:
        assert s.check() == []
        entries: list[tuple[bytes, dict[bytes, bytes]]] = s.xrange("k")
        return entries


# ------------------------------------------------------------------- SIGKILL at each step

_CHILD = textwrap.dedent(
    """
    import os, sys
    import rstore
    from rstore.storage.engine import faults
    path, point, before = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = rstore.Store(path)
    for i in range(before):
        print(s.xadd("k", {"i": i}).decode(), flush=True)
    faults.arm(point)
    if point.startswith("checkpoint"):
        s._live_env()._wal.checkpoint()
    print(s.xadd("k", {"i": "last"}).decode(), flush=True)
    print("survived", flush=True)
    """
)


def _run_child(path: str, point: str, before: int, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, path, point, str(before)],
        check=False, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == -9, (done.returncode, done.stderr)
    return done.stdout.split()


@pytest.mark.parametrize("point", ["log-written", "lmdb-committed", "record-marked"])
@pytest.mark.parametrize("restart", [False, True], ids=["same-boot", "after-restart"])
def test_a_writer_killed_at_each_step_of_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, restart: bool
) -> None:
    path = str(tmp_path / "s")
    acknowledged = _run_child(path, point, 20)
    assert len(acknowledged) == 20  # the last XADD never returned
    if restart:
        _new_boot(monkeypatch)  # the page cache is gone: recovery redoes the log
    got = [entry_id.decode() for entry_id, _ in _entries(path)]
    assert got[:20] == acknowledged  # every acknowledged write, in order
    if point == "log-written":
        assert len(got) == 20  # never committed: never there, not even after recovery
    elif not restart:
        assert len(got) == 21  # committed in LMDB: a write that did not return, but stored
    else:
        assert len(got) in (20, 21)  # not marked, no successor: may be gone; never half there
    with rstore.Store(path) as s:  # and the store goes on
        s.xadd("k", {"i": "after"})
        assert s.xlen("k") == len(got) + 1


def test_a_record_left_by_a_killed_writer_is_never_redone_after_a_later_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next writer writes at the dead record's place: a restart redoes its record, not
    the dead one."""
    path = str(tmp_path / "s")
    acknowledged = _run_child(path, "log-written", 5)
    with rstore.Store(path) as s:
        after = s.xadd("k", {"i": "next"}).decode()
    _new_boot(monkeypatch)
    got = [entry_id.decode() for entry_id, _ in _entries(path)]
    assert got == [*acknowledged, after]


def test_killed_during_a_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "s")
    acknowledged = _run_child(path, "checkpoint-data-flushed", 30)
    _new_boot(monkeypatch)
    got = [entry_id.decode() for entry_id, _ in _entries(path)]
    assert got == acknowledged


@pytest.mark.parametrize("point", ["recovery-meta-restored", "recovery-redone"])
def test_killed_during_recovery_then_recovered_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    path = str(tmp_path / "s")
    with rstore.Store(path) as s:
        acknowledged = [s.xadd("k", {"i": i}).decode() for i in range(40)]
    boot = _new_boot(monkeypatch)
    script = "import sys, rstore\nfrom rstore.storage.engine import faults\n"
    script += f"faults.arm({point!r})\nrstore.Store(sys.argv[1])\n"
    done = subprocess.run(
        [sys.executable, "-c", script, path], check=False, capture_output=True, text=True,
        timeout=60,
        env={**os.environ, "RSTORE_TEST_BOOT_ID": boot},
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    got = [entry_id.decode() for entry_id, _ in _entries(path)]  # the same boot: again
    assert got == acknowledged


# ------------------------------------------------------------------- power loss, simulated


def _pages(data: bytes) -> list[bytes]:
    return [data[i : i + PAGE] for i in range(0, len(data), PAGE)]


def test_power_loss_after_a_checkpoint_with_any_pages_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_COMMITS", 10**9)
    path = str(tmp_path / "s")
    with rstore.Store(path) as s:
        before = [s.xadd("k", {"i": i}) for i in range(50)]
        s.xgroup_create("k", "g", "0")
        s.xreadgroup("g", "c", {"k": ">"}, count=20)
        writer = s._live_env()._wal
        assert writer is not None
        writer.checkpoint()
        # What the disk holds for sure: the file as the checkpoint flushed it.
        base = Path(path, "data.mdb").read_bytes()
        for i in range(60):
            s.xadd("k", {"i": i, "pad": "x" * (i * 37 % 900)})
        s.xreadgroup("g", "c", {"k": ">"}, count=30)
        s.xack("k", "g", *before[:10])
        expected = (s.xrange("k"), s.xpending("k", "g"))
        final = Path(path, "data.mdb").read_bytes()
        log = Path(path, "wal.log").read_bytes()
    old, new = _pages(base), _pages(final)
    changed = [i for i in range(len(new)) if i >= len(old) or old[i] != new[i]]
    assert 0 in changed or 1 in changed  # the meta pages moved on
    records = _records_after_checkpoint(path)
    last = records[-1]
    rng = random.Random(1)
    _new_boot(monkeypatch)
    cuts = range(last.position.offset, last.position.offset + last.size + 1)
    for trial, cut in enumerate(cuts):
        pages = list(new)
        for i in changed:  # each page written since the checkpoint: on disk or not
            if rng.random() < 0.5:
                pages[i] = old[i] if i < len(old) else bytes(PAGE)
        image = tmp_path / f"image{trial % 2}"
        shutil.rmtree(image, ignore_errors=True)
        image.mkdir()
        (image / "data.mdb").write_bytes(b"".join(pages))
        (image / "wal.log").write_bytes(log[:cut])
        with rstore.Store(str(image)) as s:
            assert s.check() == [], cut
            got = (s.xrange("k"), s.xpending("k", "g"))
        if cut == last.position.offset + last.size:
            assert got == expected, cut  # the whole log: every acknowledged write
        else:  # the last record cut: the state before it (the last XACK), never half of it
            assert got[0] == expected[0], cut
            assert got[1]["pending"] == expected[1]["pending"] + 10, cut


# ------------------------------------------------------------------- several processes

_WRITER = textwrap.dedent(
    """
    import sys
    import rstore
    path, who, batch, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = rstore.Store(path)
    seq = 0
    acks = open(out, "w")
    while True:
        if batch == 1:
            ids = [s.xadd("k", {"w": who, "seq": seq})]
        else:
            p = s.pipeline()
            for j in range(batch):
                p.xadd("k", {"w": who, "seq": seq + j})
            ids = p.execute()
        seq += len(ids)
        acks.write(" ".join(i.decode() for i in ids) + chr(10))
        acks.flush()
    """
)


def test_writer_processes_killed_then_a_restart_keeps_every_acknowledged_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four processes write at once (single XADDs and pipelines, sharing the log and taking
    checkpoints), all are SIGKILLed, the machine "restarts": every write any of them saw
    acknowledged is there, in each writer's order, and the store checks clean."""
    path = str(tmp_path / "s")
    rstore.Store(path).close()
    outs = [tmp_path / f"acks{who}" for who in range(4)]
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, path, str(who), str(batch), str(out)])
        for who, (batch, out) in enumerate(zip((1, 1, 1, 25), outs))
    ]

    def complete_lines(out: Path) -> list[str]:
        text = out.read_text() if out.exists() else ""
        return text.split("\n")[:-1]  # a line without its newline was not finished

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until each has seen 20 writes acknowledged
            if all(len(complete_lines(out)) >= 20 for out in outs):
                break
            time.sleep(0.05)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)
    acknowledged = {
        str(who): [i for line in complete_lines(out) for i in line.split()]
        for who, out in enumerate(outs)
    }
    assert all(len(ids) >= 20 for ids in acknowledged.values()), acknowledged
    _new_boot(monkeypatch)
    entries = _entries(path)
    ids = [entry_id.decode() for entry_id, _ in entries]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    by_writer: dict[str, list[str]] = {}
    for entry_id, fields in entries:
        by_writer.setdefault(fields[b"w"].decode(), []).append(entry_id.decode())
    for who, seen in acknowledged.items():
        got = by_writer.get(who, [])
        assert got[: len(seen)] == seen, f"writer {who} lost acknowledged writes"


def test_the_log_starts_again_at_the_front_and_a_restart_follows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal, "LOG_LIMIT", 64 * 1024)
    path = str(tmp_path / "s")
    with rstore.Store(path) as s:
        ids = [s.xadd("k", {"i": i, "pad": "p" * 500}) for i in range(600)]  # ~6 times over
        generation = wal_position.read_of(s._live_env())[0]
    assert generation > 3
    assert os.path.getsize(os.path.join(path, "wal.log")) < 4 * 64 * 1024
    _new_boot(monkeypatch)
    assert [entry_id for entry_id, _ in _entries(path)] == ids


def test_a_large_transaction_written_in_pieces_comes_back_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction larger than the piece size (wal_capture.SPILL_BYTES) is written into the
    log as it runs; a restart redoes it whole, and a log cut anywhere inside it drops it whole."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(
        wal_checkpoints, "CHECKPOINT_COMMITS", 10**9
    )  # the log, not a checkpoint, has it
    path = str(tmp_path / "s")
    with rstore.Store(path) as s:
        s.xadd("k", {"i": "first"})
        pipe = s.pipeline()
        for i in range(400):
            pipe.xadd("k", {"i": i, "pad": os.urandom(2000).hex()})  # ~1.6 MB in one commit
        pipe.execute()
        expected = s.xrange("k")
    log = Path(path, "wal.log").read_bytes()
    records = _records_after_checkpoint(path)
    big = records[-1]
    assert big.size > 4 * wal_capture.SPILL_BYTES
    _new_boot(monkeypatch)
    assert _entries(path) == expected
    for cut in (
        big.position.offset + 100,
        big.position.offset + big.size // 2,
        big.position.offset + big.size - 1,
    ):
        image = tmp_path / f"cut{cut}"
        shutil.copytree(path, image)
        (image / "wal.log").write_bytes(log[:cut])
        _new_boot(monkeypatch)
        assert _entries(str(image)) == expected[:1]


def test_writes_of_two_processes_in_turn_each_go_after_the_others_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that wrote the last record knows where the next one goes without reading
    it back -- unless another process committed since: then its record must not overwrite the
    other's (a restart redoes both, from a checkpoint before them)."""
    monkeypatch.setattr(wal_checkpoints, "CHECKPOINT_AGE_S", 1e9)
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 1e9)
    monkeypatch.setattr(
        wal_checkpoints, "CHECKPOINT_COMMITS", 10**9
    )  # the log, not a checkpoint, has them
    path = str(tmp_path / "s")
    other = textwrap.dedent(
        """
        import sys
        import rstore
        from rstore.storage.engine import wal_checkpoints as c
        c.CHECKPOINT_AGE_S, c.CHECKPOINT_COMMITS, c.IDLE_S = 1e9, 10**9, 1e9
        with rstore.Store(sys.argv[1]) as s:
            print(s.xadd("k", {"i": "other"}).decode())
        """
    )
    with rstore.Store(path) as s:
        ids = [s.xadd("k", {"i": i}).decode() for i in range(3)]
        for turn in range(3):
            command = [sys.executable, "-c", other, path]
            done = subprocess.run(command, check=False, capture_output=True)
            assert done.returncode == 0, done.stderr
            ids.append(done.stdout.decode().strip())  # its first write checkpoints before it
            ids += [s.xadd("k", {"i": f"{turn}-{i}"}).decode() for i in range(2)]
    records = _records_after_checkpoint(path)
    assert len(records) == 3  # the last other write, then this process's two
    _new_boot(monkeypatch)
    assert [entry_id.decode() for entry_id, _ in _entries(path)] == ids
