"""Damaged, foreign and newer files: a clear CorruptRDBError or UnsupportedRDBError naming the
offset (and the key when known), never another exception or a hang, and the target store left
exactly as it was.  Ends with a short fuzz run bounded in time
(``RSTORE_FUZZ_IN_PROCESS_SECONDS``, default 3; tests/rdb/test_fuzz.py runs the longer one, in a
child process)."""

from __future__ import annotations

import os
import random
import re
import signal
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import rstore
from rstore import CorruptRDBError, UnsupportedRDBError, inspect_rdb, read_rdb_range
from rstore.codec.crc64 import crc64

from .common import FIXTURES

PLAIN = (FIXTURES / "queue-valkey-plain.rdb").read_bytes()
LZF = (FIXTURES / "queue-valkey-lzf.rdb").read_bytes()
JOBS_AT = PLAIN.find(b"\x15\x04jobs")  # the type byte of the stream "jobs" (type 21)
RDB_ERRORS = (CorruptRDBError, UnsupportedRDBError)


def with_crc(data: bytes) -> bytes:
    """``data`` with its CRC64 trailer recomputed, so that parsing goes past the checksum."""
    return data[:-8] + struct.pack("<Q", crc64(data[:-8]))


def patched(at: int, new: bytes, data: bytes = PLAIN) -> bytes:
    return with_crc(data[:at] + new + data[at + len(new) :])


def contents(store: rstore.Store) -> dict[bytes, Any]:
    """Everything a user can see of the store's streams (DUMP covers entries, groups, PEL)."""
    return {key: store.dump(key) for key in sorted(store.execute("KEYS", "*"))}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "store") as s:
        s.xadd("existing", {"f": "v"}, id="1-1")
        s.xgroup_create("existing", "g", "0")
        s.xreadgroup("g", "c", {"existing": ">"})
        yield s


