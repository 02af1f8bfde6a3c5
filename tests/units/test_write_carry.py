"""The records a write transaction hands to the next one in the same process (Txn's carry:
keyspace, stream metadata, clean nodes) must never outlive what they describe: not a
transaction that failed after changing them, not a commit by another process in between."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

import rstore
from rstore.streams.append import add


def _other_process_writes(path: str) -> None:
    with rstore.Store(path) as store:
        for _ in range(3):
            store.xadd("s", {"from": "other"})
        store.execute("XSETID", "s", "999999999999999-5")
        store.xadd("t", {"new": "key"})


def test_a_commit_by_another_process_is_seen_by_the_next_write(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with rstore.Store(path) as store:
        store.xadd("s", {"n": 1}, id="1-1")
        store.xadd("s", {"n": 2}, id="1-2")  # the second write adopts the first one's records
        child = mp.get_context("spawn").Process(target=_other_process_writes, args=(path,))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        new_id = store.xadd("s", {"n": 3})
        assert new_id == b"999999999999999-6"  # after the other process's XSETID, not 1-3
        assert store.xlen("s") == 6
        info = store.xinfo_stream("s")
        assert info["entries-added"] == 6
        assert store.exists("t") == 1
        assert store.check() == []


class Boom(Exception):
    pass


def test_a_failed_write_leaves_no_trace_in_the_next_one(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with rstore.Store(path) as store:
        store.xadd("s", {"n": 1}, id="5-1")
        env = store._live_env()

        def half_done(txn: object) -> None:
            for i in range(2, 40):  # enough to change the tail node and the metadata
                add(
                    txn,  # type: ignore[arg-type]
                    b"s",
                    [b"n", b"%d" % i],
                    explicit_id=(5, i),
                    nomkstream=False,
                    trim_spec=None,
                    now_ms=0,
                )
            add(
                txn,
                b"fresh",
                [b"a", b"b"],
                explicit_id=None,
                nomkstream=False,
                trim_spec=None,
                now_ms=1,
            )  # type: ignore[arg-type]
            raise Boom

        with pytest.raises(Boom):
            env.write(half_done)
        assert store.xlen("s") == 1
        assert store.exists("fresh") == 0
        # 5-2 is free again: a kept last ID of 5-39 would refuse it as "equal or smaller"
        assert store.xadd("s", {"n": "next"}, id="5-2") == b"5-2"
        assert [e[0] for e in store.xrange("s")] == [b"5-1", b"5-2"]
        assert store.xinfo_stream("s")["entries-added"] == 2
        assert store.check() == []
