"""Footprint: bytes on disk per entry, rstore's LMDB file beside valkey's RDB and AOF.

Both sides receive exactly the same entries: the benchmark fields with explicit IDs
``T0 + i // 10`` ms, sequence ``i % 10`` (a producer writing 10 entries per millisecond), in
pipelines of 1000, with both sides' default node limits (100 entries / 4096 bytes per node).

rstore (closed, then measured):

* ``data.mdb`` apparent size and allocated size (``st_blocks``);
* LMDB's used pages: ``last_pgno + 1`` (the high-water mark) times the page size, and the pages
  each sub-database holds (branch, leaf, overflow), read with py-lmdb from the closed store.
  A stream node (a listpack of up to 100 entries, ~3.3 KB here) is larger than the biggest
  value LMDB keeps inside a 4 KiB leaf page, so each full node lives in its own overflow page.

valkey: ``SAVE`` with ``rdbcompression yes`` and ``no`` (the RDB file's size), the AOF it wrote
while loading (``appendonly yes``, automatic rewrite off, so a log of the XADD commands), and
``MEMORY USAGE`` of the stream.

    python bench/footprint.py --entries 100000 1000000
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import lmdb
from common import (
    FIELDS,
    PIPELINE_SIZE,
    STREAM,
    Result,
    Valkey,
    add_common_args,
    exit_on_sigterm,
    set_placement,
    temp_store,
    write_json,
)

T0_MS = 1_700_000_000_000
SIZES = {False: (100_000, 1_000_000), True: (10_000,)}


def entry_id(i: int) -> str:
    return f"{T0_MS + i // 10}-{i % 10}"


def load(pipeline_factory: Any, entries: int) -> None:
    for start in range(0, entries, PIPELINE_SIZE):
        pipe = pipeline_factory()
        for i in range(start, min(entries, start + PIPELINE_SIZE)):
            pipe.xadd(STREAM, FIELDS, id=entry_id(i))
        pipe.execute()


def lmdb_pages(path: str) -> dict[str, Any]:
    """Page accounting of a closed LMDB environment (opened read-only, without the lock)."""
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=64, subdir=True)
    try:
        info = env.info()
        main = env.stat()
        psize = int(main["psize"])
        per_db: dict[str, dict[str, int]] = {
            "(main)": {k: int(main[k]) for k in ("branch_pages", "leaf_pages", "overflow_pages")}
        }
        with env.begin() as txn:
            names = [bytes(k) for k, _ in txn.cursor()]
            for name in names:
                st = txn.stat(env.open_db(name, txn=txn, create=False))
                per_db[name.decode()] = {
                    k: int(st[k]) for k in ("branch_pages", "leaf_pages", "overflow_pages")
                }
                per_db[name.decode()]["entries"] = int(st["entries"])
    finally:
        env.close()
    in_trees = sum(
        d["branch_pages"] + d["leaf_pages"] + d["overflow_pages"] for d in per_db.values()
    )
    high_water = int(info["last_pgno"]) + 1
    return {
        "page_size": psize,
        "last_txnid": int(info["last_txnid"]),
        "high_water_pages": high_water,
        "tree_pages": in_trees,
        # the two meta pages, the free-page list's own pages, and pages free for reuse
        "other_pages": high_water - in_trees,
        "per_db": {k: v for k, v in per_db.items() if any(v.values())},
    }


def measure_rstore(entries: int, base_dir: str | None) -> dict[str, Any]:
    with temp_store(False, base_dir) as store:
        load(store.pipeline, entries)
        if store.xlen(STREAM) != entries:
            raise RuntimeError("rstore did not store every entry")
        store.sync()
        path = store.path
        store.close()
        st = os.stat(os.path.join(path, "data.mdb"))
        pages = lmdb_pages(path)
    return {
        "file_bytes": st.st_size,
        "allocated_bytes": st.st_blocks * 512,
        "used_bytes": pages["high_water_pages"] * pages["page_size"],
        **pages,
    }


def measure_valkey(entries: int, base_dir: str | None) -> dict[str, Any]:
    with Valkey("everysec", base_dir=base_dir) as valkey:
        client = valkey.client()
        # keep the AOF a plain log of the XADDs: no automatic rewrite into an RDB preamble
        client.config_set("auto-aof-rewrite-percentage", 0)
        load(lambda: client.pipeline(transaction=False), entries)
        if client.xlen(STREAM) != entries:
            raise RuntimeError("valkey did not store every entry")
        memory = int(client.memory_usage(STREAM, samples=0) or 0)
        rdb: dict[str, int] = {}
        for compression in ("yes", "no"):
            client.config_set("rdbcompression", compression)
            client.save()
            rdb[compression] = (Path(valkey.dir) / "dump.rdb").stat().st_size
        aof = valkey.aof_bytes()
    return {
        "rdb_compressed_bytes": rdb["yes"],
        "rdb_uncompressed_bytes": rdb["no"],
        "aof_bytes": aof,
        "memory_usage_bytes": memory,
    }


def run(entries: int, base_dir: str | None = None) -> Result:
    ours = measure_rstore(entries, base_dir)
    theirs = measure_valkey(entries, base_dir)
    return {"entries": entries, "rstore": ours, "valkey": theirs}


def run_all(*, quick: bool = False, base_dir: str | None = None) -> list[Result]:
    return [run(n, base_dir) for n in SIZES[quick]]


def table(results: list[Result]) -> str:
    """Bytes per entry, one row per stream size."""
    lines = [
        "| entries | rstore data.mdb allocated | rstore LMDB used pages | rstore overflow pages "
        "| valkey RDB (rdbcompression yes) | valkey RDB (no) | valkey AOF | valkey in memory |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        n = r["entries"]
        ours, theirs = r["rstore"], r["valkey"]
        overflow = sum(d["overflow_pages"] for d in ours["per_db"].values())
        lines.append(
            f"| {n:,} | {ours['allocated_bytes'] / n:.1f} B | {ours['used_bytes'] / n:.1f} B "
            f"({ours['high_water_pages']:,} × {ours['page_size']}) "
            f"| {overflow:,} ({overflow * ours['page_size'] / n:.1f} B) "
            f"| {theirs['rdb_compressed_bytes'] / n:.1f} B "
            f"| {theirs['rdb_uncompressed_bytes'] / n:.1f} B "
            f"| {theirs['aof_bytes'] / n:.1f} B | {theirs['memory_usage_bytes'] / n:.1f} B |"
        )
    return "\n".join(lines)


def detail(results: list[Result]) -> str:
    """LMDB page accounting per sub-database, for each size."""
    out = []
    for r in results:
        ours = r["rstore"]
        out.append(
            f"{r['entries']:,} entries: data.mdb {ours['file_bytes']:,} B apparent, "
            f"{ours['allocated_bytes']:,} B allocated; page size {ours['page_size']}; "
            f"{ours['high_water_pages']:,} pages up to the high-water mark, "
            f"{ours['tree_pages']:,} in B-trees, {ours['other_pages']:,} meta/free"
        )
        for name, d in ours["per_db"].items():
            extra = f", {d['entries']:,} records" if "entries" in d else ""
            out.append(
                f"  {name}: {d['branch_pages']} branch, {d['leaf_pages']} leaf, "
                f"{d['overflow_pages']} overflow pages{extra}"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    parser.add_argument(
        "--entries",
        type=int,
        nargs="+",
        default=None,
        help="stream sizes (default: 100000 1000000; --quick: 10000)",
    )
    args = parser.parse_args(argv)
    print(f"# CPU placement: {set_placement(args.placement)}")
    sizes = args.entries or SIZES[args.quick]
    results = [run(n, args.dir) for n in sizes]  # deterministic: --repeat does not apply
    print(table(results))
    print()
    print(detail(results))
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
