"""Seeded random differential test: long command sequences, every reply compared exactly.

A failure names the seed, the step, and the commands that led there (replay them with
``CommandGenerator(seed)``), under the node limits of the parameter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Oracle, short
from .randgen import Argv, CommandGenerator
from .resp import RespClient

pytestmark = pytest.mark.oracle

STEPS = 1500
SEEDS = (1, 2, 3, 4)
NODE_LIMITS = [
    # (stream-node-max-entries, stream-node-max-bytes)
    (1, 4096),
    (2, 4096),
    (10, 4096),
    (100, 4096),
    (100, 300),
    (10, 300),
    (100, 0),
    (0, 300),
]


def run_sequence(oracle: Oracle, seed: int, steps: int) -> None:
    gen = CommandGenerator(seed)
    history: list[Argv] = []
    for step in range(steps):
        argv = gen.command()
        history.append(argv)
        expected, actual = oracle.pair(*argv)
        if actual != expected:
            tail = "\n".join(f"    {short(a, 300)}" for a in history[-25:])
            pytest.fail(
                f"seed {seed}, step {step}: rstore differs from valkey\n"
                f"  argv:   {short(argv)}\n  valkey: {short(expected)}\n"
                f"  rstore: {short(actual)}\n  last commands:\n{tail}",
                pytrace=False,
            )
        gen.observe(argv, expected)
    oracle.assert_same_state()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("node_entries", "node_bytes"), NODE_LIMITS)
def test_random_sequences(
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
        run_sequence(oracle, seed * 1000 + node_entries * 7 + node_bytes, STEPS)
    finally:
        oracle.close()
