"""One test per class of damage issue 8 names, each at a place chosen on purpose.

The population plants values (``population.VALUE_MARK``, ``STREAM_MARK``, ...) that the named
record holds; ``locate`` finds their bytes in ``data.mdb`` and damages them.  The damage is in
live data a user reads, so the store must notice: refuse (an ``rstore.RStoreError``) or have
``check()`` flag it.  ``clean`` would mean the damage went unseen; crashes, hangs, foreign
exceptions and wrong answers with a clean ``check()`` are the failures the issue counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from . import locate
from .mutations import PAGE
from .outcome import Outcome, classify
from .population import BIG_MARK, GROUP_MARK, PEL_MARK, STREAM_MARK, VALUE_MARK
from .runner import Prepared, damaged_copy, run_copy

SEED = 1
DETECTED = ("refused", "flagged")


def outcome_after(
    prep: Prepared, name: str, damage: Callable[[Path], object]
) -> tuple[Outcome, str]:
    """Damage a copy with ``damage(data_mdb)`` and run the battery on it in a child."""
    path = damaged_copy(prep, prep.workdir / name, None)
    where = damage(path / "data.mdb")
    outcome = classify(run_copy(prep, path, timeout=10))
    return outcome, f"{name} ({where}): {outcome.name}: {outcome.reason}"


def assert_detected(prep: Prepared, name: str, damage: Callable[[Path], object]) -> None:
    outcome, report = outcome_after(prep, name, damage)
    assert outcome.name in DETECTED, report


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda size: (size // PAGE // 2) * PAGE, id="half-page-aligned"),
        pytest.param(lambda size: size // 2 + 1234, id="mid-page"),
    ],
)
def test_truncated_file(prepared: Callable[[int], Prepared], cut: Callable[[int], int]) -> None:
    prep = prepared(SEED)

    def truncate(path: Path) -> str:
        size = cut(path.stat().st_size)
        os.truncate(path, size)
        return f"truncated to {size} bytes"

    assert_detected(prep, "truncated", truncate)


def test_zeroed_page_under_a_streams_nodes(prepared: Callable[[int], Prepared]) -> None:
    """The LMDB page holding the small node of ``marked`` (with other small nodes)."""
    prep = prepared(SEED)
    assert_detected(
        prep, "zeroed-leaf", lambda p: f"pages {locate.zero_pages_holding(p, VALUE_MARK)}"
    )


def test_zeroed_overflow_page_of_a_large_node(prepared: Callable[[int], Prepared]) -> None:
    """A page of a 4 KB node of ``big`` (LMDB keeps such values in overflow pages)."""
    prep = prepared(SEED)
    assert_detected(
        prep, "zeroed-overflow", lambda p: f"pages {locate.zero_pages_holding(p, BIG_MARK)}"
    )


def test_bit_flipped_in_a_node_value(prepared: Callable[[int], Prepared]) -> None:
    prep = prepared(SEED)
    assert_detected(
        prep, "value-bit", lambda p: f"offsets {locate.flip_in_bytes(p, VALUE_MARK, 5)}"
    )


def test_bit_flipped_in_a_stream_metadata_record(prepared: Callable[[int], Prepared]) -> None:
    """``entries-added`` of ``marked`` changes by 2."""
    prep = prepared(SEED)
    assert_detected(
        prep, "stream-meta-bit", lambda p: f"offsets {locate.flip_in_number(p, STREAM_MARK)}"
    )


def test_bit_flipped_in_a_group_record(prepared: Callable[[int], Prepared]) -> None:
    """``entries-read`` of ``marked``'s group changes by 2."""
    prep = prepared(SEED)
    assert_detected(prep, "group-bit", lambda p: f"offsets {locate.flip_in_number(p, GROUP_MARK)}")


def test_bit_flipped_in_a_pel_record(prepared: Callable[[int], Prepared]) -> None:
    """The delivery count of ``marked``'s pending entry changes by 2."""
    prep = prepared(SEED)
    assert_detected(prep, "pel-bit", lambda p: f"offsets {locate.flip_in_number(p, PEL_MARK)}")