CASES = [
    ("empty file", b"", CorruptRDBError, "not an RDB file", 0),
    ("not an RDB file", b"hello\n" * 20, CorruptRDBError, "not an RDB file", 0),
    ("cut in the header", PLAIN[:7], CorruptRDBError, "", None),
    ("cut in a value", PLAIN[: len(PLAIN) // 2], CorruptRDBError, "runs past the end", None),
    ("cut before the checksum", PLAIN[:-4], CorruptRDBError, "", None),
    ("wrong checksum", PLAIN[:-1] + bytes([PLAIN[-1] ^ 1]), CorruptRDBError, "checksum", None),
    ("flipped bit", PLAIN[:900] + bytes([PLAIN[900] ^ 4]) + PLAIN[901:], CorruptRDBError, "", None),
    ("newer RDB version", patched(5, b"0015"), UnsupportedRDBError, "RDB version 15", 5),
    ("Valkey 9 file", patched(0, b"VALKEY080"), UnsupportedRDBError, "VALKEY", 0),
    ("stream type 26", patched(JOBS_AT, b"\x1a"), UnsupportedRDBError, "type 26", JOBS_AT),
    ("module value", patched(JOBS_AT, b"\x07"), UnsupportedRDBError, "module", None),
    ("unknown type", patched(JOBS_AT, b"\x28"), UnsupportedRDBError, "type 40", JOBS_AT),
    # the same byte damaged: the checksum says so, rather than "a newer server's value type"
    (
        "damaged type byte",
        PLAIN[:JOBS_AT] + b"\x7e" + PLAIN[JOBS_AT + 1 :],
        CorruptRDBError,
        "wrong RDB checksum, and byte",
        JOBS_AT,
    ),
    ("bad length", patched(JOBS_AT + 6, b"\xbf"), CorruptRDBError, "length", None),
    ("absurd size", patched(JOBS_AT + 6, b"\x80\xff\xff\xff\xff"), CorruptRDBError, "", None),
    # the first node's listpack (after the node count and the 17-byte node key) claims 16 MB
    (
        "length past the end",
        patched(JOBS_AT + 24, b"\x80\x00\xff\xff\x00"),
        CorruptRDBError,
        "a length of 16776960 bytes runs past the end",
        JOBS_AT + 29,
    ),
]


@pytest.mark.parametrize(
    ("data", "error", "text", "offset"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_refused_with_a_clear_error_and_nothing_changed(
    store: rstore.Store, tmp_path: Path, data: bytes, error: type, text: str, offset: int | None
) -> None:
    path = tmp_path / "bad.rdb"
    path.write_bytes(data)
    before = contents(store)
    for attempt in (
        lambda: store.restore_file(path),
        lambda: store.restore_file(path, db=None),
        lambda: inspect_rdb(str(path)),
        lambda: read_rdb_range(str(path), b"jobs"),
        lambda: rstore.index_rdb(str(path)),
    ):
        with pytest.raises(error) as caught:
            attempt()
        message = str(caught.value)
        assert text in message
        assert message.startswith(f"{path}: ") and caught.value.path == str(path)  # named
        assert "\n" not in message
        found = re.search(r"at byte (\d+)", message)
        assert found is not None, message
        if offset is not None:
            assert int(found.group(1)) == offset
    assert contents(store) == before
    assert store.check() == []


def test_the_key_is_named_when_known(tmp_path: Path) -> None:
    path = tmp_path / "bad.rdb"
    path.write_bytes(patched(JOBS_AT + 6, b"\xbf"))
    with pytest.raises(CorruptRDBError, match=r"key 'jobs'"):
        inspect_rdb(str(path))


def test_all_zero_checksum_means_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "nocrc.rdb"
    path.write_bytes(PLAIN[:-8] + bytes(8))
    summary = inspect_rdb(str(path))
    assert not summary.checksum_verified
    assert summary.streams


def test_every_truncation_is_refused(store: rstore.Store, tmp_path: Path) -> None:
    before = contents(store)
    path = tmp_path / "cut.rdb"
    for cut in [*range(64), *range(64, len(LZF), 61)]:
        path.write_bytes(LZF[:cut])
        with pytest.raises(CorruptRDBError):
            store.restore_file(path)
    assert contents(store) == before


def test_existing_keys_refused_unless_replace(store: rstore.Store, tmp_path: Path) -> None:
    # the conflicting key comes last in the file: the streams before it were already imported
    # inside the transaction, and must be rolled back with it
    with rstore.Store(tmp_path / "source") as source:
        for name in ("a", "b", "existing"):
            source.xadd(name, {"from": "file"}, id="5-5")
        source.save(tmp_path / "file.rdb")
    before = contents(store)
    with pytest.raises(rstore.RStoreError, match="existing"):
        store.restore_file(tmp_path / "file.rdb")
    assert contents(store) == before
    report = store.restore_file(tmp_path / "file.rdb", replace=True)
    assert report.replaced == [b"existing"]
    assert store.xrange("existing") == [(b"5-5", {b"from": b"file"})]
    assert store.xinfo_groups("existing") == []  # replaced whole, groups included
    assert store.check() == []


class Hang(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(b))
        choice = rng.random()
        if choice < 0.6:
            b[i] = rng.randrange(256)
        elif choice < 0.8:
            del b[i : i + rng.randint(1, 16)]
        else:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    out = bytes(b)
    return with_crc(out) if rng.random() < 0.7 and len(out) > 17 else out


def test_fuzzed_files_and_payloads(tmp_path: Path) -> None:
    """Random damage, mostly with a recomputed checksum so that the parser meets it: each file
    either loads -- and then the store is consistent -- or is refused with an RDB error; each
    DUMP payload either restores or gets Valkey's error.  Each case has 10 s before it counts
    as a hang."""
    seconds = float(os.environ.get("RSTORE_FUZZ_IN_PROCESS_SECONDS", "3"))
    rng = random.Random(int(os.environ.get("RSTORE_FUZZ_SEED", "20261121")))
    path = tmp_path / "fuzz.rdb"
    with rstore.Store(tmp_path / "source") as source:
        source.restore_file(FIXTURES / "queue-valkey-lzf.rdb")
        payloads = [source.dump(k) for k in source.execute("KEYS", "*")]
    previous = signal.signal(signal.SIGALRM, _alarm)
    deadline = time.monotonic() + seconds
    cases = 0
    try:
        with rstore.Store(tmp_path / "target") as store:
            while time.monotonic() < deadline:
                cases += 1
                signal.alarm(10)
                data = _mutate(rng, rng.choice((PLAIN, LZF)))
                path.write_bytes(data)
                try:
                    store.restore_file(path, replace=True)
                except RDB_ERRORS:
                    pass
                except Hang:
                    pytest.fail(f"restore hung on case {cases} (seed in RSTORE_FUZZ_SEED)")
                try:
                    inspect_rdb(str(path))
                    read_rdb_range(str(path), b"jobs")
                except RDB_ERRORS:
                    pass
                payload = rng.choice(payloads)
                assert payload is not None
                bad = _mutate(rng, payload[:-10]) + payload[-10:]
                bad = bad[:-8] + struct.pack("<Q", crc64(bad[:-8]))
                try:
                    store.execute("RESTORE", "fuzzed", "0", bad, "REPLACE")
                except rstore.ResponseError as exc:
                    assert exc.line in (
                        "ERR DUMP payload version or checksum are wrong",
                        "ERR Bad data format",
                    ) or exc.line.startswith("ERR rstore stores streams only")  # a valid type
                signal.alarm(0)
            assert store.check() == []
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert cases > 10


def test_entries_out_of_order_are_refused(store: rstore.Store, tmp_path: Path) -> None:
    """Redis itself does not check that IDs rise inside a node; rstore refuses such a stream
    (found by the fuzz test): a file or payload whose second entry repeats the first's ID."""
    from rstore.codec import stream_node as sn

    fv = [b"f", b"v"]
    good, bad = sn.new_node(fv), sn.new_node(fv)
    sn.append_entry(good, (5, 5), (5, 7), fv)
    sn.append_entry(bad, (5, 5), (5, 5), fv)  # same size, ID not after its predecessor
    assert len(good) == len(bad)
    with rstore.Store(tmp_path / "source") as source:
        source.xadd("s", {"f": "v"}, id="5-5")
        source.xadd("s", {"f": "v"}, id="5-7")
        payload = source.dump("s")
        source.save(tmp_path / "ok.rdb", compress=False)
    assert payload is not None and bytes(good) in payload
    crafted = payload[:-8].replace(bytes(good), bytes(bad))
    crafted += struct.pack("<Q", crc64(crafted))
    before = contents(store)
    with pytest.raises(rstore.ResponseError) as refused:
        store.execute("RESTORE", "s", "0", crafted)
    assert refused.value.line == "ERR Bad data format"
    data = (tmp_path / "ok.rdb").read_bytes()
    (tmp_path / "bad.rdb").write_bytes(with_crc(data.replace(bytes(good), bytes(bad))))
    with pytest.raises(CorruptRDBError, match="out of order"):
        store.restore_file(tmp_path / "bad.rdb")
    assert contents(store) == before
