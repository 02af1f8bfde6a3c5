"""The waiter table's order of group readers (``Notifier.older_waiting``): an older reader of
the same group on all of a reader's streams is served first -- unless its process died, it
waits on only some of the streams, or it is of the process that asks across processes."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rstore.storage.waiting.notify import KIND_GROUP, KIND_READ, Notifier, slot_hash

S, T, G, H = slot_hash(b"s"), slot_hash(b"t"), slot_hash(b"g"), slot_hash(b"h")


@pytest.fixture
def notifier(tmp_path: Path) -> Iterator[Notifier]:
    n = Notifier(str(tmp_path))
    yield n
    n.close()


def test_an_older_reader_of_the_group_on_the_same_streams_comes_first(notifier: Notifier) -> None:
    first, _ = notifier.register(KIND_GROUP, {S}, G, 1)
    later, _ = notifier.register(KIND_GROUP, {S}, G, 2)
    assert notifier.older_waiting({S}, G, later) and not notifier.older_waiting({S}, G, first)
    assert not notifier.older_waiting({S}, H, later)  # another group
    assert not notifier.others_waiting()  # all of them this process's
    assert not notifier.older_waiting({S}, G, later, other_than=os.getpid())


def test_an_older_reader_of_only_some_streams_or_not_of_a_group_does_not(
    notifier: Notifier,
) -> None:
    notifier.register(KIND_GROUP, {S}, G, 1)
    notifier.register(KIND_READ, {S, T}, 0, 2)
    later, _ = notifier.register(KIND_GROUP, {S, T}, G, 3)
    assert not notifier.older_waiting({S, T}, G, later)


def _register_and_wait(
    path: str, ready: multiprocessing.Event, done: multiprocessing.Event
) -> None:
    other = Notifier(path)
    other.register(KIND_GROUP, {S}, G, 9)
    ready.set()
    done.wait(30)


def test_another_living_process_counts_a_dead_one_does_not(
    notifier: Notifier, tmp_path: Path
) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_register_and_wait, args=(str(tmp_path), ready, done))
    proc.start()
    try:
        assert ready.wait(30)
        mine, _ = notifier.register(KIND_GROUP, {S}, G, 1)
        assert notifier.others_waiting()
        assert notifier.older_waiting({S}, G, mine, other_than=os.getpid())
    finally:
        done.set()
        proc.join(30)
    assert not notifier.older_waiting({S}, G, mine, other_than=os.getpid())  # it is gone
