"""Checksums on every record (format 2), format 1 stores read-only, and the upgrade."""

from __future__ import annotations

import os

import lmdb
import pytest
from hypothesis import given
from hypothesis import strategies as st
from store_formats import downgrade_to_format_1

import rstore
from rstore.storage.checks import pagecheck
from rstore.storage.records import layout

from .helpers import find, flip_bit, populate, stored_value


@given(st.binary(max_size=600), st.binary(max_size=5000))
def test_seal_round_trips(key: bytes, payload: bytes) -> None:
    assert layout.unseal(key, layout.seal(key, payload)) == payload


@given(st.binary(min_size=1, max_size=40), st.binary(max_size=300), st.data())
def test_any_flipped_bit_of_key_or_value_is_caught(
    key: bytes, payload: bytes, data: st.DataObject
) -> None:
    sealed = layout.seal(key, payload)
    where = data.draw(st.integers(0, len(key) + len(sealed) - 1))
    bit = 1 << data.draw(st.integers(0, 7))
    if where < len(key):
        damaged_key = bytearray(key)
        damaged_key[where] ^= bit
        assert layout.unseal(bytes(damaged_key), sealed) is None
    else:
        damaged = bytearray(sealed)
        damaged[where - len(key)] ^= bit
        assert layout.unseal(key, bytes(damaged)) is None


def test_the_node_listpack_stays_byte_identical_beside_its_checksum(
    tmp_path: os.PathLike[str],
) -> None:
    """RDB export copies nodes verbatim: the stored value is the listpack, then 4 bytes."""
    path = str(tmp_path)
    with rstore.Store(path) as s:
        s.xadd("s", {"f": "v"}, id="5-1")
        value = stored_value(s, layout.DB_NODES, layout.node_key(1, (5, 1)))
        payload = s.dump("s")
    assert payload is not None
    listpack = value[: -layout.CHECKSUM_SIZE]
    assert listpack in payload  # the DUMP payload embeds the very same node bytes


@pytest.fixture
def store_path(tmp_path: os.PathLike[str]) -> str:
    path = str(tmp_path / "store")
    populate(path, entries=400)
    return path


def _refused(fn: object, *, db: str, key: bytes | None) -> rstore.CorruptStoreError:
    with pytest.raises(rstore.CorruptStoreError) as info:
        fn()  # type: ignore[operator]
    err = info.value
    assert err.db == db
    assert err.key == key
    assert "data.mdb" in str(err) and "rstore check" in str(err)
    return err


def test_a_flipped_bit_in_a_node_is_an_error_naming_the_stream(store_path: str) -> None:
    flip_bit(store_path, find(store_path, b"a-value-found-once-in-the-file"), 3)
    with rstore.Store(store_path) as s:
        _refused(lambda: s.xrange("big"), db="nodes", key=b"big")
        assert s.xlen("small:3") == 1  # the rest of the store is untouched
        problems = s.check()
    assert any("sub-database nodes" in p and "'big'" in p and "checksum" in p for p in problems)
    assert rstore.check_store(store_path) == problems


