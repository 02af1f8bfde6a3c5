"""A damaged count in a stream value -- of nodes, groups, PEL entries, consumers, a consumer's
PEL -- stored as a 64-bit RDB length: a clean ``CorruptRDBError`` naming the count, at its
offset, from every reader, with or without the C extension.

The C record readers once took the count as a C ``Py_ssize_t``, so a count above 2**63 - 1
escaped as ``OverflowError: Python int too large to convert to C ssize_t`` (one run of
``test_restore_runs.py``'s random damage met it); and ``index_rdb`` let the ``CorruptDataError``
of a node whose master entry is damaged escape without the file offset."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

import rstore
from rstore.codec.crc64 import crc64
from rstore.errors import CorruptRDBError
from rstore.rdb import values
from rstore.rdb.decoding import Source
from rstore.rdb.encoding import encode_string

from .common import plain_events_rdb

STREAM_TYPE = 21
HUGE = [2**64 - 1, 2**63, 2**63 - 1, 2**32]


def _raw(ms: int, seq: int) -> bytes:
    return struct.pack(">QQ", ms, seq)


@pytest.fixture(scope="module")
def value(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The RDB value of stream ``s`` (entries 1-1 .. 1-3 in one node, group ``grp`` whose
    consumer ``cons`` read them all) as rstore's DUMP writes it."""
    with rstore.Store(tmp_path_factory.mktemp("huge") / "s") as store:
        for i in range(1, 4):
            store.xadd("s", {"f": str(i)}, id=f"1-{i}")
        store.xgroup_create("s", "grp", "0")
        store.xreadgroup("grp", "cons", {"s": ">"})
        payload = store.dump("s")
    assert payload is not None and payload[0] == STREAM_TYPE
    return payload[1:-10]


def _count_at(value: bytes, which: str) -> int:
    """Where the one-byte count ``which`` lies in ``value``."""
    first = _raw(1, 1)  # the node's master ID, then the first ID of each PEL
    if which == "stream nodes":
        at = 0
    elif which == "consumer groups":
        at = value.index(encode_string(b"grp")) - 1
    elif which == "consumers":
        at = value.index(encode_string(b"cons")) - 1
    elif which == "group PEL entries":
        at = value.index(first, value.index(first) + 1) - 1
    else:  # the consumer's PEL: its three IDs side by side
        at = value.rindex(first + _raw(1, 2) + _raw(1, 3)) - 1
    assert value[at] == (3 if "PEL" in which else 1), which
    return at


def _with_count(value: bytes, at: int, n: int) -> bytes:
    """``value`` with the one-byte count at ``at`` stored as a 64-bit length of ``n``."""
    return value[:at] + b"\x81" + n.to_bytes(8, "big") + value[at + 1 :]


def _error(src: Source, runs: bool) -> tuple[str, int | None]:
    with pytest.raises(CorruptRDBError) as info:
        for _ in values.read_stream(src, STREAM_TYPE, runs=runs):
            pass
    return str(info.value), info.value.offset


WHICH = [
    "stream nodes",
    "consumer groups",
    "group PEL entries",
    "consumers",
    "consumer PEL entries",
]


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("n", HUGE)
def test_a_huge_count_is_named_at_its_offset(value: bytes, which: str, n: int) -> None:
    at = _count_at(value, which)
    damaged = _with_count(value, at, n)
    left = len(damaged) - at - 9
    expected = f"a count of {n} {which} runs past the end ({left} bytes left) (at byte {at})"
    for runs in (False, True):
        assert _error(Source.from_bytes(damaged), runs) == (expected, at)


@pytest.mark.parametrize("which", WHICH)
def test_a_huge_count_from_an_input_of_unknown_size(
    value: bytes, which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the input's size is unknown (a pipe) the count cannot be weighed against it: the
    records are read until the damage shows, with the C readers as without them."""
    damaged = _with_count(value, _count_at(value, which), 2**64 - 1)

    def unsized() -> Source:
        return Source(io.BufferedReader(io.BytesIO(damaged)))  # type: ignore[arg-type]

    assert unsized().size is None
    with_c = [_error(unsized(), runs) for runs in (False, True)]
    monkeypatch.setattr(values, "c_read_nodes", None)
    monkeypatch.setattr(values, "c_read_pel", None)
    assert with_c == [_error(unsized(), runs) for runs in (False, True)]


def _file(value: bytes) -> bytes:
    """A one-key RDB file (version 11) holding stream ``s`` with ``value``."""
    body = b"REDIS0011\xfe\x00" + bytes([STREAM_TYPE]) + encode_string(b"s") + value + b"\xff"
    return body + struct.pack("<Q", crc64(body))


@pytest.mark.parametrize("which", WHICH)
def test_restore_refuses_a_huge_count(tmp_path: Path, value: bytes, which: str) -> None:
    at = _count_at(value, which)
    damaged = _with_count(value, at, 2**64 - 1)
    payload = bytes([STREAM_TYPE]) + damaged + (11).to_bytes(2, "little")
    payload += struct.pack("<Q", crc64(payload))
    path = tmp_path / "f.rdb"
    path.write_bytes(_file(damaged))
    in_file = at + len(b"REDIS0011\xfe\x00") + 1 + len(encode_string(b"s"))
    with rstore.Store(tmp_path / "dst") as store:
        with pytest.raises(rstore.ResponseError) as refused:
            store.execute("RESTORE", "k", "0", payload)
        assert refused.value.line == "ERR Bad data format"
        for read in (
            lambda: store.restore_file(path),
            lambda: rstore.inspect_rdb(str(path)),
            lambda: rstore.read_rdb_range(str(path), "s"),
            lambda: rstore.index_rdb(str(path)),
        ):
            with pytest.raises(CorruptRDBError) as info:
                read()
            assert info.value.offset == in_file
            assert f"a count of {2**64 - 1} {which} runs past the end" in str(info.value)
        assert store.execute("KEYS", "*") == []
        assert store.check() == []


def test_index_rdb_reports_a_damaged_master_entry_at_its_byte(tmp_path: Path) -> None:
    """``index_rdb`` checks only the nodes' headers, then reads each master entry's count: a
    count that is not an integer is reported at its byte in the file, as the readers that check
    nodes in depth report it."""
    path = plain_events_rdb(tmp_path)
    data = path.read_bytes()
    [(_, listpack)] = list(
        rstore.read_rdb_nodes(str(path), rstore.index_rdb(str(path))[0].nodes[0].offset, 1)
    )
    at = data.index(listpack) + 6  # the master entry's first element: the live count
    assert data[at] == 3  # a 7-bit integer: 3 entries
    damaged = bytearray(data)
    damaged[at] = 0x80  # a 0-byte string, the same size: the header checks still pass
    body = bytes(damaged[:-8])
    path.write_bytes(body + struct.pack("<Q", crc64(body)))
    with pytest.raises(CorruptRDBError) as indexed:
        rstore.index_rdb(str(path))
    assert indexed.value.offset == at
    assert str(indexed.value).startswith(f"{path}: Stream listpack integrity check failed (")
    assert indexed.value.path == str(path)
    with rstore.Store(tmp_path / "dst") as store, pytest.raises(CorruptRDBError) as restored:
        store.restore_file(str(path))
    assert restored.value.offset == at
