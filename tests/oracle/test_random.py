"""Seeded random differential test: long command sequences, every reply compared exactly.

A failure names the seed, the step, and the commands that led there (replay them with
``CommandGenerator(seed)``), under the node limits of the parameter.  The runner is shared with
``test_random_groups.py`` (:mod:`.random_runner`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .randgen import CommandGenerator
from .random_runner import run_random
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


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("node_entries", "node_bytes"), NODE_LIMITS)
def test_random_sequences(
    valkey: RespClient, tmp_path: Path, seed: int, node_entries: int, node_bytes: int
) -> None:
    run_random(
        valkey,
        tmp_path,
        CommandGenerator,
        seed * 1000 + node_entries * 7 + node_bytes,
        (node_entries, node_bytes),
        STEPS,
    )
