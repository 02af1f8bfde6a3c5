"""Seeded random differential test with consumer groups: XADD / XDEL / XTRIM / XSETID mixed with
XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO and close/reopen.

Every reply is compared (time fields within a tolerance, see :mod:`.timed`) and after every step
``Store.check()`` must find nothing.  Each sequence runs beside valkey-server 8.0 and beside
Redis 8.2.3; beside valkey, the groups' ``lag`` and ``entries-read`` are left out (rstore
computes them as Redis 8.2.3 does, :mod:`.lagless`).  A failure names the seed, the step and
the last commands.  The runner is shared with ``test_random.py`` (:mod:`.random_runner`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Oracle
from .lagless import lagless_difference, same_state
from .randgen_groups import GroupCommandGenerator
from .random_runner import run_random
from .timed import timed_difference

pytestmark = pytest.mark.oracle

STEPS = 700
SEEDS = (1, 2, 3)
NODE_LIMITS = [(1, 4096), (2, 4096), (10, 4096), (100, 4096), (10, 300)]


@pytest.mark.parametrize("server", ["valkey", "redis8"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("node_entries", "node_bytes"), NODE_LIMITS)
def test_random_group_sequences(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    server: str,
    seed: int,
    node_entries: int,
    node_bytes: int,
) -> None:
    """Beside valkey the lag fields are left out; beside Redis 8.2.3 they are compared."""
    lagless = server == "valkey"
    run_random(
        request.getfixturevalue(server),
        tmp_path,
        GroupCommandGenerator,
        seed * 7919 + node_entries * 13 + node_bytes,
        (node_entries, node_bytes),
        STEPS,
        difference=lagless_difference if lagless else timed_difference,
        check_store=True,
        final_state=same_state if lagless else Oracle.assert_same_state,
    )
