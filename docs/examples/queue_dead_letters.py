"""Inspect the queue and its dead letters: ``python queue_dead_letters.py STORE [--requeue]``.

``--requeue`` puts each dead letter back on the ``jobs`` stream (its original fields only)
and removes it from ``jobs:dead``, both in one atomic transaction.
"""

from __future__ import annotations

import argparse

import rstore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", help="the store directory")
    parser.add_argument("--requeue", action="store_true", help="put dead letters back on jobs")
    args = parser.parse_args()

    with rstore.Store(args.store, create=False) as store:
        for group in store.xinfo_groups("jobs"):
            print(
                f"group {group['name'].decode()}: pending={group['pending']} lag={group['lag']}"
                f" consumers={group['consumers']}"
            )
        for pending in store.xpending_range("jobs", "workers", "-", "+", 20):
            print(
                f"  pending {pending['message_id'].decode()} at {pending['consumer'].decode()}"
                f" idle={pending['time_since_delivered']}ms"
                f" deliveries={pending['times_delivered']}"
            )

        dead = store.xrange("jobs:dead") if store.exists("jobs:dead") else []
        print(f"{len(dead)} dead letter(s)")
        for dead_id, fields in dead:
            original = {k: v for k, v in fields.items() if not k.startswith(b"rstore:")}
            print(
                f"  {dead_id.decode()}: job id={fields[b'rstore:id'].decode()}"
                f" deliveries={fields[b'rstore:deliveries'].decode()}"
                f" reason={fields[b'rstore:reason'].decode()!r} fields={original}"
            )
            if args.requeue:
                with store.pipeline() as pipe:
                    pipe.xadd("jobs", original)
                    pipe.xdel("jobs:dead", dead_id)
                    pipe.execute()
        if args.requeue:
            print(f"requeued {len(dead)}")


if __name__ == "__main__":
    main()
