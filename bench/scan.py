"""Full scan: XRANGE in pages of 1000 over a 100k-entry stream, rstore beside valkey.

Both sides are loaded (untimed) with the same number of entries of the same fields, in
pipelines of 1000.  A scan pages through the whole stream: the first page starts at ``-``, each
next page at ``(`` + the last ID seen (exclusive), ``count=1000``, until a short page.  The scans
alternate between the sides; the rate is entries / wall time of the timed scans.  Page
latencies are reported as percentiles.

A scan reads only, so the durability mode does not matter: rstore is opened with
``sync=False`` and valkey runs with ``appendfsync everysec``.

    python bench/scan.py --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from common import (
    FIELDS,
    PAGE_SIZE,
    PIPELINE_SIZE,
    STREAM,
    Result,
    Valkey,
    add_common_args,
    exit_on_sigterm,
    interleave,
    latency_table,
    percentiles,
    rate_result,
    repeat_runs,
    results_table,
    set_placement,
    temp_store,
    write_json,
)

# (entries in the stream, timed scans per side, warm-up scans per side)
SIZES = {False: (100_000, 6, 1), True: (20_000, 2, 1)}
TARGET = 2.0  # issue 23


def load(pipeline_factory: Callable[[], Any], entries: int) -> None:
    """Append ``entries`` entries in pipelines of ``PIPELINE_SIZE``."""
    done = 0
    while done < entries:
        pipe = pipeline_factory()
        batch = min(PIPELINE_SIZE, entries - done)
        for _ in range(batch):
            pipe.xadd(STREAM, FIELDS)
        pipe.execute()
        done += batch


def full_scan(xrange: Callable[..., Any], page_times: list[float]) -> int:
    """Page through the whole stream; the number of entries seen.  Appends each page's
    duration (seconds) to ``page_times``."""
    clock = time.perf_counter
    seen = 0
    start: Any = "-"
    while True:
        t0 = clock()
        page = xrange(STREAM, start, "+", count=PAGE_SIZE)
        page_times.append(clock() - t0)
        seen += len(page)
        if len(page) < PAGE_SIZE:
            return seen
        start = b"(" + page[-1][0]


def run(*, quick: bool = False, base_dir: str | None = None) -> Result:
    entries, scans, warm = SIZES[quick]
    with temp_store(False, base_dir) as store, Valkey("everysec", base_dir=base_dir) as valkey:
        client = valkey.client()
        load(store.pipeline, entries)
        load(lambda: client.pipeline(transaction=False), entries)
        pages: dict[str, list[float]] = {"rstore": [], "valkey": []}
        counts: dict[str, list[int]] = {"rstore": [], "valkey": []}

        def scanner(name: str, xrange: Callable[..., Any]) -> Callable[[int], list[float]]:
            def sample(n: int) -> list[float]:
                durations = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    counts[name].append(full_scan(xrange, pages[name]))
                    durations.append(time.perf_counter() - t0)
                return durations

            return sample

        sides = {
            "rstore": scanner("rstore", store.xrange),
            "valkey": scanner("valkey", client.xrange),
        }
        for sample in sides.values():
            sample(warm)
        for page_list in pages.values():
            page_list.clear()
        for count_list in counts.values():
            count_list.clear()
        timed = interleave(sides, scans, scans)
        if any(c != entries for name in counts for c in counts[name]):
            raise RuntimeError(f"a scan did not see {entries} entries: {counts}")

    (_, r_wall), (_, v_wall) = timed["rstore"], timed["valkey"]
    return rate_result(
        workload=f"XRANGE full scan, {entries // 1000}k entries, pages of {PAGE_SIZE}",
        mode="read only (rstore sync=False / valkey everysec)",
        target=TARGET,
        rstore_rate=entries * scans / r_wall,
        valkey_rate=entries * scans / v_wall,
        rstore_latency_ms=percentiles(pages["rstore"], 1e3),
        valkey_latency_ms=percentiles(pages["valkey"], 1e3),
        latency_of=f"one page of {PAGE_SIZE}",
        scans=scans,
    )


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    return [run(quick=quick, base_dir=base_dir)]


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    results = repeat_runs(lambda: run_all(quick=args.quick, base_dir=args.dir), args.repeat)
    print(results_table(results))
    print()
    print(latency_table(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
