"""Cross-process wake-up latency: a reader process blocked in XREAD or XREADGROUP BLOCK, woken
by an XADD from this process; rstore beside valkey, in one run.

Per variant (XREAD or XREADGROUP; ``sync=False`` vs ``appendfsync everysec`` and ``sync=True``
vs ``always``) each side gets one reader process, started once (``bench/wakeup.py --child``):
it opens the same store (rstore) or connects to the same server (valkey, redis-py + hiredis).
One wake-up:

1. this process tells the reader to read; the reader answers "ready" and calls
   ``xread({stream: last_id}, count=1, block=10000)`` (or ``xreadgroup(group, consumer,
   {stream: ">"}, count=1, block=10000)``);
2. this process waits a random 5-15 ms, so that the reader is asleep in its blocked call, then
   takes ``t0``, calls ``xadd``, and takes ``t1`` when it returns;
3. the reader takes ``t2`` as soon as its call returns, and sends it back (then, for a group,
   acknowledges the entry, outside the measurement).

The clock is ``time.monotonic_ns()``, CLOCK_MONOTONIC, one clock for every process on Linux
(``perf_counter`` is not comparable across processes).  Reported, as p50/p90/p99/max over
the wake-ups: ``t2 - t0``, from the start of the XADD -- with ``sync=True`` (``always``) that
includes the writer's flush, which comes before the wake-up on both sides -- and ``t2 - t1``,
from the return of the XADD (negative when the reader returns before the writer's call does).
The target is rstore's p99 from the start of the XADD <= 1 ms (issue 23).

The two sides alternate in blocks of wake-ups.  The reader runs where valkey runs
(``--placement``): on the benchmark's CPU with ``shared``, on the other CPU with ``split``.

    python bench/wakeup.py --repeat 3
    python bench/wakeup.py --command xreadgroup --mode durable
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import (
    FIELDS,
    FSYNC_FOR_SYNC,
    STREAM,
    Child,
    Result,
    Valkey,
    add_common_args,
    child_hear,
    child_say,
    exit_on_sigterm,
    fmt_ms,
    interleave,
    percentiles,
    repeat_runs,
    set_placement,
    temp_store,
    write_json,
)

GROUP = "wakers"
CONSUMER = "reader-1"
BLOCK_MS = 10_000  # a reader not woken by then fails the run
DELAY_S = (0.005, 0.015)  # between the reader's "ready" and the XADD
TARGET_P99_MS = 1.0  # issue 23
# (timed wake-ups per side, warm-up wake-ups per side, alternating blocks)
SIZES = {False: (300, 20, 6), True: (30, 5, 2)}
COMMANDS = ("xread", "xreadgroup")


def workload_name(command: str) -> str:
    return f"{command.upper()} BLOCK, reader in another process"


def mode_name(sync: bool) -> str:
    return f"rstore sync={sync} / valkey appendfsync {FSYNC_FOR_SYNC[sync]}"


# ----------------------------------------------------------------------------- the reader process


def reader_main(side: str, target: str, command: str, sync: bool) -> int:
    """The reader process: block when told, report when the call returned."""
    client: Any
    if side == "rstore":
        import rstore

        client = rstore.Store(target, sync=sync, create=False)
    else:
        import redis

        client = redis.Redis(host="127.0.0.1", port=int(target), protocol=2)
    clock = time.monotonic_ns
    child_say("hello")
    while True:
        words = child_hear()
        if words[0] == "quit":
            break
        child_say("ready")
        if command == "xread":
            reply = client.xread({STREAM: words[1]}, count=1, block=BLOCK_MS)
        else:
            reply = client.xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=1, block=BLOCK_MS)
        t2 = clock()
        if not reply:
            child_say("timeout")
            continue
        entry_id = reply[0][1][0][0]
        child_say("done", t2, entry_id.decode())
        if command == "xreadgroup":
            client.xack(STREAM, GROUP, entry_id)
    client.close()
    return 0


# ----------------------------------------------------------------------------- the writer


class Waker:
    """Wakes one side's reader process, one XADD at a time, and records the latencies."""

    def __init__(self, child: Child, xadd: Callable[..., Any], seed: int) -> None:
        self.child = child
        self.xadd = xadd
        self.last_id = "0-0"
        self.rng = random.Random(seed)
        self.from_start: list[float] = []
        self.from_return: list[float] = []
        self.xadd_call: list[float] = []

    def wake(self) -> tuple[int, int]:
        """One wake-up; (ns from the start of the XADD, ns from its return) to the reader's
        return."""
        clock = time.monotonic_ns
        self.child.send("go", self.last_id)
        self.child.expect("ready")
        time.sleep(self.rng.uniform(*DELAY_S))
        t0 = clock()
        entry_id = self.xadd(STREAM, FIELDS)
        t1 = clock()
        words = self.child.recv(BLOCK_MS / 1000 + 10)
        if words[:1] != ["done"] or words[2] != entry_id.decode():
            raise RuntimeError(f"the reader answered {words!r} to the XADD of {entry_id!r}")
        self.last_id = entry_id.decode()
        t2 = int(words[1])
        return t2 - t0, t2 - t1

    def reset(self) -> None:
        """Forget the latencies recorded so far (after a warm-up)."""
        self.from_start.clear()
        self.from_return.clear()
        self.xadd_call.clear()

    def sampler(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            from_start, from_return = self.wake()
            self.from_start.append(from_start / 1e9)
            self.from_return.append(from_return / 1e9)
            self.xadd_call.append((from_start - from_return) / 1e9)
            out.append(from_start / 1e9)
        return out


def reader_argv(side: str, target: str, command: str, sync: bool) -> list[str]:
    return [str(Path(__file__).resolve()), "--child", side, target, command, str(int(sync))]


def run(*, command: str, sync: bool, quick: bool = False, base_dir: str | None = None) -> Result:
    """One side-by-side run of one wake-up variant."""
    total, warm, rounds = SIZES[quick]
    with (
        temp_store(sync, base_dir) as store,
        Valkey(FSYNC_FOR_SYNC[sync], base_dir=base_dir) as valkey,
    ):
        client = valkey.client()
        for side in (store, client):
            side.xgroup_create(STREAM, GROUP, "$", mkstream=True)
        with (
            Child(reader_argv("rstore", store.path, command, sync)) as r_child,
            Child(reader_argv("valkey", str(valkey.port), command, sync)) as v_child,
        ):
            wakers = {
                "rstore": Waker(r_child, store.xadd, 1),
                "valkey": Waker(v_child, client.xadd, 2),
            }
            for waker in wakers.values():
                waker.child.expect("hello", 60)
                waker.sampler(warm)
                waker.reset()
            interleave({name: w.sampler for name, w in wakers.items()}, total, rounds)

    result: Result = {
        "kind": "wakeup",
        "workload": workload_name(command),
        "mode": mode_name(sync),
        "target_p99_ms": TARGET_P99_MS,
        "wakeups": total,
    }
    for name, waker in wakers.items():
        result[f"{name}_from_start_ms"] = percentiles(waker.from_start, 1e3)
        result[f"{name}_from_return_ms"] = percentiles(waker.from_return, 1e3)
        result[f"{name}_xadd_ms"] = percentiles(waker.xadd_call, 1e3)
    return result


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    return [
        run(command=command, sync=sync, quick=quick, base_dir=base_dir)
        for command in COMMANDS
        for sync in (False, True)
    ]


def wakeup_table(results: list[Result]) -> str:
    """Per side: p50/p90/p99/max from the start of the XADD to the return of the blocked read,
    p50/p99 from the return of the XADD, and the writer's XADD call itself (p50)."""
    lines = [
        "| wake-up | durability mode | side | p50 | p90 | p99 | max "
        "| from XADD's return: p50 | p99 | XADD call p50 | target p99 | met? |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in results:
        if r.get("kind") != "wakeup":
            continue
        for side in ("rstore", "valkey"):
            start = r.get(f"{side}_from_start_ms") or {}
            back = r.get(f"{side}_from_return_ms") or {}
            call = r.get(f"{side}_xadd_ms") or {}
            if not (start and back and call):
                continue
            cells = " | ".join(fmt_ms(start[k]) for k in ("p50", "p90", "p99", "max"))
            target, met = "—", "—"
            if side == "rstore":
                target = f"≤ {r['target_p99_ms']:g} ms"
                met = "yes" if start["p99"] <= r["target_p99_ms"] else "**no**"
            lines.append(
                f"| {r['workload']} | {r['mode']} | {side} | {cells} | {fmt_ms(back['p50'])} "
                f"| {fmt_ms(back['p99'])} | {fmt_ms(call['p50'])} | {target} | {met} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:
        side, target, command, sync = args_in[1:5]
        return reader_main(side, target, command, sync == "1")
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument(
        "--mode",
        choices=("durable", "relaxed", "both"),
        default="both",
        help="durable: sync=True vs always; relaxed: sync=False vs everysec",
    )
    parser.add_argument("--command", choices=(*COMMANDS, "both"), default="both")
    args = parser.parse_args(args_in)
    print(f"# CPU placement: {set_placement(args.placement)}")
    modes = {"durable": [True], "relaxed": [False], "both": [False, True]}[args.mode]
    commands = list(COMMANDS) if args.command == "both" else [args.command]

    def once() -> list[Result]:
        return [
            run(command=c, sync=s, quick=args.quick, base_dir=args.dir)
            for c in commands
            for s in modes
        ]

    results = repeat_runs(once, args.repeat)
    print(wakeup_table(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
