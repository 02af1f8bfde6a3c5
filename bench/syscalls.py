"""What a durable commit asks of the disk: flush and write syscalls per XADD, counted by strace.

Needs ``strace`` (``apt-get install strace``).  Both sides in their durable mode:

* rstore (``sync=True``): a child Python process appends entries one XADD per commit, then one
  pipeline of 1000, under ``strace -f``; the calls between markers are counted.
* valkey (``appendfsync always``): strace attaches to the server while redis-py sends the same
  XADDs and the same pipeline; only calls on the append-only files count.

Reported per XADD (and per pipeline of 1000): ``fdatasync``/``fsync`` calls, writes through a
descriptor opened with ``O_DSYNC`` (each is a flush of its own: LMDB's meta page), other
writes to data files, and the bytes those carried.

    python bench/syscalls.py --calls 200
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from common import FIELDS, PIPELINE_SIZE, STREAM, Valkey, exit_on_sigterm

TRACED = "openat,fdatasync,fsync,pwrite64,pwritev,pwritev2,write,writev"
LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((\d+)?(.*?)(?:\)\s+=\s+(-?\d+).*)?$")
OPENAT = re.compile(r'openat\(AT_FDCWD, "([^"]+)", ([A-Z_|]+).*\)\s+=\s+(\d+)')

CHILD = textwrap.dedent(
    """
    import os, sys
    import rstore
    fields = {fields!r}
    store = rstore.Store(sys.argv[1], sync=True)
    for _ in range(50):
        store.xadd({stream!r}, fields)
    os.write(2, b"@@single\\n")
    for _ in range(int(sys.argv[2])):
        store.xadd({stream!r}, fields)
    os.write(2, b"@@pipeline\\n")
    pipe = store.pipeline()
    for _ in range({size}):
        pipe.xadd({stream!r}, fields)
    pipe.execute()
    os.write(2, b"@@end\\n")
    store.close()
    """
)


def empty_counts() -> dict[str, int]:
    return {"flush": 0, "dsync_writes": 0, "writes": 0, "bytes": 0}


def count_section(lines: list[str], data_fds: set[int], dsync_fds: set[int]) -> dict[str, int]:
    """Tally the flushes, and the writes to ``data_fds`` (those in ``dsync_fds`` apart)."""
    out = empty_counts()
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        _, name, fd_text, _, ret = m.groups()
        if fd_text is None:
            continue
        fd = int(fd_text)
        if name in ("fdatasync", "fsync"):
            out["flush"] += 1
        elif name.startswith(("pwrite", "write")) and fd in data_fds:
            key = "dsync_writes" if fd in dsync_fds else "writes"
            out[key] += 1
            out["bytes"] += int(ret) if ret and int(ret) > 0 else 0
    return out


def trace_rstore(calls: int, base_dir: str | None) -> dict[str, dict[str, int]]:
    work = tempfile.mkdtemp(prefix="bench-strace-", dir=base_dir)
    try:
        log = os.path.join(work, "trace.txt")
        script = CHILD.format(fields=FIELDS, stream=STREAM, size=PIPELINE_SIZE)
        subprocess.run(
            ["strace", "-f", "-e", f"trace={TRACED}", "-o", log, sys.executable, "-c", script,
             os.path.join(work, "store"), str(calls)],
            check=True, stderr=subprocess.DEVNULL, cwd=work,
        )  # fmt: skip
        text = Path(log).read_text().splitlines()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    data_fds: set[int] = set()
    dsync_fds: set[int] = set()
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text:
        opened = OPENAT.search(line)
        if opened and opened.group(1).endswith("data.mdb"):
            fd = int(opened.group(3))
            data_fds.add(fd)
            if "O_DSYNC" in opened.group(2) or "O_SYNC" in opened.group(2):
                dsync_fds.add(fd)
        marker = re.search(r'"@@(\w+)\\n"', line)
        if marker:
            current = marker.group(1)
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return {
        "single": count_section(sections.get("single", []), data_fds, dsync_fds),
        "pipeline": count_section(sections.get("pipeline", []), data_fds, dsync_fds),
    }


def aof_fds(pid: int) -> set[int]:
    fds = set()
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if "appendonlydir" in os.readlink(entry):
                fds.add(int(entry.name))
        except OSError:
            continue
    return fds


def trace_valkey(calls: int, base_dir: str | None) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with Valkey("always", base_dir=base_dir) as valkey:
        client = valkey.client()
        for _ in range(50):
            client.xadd(STREAM, FIELDS)
        fds = aof_fds(valkey.pid)
        for section in ("single", "pipeline"):
            log = os.path.join(valkey.dir, f"trace-{section}.txt")
            tracer = subprocess.Popen(
                ["strace", "-f", "-p", str(valkey.pid), "-e", f"trace={TRACED}", "-o", log],
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # let strace attach to every thread
            if section == "single":
                for _ in range(calls):
                    client.xadd(STREAM, FIELDS)
            else:
                pipe = client.pipeline(transaction=False)
                for _ in range(PIPELINE_SIZE):
                    pipe.xadd(STREAM, FIELDS)
                pipe.execute()
            time.sleep(0.2)
            tracer.terminate()
            tracer.wait()
            lines = Path(log).read_text().splitlines()
            out[section] = count_section(lines, fds, set())
    return out


def per(counts: dict[str, int], n: int) -> dict[str, float]:
    return {k: v / n for k, v in counts.items()}


def report(calls: int, base_dir: str | None) -> dict[str, Any]:
    ours = trace_rstore(calls, base_dir)
    theirs = trace_valkey(calls, base_dir)
    return {
        "calls": calls,
        "rstore": {"per_xadd": per(ours["single"], calls), "per_pipeline": ours["pipeline"]},
        "valkey": {"per_xadd": per(theirs["single"], calls), "per_pipeline": theirs["pipeline"]},
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| durable commit of | side | fdatasync | O_DSYNC writes | other data writes | bytes |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for unit, label in (("per_xadd", "one XADD"), ("per_pipeline", f"pipeline of {PIPELINE_SIZE}")):
        for side, mode in (("rstore", "sync=True"), ("valkey", "appendfsync always")):
            c = result[side][unit]
            lines.append(
                f"| {label} | {side} ({mode}) | {c['flush']:.2f} | {c['dsync_writes']:.2f} "
                f"| {c['writes']:.2f} | {c['bytes']:,.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="single XADDs traced per side")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directories")
    args = parser.parse_args(argv)
    if shutil.which("strace") is None:
        print("strace is not installed (apt-get install strace)", file=sys.stderr)
        return 2
    print(markdown(report(args.calls, args.dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
