"""Single XADD, one command and one commit per call: rstore beside valkey, in one run.

* durable: ``rstore.Store(sync=True)`` vs valkey ``--appendfsync always`` (target >= 1.5x);
* relaxed: ``rstore.Store(sync=False)`` vs valkey ``--appendfsync everysec`` (target >= 3x).

The targets are issue 23's.

Each side appends the same fields to an empty stream with an automatic ID; every call is timed
on its own (latency percentiles) and the rate is calls / wall time of the timed blocks.  The two
sides run in alternating blocks so they share the machine's noise.

What each durable commit asks of the disk (flushes, pages written) is counted by
``bench/syscalls.py``.

    python bench/xadd_single.py --repeat 3
"""

from __future__ import annotations

import sys

from common import (
    FIELDS,
    FSYNC_FOR_SYNC,
    STREAM,
    Result,
    Valkey,
    durability_main,
    interleave,
    percentiles,
    rate_result,
    temp_store,
    time_each,
)

# (timed calls per side, warm-up calls per side, alternating blocks)
SIZES = {
    (True, False): (3000, 100, 10),
    (True, True): (300, 20, 4),
    (False, False): (30000, 2000, 10),
    (False, True): (3000, 200, 4),
}
TARGETS = {True: 1.5, False: 3.0}  # issue 23


def workload_name(sync: bool) -> str:
    return "single XADD, durable" if sync else "single XADD, relaxed"


def mode_name(sync: bool) -> str:
    return f"rstore sync={sync} / valkey appendfsync {FSYNC_FOR_SYNC[sync]}"


def run(*, sync: bool, quick: bool = False, base_dir: str | None = None) -> Result:
    """One side-by-side run of the single-XADD workload in one durability mode."""
    total, warm, rounds = SIZES[(sync, quick)]
    with (
        temp_store(sync, base_dir) as store,
        Valkey(FSYNC_FOR_SYNC[sync], base_dir=base_dir) as valkey,
    ):
        client = valkey.client()

        def rstore_xadd() -> object:
            return store.xadd(STREAM, FIELDS)

        def valkey_xadd() -> object:
            return client.xadd(STREAM, FIELDS)

        time_each(rstore_xadd, warm)
        time_each(valkey_xadd, warm)
        timed = interleave(
            {
                "rstore": lambda n: time_each(rstore_xadd, n),
                "valkey": lambda n: time_each(valkey_xadd, n),
            },
            total,
            rounds,
        )
        if store.xlen(STREAM) != client.xlen(STREAM) or store.xlen(STREAM) != total + warm:
            raise RuntimeError("the two sides do not hold the same number of entries")

    (r_samples, r_wall), (v_samples, v_wall) = timed["rstore"], timed["valkey"]
    return rate_result(
        workload=workload_name(sync),
        mode=mode_name(sync),
        target=TARGETS[sync],
        rstore_rate=total / r_wall,
        valkey_rate=total / v_wall,
        rstore_latency_ms=percentiles(r_samples, 1e3),
        valkey_latency_ms=percentiles(v_samples, 1e3),
        latency_of="one XADD",
        calls=total,
    )


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    return [run(sync=sync, quick=quick, base_dir=base_dir) for sync in (True, False)]


def main(argv: list[str] | None = None) -> int:
    return durability_main(__doc__.split("\n\n")[0], run, argv)


if __name__ == "__main__":
    sys.exit(main())
