"""Idempotent production (Redis 8.6): XADD IDMP / IDMPAUTO, XCFGSET, the idempotency fields of
XINFO STREAM and the ``stream-idmp-*`` settings.

No Redis 8.6 server can be installed here: the expected replies and error texts are Redis's own
tests' and documentation's (``docs/semantics.md`` lists them).  What no server offers is tested
too: the state is in the store, so it survives a reopen and is shared by processes.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import rstore
from rstore import ResponseError

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NO_PID = "ERR syntax error, IDMP requires a non-empty producer ID"
NOT_INTEGER = "ERR value is not an integer or out of range"
FIELDS = ("idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added",
          "iids-duplicates")  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with rstore.Store(tmp_path / "store", sync=False) as s:
        yield s


def idmp(store: rstore.Store, key: str = "s") -> dict[str, int]:
    info = store.xinfo_stream(key)
    return {name: info[name] for name in FIELDS}


def refused(store: rstore.Store, *argv: Any) -> str:
    with pytest.raises(ResponseError) as caught:
        store.execute(*argv)
    return caught.value.line


# ----------------------------------------------------------------------------- grammar


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("IDMP", "p1", "*", "f", "v"), INVALID_ID),
        (("IDMP", "p1", "iid1", "1-1", "f", "v"),
         "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"),
        (("IDMPAUTO", "p1", "5-*", "f", "v"),
         "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"),
        (("IDMP", "p1", "i", "IDMP", "p2", "j", "*", "f", "v"),
         "ERR syntax error, IDMP/IDMPAUTO specified multiple times"),
        (("IDMPAUTO", "p1", "IDMP", "p2", "j", "*", "f", "v"),
         "ERR syntax error, IDMP/IDMPAUTO specified multiple times"),
        (("IDMP", "p1", "i", "IDMPAUTO", "p2", "*", "f", "v"),
         "ERR syntax error, IDMP/IDMPAUTO specified multiple times"),
        (("IDMP", "", "i", "*", "f", "v"), NO_PID),
        (("IDMP", "", "", "*", "f", "v"), NO_PID),
        (("IDMP", "p", "", "*", "f", "v"),
         "ERR syntax error, IDMP requires a non-empty idempotent ID"),
        (("IDMPAUTO", "", "*", "f", "v"),
         "ERR syntax error, IDMPAUTO requires a non-empty producer ID"),
        (("IDMP", "p", "i", "*", "f"), "ERR wrong number of arguments for 'xadd' command"),
        (("IDMP", "p", "i", "LIMIT", "5", "*", "f", "v"),
         "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"),
    ],
)  # fmt: skip
def test_refusals_store_nothing(store: rstore.Store, argv: tuple[str, ...], line: str) -> None:
    assert refused(store, "XADD", "s", *argv) == line
    assert store.exists("s") == 0


@pytest.mark.parametrize(
    "options",
    [
        ("IDMP", "p1", "r", "MAXLEN", "~", "100"),
        ("MAXLEN", "~", "100", "IDMP", "p1", "r"),
        ("NOMKSTREAM", "IDMP", "p1", "r", "MAXLEN", "~", "100"),
        ("KEEPREF", "IDMPAUTO", "p1"),
        ("IDMPAUTO", "p1", "KEEPREF"),
        ("IDMP", "p1", "r", "KEEPREF", "MAXLEN", "~", "1000", "LIMIT", "10"),
        ("idmp", "p1", "r"),
    ],
)
def test_options_in_any_order(store: rstore.Store, options: tuple[str, ...]) -> None:
    store.xadd("s", {"init": "1"})
    first = store.execute("XADD", "s", *options, "*", "f", "v")
    assert store.execute("XADD", "s", *options, "*", "f", "v") == first
    assert store.xlen("s") == 2


@pytest.mark.parametrize("iid", [b"*", b"-", b"+", b"$", b"IDMP", b"123-456", b"\x00\x01\xff",
                                 "hello世界".encode(), b"x" * 65536])  # fmt: skip
def test_any_bytes_are_an_iid_or_a_pid(store: rstore.Store, iid: bytes) -> None:
    first = store.execute("XADD", "s", "IDMP", iid, iid, "*", "f", "v")
    assert store.execute("XADD", "s", "IDMP", iid, iid, "*", "f", "w") == first
    assert store.xlen("s") == 1


# ----------------------------------------------------------------------------- semantics


def test_a_duplicate_answers_the_first_id_and_keeps_the_first_fields(store: rstore.Store) -> None:
    first = store.xadd("s", {"amount": "100", "currency": "USD"}, idmp=("p1", b"payment-abc"))
    again = store.xadd("s", {"amount": "200", "currency": "EUR"}, idmp=("p1", b"payment-abc"))
    assert again == first
    assert store.xrange("s") == [(first, {b"amount": b"100", b"currency": b"USD"})]
    assert idmp(store)["iids-duplicates"] == 1


def test_producers_have_their_own_iids(store: rstore.Store) -> None:
    a = store.xadd("s", {"f": "v"}, idmp=("p1", b"req"))
    b = store.xadd("s", {"f": "v"}, idmp=("p2", b"req"))
    assert a != b
    assert idmp(store)["pids-tracked"] == 2


def test_idmpauto_ignores_the_order_of_pairs_but_not_the_names(store: rstore.Store) -> None:
    first = store.execute("XADD", "s", "IDMPAUTO", "p", "*", "f1", "a", "f2", "b", "f3", "c")
    assert (
        store.execute("XADD", "s", "IDMPAUTO", "p", "*", "f2", "b", "f3", "c", "f1", "a") == first
    )
    assert (
        store.execute("XADD", "s", "IDMPAUTO", "p", "*", "f1", "ab", "f2", "", "f3", "c") != first
    )
    assert (
        store.execute("XADD", "s", "IDMPAUTO", "p", "*", "g1", "a", "f2", "b", "f3", "c") != first
    )
    assert (
        store.execute("XADD", "s", "IDMPAUTO", "q", "*", "f1", "a", "f2", "b", "f3", "c") != first
    )
    assert store.execute("XADD", "s", "IDMPAUTO", "p", "*", "f", "v", "f", "v") is not None
    assert store.xlen("s") == 5


def test_a_duplicate_adds_nothing_and_trims_nothing(store: rstore.Store) -> None:
    first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    for i in range(5):
        store.xadd("s", {"n": i})
    assert store.xadd("s", {"f": "v"}, maxlen=1, approximate=False, idmp=("p", b"1")) == first
    assert store.xlen("s") == 6


def test_a_duplicate_of_an_entry_since_deleted_still_answers_its_id(store: rstore.Store) -> None:
    first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    store.xdel("s", first)
    assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) == first
    assert store.xlen("s") == 0


def test_nomkstream_on_a_missing_key_creates_nothing(store: rstore.Store) -> None:
    assert store.xadd("s", {"f": "v"}, nomkstream=True, idmp=("p", b"1")) is None
    assert store.exists("s") == 0


def test_a_refused_xadd_remembers_nothing(store: rstore.Store) -> None:
    store.xadd("s", {"f": "v"}, id="18446744073709551615-18446744073709551615")
    assert refused(store, "XADD", "s", "IDMP", "p", "1", "*", "f", "v").startswith(
        "ERR The stream has exhausted"
    )
    assert idmp(store)["pids-tracked"] == 0
    assert idmp(store)["iids-added"] == 0


def test_maxsize_keeps_each_producers_newest(store: rstore.Store) -> None:
    """Redis's 'XIDMP set evicts entries when MAXSIZE is reached', and per producer."""
    store.xadd("s", {"init": "1"})
    assert store.xcfgset("s", idmp_maxsize=3) == b"OK"
    ids = {n: store.xadd("s", {"f": n}, idmp=("p1", f"req-{n}".encode())) for n in (1, 2, 3)}
    assert store.xadd("s", {"f": 1}, idmp=("p1", b"req-1")) == ids[1]
    store.xadd("s", {"f": 4}, idmp=("p1", b"req-4"))  # req-1 goes
    store.xadd("s", {"f": 1}, idmp=("p2", b"req-1"))  # another producer: its own limit
    assert store.xadd("s", {"f": 1}, idmp=("p1", b"req-1")) != ids[1]  # req-2 goes
    assert store.xadd("s", {"f": 3}, idmp=("p1", b"req-3")) == ids[3]
    assert store.xlen("s") == 7
    assert idmp(store) == {"idmp-duration": 100, "idmp-maxsize": 3, "pids-tracked": 2,
                           "iids-tracked": 4, "iids-added": 6, "iids-duplicates": 2}  # fmt: skip


