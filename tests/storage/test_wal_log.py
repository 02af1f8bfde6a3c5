"""The write-ahead log's format: which records recovery redoes, whatever the crash left."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.storage.engine import wal_log
from rstore.storage.engine.wal_log import Op, Position

DBS = (b"nodes", b"streams", b"groups", b"keys")

ops_strategy = st.lists(
    st.builds(
        Op,
        st.sampled_from(DBS),
        st.binary(max_size=40),
        st.one_of(st.none(), st.binary(max_size=200)),
    ),
    min_size=1,
    max_size=6,
)
START = Position(generation=7, offset=wal_log.RECORDS_START, lsn=100, last_crc=0xABCD)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "wal.log", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, bytes(wal_log.RECORDS_START), 0)
    yield fd
    os.close(fd)


def append(fd: int, pos: Position, txnid: int, ops: list[Op], *, commit: bool = True) -> Position:
    record, after = wal_log.encode_record(pos, txnid, ops)
    os.pwrite(fd, record, pos.offset)
    if commit:
        wal_log.mark_committed(fd, pos)
    return after


def redone(fd: int, start: Position = START) -> list[tuple[int, list[Op]]]:
    return [(r.txnid, r.ops) for r in wal_log.redoable(fd, start)]


@settings(max_examples=60, deadline=None)
@given(st.lists(ops_strategy, min_size=1, max_size=8))
def test_committed_records_come_back_in_order_with_their_bytes(
    tmp_path_factory: pytest.TempPathFactory, txns: list[list[Op]]
) -> None:
    path = tmp_path_factory.mktemp("wal") / "wal.log"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        pos = START
        for i, ops in enumerate(txns):
            pos = append(fd, pos, 1000 + i, ops)
        assert redone(fd) == [(1000 + i, ops) for i, ops in enumerate(txns)]
    finally:
        os.close(fd)


def test_a_cut_at_any_byte_of_the_last_record_drops_it_and_keeps_the_others(log: int) -> None:
    pos = START
    first = [Op(b"nodes", b"k1", b"v" * 50)]
    last = [Op(b"streams", b"k2", b"w" * 90), Op(b"keys", b"gone", None)]
    second = append(log, pos, 1, first)
    end = append(log, second, 2, last)
    full = os.pread(log, end.offset, 0)
    assert redone(log) == [(1, first), (2, last)]
    for cut in range(second.offset, end.offset):
        os.ftruncate(log, 0)
        os.pwrite(log, full[:cut], 0)
        assert redone(log) == [(1, first)], cut


def test_a_damaged_byte_anywhere_in_a_record_stops_recovery_before_it(log: int) -> None:
    a = [Op(b"nodes", b"a", b"1" * 20)]
    b = [Op(b"nodes", b"b", b"2" * 20)]
    c = [Op(b"nodes", b"c", b"3" * 20)]
    p1 = append(log, START, 1, a)
    p2 = append(log, p1, 2, b)
    end = append(log, p2, 3, c)
    clean = os.pread(log, end.offset, 0)
    for at in range(p1.offset, p2.offset):  # every byte of the middle record
        if 0 <= at - p1.offset - wal_log.COMMITTED_OFFSET < 4:
            continue  # the committed byte and its padding: outside the CRC, tested below
        os.pwrite(log, clean, 0)
        os.pwrite(log, bytes([clean[at] ^ 0x41]), at)
        assert redone(log) == [(1, a)], at


def test_an_unmarked_record_is_redone_only_when_a_valid_record_follows(log: int) -> None:
    a = [Op(b"nodes", b"a", b"1")]
    b = [Op(b"groups", b"b", b"2")]
    p1 = append(log, START, 1, a, commit=False)  # its writer died before marking it
    assert redone(log) == []  # no proof that it committed: never redone
    append(log, p1, 2, b, commit=False)  # a later writer started from a state holding it
    assert redone(log) == [(1, a)]  # ... which proves the first committed, not itself


def test_a_record_left_by_a_killed_writer_is_replaced_and_its_tail_never_redone(log: int) -> None:
    base = [Op(b"nodes", b"a", b"1")]
    p1 = append(log, START, 1, base)
    # A writer writes a long record at p1 and is killed before LMDB's commit ...
    long_ops = [Op(b"nodes", b"x", b"X" * 500)]
    append(log, p1, 2, long_ops, commit=False)
    # ... the next writer reads the same position from LMDB and writes a short record there.
    short = [Op(b"nodes", b"y", b"y")]
    after = append(log, p1, 2, short)
    # Whatever lies behind the short record (the long one's tail) is not a valid record.
    assert redone(log) == [(1, base), (2, short)]
    # Even a copy of a valid record inside a value is rejected where it does not belong: the
    # sequence number, generation and chained checksum do not match.
    forged, _ = wal_log.encode_record(after._replace(last_crc=0), 3, [Op(b"keys", b"f", b"f")])
    os.pwrite(log, forged, after.offset)
    wal_log.mark_committed(log, after)
    assert redone(log) == [(1, base), (2, short)]


def test_records_of_an_earlier_generation_are_not_redone(log: int) -> None:
    old = Position(generation=6, offset=wal_log.RECORDS_START, lsn=100, last_crc=0xABCD)
    append(log, old, 1, [Op(b"nodes", b"old", b"o")])
    assert redone(log) == []  # the same place and number, the wrong generation


def test_the_header_survives_a_torn_write_of_the_next_one(log: int) -> None:
    assert wal_log.read_header(log) is None
    boot = bytes(range(16))
    first = wal_log.write_header(log, 41, START, boot, b"M" * 120)
    assert wal_log.read_header(log) == first
    second = wal_log.write_header(log, 57, START._replace(lsn=200), boot, b"N" * 120)
    assert wal_log.read_header(log) == second
    # A third write is torn: half of its slot reached the disk.
    third_slot = (second.seq + 1) % 2 * wal_log.HEADER_SLOT
    wal_log.write_header(log, 90, START._replace(lsn=300), boot, b"O" * 120)
    os.pwrite(log, bytes(wal_log.HEADER_SLOT // 2), third_slot + wal_log.HEADER_SLOT // 2)
    assert wal_log.read_header(log) == second  # the slot it overwrote is not the current one


def test_a_record_too_large_or_a_bad_name_is_refused_before_anything_is_written() -> None:
    with pytest.raises(ValueError):
        wal_log.encode_record(START, 1, [Op(b"", b"k", b"v")])
    with pytest.raises(ValueError):
        wal_log.encode_record(START, 1, [Op(b"n" * 256, b"k", b"v")])


@settings(max_examples=60, deadline=None)
@given(ops_strategy, st.lists(st.integers(min_value=0, max_value=5), max_size=3))
def test_a_record_written_whole_or_in_pieces_has_the_same_bytes(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Op], spills: list[int]
) -> None:
    """A writer that spilled operations early writes the same bytes as one that wrote the
    record in one piece, and both are what encode_record makes (docs/format.md)."""
    expected, expected_after = wal_log.encode_record(START, 42, ops)
    cuts = sorted({min(cut, len(ops)) for cut in spills})
    pieces = [ops[a:b] for a, b in zip([0, *cuts], [*cuts, len(ops)])]
    path = tmp_path_factory.mktemp("wal") / "wal.log"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        writer = wal_log.RecordWriter(fd, START, 42, 0)
        for piece in pieces[:-1]:
            writer.add(piece)
        last = wal_log.encode_record(START, 42, pieces[-1])[0][40:-4]  # its operations
        after = writer.finish(last, b"\0" * 16)
        written = os.pread(fd, len(expected) + 16, START.offset)
        assert (written, after) == (expected + b"\0" * 16, expected_after)
        # the file was grown ahead of each write: the record and its zeros are inside it
        assert os.fstat(fd).st_size >= writer.allocated >= START.offset + len(expected) + 16
    finally:
        os.close(fd)
