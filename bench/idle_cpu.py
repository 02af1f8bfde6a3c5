"""CPU used by idle blocked readers: reader processes blocked in XREAD / XREADGROUP BLOCK 0 for
~10 s with no writes; rstore beside valkey's client side (redis-py + hiredis, blocked).

Each variant starts its reader processes (``bench/idle_cpu.py --child``), each blocked with
``BLOCK 0`` (forever) and ``COUNT 1`` on one stream -- XREAD from ``$``, or XREADGROUP ``>`` as
its own consumer of one shared group.  Once every reader has said it is about to block, this
process waits 1 s for them to settle, then reads each reader's CPU time (user + system, all
threads, from ``/proc/<pid>/task/*/schedstat``, in ns) and its count of voluntary context
switches (each one is a sleep, so the growth counts wake-ups) at the start and at the end of the
window.  For valkey the server's CPU over the window is read too.  At the end one XADD per
reader wakes them all, proving they were still blocked, and they exit.

Variants: rstore XREAD; XREADGROUP with ``sync=False`` and ``sync=True`` (a blocked reader
re-checks once a second, in a read transaction: an XREADGROUP reader re-runs its write only
when there is something to serve, so it must not flush while idle); 16 readers of one
group, both modes, to show the cost per reader stays flat; valkey XREAD and XREADGROUP with 1
and 16 readers.  The target: rstore <= 1 % of one core per blocked reader.

    python bench/idle_cpu.py --seconds 10 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from common import (
    FIELDS,
    STREAM,
    Child,
    Result,
    Valkey,
    child_hear,
    child_say,
    exit_on_sigterm,
    process_cpu_ns,
    repeat_runs,
    set_placement,
    temp_store,
    voluntary_switches,
    write_json,
)

GROUP = "idlers"
TARGET_PCT = 1.0
SETTLE_S = 1.0
WAKE_TIMEOUT_S = 15.0  # the readers must all answer the final XADDs within this
SECONDS = {False: 10.0, True: 2.0}
MANY = {False: 16, True: 4}
# (side, command, sync or appendfsync, many readers?)
VARIANTS: tuple[tuple[str, str, bool, bool], ...] = (
    ("rstore", "xread", False, False),
    ("rstore", "xreadgroup", False, False),
    ("rstore", "xreadgroup", True, False),
    ("rstore", "xreadgroup", False, True),
    ("rstore", "xreadgroup", True, True),
    ("valkey", "xread", False, False),
    ("valkey", "xreadgroup", False, False),
    ("valkey", "xreadgroup", False, True),
)


def mode_name(side: str, sync: bool) -> str:
    if side == "rstore":
        return f"sync={sync}"
    return "appendfsync everysec"


# ----------------------------------------------------------------------------- the reader process


def reader_main(side: str, target: str, command: str, sync: bool, consumer: str) -> int:
    """One idle reader: block forever when told; report what woke it."""
    client: Any
    if side == "rstore":
        import rstore

        client = rstore.Store(target, sync=sync, create=False)
    else:
        import redis

        client = redis.Redis(host="127.0.0.1", port=int(target), protocol=2)
    child_say("hello")
    while True:
        words = child_hear()
        if words[0] == "quit":
            break
        child_say("ready")
        if command == "xread":
            reply = client.xread({STREAM: "$"}, count=1, block=0)
        else:
            reply = client.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=1, block=0)
        got = len(reply[0][1]) if reply else 0
        child_say("done", got)
        if command == "xreadgroup" and got:
            client.xack(STREAM, GROUP, reply[0][1][0][0])
    client.close()
    return 0


# ----------------------------------------------------------------------------- measuring


def reader_argv(side: str, target: str, command: str, sync: bool, consumer: str) -> list[str]:
    return [
        str(Path(__file__).resolve()),
        "--child", side, target, command, str(int(sync)), consumer,
    ]  # fmt: skip


def measure(
    side: str, command: str, sync: bool, readers: int, seconds: float, base_dir: str | None
) -> Result:
    """Block ``readers`` processes for ``seconds`` and read what they used."""
    with ExitStack() as stack:
        client: Any
        server_pid = 0
        if side == "rstore":
            client = stack.enter_context(temp_store(sync, base_dir))
            target = client.path
        else:
            valkey = stack.enter_context(Valkey("everysec", base_dir=base_dir))
            client = valkey.client()
            target, server_pid = str(valkey.port), valkey.pid
        client.xgroup_create(STREAM, GROUP, "$", mkstream=True)
        children = [
            stack.enter_context(Child(reader_argv(side, target, command, sync, f"idler-{i}")))
            for i in range(readers)
        ]  # stopped (by PID if need be) before the store or server goes
        for child in children:
            child.expect("hello", 60)
            child.send("go")
        for child in children:
            child.expect("ready")
        time.sleep(SETTLE_S)
        pids = [c.pid for c in children]
        cpu0 = [process_cpu_ns(pid) for pid in pids]
        switches0 = [voluntary_switches(pid) for pid in pids]
        server0 = process_cpu_ns(server_pid) if server_pid else 0
        t0 = time.monotonic_ns()
        time.sleep(seconds)
        cpu1 = [process_cpu_ns(pid) for pid in pids]
        switches1 = [voluntary_switches(pid) for pid in pids]
        server1 = process_cpu_ns(server_pid) if server_pid else 0
        window = time.monotonic_ns() - t0
        if any(c.pending() for c in children):
            raise RuntimeError("a reader returned during the idle window")
        # wake each reader once: one XADD per reader, in one pipeline
        pipe = client.pipeline()
        for _ in range(readers):
            pipe.xadd(STREAM, FIELDS)
        pipe.execute()
        for child in children:
            got = child.expect("done", WAKE_TIMEOUT_S)
            if int(got[0]) < 1:
                raise RuntimeError(f"reader {child.pid} was woken with nothing")

    per_reader = [100 * (b - a) / window for a, b in zip(cpu0, cpu1)]
    wakeups = [(b - a) / (window / 1e9) for a, b in zip(switches0, switches1)]
    readers_text = f"{readers} reader{'s' if readers > 1 else ''}"
    return {
        "kind": "idle",
        "workload": f"{side} {command.upper()} BLOCK 0, {readers_text}",
        "mode": mode_name(side, sync),
        "side": side,
        "command": command.upper(),
        "readers": readers,
        "seconds": window / 1e9,
        "cpu_pct_total": sum(per_reader),
        "cpu_pct_per_reader": sum(per_reader) / readers,
        "cpu_pct_max_reader": max(per_reader),
        "wakeups_per_s_per_reader": sum(wakeups) / readers,
        "server_cpu_pct": 100 * (server1 - server0) / window if server_pid else -1.0,
        "target_pct": TARGET_PCT if side == "rstore" else -1.0,
    }


def run_all(
    *, quick: bool = False, base_dir: str | None = None, seconds: float | None = None
) -> list[Result]:
    window = SECONDS[quick] if seconds is None else seconds
    return [
        measure(side, command, sync, MANY[quick] if many else 1, window, base_dir)
        for side, command, sync, many in VARIANTS
    ]


def _pct(value: float) -> str:
    return f"{value:.3f} %" if value < 10 else f"{value:.1f} %"


def idle_table(results: list[Result]) -> str:
    """CPU of the blocked readers over the idle window, % of one core."""
    lines = [
        "| blocked reader | durability mode | readers | CPU, all readers | per reader "
        "| busiest reader | voluntary switches/s per reader | valkey-server CPU "
        "| target per reader | met? |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in results:
        if r.get("kind") != "idle":
            continue
        target, met = "—", "—"
        if r["target_pct"] >= 0:
            target = f"≤ {r['target_pct']:g} %"
            met = "yes" if r["cpu_pct_per_reader"] <= r["target_pct"] else "**no**"
        server = _pct(r["server_cpu_pct"]) if r["server_cpu_pct"] >= 0 else "—"
        who = f"{r['side']} {r['command']} BLOCK 0"
        if r["side"] == "valkey":
            who += " (redis-py, client side)"
        lines.append(
            f"| {who} | {r['mode']} | {r['readers']} | {_pct(r['cpu_pct_total'])} "
            f"| {_pct(r['cpu_pct_per_reader'])} | {_pct(r['cpu_pct_max_reader'])} "
            f"| {r['wakeups_per_s_per_reader']:.2f} | {server} | {target} | {met} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:
        side, target, command, sync, consumer = args_in[1:6]
        return reader_main(side, target, command, sync == "1", consumer)
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 s windows and 4 readers")
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="runs to take medians of"
    )
    parser.add_argument(
        "--seconds", type=float, default=None, help="idle window per variant (default 10)"
    )
    parser.add_argument("--dir", default=None, help="parent of the temporary stores")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write results here")
    args = parser.parse_args(args_in)
    print(f"# CPU placement: {set_placement('shared')}")
    results = repeat_runs(
        lambda: run_all(quick=args.quick, base_dir=args.dir, seconds=args.seconds), args.repeat
    )
    print(idle_table(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
