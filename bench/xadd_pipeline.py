"""Batched XADD: pipelines of 1000 XADDs, rstore beside valkey, in one run.

* rstore: ``store.pipeline()`` with 1000 ``xadd`` calls, then ``execute()``: ONE LMDB write
  transaction, so one commit (and with ``sync=True`` one durable flush) per 1000 entries;
* valkey: redis-py ``pipeline(transaction=False)`` with 1000 ``xadd`` calls: one round trip;
  the server appends the batch to its AOF and, with ``always``, fsyncs it before replying.

Both durability pairs are measured: ``sync=True`` vs ``always`` and ``sync=False`` vs
``everysec`` (target >= 5x for each, issue 23). A sample is one whole batch, queueing included;
the rate is entries / wall time of the timed blocks, and batch latencies are reported as
percentiles. The CPU time this process spends in rstore's timed blocks (``time.process_time``:
user and system, the flushes' included) is printed per run as microseconds per entry, a figure
less sensitive to a shared machine's noise than the rates (``rstore_cpu_us_per_entry`` in
--json).

    python bench/xadd_pipeline.py --repeat 3
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from common import (
    FIELDS,
    FSYNC_FOR_SYNC,
    PIPELINE_SIZE,
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

# (timed batches per side, warm-up batches per side, alternating blocks)
SIZES = {False: (40, 3, 8), True: (6, 1, 2)}
TARGET = 5.0  # issue 23


def batch_runner(pipeline_factory: Callable[[], Any]) -> Callable[[], list[Any]]:
    """A function that queues ``PIPELINE_SIZE`` XADDs on a fresh pipeline and executes it
    (an rstore ``Pipeline`` or a redis-py one: the same calls on both)."""

    def one_batch() -> list[Any]:
        pipe = pipeline_factory()
        xadd = pipe.xadd
        for _ in range(PIPELINE_SIZE):
            xadd(STREAM, FIELDS)
        return list(pipe.execute())

    return one_batch


def run(*, sync: bool, quick: bool = False, base_dir: str | None = None) -> Result:
    """One side-by-side run of the pipelined workload in one durability mode."""
    batches, warm, rounds = SIZES[quick]
    with (
        temp_store(sync, base_dir) as store,
        Valkey(FSYNC_FOR_SYNC[sync], base_dir=base_dir) as valkey,
    ):
        client = valkey.client()
        rstore_batch = batch_runner(store.pipeline)
        valkey_batch = batch_runner(lambda: client.pipeline(transaction=False))
        time_each(rstore_batch, warm)
        time_each(valkey_batch, warm)
        cpu = [0.0]

        def rstore_block(n: int) -> list[float]:
            c0 = time.process_time()
            samples = time_each(rstore_batch, n)
            cpu[0] += time.process_time() - c0
            return samples

        timed = interleave(
            {
                "rstore": rstore_block,
                "valkey": lambda n: time_each(valkey_batch, n),
            },
            batches,
            rounds,
        )
        expected = (batches + warm) * PIPELINE_SIZE
        if store.xlen(STREAM) != expected or client.xlen(STREAM) != expected:
            raise RuntimeError("the two sides do not hold the same number of entries")

    (r_samples, r_wall), (v_samples, v_wall) = timed["rstore"], timed["valkey"]
    entries = batches * PIPELINE_SIZE
    cpu_us = cpu[0] / entries * 1e6
    print(f"# rstore sync={sync}: {cpu_us:.2f} µs CPU per entry", flush=True)
    return rate_result(
        workload=f"XADD pipelined {PIPELINE_SIZE}",
        mode=f"rstore sync={sync} / valkey appendfsync {FSYNC_FOR_SYNC[sync]}",
        target=TARGET,
        rstore_rate=entries / r_wall,
        valkey_rate=entries / v_wall,
        rstore_latency_ms=percentiles(r_samples, 1e3),
        valkey_latency_ms=percentiles(v_samples, 1e3),
        latency_of=f"one batch of {PIPELINE_SIZE}",
        batches=batches,
        rstore_cpu_us_per_entry=cpu_us,
    )


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    return [run(sync=sync, quick=quick, base_dir=base_dir) for sync in (True, False)]


def main(argv: list[str] | None = None) -> int:
    return durability_main(__doc__.split("\n\n")[0], run, argv)


if __name__ == "__main__":
    sys.exit(main())
