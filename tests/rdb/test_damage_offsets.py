"""One damaged byte is reported at one offset, whoever reads the file: ``inspect_rdb``,
``Store.restore_file`` and ``read_rdb_range`` (once three different numbers: the node's
start, the end of the key, and the offset inside the listpack); and ``read_rdb_range`` answers
in ``Store.xrange``'s shape."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

import rstore
from rstore.codec.crc64 import crc64

from .common import plain_events_rdb

Outcome = tuple[str, int | None, str]


def _with_crc(data: bytes) -> bytes:
    """The CRC64 trailer recomputed, so that the node checks, not the checksum, find the damage."""
    return data[:-8] + struct.pack("<Q", crc64(data[:-8]))


@pytest.fixture(params=[False, True], ids=["plain", "lzf"])
def saved(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, bytes]:
    """An RDB file with one stream of 60 entries (one node), plain or LZF-compressed."""
    with rstore.Store(tmp_path / "src") as store:
        for i in range(1, 61):
            store.xadd("ev", {"user": str(i), "action": "login"}, id=f"{i}-0")
        path = tmp_path / "ev.rdb"
        store.save(str(path), compress=request.param)
    return path, path.read_bytes()


def _outcomes(path: Path, tmp_path: Path) -> dict[str, Outcome]:
    """What each reader makes of the file: ``("ok", None, "")`` or the error's class, offset
    and message (read_rdb_range says ``"missing"`` when the damage renamed the stream)."""

    def outcome(read: Callable[[], object]) -> Outcome:
        try:
            answer = read()
        except rstore.RStoreError as exc:
            return (type(exc).__name__, getattr(exc, "offset", None), str(exc))
        return ("missing", None, "") if answer is None else ("ok", None, "")

    def restore() -> object:
        with rstore.Store(tmp_path / "dst") as store:
            store.execute("FLUSHALL")
            return store.restore_file(str(path))

    return {
        "inspect_rdb": outcome(lambda: rstore.inspect_rdb(str(path))),
        "restore_file": outcome(restore),
        "read_rdb_range": outcome(lambda: rstore.read_rdb_range(str(path), "ev")),
    }


def test_a_flipped_byte_is_reported_at_one_offset(
    saved: tuple[Path, bytes], tmp_path: Path
) -> None:
    """Wherever a flip lands, a reader that reports damage at an offset is joined by the others,
    at the same offset with the same message.  (A restore also cross-checks a stream's metadata
    against its nodes -- length, last ID, entries added -- and refuses what breaks them without
    an offset; inspect_rdb and read_rdb_range do not make those checks.)"""
    path, data = saved
    damaged_nodes = 0
    for at in range(9, len(data) - 9, 4):  # after the header, before the checksum
        damaged = bytearray(data)
        damaged[at] ^= 0x10
        path.write_bytes(_with_crc(bytes(damaged)))
        got = _outcomes(path, tmp_path)
        if got["read_rdb_range"][0] == "missing":  # the key's name was hit: nothing to read
            del got["read_rdb_range"]
        located = {outcome for outcome in got.values() if outcome[1] is not None}
        if not located:
            continue  # a valid file (another value), or damage only restore's checks see
        assert len(set(got.values())) == 1, (at, got)
        _, offset, message = located.pop()
        assert f"(at byte {offset})" in message, (at, message)
        assert len(re.findall(r"\(at byte \d+\)", message)) == 1, (at, message)  # the file's
        damaged_nodes += "listpack integrity" in message
    assert damaged_nodes >= 3


def test_damage_inside_a_plain_node_is_reported_at_the_damaged_byte(tmp_path: Path) -> None:
    path = plain_events_rdb(tmp_path)
    data = path.read_bytes()
    # The value "value-3" is a listpack string: its encoding byte sits right before it.
    at = data.index(b"value-3") - 1
    damaged = bytearray(data)
    damaged[at] = 0xF7  # not a listpack encoding
    path.write_bytes(_with_crc(bytes(damaged)))
    got = _outcomes(path, tmp_path)
    assert {offset for _, offset, _ in got.values()} == {at}, got


def test_read_rdb_range_has_the_shape_of_store_xrange(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "src") as store:
        store.execute("XADD", "ev", "1-0", "a", "1", "a", "2", "b", "3")  # a repeated field
        store.execute("XADD", "ev", "2-5", "c", "4")
        store.execute("XADD", "ev", "3-0", "d", "5")
        path = str(tmp_path / "ev.rdb")
        store.save(path)
        assert rstore.read_rdb_range(path, "ev") == store.xrange("ev")
        assert rstore.read_rdb_range(path, "ev", "(1-0", "3") == store.xrange("ev", "(1-0", "3")
        assert rstore.read_rdb_range(path, "ev", count=2, reverse=True) == store.xrevrange(
            "ev", count=2
        )
        assert rstore.read_rdb_entries(path, "ev") == [
            (entry_id, fields) for entry_id, fields in store.execute("XRANGE", "ev", "-", "+")
        ]
