"""Replay at top speed: ``rstore replay`` / ``rstore import`` beside the hand-written redis-py
loops against valkey-server 8.0 (issue 11).

``--entries`` entries (1,000,000) of the standard three short fields are written into valkey A
with pipelined XADDs, saved (``SAVE``: the RDB dump), the dump restored into a store and
exported to JSONL (all untimed).  Then, ``--runs`` times, each side into a fresh target (a new
store directory; valkey B flushed), the median wall time of each:

* **store -> store**: ``rstore --store S replay --to-store T`` (a process; IDs kept);
* **RDB -> store**: ``rstore replay --from-dump dump.rdb --to-store T``;
* **import**: ``rstore --store T import export.jsonl``;
* **store -> valkey**: ``rstore --store S replay --to-url redis://B``;
* **redis-py valkey -> valkey**: XRANGE pages of 1000 from A (raw replies, hiredis), each page
  one pipeline of 1000 ``XADD key id ...`` into B -- the best hand-written copy loop;
* **redis-py JSONL -> valkey**: the JSONL file read line by line, ``json.loads``, pipelines of
  1000 XADDs into B (the peer of import).

Targets: store -> store >= 3x the redis-py copy; store -> valkey >= 0.9x it; import >= 1x the
JSONL -> valkey loop.  Each target is checked for its entry count after every run.

    python bench/replay.py
    python bench/replay.py --entries 200000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import FIELDS, PIPELINE_SIZE, STREAM, Valkey, exit_on_sigterm

import rstore

PAGE = 1000


def load(vk: Valkey, entries: int, store_path: str, jsonl: str) -> str:
    client = vk.client()
    pipe = client.pipeline(transaction=False)
    for i in range(entries):
        pipe.xadd(STREAM, FIELDS)
        if i % PIPELINE_SIZE == PIPELINE_SIZE - 1:
            pipe.execute()
    pipe.execute()
    client.save()
    dump = str(Path(store_path).parent / "source.rdb")
    shutil.copyfile(os.path.join(vk.dir, "dump.rdb"), dump)
    with rstore.Store(store_path, sync=False) as store:
        store.restore_file(dump)
        with open(jsonl, "wb") as out:
            for key, cols in rstore.batches_from_store(store):
                out.write(rstore.encode_columns(key, cols))
    return dump


def cli(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "rstore_cli", *args], check=True, stdout=subprocess.DEVNULL
    )


def redis_copy(src: Any, dst: Any) -> None:
    src.set_response_callback("XRANGE", lambda reply, **_: reply)
    for key in src.scan_iter(_type="stream"):
        low = b"-"
        while True:
            page = src.execute_command("XRANGE", key, low, "+", "COUNT", PAGE)
            pipe = dst.pipeline(transaction=False)
            for entry_id, flat in page:
                pipe.execute_command("XADD", key, entry_id, *flat)
            pipe.execute()
            if len(page) < PAGE:
                break
            low = b"(" + page[-1][0]


def redis_from_jsonl(path: str, dst: Any) -> None:
    loads = json.loads
    with open(path, "rb") as f:
        pipe = dst.pipeline(transaction=False)
        n = 0
        for line in f:
            entry = loads(line)
            flat = [x for pair in entry["fields"] for x in pair]
            pipe.execute_command("XADD", entry["stream"], entry["id"], *flat)
            n += 1
            if n == PIPELINE_SIZE:
                pipe.execute()
                pipe = dst.pipeline(transaction=False)
                n = 0
        pipe.execute()


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where the stores and valkey's data go")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as tmp,
        Valkey("no", base_dir=tmp, appendonly=False) as a,
        Valkey("no", base_dir=tmp, appendonly=False) as b,
    ):
        source = str(Path(tmp) / "source")
        jsonl = str(Path(tmp) / "export.jsonl")
        began = time.perf_counter()
        dump = load(a, args.entries, source, jsonl)
        print(f"loaded {args.entries} entries in {time.perf_counter() - began:.1f} s")
        a_client, b_client = a.client(), b.client()
        url = f"redis://127.0.0.1:{b.port}/0"
        target = str(Path(tmp) / "target")

        def fresh() -> None:
            shutil.rmtree(target, ignore_errors=True)
            b_client.flushall()

        def in_store() -> int:
            with rstore.Store(target, create=False) as t:
                return int(t.xlen(STREAM))

        sides: dict[str, tuple[Callable[[], None], Callable[[], int]]] = {
            "store -> store (rstore replay)": (
                lambda: cli("--store", source, "replay", "--to-store", target),
                in_store,
            ),
            "RDB -> store (rstore replay)": (
                lambda: cli("replay", "--from-dump", dump, "--to-store", target),
                in_store,
            ),
            "JSONL -> store (rstore import)": (
                lambda: cli("--store", target, "import", jsonl),
                in_store,
            ),
            "store -> valkey (rstore replay)": (
                lambda: cli("--store", source, "replay", "--to-url", url),
                lambda: b_client.xlen(STREAM),
            ),
            "valkey -> valkey (redis-py loop)": (
                lambda: redis_copy(a_client, b_client),
                lambda: b_client.xlen(STREAM),
            ),
            "JSONL -> valkey (redis-py loop)": (
                lambda: redis_from_jsonl(jsonl, b_client),
                lambda: b_client.xlen(STREAM),
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, (run, count) in sides.items():
                fresh()
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
                got = count()
                if got != args.entries:
                    raise SystemExit(f"{name}: {got} entries in the target, not {args.entries}")
        med = {name: statistics.median(t) for name, t in times.items()}
        for name, seconds in med.items():
            runs = ", ".join(f"{t:.2f}" for t in times[name])
            print(f"{name:<34} {seconds:7.2f} s {args.entries / seconds:>11,.0f}/s  (runs: {runs})")
        copy = med["valkey -> valkey (redis-py loop)"]
        imports = med["JSONL -> valkey (redis-py loop)"] / med["JSONL -> store (rstore import)"]
        print(
            f"store -> store: {copy / med['store -> store (rstore replay)']:.2f}x the redis-py "
            f"copy (target >= 3x); store -> valkey: "
            f"{copy / med['store -> valkey (rstore replay)']:.2f}x (target >= 0.9x); import: "
            f"{imports:.2f}x the JSONL -> valkey loop (target >= 1x)"
        )


if __name__ == "__main__":
    main()
