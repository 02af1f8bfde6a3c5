"""A queue worker: ``python queue_worker.py STORE NAME [--claim-idle-ms MS]``.

Runs until SIGTERM or Ctrl-C.  Start as many as you like, each with its own NAME; restart a
worker under the same NAME and it first gets back the jobs it had not acknowledged.
"""

from __future__ import annotations

import argparse
import logging
import signal
import time

import rstore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", help="the store directory")
    parser.add_argument("name", help="this worker's consumer name; keep it across restarts")
    parser.add_argument(
        "--claim-idle-ms",
        type=int,
        default=60_000,
        help="take over jobs another worker has held this long without acknowledging them",
    )
    parser.add_argument("--seconds-per-job", type=float, default=0.0, help="simulated work")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    store = rstore.Store(args.store)
    consumer = rstore.Consumer(
        store,
        "jobs",
        "workers",  # the consumer group: created (reading from the start) if missing
        args.name,
        count=10,  # jobs fetched per read
        block_ms=1000,  # how long one read waits; also how fast stop() takes effect
        claim_idle_ms=args.claim_idle_ms,
        claim_every_ms=max(100, args.claim_idle_ms // 5),
        max_deliveries=3,  # a job delivered a 4th time goes to the dead-letter stream
        dead_letter="jobs:dead",
    )

    def handle(msg: rstore.Message) -> None:
        job = msg.fields[b"job"].decode()
        print(f"working on {msg.id.decode()} job {job}", flush=True)
        if msg.fields[b"payload"] == b"poison":
            raise ValueError(f"job {job} cannot be processed")
        time.sleep(args.seconds_per_job)
        print(f"done {msg.id.decode()} job {job} (delivery {msg.deliveries})", flush=True)

    # Ctrl-C: run() lets the job in hand finish and returns (a second Ctrl-C: at once).
    # SIGTERM (a service manager's stop): the same, through stop().
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
    consumer.run(handle)  # acknowledges each job whose handler returned
    store.close()


if __name__ == "__main__":
    main()