def test_a_flipped_bit_in_stream_metadata_is_an_error(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        handle = s._live_env().read(lambda txn: txn.key_get(b"small:7").handle)
        value = stored_value(s, layout.DB_STREAMS, layout.pack_u64(handle))
    flip_bit(store_path, find(store_path, value), 5)
    with rstore.Store(store_path) as s:
        _refused(lambda: s.xlen("small:7"), db="streams", key=b"small:7")
        assert any("sub-database streams" in p for p in s.check())


def test_a_flipped_bit_in_a_group_record_is_an_error(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        handle = s._live_env().read(lambda txn: txn.key_get(b"big").handle)
        value = stored_value(s, layout.DB_GROUPS, layout.group_key(handle, b"workers"))
    flip_bit(store_path, find(store_path, value), 2)
    with rstore.Store(store_path) as s:
        _refused(lambda: s.xinfo_groups("big"), db="groups", key=b"big")
        assert any("sub-database groups" in p for p in s.check())


def test_a_flipped_bit_in_a_pending_entry_is_an_error(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        first = s.xpending_range("big", "workers", "-", "+", 1)[0]
        ms, seq = (int(x) for x in first["message_id"].split(b"-"))

        def key_of(txn: object) -> bytes:
            group = rstore.storage.records.group_records.group_get(  # type: ignore[attr-defined]
                txn,
                txn.key_get(b"big").handle,
                b"workers",  # type: ignore[attr-defined]
            )
            return layout.pel_key(group.handle, (ms, seq))

        key = s._live_env().read(key_of)
        value = stored_value(s, layout.DB_PEL, key)
    flip_bit(store_path, find(store_path, key + value), len(key) + 9)  # the delivery count
    with rstore.Store(store_path) as s, pytest.raises(rstore.CorruptStoreError) as info:
        s.xpending_range("big", "workers", "-", "+", 10)
    with rstore.Store(store_path) as s:
        assert info.value.db == "pel"
        assert any("sub-database pel" in p and "'big'" in p for p in s.check())


# ----------------------------------------------------------------------------- format 1


def test_a_format_1_store_is_read_read_only_and_upgraded_by_a_writer(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        before = (s.xrange("big"), s.xpending("big", "workers"), s.xinfo_stream("big"))
    downgrade_to_format_1(store_path)
    with rstore.Store(store_path, readonly=True) as s:
        assert (s.format, s.wal) == (1, False)
        assert (s.xrange("big"), s.xpending("big", "workers"), s.xinfo_stream("big")) == before
        with pytest.raises(rstore.ReadOnlyStoreError, match="read-only"):
            s.xadd("big", {"a": "b"})
        assert s.check() == []
    assert not os.path.exists(os.path.join(store_path, "wal.log"))  # reading changed nothing
    with rstore.Store(store_path) as s:  # the first open that may write upgrades it
        assert (s.format, s.wal, s.readonly) == (rstore.FORMAT_VERSION, True, False)
        assert s.upgrade() > 400  # every record rewritten with its checksum
        assert (s.xrange("big"), s.xpending("big", "workers"), s.xinfo_stream("big")) == before
        assert s.check() == []
        s.xadd("big", {"a": "b"})


def _pending(s: rstore.Store) -> list[tuple[bytes, bytes, int]]:
    rows = s.xpending_range("big", "workers", "-", "+", 1000)
    return [(r["message_id"], r["consumer"], r["times_delivered"]) for r in rows]


def test_upgrade_rewrites_format_1_with_checksums(store_path: str) -> None:
    with rstore.Store(store_path) as s:
        before = (s.xrange("big"), _pending(s))
    downgrade_to_format_1(store_path)
    seen: list[tuple[int, int]] = []
    rewritten = rstore.upgrade_store(store_path, progress=lambda d, t: seen.append((d, t)))
    assert rewritten > 400 and seen[-1] == (rewritten, rewritten)
    with rstore.Store(store_path) as s:
        assert not s.readonly
        assert (s.xrange("big"), _pending(s)) == before
        assert s.check() == []
        assert s.xadd("big", {"after": "upgrade"})
        assert s.upgrade() == 0  # already current


def test_a_damaged_format_1_node_is_an_error_and_is_not_upgraded(store_path: str) -> None:
    downgrade_to_format_1(store_path)
    with open(os.path.join(store_path, "data.mdb"), "r+b") as f:  # the node's end marker
        data = f.read()
        for at in find(store_path, b"a-value-found-once-in-the-file"):
            f.seek(data.find(b"\xff", at))
            f.write(b"\x00")
    with (
        rstore.Store(store_path, readonly=True) as s,
        pytest.raises(rstore.CorruptStoreError, match="malformed"),
    ):
        s.xrange("big")
    with pytest.raises(rstore.CorruptStoreError, match="not upgraded"):
        rstore.upgrade_store(store_path)
    with pytest.raises(rstore.CorruptStoreError, match="not upgraded"):
        rstore.Store(store_path)  # an open that may write upgrades first
    assert not os.path.exists(os.path.join(store_path, "wal.log"))  # nothing left behind
    with rstore.Store(store_path, readonly=True) as s:
        assert s.format == 1


def test_a_short_format_1_group_record_is_a_problem_not_an_exception(store_path: str) -> None:
    """Format 1 has no checksums: a group record cut short is found by its size."""
    import lmdb

    downgrade_to_format_1(store_path)
    env = lmdb.open(store_path, max_dbs=16)
    try:
        with env.begin(write=True) as txn:
            groups = env.open_db(layout.DB_GROUPS, txn=txn, create=False)
            key, value = next(iter(txn.cursor(db=groups)))
            txn.put(key, bytes(value)[:10], db=groups)
    finally:
        env.close()
    problems = rstore.check_store(store_path)
    assert any("sub-database groups" in p for p in problems), problems


@pytest.mark.parametrize("streams", [["orders"], [f"s{i}" for i in range(7)]])
def test_a_zeroed_root_page_names_every_stream_it_may_hold(
    tmp_path: os.PathLike[str], streams: list[str]
) -> None:
    """The nodes tree's root page zeroed: the store is refused at open, and ``check_store``
    names the streams the page may have held -- every stream, the first five by name (a page
    with no bounds from a parent may hold any record of its tree)."""
    path = os.path.join(tmp_path, "s")
    with rstore.Store(path) as s:
        for i in range(400):
            s.xadd(streams[i % len(streams)], {"n": str(i), "pad": "x" * 40})
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=16)
    with env.begin() as txn:
        report = pagecheck.verify(os.path.join(path, "data.mdb"), int(txn.id()))
    env.close()
    root = report.trees["nodes"].root
    with open(os.path.join(path, "data.mdb"), "r+b") as f:
        f.seek(root * 4096)
        f.write(bytes(4096))
    with pytest.raises(rstore.CorruptStoreError, match="rstore check"):
        rstore.Store(path)
    problems = rstore.check_store(path)
    held = (
        "stream 'orders'"
        if len(streams) == 1
        else "streams 's0', 's1', 's2', 's3', 's4' and 2 more"
    )
    assert problems[0].startswith(
        f"data.mdb page {root} (sub-database nodes, holding records of {held}): "
    ), problems
