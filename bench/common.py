"""Shared pieces of the rstore benchmarks.

* :class:`Valkey` starts a throw-away ``valkey-server`` on a free loopback port, with its data
  directory in a temporary directory, and stops it on exit (a context manager): the launcher
  of ``fixtures/valkey_server.py`` (shared with the tests), with redis-py clients.
* :func:`temp_store` opens an :class:`rstore.Store` in a temporary directory on the same
  filesystem as valkey's, and removes it on exit.
* :func:`interleave` runs the rstore side and the valkey side in alternating blocks, so that
  both see the same noise of a shared machine.
* :class:`Child` runs a helper process of a benchmark (a blocked reader, say), pinned like
  valkey, driven by lines on its stdin/stdout with a timeout on every answer, and stopped by
  its PID; :func:`process_cpu_ns` reads the CPU time a process has used.
* Results are plain dicts (see :func:`rate_result`), combined over repeated runs by
  :func:`combine` (medians) and printed by :func:`results_table`.

Every figure is timed with :func:`time.perf_counter`.  Nothing here is a test: the benchmarks
publish figures and never gate anything on them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import math
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import redis
import redis.utils

import rstore

# fixtures/ holds the server launcher shared with the tests and the fixture generators
sys.path.append(str(Path(__file__).resolve().parent.parent / "fixtures"))
from valkey_server import HOST, ValkeyServer, find_server_binary

#: The repository these scripts belong to.
REPOSITORY = Path(__file__).resolve().parent.parent

# The entry every workload writes, on both sides.
FIELDS: dict[Any, Any] = {"user": "12345", "action": "click", "page": "/products/42"}
STREAM = "bench"
PIPELINE_SIZE = 1000
PAGE_SIZE = 1000

# The server binary: $VALKEY_SERVER, else the tests' ($RSTORE_ORACLE_SERVER or the one on PATH).
VALKEY_BINARY = (
    os.environ.get("VALKEY_SERVER") or find_server_binary("valkey") or "/usr/bin/valkey-server"
)

# The durability mode of valkey matching each rstore ``sync`` setting.
FSYNC_FOR_SYNC = {True: "always", False: "everysec"}

Result = dict[str, Any]
Sampler = Callable[[int], list[float]]


def rstore_origin() -> str:
    """Where the rstore being measured comes from: this repository's tree at a commit (and
    whether rstore/ has uncommitted changes), or another directory (e.g. an exported commit)."""
    package = Path(rstore.__file__).resolve().parent
    if package != REPOSITORY / "rstore":
        return f"imported from {package.parent}"

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPOSITORY), *args], capture_output=True, text=True, check=False
        ).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "rstore")
    return f"commit {commit}" + (" with uncommitted changes in rstore/" if dirty else "")


# ----------------------------------------------------------------------------- CPU placement
#
# Where valkey runs relative to the benchmark process changes its round trip a lot on a small
# VM: on this project's 2-vCPU machines a loopback request/reply between two vCPUs costs ~2.5x
# one within a vCPU (waking an idle vCPU is slow), and the OS picks either from run to run.

PLACEMENTS = ("shared", "split", "os")
_PINNED: dict[str, set[int] | None] = {"valkey": None}  # CPUs for valkey servers started next
# the CPUs this process could use before any pinning
_ALLOWED = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def set_placement(mode: str) -> str:
    """Pin this process, and the valkey servers and helper processes (:class:`Child`) started
    from now on, as ``mode`` says:

    * ``shared``: both on the first CPU we may use (valkey's best round trip on a VM);
    * ``split``: this process on the first CPU, valkey (and helpers) on the second;
    * ``os``: no pinning, the scheduler decides (and may change its mind between runs).

    Returns a sentence describing the placement, for the results.
    """
    if mode not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, not {mode!r}")
    if not _ALLOWED:
        _PINNED["valkey"] = None
        return "not pinned (no CPU affinity on this platform)"
    if mode == "os":
        os.sched_setaffinity(0, _ALLOWED)
        _PINNED["valkey"] = None
        return "not pinned: the OS places the benchmark process and valkey-server"
    cpus = _ALLOWED
    if mode == "split" and len(cpus) < 2:
        raise SystemExit("--placement split needs two CPUs")
    mine = {cpus[0]}
    _PINNED["valkey"] = {cpus[1]} if mode == "split" else {cpus[0]}
    os.sched_setaffinity(0, mine)
    if mode == "split":
        return (
            f"benchmark process pinned to CPU {cpus[0]}, valkey-server (and helper reader "
            f"processes) to CPU {cpus[1]}"
        )
    return (
        f"benchmark process and valkey-server (and helper reader processes) pinned to the same "
        f"CPU ({cpus[0]})"
    )


def _in_valkey_child() -> None:  # pragma: no cover - runs in the child before exec
    """Before valkey (or a helper :class:`Child`) starts: pin it (all its threads inherit
    this), and ask Linux to send it SIGTERM if the benchmark process dies (even by SIGKILL)."""
    cpus = _PINNED["valkey"]
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


# ----------------------------------------------------------------------------- peers


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so ``with`` blocks stop valkey and remove temp dirs."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


class Valkey(ValkeyServer):
    """A ``valkey-server`` for one benchmark (the shared launcher, ``fixtures/valkey_server.py``):
    AOF on with the given ``appendfsync`` (RDB snapshots off), data in a temporary directory
    under ``base_dir``, pinned as :func:`set_placement` says; redis-py clients (hiredis parser).

    >>> with Valkey("always") as vk:          # doctest: +SKIP
    ...     vk.client().xadd("s", FIELDS)
    """

    def __init__(
        self,
        appendfsync: str,
        *,
        base_dir: str | None = None,
        binary: str = VALKEY_BINARY,
        start_timeout_s: float = 10.0,
        appendonly: bool = True,
        rdb_file: str | None = None,
    ) -> None:
        super().__init__(
            binary,
            appendonly=appendonly,
            appendfsync=appendfsync,
            rdb_file=rdb_file,
            temp_parent=base_dir,
            preexec_fn=_in_valkey_child,
            start_timeout_s=start_timeout_s,
        )
        self._clients: list[redis.Redis] = []

    def __enter__(self) -> Valkey:
        if not redis.utils.HIREDIS_AVAILABLE:
            raise RuntimeError("redis-py does not see hiredis; `pip install hiredis` first")
        super().__enter__()
        return self

    def client(self) -> redis.Redis:
        """A redis-py client (RESP2, hiredis parser) on this server; closed on exit."""
        client = redis.Redis(host=HOST, port=self.port, protocol=2)
        self._clients.append(client)
        return client

    def version(self) -> str:
        return str(self.client().info("server")["valkey_version"])

    def aof_bytes(self) -> int:
        """Bytes of the append-only files (base and increments) in the data directory."""
        aof_dir = Path(self.dir) / "appendonlydir"
        return sum(p.stat().st_size for p in aof_dir.iterdir()) if aof_dir.is_dir() else 0

    def stop(self) -> None:
        for client in self._clients:
            with contextlib.suppress(redis.RedisError):
                client.close()
        self._clients.clear()
        super().stop()


@contextlib.contextmanager
def temp_store(sync: bool, base_dir: str | None = None) -> Iterator[rstore.Store]:
    """An empty :class:`rstore.Store` in a fresh temporary directory, removed afterwards."""
    parent = tempfile.mkdtemp(prefix="bench-rstore-", dir=base_dir)
    store = rstore.Store(os.path.join(parent, "store"), sync=sync)
    try:
        yield store
    finally:
        store.close()
        shutil.rmtree(parent, ignore_errors=True)


# ----------------------------------------------------------------------------- helper processes


class Child:
    """A helper Python process of a benchmark, driven by lines on its stdin and stdout.

    ``argv`` follows the interpreter (``[script, "--child", ...]``); the child inherits the
    environment, so a ``PYTHONPATH`` that picks the rstore under test applies to it too.  It is
    pinned where valkey goes (:func:`set_placement`), gets SIGTERM from Linux if the benchmark
    process dies, and on exit is asked to quit, then stopped by its PID (SIGTERM, then SIGKILL).
    Every answer is awaited with a timeout, so a stuck child fails the run instead of hanging it.
    """

    def __init__(self, argv: Sequence[str], *, timeout_s: float = 30.0) -> None:
        self.argv = [sys.executable, *argv]
        self.timeout_s = timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._buf = b""

    @property
    def pid(self) -> int:
        assert self._proc is not None, "the child is not running"
        return self._proc.pid

    def __enter__(self) -> Child:
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
            preexec_fn=_in_valkey_child,  # noqa: PLW1509 (no threads here)
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def send(self, *words: object) -> None:
        """Send one line (the words joined by spaces)."""
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write((" ".join(str(w) for w in words) + "\n").encode())

    def pending(self) -> bool:
        """Whether the child has said something not read yet (without waiting)."""
        assert self._proc is not None and self._proc.stdout is not None
        if self._buf:
            return True
        ready, _, _ = select.select([self._proc.stdout.fileno()], [], [], 0)
        return bool(ready)

    def recv(self, timeout_s: float | None = None) -> list[str]:
        """The words of the child's next line; RuntimeError if none comes in time."""
        assert self._proc is not None and self._proc.stdout is not None
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + wait_s
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"child {self.pid} said nothing for {wait_s:g} s{self._tail()}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self._proc.wait(timeout=5)
                    raise RuntimeError(f"child {self.pid} exited with {code}{self._tail()}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode().split()

    def expect(self, word: str, timeout_s: float | None = None) -> list[str]:
        """Read a line that must start with ``word``; the words after it."""
        words = self.recv(timeout_s)
        if not words or words[0] != word:
            raise RuntimeError(f"child {self.pid}: expected {word!r}, got {words!r}{self._tail()}")
        return words[1:]

    def _tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip()
        return f"; its stderr ends:\n{text[-2000:]}" if text else ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.write(b"quit\n")
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def child_say(*words: object) -> None:
    """In a child: send one line to the benchmark process."""
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def child_hear() -> list[str]:
    """In a child: the words of the next line from the benchmark process (``["quit"]`` at the
    end of its input)."""
    line = sys.stdin.readline()
    return line.split() or ["quit"]


def process_cpu_ns(pid: int) -> int:
    """CPU time (user + system) used so far by the live process ``pid``, all its threads, in ns.

    From ``/proc/<pid>/task/*/schedstat`` (nanosecond resolution); where that is missing, from
    ``utime + stime`` of ``/proc/<pid>/stat`` (clock ticks, usually 10 ms).
    """
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
        return total
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def voluntary_switches(pid: int) -> int:
    """How many times the process ``pid`` (all threads) has gone to sleep so far: each one is a
    wake-up later, so the growth over a window counts its wake-ups."""
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


# ----------------------------------------------------------------------------- timing


def time_each(op: Callable[[], object], n: int) -> list[float]:
    """Run ``op`` ``n`` times; the duration of each call in seconds."""
    clock = time.perf_counter
    out = [0.0] * n
    for i in range(n):
        t0 = clock()
        op()
        out[i] = clock() - t0
    return out


def split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal positive block sizes."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def interleave(
    sides: dict[str, Sampler], total: int, rounds: int
) -> dict[str, tuple[list[float], float]]:
    """Run each side's sampler on ``total`` operations, in ``rounds`` alternating blocks.

    A sampler takes a block size and returns one duration per sample.  The order of the sides
    flips every round (A B, B A, A B …) so that neither always runs right after the other.
    Returns, per side, ``(samples, wall seconds spent in its blocks)``.
    """
    out: dict[str, tuple[list[float], float]] = {name: ([], 0.0) for name in sides}
    names = list(sides)
    for i, block in enumerate(split(total, rounds)):
        for name in names if i % 2 == 0 else reversed(names):
            gc.collect()
            t0 = time.perf_counter()
            samples = sides[name](block)
            wall = time.perf_counter() - t0
            prev, spent = out[name]
            prev.extend(samples)
            out[name] = (prev, spent + wall)
    return out


def percentiles(samples: Sequence[float], scale: float = 1.0) -> dict[str, float]:
    """p50/p90/p99/max by the nearest-rank method, each multiplied by ``scale``."""
    if not samples:
        return {}
    ordered = sorted(samples)
    n = len(ordered)

    def rank(p: float) -> float:
        return ordered[max(0, math.ceil(p / 100 * n) - 1)] * scale

    return {"p50": rank(50), "p90": rank(90), "p99": rank(99), "max": ordered[-1] * scale}


# ----------------------------------------------------------------------------- results


def rate_result(
    *,
    workload: str,
    mode: str,
    target: float | None,
    rstore_rate: float,
    valkey_rate: float,
    unit: str = "entries/s",
    rstore_latency_ms: dict[str, float] | None = None,
    valkey_latency_ms: dict[str, float] | None = None,
    latency_of: str = "",
    **extra: Any,
) -> Result:
    """One workload's figures from one run, as a plain dict.

    ``valkey`` holds the peer's rate: valkey's, unless ``peer=`` (in ``extra``) names another
    peer, as the rows of ``kind="peer"`` do (see :func:`peers_table`).
    """
    return {
        "kind": "rate",
        "peer": "valkey",
        "workload": workload,
        "mode": mode,
        "unit": unit,
        "rstore": rstore_rate,
        "valkey": valkey_rate,
        "ratio": rstore_rate / valkey_rate if valkey_rate else math.nan,
        "target": target,
        "rstore_latency_ms": rstore_latency_ms or {},
        "valkey_latency_ms": valkey_latency_ms or {},
        "latency_of": latency_of,
        **extra,
    }


def _median_dict(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Key by key, the median of the numbers (other values: the first run's)."""
    keys = [k for k in dicts[0] if all(k in d for d in dicts)] if dicts else []
    out: dict[str, Any] = {}
    for k in keys:
        values = [d[k] for d in dicts]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        out[k] = statistics.median(values) if numeric else values[0]
    return out


def combine(runs: list[list[Result]]) -> list[Result]:
    """Median of each figure over repeated runs, workload by workload.

    The ratio is the median of the per-run ratios (each run's ratio pairs figures measured side
    by side), not the ratio of the medians; ``ratio_min``/``ratio_max`` show the spread.  Every
    other number is the median over runs, and so is each entry of a dict of numbers (the
    percentiles of a latency, say).
    """
    order: list[tuple[str, str]] = []
    grouped: dict[tuple[str, str], list[Result]] = {}
    for run in runs:
        for res in run:
            key = (res["workload"], res["mode"])
            if key not in grouped:
                order.append(key)
                grouped[key] = []
            grouped[key].append(res)
    out: list[Result] = []
    for key in order:
        group = grouped[key]
        merged = dict(group[0])
        for name, value in group[0].items():
            if name == "target":
                continue
            if isinstance(value, int | float) and not isinstance(value, bool):
                merged[name] = statistics.median(r[name] for r in group if name in r)
            elif isinstance(value, dict):
                merged[name] = _median_dict([r[name] for r in group if r.get(name)])
        if "ratio" in group[0]:
            merged["ratio_min"] = min(r["ratio"] for r in group)
            merged["ratio_max"] = max(r["ratio"] for r in group)
        merged["runs"] = len(group)
        out.append(merged)
    return out


def fmt_rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    if value >= 1e3:
        return f"{value / 1e3:.2f}k"
    return f"{value:.0f}"


def fmt_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def markdown_table(titles: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> str:
    """A markdown table: ``titles``, ``align`` (``l`` or ``r`` per column) and the rows' cells,
    already formatted."""
    rule = {"l": "---", "r": "---:"}
    lines = ["| " + " | ".join(titles) + " |", "|" + "|".join(rule[a] for a in align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def results_table(results: list[Result]) -> str:
    """The headline table: rates, ratio (with its spread over runs), target, met?"""
    lines = [
        "| workload | durability mode | rstore | valkey | ratio (min–max) | target | met? |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for r in results:
        if r.get("kind", "rate") != "rate":
            continue
        spread = ""
        if r.get("runs", 1) > 1:
            spread = f" ({r['ratio_min']:.2f}–{r['ratio_max']:.2f})"
        target = r["target"]
        met = "—" if target is None else ("yes" if r["ratio"] >= target else "**no**")
        target_text = "—" if target is None else f"≥ {target:g}x"
        lines.append(
            f"| {r['workload']} | {r['mode']} | {fmt_rate(r['rstore'])} {r['unit']} "
            f"| {fmt_rate(r['valkey'])} {r['unit']} | {r['ratio']:.2f}x{spread} "
            f"| {target_text} | {met} |"
        )
    return "\n".join(lines)


def latency_table(results: list[Result]) -> str:
    """p50/p90/p99/max of each side, for the results that recorded latencies."""
    lines = [
        "| workload | durability mode | latency of | side | p50 | p90 | p99 | max |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        for side in ("rstore", "valkey"):
            lat = r.get(f"{side}_latency_ms") or {}
            if not lat:
                continue
            cells = " | ".join(fmt_ms(lat[k]) for k in ("p50", "p90", "p99", "max"))
            lines.append(
                f"| {r['workload']} | {r['mode']} | {r['latency_of']} | {side} | {cells} |"
            )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- command line


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick", action="store_true", help="small sizes: a smoke run, figures not meaningful"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run N times and report medians (default: %(default)s)",
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="parent directory of the temporary stores and valkey data "
        "(default: the system temp dir); both sides use the same one",
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="also write results here")
    add_placement_arg(parser)


def add_placement_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="shared",
        help="CPU placement of this process and valkey: shared (both on one CPU, the default), "
        "split (one CPU each) or os (not pinned)",
    )


def write_json(path: str, payload: Any) -> None:
    import json

    Path(path).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def repeat_runs(run_once: Callable[[], list[Result]], repeat: int) -> list[Result]:
    """``run_once`` ``repeat`` times, combined into medians."""
    runs = []
    for i in range(repeat):
        if repeat > 1:
            print(f"# run {i + 1}/{repeat}", flush=True)
        runs.append(run_once())
    return combine(runs)


def durability_main(description: str, run: Callable[..., Result], argv: list[str] | None) -> int:
    """The ``main()`` of a script that measures one workload in both durability pairs
    (``run(sync=..., quick=..., base_dir=...)``): the common options and ``--mode``, the
    placement, repeats, and the rate and latency tables."""
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=description)
    add_common_args(parser)
    parser.add_argument(
        "--mode",
        choices=("durable", "relaxed", "both"),
        default="both",
        help="durable: sync=True vs always; relaxed: sync=False vs everysec",
    )
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    modes = {"durable": [True], "relaxed": [False], "both": [True, False]}[args.mode]

    def once() -> list[Result]:
        return [run(sync=s, quick=args.quick, base_dir=args.dir) for s in modes]

    results = repeat_runs(once, args.repeat)
    print(results_table(results))
    print()
    print(latency_table(results))
    if args.json:
        write_json(args.json, results)
    return 0
