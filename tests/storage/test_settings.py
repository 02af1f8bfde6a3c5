"""The store's settings record: node limits and ``rdbcompression``, kept across reopen, read by
older versions when left at the defaults, and used by DUMP and SAVE."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstore
from rstore.storage.records.layout import StoreConfig

U64 = st.integers(0, 2**64 - 1)


@given(U64, U64, st.booleans(), st.integers(1, 86400), st.integers(1, 10000))
def test_settings_round_trip(
    max_bytes: int, max_entries: int, compression: bool, duration: int, maxsize: int
) -> None:
    config = StoreConfig(max_bytes, max_entries, compression, duration, maxsize)
    assert StoreConfig.unpack(config.pack()) == config


def test_default_settings_keep_the_record_older_versions_read() -> None:
    assert len(StoreConfig(300, 7).pack()) == 16
    assert StoreConfig.unpack(StoreConfig(300, 7, False).pack()[:16]) == StoreConfig(300, 7)
    assert len(StoreConfig(300, 7, idmp_maxsize=5).pack()) == 33


@pytest.mark.parametrize("tail", [b"\x02", b"\x01\x00", b"\xff" + bytes(16), b"\x02" + bytes(16)])
def test_an_unknown_or_short_tail_is_refused(tail: bytes) -> None:
    with pytest.raises((ValueError, struct.error)):
        StoreConfig.unpack(StoreConfig().pack() + tail)


def test_rdbcompression_survives_reopen_and_leaves_the_limits(tmp_path: Path) -> None:
    with rstore.Store(tmp_path, node_max_entries=5) as store:
        assert store.config_set("rdbcompression", "no")
    with rstore.Store(tmp_path) as store:
        assert store.config == StoreConfig(node_max_entries=5, rdb_compression=False)
        assert store.config_get("rdbcompression") == {"rdbcompression": "no"}
    with rstore.Store(tmp_path, node_max_bytes=999) as store:  # the limits leave the flag
        assert store.config == StoreConfig(999, 5, False)


def test_save_follows_rdbcompression(tmp_path: Path) -> None:
    """``Store.save`` compresses as the setting says unless ``compress`` is given; both files
    load back to the same entries."""
    with rstore.Store(tmp_path / "store") as store:
        entries = {f"{i}-0": {"text": "the same words again " * 4} for i in range(1, 30)}
        for entry_id, fields in entries.items():
            store.xadd("s", fields, id=entry_id)
        store.save(tmp_path / "on.rdb")
        store.config_set("rdbcompression", "no")
        store.save(tmp_path / "off.rdb")
        store.save(tmp_path / "forced.rdb", compress=True)
    on, off, forced = ((tmp_path / n).read_bytes() for n in ("on.rdb", "off.rdb", "forced.rdb"))
    assert len(on) < len(off) // 2
    assert len(forced) < len(off) // 2  # compress=True overrides the setting
    for path in (tmp_path / "on.rdb", tmp_path / "off.rdb"):
        with rstore.Store(tmp_path / path.stem) as copy:
            copy.restore_file(path)
            assert copy.xrange("s") == [(k.encode(), {b"text": v["text"].encode()})
                                        for k, v in entries.items()]  # fmt: skip
