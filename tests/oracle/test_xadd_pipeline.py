"""XADD in pipelines (§2.1): rstore appends runs of ``XADD key * ...`` together; valkey must
agree on every reply and hold byte-identical streams.

Each batch runs on rstore in one ``execute_batch``; valkey then runs the same commands one by
one, with each ``*`` that rstore answered replaced by the ID rstore gave (automatic IDs depend
on the clock), and must give the same replies.  Both streams' DUMP payloads are then compared:
the same nodes, byte for byte, and the same counters.
"""

from __future__ import annotations

import random

import pytest

from rstore import ResponseError

from .harness import Oracle, short
from .resp import ErrorReply

pytestmark = pytest.mark.oracle

KEYS = ["s", "t"]
MAX = "18446744073709551615"


def _command(rng: random.Random) -> list[str]:
    key = rng.choice(KEYS)
    roll = rng.random()
    if roll < 0.85:  # a plain XADD: the run path
        names = ["user", "action"] if rng.random() < 0.7 else rng.sample(["a", "b", "1", "c"], 2)
        vals = [rng.choice(["v", "12345", "-7", "007", "x" * rng.choice([10, 63, 64, 300])])
                for _ in names]  # fmt: skip
        return ["XADD", key, "*", *[x for pair in zip(names, vals) for x in pair]]
    return rng.choice(
        [
            ["XADD", key, "*", "f", "v", "odd"],
            ["XADD", key, "5-*", "f", "v"],
            ["XADD", key, "MAXLEN", "~", "20", "*", "f", "v"],
            ["XADD", "missing", "NOMKSTREAM", "*", "f", "v"],
            ["XDEL", key, "0-1"],
            ["XLEN", key],
        ]
    )


def _rstore_reply(reply: object) -> object:
    return ErrorReply(reply.line) if isinstance(reply, ResponseError) else reply


@pytest.mark.parametrize(
    ("seed", "entries", "max_bytes"),
    [(1, 100, 4096), (2, 7, 4096), (3, 100, 300), (4, 0, 0), (5, 1, 100)],
)
def test_pipelined_xadds_give_valkeys_replies_and_nodes(
    oracle: Oracle, seed: int, entries: int, max_bytes: int
) -> None:
    oracle.set_node_limits(entries, max_bytes)
    store = oracle.store
    assert store is not None
    rng = random.Random(seed)
    for size in (1, 2, 50, 400, 1000):
        batch = [_command(rng) for _ in range(size)]
        if size == 400:  # a stream whose last ID is the largest: "*" is refused after it
            batch[200:200] = [["XADD", "t", f"{MAX}-{MAX}", "f", "v"], ["XADD", "t", "*", "f", "v"]]
        got = [_rstore_reply(r) for r in store.execute_batch(batch)]
        for argv, reply in zip(batch, got):
            if argv[0] == "XADD" and "*" in argv and isinstance(reply, bytes):
                at = argv.index("*")  # the ID (no field or value here is "*")
                argv = [*argv[:at], reply.decode(), *argv[at + 1 :]]
            expected = oracle.on_valkey(*argv)
            assert reply == expected, (
                f"rstore differs from valkey\n  argv:   {short(argv)}\n"
                f"  valkey: {short(expected)}\n  rstore: {short(reply)}"
            )
        if size == 400:
            oracle.both("DEL", "t")
    for key in KEYS:
        assert store.dump(key) == oracle.on_valkey("DUMP", key)
    oracle.assert_same_state()
    oracle.check()


def test_a_batch_looks_up_each_subcommand_of_a_container(oracle: Oracle) -> None:
    """Consecutive commands of one name share their lookup in a batch, except containers: each
    XGROUP / XINFO / CONFIG names its own subcommand (and arity)."""
    store = oracle.store
    assert store is not None
    batch = [
        ["XADD", "s", "1-1", "f", "v"],
        ["XGROUP", "CREATE", "s", "g", "$"],
        ["XGROUP", "DESTROY", "s", "g"],
        ["XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "1"],
        ["XGROUP", "CREATECONSUMER", "s", "g", "c"],
        ["XGROUP", "DELCONSUMER", "s", "g", "c"],
        ["XINFO", "GROUPS", "s"],
        ["XINFO", "CONSUMERS", "s", "g"],
        ["CONFIG", "GET", "stream-node-max-entries"],
        ["CONFIG", "GET", "stream-node-max-bytes"],
    ]
    got = [_rstore_reply(r) for r in store.execute_batch(batch)]
    assert got == [oracle.on_valkey(*argv) for argv in batch]  # no times: c was deleted
