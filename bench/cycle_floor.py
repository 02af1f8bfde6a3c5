"""CPU per consumer-group cycle (XREADGROUP COUNT 100, then XACK of the 100 IDs), rstore
``sync=False`` beside the floor of what the cycle's records ask of LMDB when no Python semantics
run at all.

Rows (per cycle of 100 messages, after a warm-up of 20 cycles, over a stream of 100k entries):

* **rstore** -- ``xreadgroup(group, consumer, {stream: ">"}, count=100)`` then ``xack`` of the IDs
  it returned, split into the two calls.
* **floor** -- py-lmdb alone, the records each call changes in rstore's layout, one write
  transaction per call, committed without a flush as rstore's engine commits: *deliver* puts 100
  pending entries (group handle + ID -> time, count, owner) and 100 owner-index entries; *ack*
  gets each pending entry, deletes it and its owner-index entry.  No entries are read or decoded,
  no checksums, no log, no group or consumer records: less than rstore must do, so a bound, not a
  model.

Time: ``time.process_time()`` (user + system, every thread) around each call.

    python bench/cycle_floor.py
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from typing import Any

import lmdb
from common import FIELDS, STREAM, markdown_table, write_json

import rstore

COUNT = 100
ENTRIES = 100_000
WARM_UP = 20
_PEL = struct.Struct(">QQQ")  # group handle, ID ms, ID seq
_NACK = struct.Struct(">qQ")  # delivery time, delivery count (then the owner's name)


def rstore_cycle(base: str, cycles: int) -> dict[str, float]:
    with rstore.Store(os.path.join(base, "rstore"), sync=False) as store:
        with store.pipeline() as pipe:
            for _ in range(ENTRIES):
                pipe.xadd(STREAM, FIELDS)
            pipe.execute()
        store.xgroup_create(STREAM, "g", id="0")
        read_s = ack_s = 0.0
        for i in range(WARM_UP + cycles):
            start = time.process_time()
            reply = store.xreadgroup("g", "c", {STREAM: ">"}, count=COUNT)
            middle = time.process_time()
            store.xack(STREAM, "g", *[eid for eid, _ in reply[0][1]])
            if i >= WARM_UP:
                read_s += middle - start
                ack_s += time.process_time() - middle
    return {"read_us": read_s / cycles * 1e6, "ack_us": ack_s / cycles * 1e6}


def lmdb_cycle(base: str, cycles: int) -> dict[str, float]:
    path = os.path.join(base, "floor")
    os.makedirs(path)
    env = lmdb.open(path, map_size=1 << 32, max_dbs=4, sync=False, metasync=False)
    pel, owned = env.open_db(b"pel"), env.open_db(b"consumer_pel")
    owner = b"c"
    owned_prefix = _PEL.pack(7, 0, 0)[:8] + len(owner).to_bytes(2, "big") + owner
    read_s = ack_s = 0.0
    for i in range(WARM_UP + cycles):
        ids = [(1_700_000_000_000 + i, seq) for seq in range(COUNT)]
        start = time.process_time()
        with env.begin(write=True) as txn:
            value = _NACK.pack(1_700_000_000_000, 1) + owner
            for ms, seq in ids:
                key = _PEL.pack(7, ms, seq)
                txn.put(key, value, db=pel)
                txn.put(owned_prefix + key[8:], b"", db=owned)
        middle = time.process_time()
        with env.begin(write=True, buffers=True) as txn:
            for ms, seq in ids:
                key = _PEL.pack(7, ms, seq)
                found = txn.get(key, db=pel)
                if found is not None:
                    name = bytes(found[_NACK.size :])  # the owner, from the entry
                    txn.delete(key, db=pel)
                    txn.delete(key[:8] + len(name).to_bytes(2, "big") + name + key[8:], db=owned)
        if i >= WARM_UP:
            read_s += middle - start
            ack_s += time.process_time() - middle
    env.close()
    return {"read_us": read_s / cycles * 1e6, "ack_us": ack_s / cycles * 1e6}


def table(rows: list[dict[str, Any]]) -> str:
    return markdown_table(
        ("per cycle of 100 messages", "XREADGROUP (us of CPU)", "XACK", "cycle"),
        "lrrr",
        (
            (r["case"], f"{r['read_us']:.0f}", f"{r['ack_us']:.0f}",
             f"{r['read_us'] + r['ack_us']:.0f}")
            for r in rows
        ),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=500, help="timed cycles per case")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    if not 1 <= args.cycles <= ENTRIES // COUNT - WARM_UP:
        parser.error(f"--cycles must be between 1 and {ENTRIES // COUNT - WARM_UP}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rstore-cycle-floor-") as base:
        rows.append({"case": "rstore (sync=False)", **rstore_cycle(base, args.cycles)})
        rows.append(
            {"case": "floor: LMDB alone, the same records", **lmdb_cycle(base, args.cycles)}
        )
    print(f"# {args.cycles} cycles per case, CPU time of this process (every thread)")
    print(table(rows))
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
