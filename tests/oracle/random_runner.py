"""The runner of the seeded random differential tests (``test_random.py``,
``test_random_groups.py``): a generator's commands run on valkey and rstore, step by step.

Each reply pair is compared (exactly, or by a ``difference`` function such as
:func:`.timed.timed_difference`, which allows time fields a tolerance); a ``("REOPEN",)`` step
closes and reopens the store; with ``check_store``, ``Store.check()`` must find nothing after
every step; at the end both sides must hold the same data.  A failure names the seed, the
step, the commands that led there (replay them with the generator and the seed) and the node
limits of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from .harness import Oracle, short
from .randgen import Argv
from .randgen_groups import REOPEN
from .resp import RespClient

__all__ = ["Difference", "exact_difference", "run_random", "run_sequence"]

HISTORY_SHOWN = 30  # the commands a failure lists

#: ``(argv, valkey's reply, rstore's reply)`` -> ``None`` when they match, else what differs.
Difference = Callable[[Argv, Any, Any], "str | None"]


class Generator(Protocol):
    def command(self) -> Argv: ...
    def observe(self, argv: Argv, reply: Any) -> None: ...


def exact_difference(argv: Argv, expected: Any, actual: Any) -> str | None:
    return None if actual == expected else "the replies differ"


def _fail(where: str, step: int, history: list[Argv], message: str) -> None:
    tail = "\n".join(f"    {short(a, 300)}" for a in history[-HISTORY_SHOWN:])
    pytest.fail(f"{where}, step {step}: {message}\n  last commands:\n{tail}", pytrace=False)


def run_sequence(
    oracle: Oracle,
    gen: Generator,
    steps: int,
    *,
    where: str,
    difference: Difference = exact_difference,
    check_store: bool = False,
    final_state: Callable[[Oracle], None] = Oracle.assert_same_state,
) -> None:
    """``steps`` commands of ``gen`` on both sides of ``oracle`` (``where`` names the run in
    failures: its seed and settings), then ``final_state`` compares the whole state."""
    history: list[Argv] = []
    for step in range(steps):
        argv = gen.command()
        history.append(argv)
        if argv == REOPEN:
            oracle.reopen()
        else:
            expected, actual = oracle.pair(*argv)
            problem = difference(argv, expected, actual)
            if problem is not None:
                _fail(
                    where,
                    step,
                    history,
                    f"rstore differs from valkey ({problem})\n  argv:   {short(argv)}\n"
                    f"  valkey: {short(expected)}\n  rstore: {short(actual)}",
                )
            gen.observe(argv, expected)
        if check_store:
            assert oracle.store is not None
            problems = oracle.store.check()
            if problems:
                _fail(where, step, history, f"Store.check() after {short(argv)}: {problems}")
    final_state(oracle)


def run_random(
    valkey: RespClient,
    tmp_path: Path,
    make_generator: Callable[[int], Generator],
    seed: int,
    node_limits: tuple[int, int],
    steps: int,
    *,
    difference: Difference = exact_difference,
    check_store: bool = False,
    final_state: Callable[[Oracle], None] = Oracle.assert_same_state,
) -> None:
    """One seeded run on a fresh store (commits not fsynced) with the node limits
    ``(stream-node-max-entries, stream-node-max-bytes)`` on both sides."""
    node_entries, node_bytes = node_limits
    oracle = Oracle(
        valkey,
        tmp_path / "store",
        sync=False,
        node_max_entries=node_entries,
        node_max_bytes=node_bytes,
    )
    try:
        run_sequence(
            oracle,
            make_generator(seed),
            steps,
            where=f"seed {seed}, node limits {node_entries} entries / {node_bytes} bytes",
            difference=difference,
            check_store=check_store,
            final_state=final_state,
        )
    finally:
        oracle.close()
