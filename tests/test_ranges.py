"""``rstore.iter_range``: a range read page by page, in pages sized by bytes, as the iteration
goes -- the same entries XRANGE / XREVRANGE give in one call."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore

MAX = 18446744073709551615


class Spy:
    """A store whose XRANGE / XREVRANGE calls are recorded (``iter_range`` needs ``execute``)."""

    def __init__(self, store: rstore.Store) -> None:
        self.store = store
        self.counts: list[int] = []

    def execute(self, *argv: Any) -> Any:
        self.counts.append(int(argv[-1]))
        return self.store.execute(*argv)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "s") as s:
        pipe = s.pipeline()
        for i in range(1, 2501):
            pipe.execute_command("XADD", "s", f"{i // 3}-{i % 3}", "f", str(i), "f", "again")
        pipe.execute()
        yield s


def _all(store: rstore.Store, *argv: Any) -> list[Any]:
    return [tuple(item) for item in store.execute(*argv) or []]  # COUNT 0: nil


@pytest.mark.parametrize(
    ("start", "end"), [("-", "+"), ("5", "300"), ("(5-1", "(300-2"), ("700", "+"), ("9", "3")]
)
@pytest.mark.parametrize("count", [None, 0, 1, 7, 1500, 5000])
def test_the_same_entries_as_one_xrange(
    store: rstore.Store, start: str, end: str, count: int | None
) -> None:
    tail = [] if count is None else ["COUNT", count]
    forward = list(rstore.iter_range(store, "s", start, end, count=count))
    assert forward == _all(store, "XRANGE", "s", start, end, *tail)
    backward = list(rstore.iter_range(store, "s", start, end, count=count, reverse=True))
    assert backward == _all(store, "XREVRANGE", "s", end, start, *tail)
    assert all(fields[0::2] == [b"f", b"f"] for _, fields in forward)  # repeats kept


def test_a_missing_stream_and_bad_bounds(store: rstore.Store) -> None:
    assert list(rstore.iter_range(store, "nope")) == []
    with pytest.raises(rstore.ResponseError, match="Invalid stream ID"):
        list(rstore.iter_range(store, "s", "bad"))


def test_pages_grow_while_entries_are_small_and_output_starts_at_once(
    store: rstore.Store,
) -> None:
    spy = Spy(store)
    entries = rstore.iter_range(spy, "s")  # type: ignore[arg-type]
    next(entries)
    assert spy.counts == [1]  # one entry read before the first is given out
    rest = list(entries)
    assert len(rest) == 2499
    assert spy.counts[:4] == [1, 2, 4, 8]
    assert max(spy.counts) == 1000  # max_page


def test_pages_stay_one_entry_when_entries_are_large(tmp_path: Path) -> None:
    big = b"x" * (3 << 20)
    with rstore.Store(tmp_path / "big") as store:
        for i in range(1, 6):
            store.execute("XADD", "b", f"{i}-0", "v", big)
        spy = Spy(store)
        got = [entry_id for entry_id, _ in rstore.iter_range(spy, "b", page_bytes=1 << 20)]  # type: ignore[arg-type]
        assert got == [b"1-0", b"2-0", b"3-0", b"4-0", b"5-0"]
        assert spy.counts == [1] * 6  # one entry a page (the last page finds the end)


def test_ends_at_the_last_possible_id(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "edge") as store:
        store.execute("XADD", "e", "0-1", "a", "1")
        store.execute("XADD", "e", f"{MAX}-{MAX}", "a", "2")
        forward = [i for i, _ in rstore.iter_range(store, "e", max_page=1)]
        assert forward == [b"0-1", f"{MAX}-{MAX}".encode()]
        backward = [i for i, _ in rstore.iter_range(store, "e", reverse=True, max_page=1)]
        assert backward == forward[::-1]


def test_times_are_bounds_too(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "t") as store:
        old = store.execute("XADD", "t", "1000-0", "a", "old")
        new = store.execute("XADD", "t", "*", "a", "new")
        assert [i for i, _ in rstore.iter_range(store, "t", "1h")] == [new]
        assert [i for i, _ in rstore.iter_range(store, "t", "-", "1970-01-01T00:00:01Z")] == [old]
        assert list(itertools.islice(rstore.iter_range(store, "t"), 1)) == [(old, [b"a", b"old"])]
