"""Add jobs to the queue: ``python queue_producer.py STORE COUNT [--poison]``.

Each job is one entry of the stream ``jobs``.  ``--poison`` adds one more job that the
worker's handler can never process (to see the dead-letter stream at work).
"""

from __future__ import annotations

import argparse

import rstore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", help="the store directory (created if missing)")
    parser.add_argument("count", type=int, help="how many jobs to add")
    parser.add_argument("--poison", action="store_true", help="add one job that always fails")
    args = parser.parse_args()

    with rstore.Store(args.store) as store:
        for n in range(args.count):
            # XADD returns when the entry is on disk (sync=True, the default).
            store.xadd("jobs", {"job": n, "payload": f"resize image {n}.png"})
        if args.poison:
            store.xadd("jobs", {"job": args.count, "payload": "poison"})
    print(f"added {args.count} jobs" + (" and 1 poison job" if args.poison else ""))


if __name__ == "__main__":
    main()
