"""The machine under the benchmarks, and what one durable flush costs on its disk.

Prints cores, CPU, memory, kernel, the filesystem and block device holding the benchmark
directory, and the cost of ``fdatasync`` measured three ways in that directory:

* overwrite: ``pwrite`` of one 4 KiB page inside an existing file, then ``fdatasync``
  (what LMDB does with its data pages; file size unchanged);
* append: ``write`` of 100 bytes at the end of a file, then ``fdatasync`` (what valkey's
  ``appendfsync always`` does; the size changes, so the filesystem journal commits too);
* lmdb-like commit: overwrite + ``fdatasync``, then a 4 KiB ``pwrite`` to the file's first page
  through a second descriptor opened with ``O_DSYNC`` (LMDB's meta page) -- two flushes.

    python bench/machine.py --syncs 500
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import exit_on_sigterm, fmt_ms, percentiles, write_json

PAGE = 4096
FILE_PAGES = 1024  # a 4 MiB file to overwrite in


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def mount_of(path: str) -> dict[str, str]:
    """The /proc/mounts entry whose mount point is the longest prefix of ``path``."""
    real = os.path.realpath(path)
    best: dict[str, str] = {}
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            device, point, fstype, options = line.split()[:4]
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best.get("mount", "")):
                best = {"device": device, "mount": point, "fstype": fstype, "options": options}
    except OSError:
        pass
    return best


def block_device(device: str) -> dict[str, str]:
    """What /sys says about the disk behind ``/dev/<name>`` (rotational flag, scheduler)."""
    name = os.path.basename(os.path.realpath(device))
    queue = Path("/sys/block") / name / "queue"
    out = {"name": name}
    for item in ("rotational", "scheduler"):
        try:
            text = (queue / item).read_text().strip()
            if "[" in text:  # "none [mq-deadline] kyber": the active one is bracketed
                text = text.split("[", 1)[1].split("]", 1)[0]
            out[item] = text
        except OSError:
            pass
    try:
        driver = (Path("/sys/block") / name / "device" / "driver").resolve().name
        out["driver"] = driver
    except OSError:
        pass
    return out


def describe(base_dir: str | None = None) -> dict[str, Any]:
    where = base_dir or tempfile.gettempdir()
    mount = mount_of(where)
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": affinity,
        "memory_gib": memory_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "bench_dir": where,
        "filesystem": mount,
        "disk": block_device(mount["device"]) if mount.get("device", "").startswith("/") else {},
    }


def fsync_costs(base_dir: str | None = None, syncs: int = 300) -> dict[str, dict[str, float]]:
    """Percentiles (ms) of the three flush patterns described in the module docstring."""
    work = tempfile.mkdtemp(prefix="bench-fsync-", dir=base_dir)
    rng = random.Random(1)
    page = os.urandom(PAGE)
    clock = time.perf_counter
    out: dict[str, list[float]] = {"overwrite": [], "append": [], "lmdb_commit": []}
    try:
        data_path = os.path.join(work, "data")
        fd = os.open(data_path, os.O_RDWR | os.O_CREAT, 0o600)
        meta_fd = os.open(data_path, os.O_RDWR | os.O_DSYNC)
        log_fd = os.open(os.path.join(work, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, os.urandom(PAGE * FILE_PAGES))
            os.fsync(fd)
            record = b"x" * 100
            for _ in range(syncs):
                offset = PAGE * rng.randrange(2, FILE_PAGES)
                t0 = clock()
                os.pwrite(fd, page, offset)
                os.fdatasync(fd)
                out["overwrite"].append(clock() - t0)

                t0 = clock()
                os.write(log_fd, record)
                os.fdatasync(log_fd)
                out["append"].append(clock() - t0)

                t0 = clock()
                os.pwrite(fd, page, offset)
                os.fdatasync(fd)
                os.pwrite(meta_fd, page, 0)
                out["lmdb_commit"].append(clock() - t0)
        finally:
            for f in (fd, meta_fd, log_fd):
                os.close(f)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {name: percentiles(samples, 1e3) for name, samples in out.items()}


LABELS = {
    "overwrite": "4 KiB pwrite in place + fdatasync",
    "append": "100-byte append + fdatasync",
    "lmdb_commit": "LMDB-like commit (pwrite + fdatasync, then O_DSYNC 4 KiB pwrite)",
}


def markdown(machine: dict[str, Any], costs: dict[str, dict[str, dict[str, float]]]) -> str:
    """The machine as a bullet list; ``costs`` maps a label (e.g. "before the run") to the
    result of :func:`fsync_costs`."""
    fs = machine["filesystem"]
    disk = machine["disk"]
    disk_text = ", ".join(f"{k} {v}" for k, v in disk.items() if k != "name")
    lines = [
        f"* CPU: {machine['cpu']}, {machine['cores']} cores "
        f"({machine['cores_usable']} usable by this process), "
        f"{machine['memory_gib']:.0f} GiB memory; Linux {machine['kernel']}; "
        f"Python {machine['python']}",
        f"* Benchmark directory {machine['bench_dir']}: {fs.get('fstype', '?')} on "
        f"{fs.get('device', '?')} ({disk_text}), mounted `{fs.get('options', '?')}`",
    ]
    if costs:
        lines += [
            "* Flush cost on that disk (ms):",
            "",
            "  | pattern | measured | p50 | p90 | p99 | max |",
            "  |---|---|---:|---:|---:|---:|",
        ]
        for name, label in LABELS.items():
            for when, measured in costs.items():
                p = measured[name]
                cells = " | ".join(fmt_ms(p[k]) for k in ("p50", "p90", "p99", "max"))
                lines.append(f"  | {label} | {when} | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=None, help="directory to measure (default: temp dir)")
    parser.add_argument("--syncs", type=int, default=300, help="flushes per pattern")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write results here")
    args = parser.parse_args(argv)
    machine = describe(args.dir)
    costs = fsync_costs(args.dir, args.syncs)
    print(markdown(machine, {f"{args.syncs} flushes": costs}))
    if args.json:
        write_json(args.json, {"machine": machine, "fsync_ms": costs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
