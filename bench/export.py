"""Export to JSON lines: ``rstore export`` beside the redis-py loop a user would write against
valkey-server 8.0 (XRANGE pages of 1000, one ``json.dumps`` per entry).

The same ``--entries`` entries (1,000,000) of the standard three short fields are on both sides:
written into valkey with pipelined XADDs, saved (``SAVE``), and the dump restored into a fresh
store (untimed).  Then, ``--runs`` times, the sides alternating, everything written to
``/dev/null``:

* **rstore export (CLI)**: ``python -m rstore_cli --store S export`` as a process, stdout on
  ``/dev/null``: its wall time, start-up included;
* **rstore (library)**: ``rstore.batches_from_store`` + ``rstore.encode_columns`` in this
  process (what the CLI runs, without the start-up);
* **redis-py xrange**: ``client.xrange(key, min, count=1000)`` with ``decode_responses=True``,
  then ``json.dumps({"stream": ..., "id": ..., "fields": list(fields.items())})`` per entry --
  the loop people write (redis-py turns each entry's fields into a dict, so it loses repeated
  field names, and it cannot write bytes that are not UTF-8);
* **redis-py raw XRANGE**: the same loop with redis-py's reply parsing turned off
  (``set_response_callback("XRANGE", ...)``): the pairs as the server sent them, decoded by
  hiredis -- the fastest hand-written loop we found.

Reported: the median wall time of each, entries a second, and the ratio of the faster redis-py
loop's time to the CLI's (target, issue 11: >= 2).  Each side's output is counted once (lines)
to check it wrote every entry.

    python bench/export.py
    python bench/export.py --entries 200000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import redis
from common import FIELDS, PIPELINE_SIZE, STREAM, Valkey, exit_on_sigterm

import rstore

PAGE = 1000


def load(vk: Valkey, entries: int, store_path: str) -> None:
    client = vk.client()
    pipe = client.pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd(STREAM, FIELDS)
        if i % PIPELINE_SIZE == PIPELINE_SIZE - 1:
            pipe.execute()
    pipe.execute()
    client.save()
    with rstore.Store(store_path, sync=False) as store:
        store.restore_file(os.path.join(vk.dir, "dump.rdb"))


def cli_export(store_path: str, out: BinaryIO) -> None:
    cmd = [sys.executable, "-m", "rstore_cli", "--store", store_path, "export"]
    subprocess.run(cmd, stdout=out, check=True)


def library_export(store_path: str, out: BinaryIO) -> None:
    with rstore.Store(store_path, create=False) as store:
        for key, cols in rstore.batches_from_store(store):
            out.write(rstore.encode_columns(key, cols))


def redis_py_xrange(port: int, out: BinaryIO) -> None:
    client: Any = redis.Redis(port=port, protocol=2, decode_responses=True)  # untyped replies
    dumps = json.dumps
    for key in sorted(client.scan_iter(_type="stream")):
        low = "-"
        while True:
            page = client.xrange(key, low, "+", count=PAGE)
            lines = [
                dumps({"stream": key, "id": entry_id, "fields": list(fields.items())})
                for entry_id, fields in page
            ]
            if lines:
                out.write(("\n".join(lines) + "\n").encode())
            if len(page) < PAGE:
                break
            low = "(" + page[-1][0]
    client.close()


def redis_py_raw(port: int, out: BinaryIO) -> None:
    client: Any = redis.Redis(port=port, protocol=2, decode_responses=True)  # untyped replies
    client.set_response_callback("XRANGE", lambda reply, **_: reply)
    dumps = json.dumps
    for key in sorted(client.scan_iter(_type="stream")):
        low = "-"
        while True:
            page = client.execute_command("XRANGE", key, low, "+", "COUNT", PAGE)
            lines = [
                dumps({"stream": key, "id": entry_id, "fields": list(zip(flat[::2], flat[1::2]))})
                for entry_id, flat in page
            ]
            if lines:
                out.write(("\n".join(lines) + "\n").encode())
            if len(page) < PAGE:
                break
            low = "(" + page[-1][0]
    client.close()


def count_lines(run: Callable[[BinaryIO], None]) -> int:
    with tempfile.TemporaryFile() as out:
        run(out)
        out.seek(0)
        return sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 20), b""))


def timed(run: Callable[[BinaryIO], None]) -> float:
    with open(os.devnull, "wb") as out:
        began = time.perf_counter()
        run(out)
        return time.perf_counter() - began


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the store and valkey's data go")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as tmp,
        Valkey("no", base_dir=tmp, appendonly=False) as vk,
    ):
        store_path = str(Path(tmp) / "store")
        began = time.perf_counter()
        load(vk, args.entries, store_path)
        print(f"loaded {args.entries} entries on both sides in {time.perf_counter() - began:.1f} s")
        sides: dict[str, Callable[[BinaryIO], None]] = {
            "rstore export (CLI)": lambda out: cli_export(store_path, out),
            "rstore (library)": lambda out: library_export(store_path, out),
            "redis-py xrange": lambda out: redis_py_xrange(vk.port, out),
            "redis-py raw XRANGE": lambda out: redis_py_raw(vk.port, out),
        }
        for name, run in sides.items():
            lines = count_lines(run)
            if lines != args.entries:
                raise SystemExit(f"{name} wrote {lines} lines, not {args.entries}")
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, run in sides.items():
                times[name].append(timed(run))
        medians = {name: statistics.median(t) for name, t in times.items()}
        results: dict[str, Any] = {}
        for name, seconds in medians.items():
            rate = args.entries / seconds
            results[name] = seconds
            runs = ", ".join(f"{t:.2f}" for t in times[name])
            print(f"{name:<22} {seconds:7.2f} s  {rate:>11,.0f} entries/s   (runs: {runs})")
        peer = min(medians["redis-py xrange"], medians["redis-py raw XRANGE"])
        print(
            f"ratio: the faster redis-py loop / rstore export (CLI) = "
            f"{peer / medians['rstore export (CLI)']:.2f}x (target >= 2x); "
            f"library: {peer / medians['rstore (library)']:.2f}x"
        )


if __name__ == "__main__":
    main()
