"""Seeded random differential test with consumer groups: XADD / XDEL / XTRIM / XSETID mixed with
XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO and close/reopen.

Every reply is compared (time fields within a tolerance, see :mod:`.timed`) and after every step
``Store.check()`` must find nothing.  A failure names the seed, the step and the last commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Oracle, short
from .randgen import Argv
from .randgen_groups import REOPEN, GroupCommandGenerator
from .resp import RespClient
from .timed import timed_difference

pytestmark = pytest.mark.oracle

STEPS = 700
SEEDS = (1, 2, 3)
NODE_LIMITS = [(1, 4096), (2, 4096), (10, 4096), (100, 4096), (10, 300)]


def fail(seed: int, step: int, history: list[Argv], message: str) -> None:
    tail = "\n".join(f"    {short(a, 300)}" for a in history[-30:])
    pytest.fail(f"seed {seed}, step {step}: {message}\n  last commands:\n{tail}", pytrace=False)


def run_sequence(oracle: Oracle, seed: int, steps: int) -> None:
    gen = GroupCommandGenerator(seed)
    history: list[Argv] = []
    for step in range(steps):
        argv = gen.command()
        history.append(argv)
        if argv == REOPEN:
            oracle.reopen()
        else:
            expected, actual = oracle.pair(*argv)
            problem = timed_difference(argv, expected, actual)
            if problem is not None:
                fail(
                    seed,
                    step,
                    history,
                    f"rstore differs from valkey ({problem})\n  argv:   {short(argv)}\n"
                    f"  valkey: {short(expected)}\n  rstore: {short(actual)}",
                )
            gen.observe(argv, expected)
        assert oracle.store is not None
        problems = oracle.store.check()
        if problems:
            fail(seed, step, history, f"Store.check() after {short(argv)}: {problems}")
    oracle.assert_same_state()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("node_entries", "node_bytes"), NODE_LIMITS)
def test_random_group_sequences(
    valkey: RespClient, tmp_path: Path, seed: int, node_entries: int, node_bytes: int
) -> None:
    oracle = Oracle(
        valkey,
        tmp_path / "store",
        sync=False,
        node_max_entries=node_entries,
        node_max_bytes=node_bytes,
    )
    try:
        run_sequence(oracle, seed * 7919 + node_entries * 13 + node_bytes, STEPS)
    finally:
        oracle.close()
