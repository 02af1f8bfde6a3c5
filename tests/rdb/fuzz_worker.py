"""The RDB fuzz loop, run as its own process by tests/rdb/test_fuzz.py so that a hang is caught
by a timeout from outside (and by a per-case alarm inside) instead of freezing the test run.

    python tests/rdb/fuzz_worker.py SECONDS SEED WORKDIR

Each case damages a fixture file (or a DUMP payload made from one) -- overwritten, deleted and
inserted bytes, a length byte pushed up or made a huge 64-bit length, a cut -- mostly with the
CRC64 recomputed so that the parser meets the damage.  Restoring it must either work, and
leave a store whose every stream answers and whose ``check()`` is clean, or fail with
``CorruptRDBError`` / ``UnsupportedRDBError`` (RESTORE: Valkey's error lines).  Anything else
ends the process with the case number and the exception; ``case N`` lines on stdout say how
far it got.
"""

from __future__ import annotations

import contextlib
import random
import signal
import struct
import sys
import time
import traceback
from pathlib import Path
from types import FrameType

import rstore
from rstore import CorruptRDBError, UnsupportedRDBError, inspect_rdb, read_rdb_range
from rstore.codec.crc64 import crc64

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdb"
RDB_ERRORS = (CorruptRDBError, UnsupportedRDBError)
RESTORE_ERRORS = ("ERR DUMP payload version or checksum are wrong", "ERR Bad data format")
CASE_SECONDS = 10


class Hang(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        i = rng.randrange(len(b))
        choice = rng.random()
        if choice < 0.45:
            b[i] = rng.randrange(256)
        elif choice < 0.6:
            b[i] ^= 1 << rng.randrange(8)
        elif choice < 0.65:
            b[i] = rng.choice((0x3F, 0x7F, 0x80, 0x81, 0xC3, 0xFF))  # lengths and encodings
        elif choice < 0.7:  # a length or count made a huge 64-bit one (2**63 and up, 2**32)
            huge = rng.choice((2**64 - 1, 2**63, 2**63 - 1, 2**32)) - rng.randrange(2)
            b[i : i + 1] = b"\x81" + huge.to_bytes(8, "big")
        elif choice < 0.85:
            del b[i : i + rng.randint(1, 16)]
        else:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    if rng.random() < 0.05:
        del b[rng.randrange(len(b) + 1) :]
    return bytes(b)


def with_crc(data: bytes) -> bytes:
    return data[:-8] + struct.pack("<Q", crc64(data[:-8])) if len(data) > 17 else data


def exercise(store: rstore.Store) -> None:
    """Whatever loaded must be readable and consistent."""
    for key in store.execute("KEYS", "*"):
        store.execute("XINFO", "STREAM", key, "FULL")
        store.execute("XRANGE", key, "-", "+")
        store.dump(key)
    problems = store.check()
    if problems:
        raise AssertionError(f"check() after a successful load: {problems}")


def main(seconds: float, seed: int, workdir: Path) -> int:
    rng = random.Random(seed)
    files = [p.read_bytes() for p in sorted(FIXTURES.glob("*.rdb"))]
    with rstore.Store(workdir / "source") as source:
        source.restore_file(FIXTURES / "queue-valkey-lzf.rdb")
        payloads = [
            p
            for k in source.execute("KEYS", "*")
            for v in (10, 11)
            if (p := source.dump(k, rdb_version=v)) is not None
        ]
    signal.signal(signal.SIGALRM, _alarm)
    path = workdir / "fuzz.rdb"
    cases = loaded = restored = 0
    deadline = time.monotonic() + seconds
    with rstore.Store(workdir / "target") as store:
        while time.monotonic() < deadline:
            cases += 1
            print(f"case {cases}", flush=True)
            data = bad = b""
            signal.alarm(CASE_SECONDS)
            try:
                data = mutate(rng, rng.choice(files))
                if rng.random() < 0.8:
                    data = with_crc(data)
                path.write_bytes(data)
                try:
                    store.restore_file(path, replace=True)
                except RDB_ERRORS:
                    pass
                else:
                    loaded += 1
                    exercise(store)
                for attempt in (
                    lambda: inspect_rdb(str(path)),
                    lambda: read_rdb_range(str(path), b"jobs"),
                ):
                    with contextlib.suppress(*RDB_ERRORS):
                        attempt()
                payload = rng.choice(payloads)
                bad = mutate(rng, payload[:-10]) + payload[-10:]
                if rng.random() < 0.9:
                    bad = bad[:-8] + struct.pack("<Q", crc64(bad[:-8]))
                try:
                    store.execute("RESTORE", "fuzzed", "0", bad, "REPLACE")
                except rstore.ResponseError as exc:
                    message = exc.line
                    if message not in RESTORE_ERRORS and "streams only" not in message:
                        raise
                else:
                    restored += 1
                    exercise(store)
            except Hang:
                print(f"HANG at case {cases} (seed {seed})", flush=True)
                return 3
            except Exception:
                (workdir / "failing.rdb").write_bytes(data)
                (workdir / "failing.payload").write_bytes(bad)
                print(f"FAILED at case {cases} (seed {seed}); input kept in {workdir}", flush=True)
                traceback.print_exc(file=sys.stdout)
                return 2
            finally:
                signal.alarm(0)
        problems = store.check()
        if problems:
            print(f"FAILED: check() at the end: {problems}", flush=True)
            return 2
    print(f"done: {cases} cases, {loaded} files and {restored} payloads loaded", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
