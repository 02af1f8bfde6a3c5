"""``Store.execute_many(..., waiting=)``: a front's parked reads served after each command
that writes to their streams, in the order they blocked (Valkey's rule), inside the batch's
one transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

import rstore


@pytest.fixture
def store(tmp_path: Path) -> rstore.Store:
    with rstore.Store(tmp_path / "s", sync=False) as s:
        s.execute("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        yield s


def _park(store: rstore.Store, *reads: list[bytes]) -> list[rstore.BlockedCall]:
    calls = store.execute_many(list(reads))
    assert all(isinstance(c, rstore.BlockedCall) for c in calls)
    return calls


def _group_read(consumer: bytes, count: int) -> list[bytes]:
    return [b"XREADGROUP", b"GROUP", b"g", consumer, b"COUNT", b"%d" % count, b"BLOCK", b"0",
            b"STREAMS", b"s", b">"]  # fmt: skip


def _xadds(first: int, last: int, key: bytes = b"s") -> list[list[bytes]]:
    return [[b"XADD", key, b"%d-0" % i, b"n", b"%d" % i] for i in range(first, last + 1)]


def _entry(i: int) -> list[bytes | list[bytes]]:
    return [b"%d-0" % i, [b"n", b"%d" % i]]


def test_each_read_is_served_after_the_first_command_that_can_serve_it(
    store: rstore.Store,
) -> None:
    calls = _park(store, _group_read(b"a", 5), _group_read(b"b", 5),
                  [b"XREAD", b"COUNT", b"100", b"BLOCK", b"0", b"STREAMS", b"s", b"$"])  # fmt: skip
    results = store.execute_many(_xadds(1, 10), waiting=calls)
    assert results[:10] == [b"%d-0" % i for i in range(1, 11)]
    assert results[10:] == [[[b"s", [_entry(1)]]], [[b"s", [_entry(2)]]], [[b"s", [_entry(1)]]]]
    assert store.execute("XPENDING", "s", "g")[3] == [[b"a", b"1"], [b"b", b"1"]]


def test_reads_keep_their_order_and_a_read_no_write_touched_does_not_run(
    store: rstore.Store,
) -> None:
    a, b = _park(store, _group_read(b"a", 1), _group_read(b"b", 1))
    other = _park(store, [b"XREAD", b"BLOCK", b"0", b"STREAMS", b"t", b"$"])[0]
    # b first in line is served first; a still waits -- its look (its group has read all
    # of the stream) kept it from running again -- and so does the read of t, untouched
    results = store.execute_many(_xadds(1, 1), waiting=[b, a, other])
    assert results[1] == [[b"s", [_entry(1)]]]
    assert results[2] is a and results[3] is other
    # a batch of reads wakes nothing: every read is handed back as it was
    assert store.execute_many([[b"XLEN", b"s"]], waiting=[a, other])[1:] == [a, other]


def test_a_read_sees_only_the_writes_before_it_and_the_commands_after_see_its_writes(
    store: rstore.Store,
) -> None:
    (a,) = _park(store, _group_read(b"a", 10))
    results = store.execute_many(
        [*_xadds(1, 2), [b"XPENDING", b"s", b"g"], *_xadds(3, 3)], waiting=[a]
    )
    assert results[2][0] == 1  # its delivery of 1-0 was there for XPENDING
    assert results[4] == [[b"s", [_entry(1)]]]