def test_wraparound_keeps_the_last_entries(store: rstore.Store) -> None:
    """Redis's 'XCFGSET IDMP-MAXSIZE wraparound keeps last 8 entries'."""
    store.xadd("s", {"init": "1"})
    store.xcfgset("s", idmp_maxsize=8)
    for n in range(1, 101):
        store.xadd("s", {"f": n}, idmp=("p", b"req-%d" % n))
    for n in [*range(93, 101), *range(1, 93)]:  # the last 8 are remembered, the others not
        store.xadd("s", {"f": n}, idmp=("p", b"req-%d" % n))
    assert store.xlen("s") == 1 + 100 + 92
    assert idmp(store)["iids-tracked"] == 8


def test_iids_expire_after_the_duration(store: rstore.Store) -> None:
    store.xadd("s", {"init": "1"})
    store.xcfgset("s", idmp_duration=1)
    first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) == first
    time.sleep(1.1)
    assert idmp(store)["iids-tracked"] == 0  # XINFO leaves out what is over
    assert idmp(store)["pids-tracked"] == 0
    assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) != first
    assert idmp(store)["iids-tracked"] == 1
    assert idmp(store)["iids-added"] == 2


def test_xcfgset_forgets_only_on_a_change(store: rstore.Store) -> None:
    store.xadd("s", {"init": "1"})
    first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    assert store.execute("XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100") == "OK"
    assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) == first
    assert store.execute("XCFGSET", "s", "idmp-duration", "120") == "OK"
    assert idmp(store) == {"idmp-duration": 120, "idmp-maxsize": 100, "pids-tracked": 0,
                           "iids-tracked": 0, "iids-added": 1, "iids-duplicates": 2}  # fmt: skip
    assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) != first
    assert store.xlen("s") == 3


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ((), "ERR At least one parameter must be specified"),
        (("IDMP-DURATION",), "ERR syntax error"),
        (("INVALID", "1"), "ERR syntax error"),
        (("IDMP-DURATION", "INVALID", "IDMP-MAXSIZE"), NOT_INTEGER),
        (("IDMP-DURATION", "3.14"), NOT_INTEGER),
        (("IDMP-DURATION", "0"), "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
        (("IDMP-DURATION", "86401"), "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
        (("IDMP-MAXSIZE", "-50"), "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
        (("IDMP-MAXSIZE", "10001"), "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
        (("IDMP-MAXSIZE", "5", "IDMP-MAXSIZE", "6"), "ERR IDMP-MAXSIZE specified multiple times"),
        (("IDMP-MAXSIZE", "5", "IDMP-DURATION", "0"),
         "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
    ],
)  # fmt: skip
def test_xcfgset_refusals_change_nothing(
    store: rstore.Store, argv: tuple[str, ...], line: str
) -> None:
    store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    assert refused(store, "XCFGSET", "s", *argv) == line
    assert idmp(store)["idmp-maxsize"] == 100
    assert idmp(store)["iids-tracked"] == 1


def test_xcfgset_needs_the_key_first(store: rstore.Store) -> None:
    assert refused(store, "XCFGSET", "nokey", "IDMP-MAXSIZE", "0") == "ERR no such key"
    assert refused(store, "XCFGSET") == "ERR wrong number of arguments for 'xcfgset' command"
    assert store.exists("nokey") == 0


def test_xinfo_places_the_fields_after_the_recorded_first_id(store: rstore.Store) -> None:
    store.xadd("s", {"f": "v"}, id="1-1")
    for full in ((), ("FULL",)):
        reply = store.execute("XINFO", "STREAM", "s", *full)
        keys = [k.decode() for k in reply[0::2]]
        at = keys.index("recorded-first-entry-id") + 1
        assert tuple(keys[at : at + 6]) == FIELDS
        assert reply[2 * at + 1 : 2 * at + 12 : 2] == [100, 100, 0, 0, 0, 0]
    assert len(store.execute("XINFO", "STREAM", "s")) == 32
    assert len(store.execute("XINFO", "STREAM", "s", "FULL")) == 30


def test_store_settings_give_new_streams_their_values(store: rstore.Store) -> None:
    store.xadd("old", {"f": "v"})
    assert store.config_set("stream-idmp-duration", 300)
    assert store.config_set("stream-idmp-maxsize", 7)
    assert store.config_get("stream-idmp-*") == {
        "stream-idmp-duration": "300", "stream-idmp-maxsize": "7"
    }  # fmt: skip
    store.xadd("new", {"f": "v"})
    assert idmp(store, "new")["idmp-duration"] == 300
    assert idmp(store, "new")["idmp-maxsize"] == 7
    assert store.config_set("stream-idmp-maxsize", 9)
    assert idmp(store, "new")["idmp-maxsize"] == 7  # taken when the stream was created


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("stream-idmp-duration", "0", "argument must be between 1 and 86400 inclusive"),
        ("stream-idmp-duration", "86401", "argument must be between 1 and 86400 inclusive"),
        ("stream-idmp-maxsize", "10001", "argument must be between 1 and 10000 inclusive"),
        ("stream-idmp-maxsize", "x", "argument couldn't be parsed into an integer"),
    ],
)
def test_store_setting_bounds(store: rstore.Store, name: str, value: str, reason: str) -> None:
    line = f"ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"
    assert refused(store, "CONFIG", "SET", name, value) == line


def test_del_restore_and_flushall_forget_rename_keeps(store: rstore.Store) -> None:
    restored = store.xadd("r", {"f": "v"}, idmp=("p", b"1"))
    store.restore("r", 0, store.dump("r"), replace=True)  # DUMP carries no idempotency
    assert store.xadd("r", {"f": "v"}, idmp=("p", b"1")) != restored
    first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    store.rename("s", "t")
    assert store.xadd("t", {"f": "v"}, idmp=("p", b"1")) == first
    store.delete("t")
    store.xadd("t", {"f": "v"}, idmp=("p", b"1"))  # a new stream, which remembers nothing
    assert (store.xlen("t"), idmp(store, "t")["iids-duplicates"]) == (1, 0)
    assert idmp(store, "t")["iids-added"] == 1
    store.flushall()
    store.xadd("t", {"f": "v"}, idmp=("p", b"1"))
    assert idmp(store, "t")["iids-added"] == 1
    assert store.check() == []


def test_a_pipeline_and_multi_see_their_own_iids(store: rstore.Store) -> None:
    pipe = store.pipeline(transaction=True)
    pipe.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    pipe.xadd("s", {"f": "w"}, idmp=("p", b"1"))
    first, second = pipe.execute()
    assert first == second
    assert store.xlen("s") == 1


def test_the_client_checks_redis_py_does(store: rstore.Store) -> None:
    for call in (
        lambda: store.xadd("s", {"f": "v"}, idmpauto="p", idmp=("p", b"1")),
        lambda: store.xadd("s", {"f": "v"}, id="1-1", idmpauto="p"),
        lambda: store.xadd("s", {"f": "v"}, idmp="p"),  # type: ignore[arg-type]
        lambda: store.xadd("s", {"f": "v"}, idmp=("p",)),  # type: ignore[arg-type]
        lambda: store.xcfgset("s"),
        lambda: store.xcfgset("s", idmp_duration=301),
        lambda: store.xcfgset("s", idmp_maxsize=0),
    ):
        with pytest.raises(rstore.DataError):
            call()
    assert store.exists("s") == 0


# ----------------------------------------------------------------------------- durability


def test_what_is_remembered_survives_a_reopen(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        store.xadd("s", {"init": "1"})
        store.xcfgset("s", idmp_maxsize=50)
        first = store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    with rstore.Store(tmp_path / "s") as store:
        assert store.xadd("s", {"f": "v"}, idmp=("p", b"1")) == first
        assert list(idmp(store).values()) == [100, 50, 1, 1, 1, 1]


_PRODUCER = """
import os, sys, rstore
store = rstore.Store(sys.argv[1])
n = int(sys.argv[2])
for i in range(n):
    entry = store.xadd("s", {"n": i}, idmpauto="producer")
    if i == n - 1:
        sys.stdout.write(entry.decode() + "\\n")
        sys.stdout.flush()
        os.kill(os.getpid(), 9)  # the XADD committed; its reply never reaches anyone
"""


def test_a_producer_killed_after_its_commit_gets_the_same_id_when_it_retries(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "s")
    run = subprocess.run(
        [sys.executable, "-c", _PRODUCER, path, "25"],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == -signal.SIGKILL, run.stderr
    committed = run.stdout.strip().encode()
    with rstore.Store(path) as store:
        for i in range(25):  # the restarted producer sends everything again
            store.xadd("s", {"n": i}, idmpauto="producer")
        assert store.xlen("s") == 25
        assert store.xadd("s", {"n": 24}, idmpauto="producer") == committed
        assert idmp(store)["iids-duplicates"] == 26


def test_processes_share_what_is_remembered(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    with rstore.Store(path) as store:
        store.xadd("s", {"init": "1"})
        store.xcfgset("s", idmp_maxsize=1000)  # a process behind the others finds them all
    script = (
        "import sys, rstore\n"
        "with rstore.Store(sys.argv[1]) as store:\n"
        "    for i in range(200):\n"
        "        store.xadd('s', {'n': i}, idmp=('shared', b'%d' % i))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, path]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with rstore.Store(path) as store:
        assert store.xlen("s") == 201
        assert [int(f[b"n"]) for _, f in store.xrange("s")[1:]] == list(range(200))
        assert idmp(store)["iids-added"] == 200
        assert idmp(store)["iids-duplicates"] == 400
        assert idmp(store)["iids-tracked"] == 200


# ----------------------------------------------------------------------------- a model


class IdempotencyMachine(RuleBasedStateMachine):
    """Random XADD IDMP / XCFGSET / XDEL / reopen against a model of Redis 8.6's rules (the
    duration is long enough that nothing expires)."""

    @initialize()
    def open(self) -> None:
        self.path = tempfile.mkdtemp(prefix="rstore-idmp-")
        self.store = rstore.Store(self.path, sync=False)
        self.store.xadd("s", {"init": "1"})
        self.store.xcfgset("s", idmp_duration=300)
        self.maxsize = 100
        self.held: dict[str, list[tuple[str, bytes]]] = {}
        self.added = self.duplicates = 0

    @rule(pid=st.sampled_from(["a", "b", "c"]), iid=st.integers(0, 7), auto=st.booleans())
    def xadd(self, pid: str, iid: int, auto: bool) -> None:
        fields = {"v": iid}
        option: dict[str, Any] = {"idmpauto": pid} if auto else {"idmp": (pid, b"%d" % iid)}
        key = ("auto" if auto else "iid") + str(iid)
        held = self.held.setdefault(pid, [])
        known = dict(held)
        got = self.store.xadd("s", fields, **option)
        if key in known:
            assert got == known[key]
            self.duplicates += 1
            return
        held.append((key, got))
        self.added += 1
        if len(held) > self.maxsize:
            held.pop(0)

    @rule(maxsize=st.integers(1, 4))
    def xcfgset(self, maxsize: int) -> None:
        self.store.xcfgset("s", idmp_maxsize=maxsize)
        if maxsize != self.maxsize:
            self.held = {}
            self.maxsize = maxsize

    @rule()
    def xdel_last(self) -> None:
        last = self.store.xrevrange("s", count=1)
        if last:
            self.store.xdel("s", last[0][0])  # the iids stay remembered

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = rstore.Store(self.path, sync=False)

    @invariant()
    def counters(self) -> None:
        if not hasattr(self, "store"):
            return
        held = {p: h for p, h in self.held.items() if h}
        assert idmp(self.store) == {
            "idmp-duration": 300, "idmp-maxsize": self.maxsize, "pids-tracked": len(held),
            "iids-tracked": sum(len(h) for h in held.values()), "iids-added": self.added,
            "iids-duplicates": self.duplicates,
        }  # fmt: skip

    def teardown(self) -> None:
        if hasattr(self, "store"):
            try:
                assert self.store.check() == []
            finally:
                self.store.close()
                shutil.rmtree(self.path)


TestIdempotencyMachine = IdempotencyMachine.TestCase
TestIdempotencyMachine.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


def test_salvage_says_idempotency_is_not_carried(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "src") as store:
        store.xadd("s", {"f": "v"}, idmp=("p", b"1"))
    report = rstore.salvage_store(tmp_path / "src", tmp_path / "dst")
    assert report.entries == 1
    assert any("idempotent production" in line for line in report.lost)
    assert not report.complete
    with rstore.Store(tmp_path / "dst") as store:
        assert idmp(store)["iids-added"] == 0
        assert store.xlen("s") == 1


def test_xidmprecord_records_an_iid_for_an_entry(store: rstore.Store) -> None:
    """Redis 8.8's XIDMPRECORD (what its AOF rewrite writes): afterwards an XADD of that iid is
    a duplicate of the entry."""
    entry = store.xadd("s", {"f": "v"})
    assert store.execute("XIDMPRECORD", "s", "p", "i", entry) == "OK"
    assert store.execute("XIDMPRECORD", "s", "p", "i", entry) == "OK"  # the same: no change
    assert store.xadd("s", {"f": "w"}, idmp=("p", b"i")) == entry
    other = store.xadd("s", {"f": "x"})
    for args, line in (
        (("p", "i", other), "ERR IID already exists for this producer with a different stream ID"),
        (("p", "j", "9-0"), "ERR No such message in stream"),
        (("", "i", entry), "ERR producer ID must be non-empty"),
        (("p", "", entry), "ERR idempotent ID must be non-empty"),
        (("p", "i", "bad"), INVALID_ID),
    ):
        assert refused(store, "XIDMPRECORD", "s", *args) == line
    assert refused(store, "XIDMPRECORD", "nokey", "p", "i", entry) == "ERR no such key"
    assert idmp(store)["iids-added"] == 1
