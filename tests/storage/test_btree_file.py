"""LMDB's trees read from the file without LMDB (salvage's reader): the same records LMDB gives,
in order, for whole trees and key ranges; and each kind of damage reported in its place, with
the records around it still read, never an exception or a record out of order."""

from __future__ import annotations

import errno
import os
import random
import struct
from pathlib import Path

import lmdb
import pytest

from rstore.storage.checks import btree_file, pagecheck
from rstore.storage.checks.btree_file import DataFile, TreeReader, meta_pages
from rstore.storage.checks.pagecheck import Problem

PAGE = 4096
Items = list[tuple[bytes, bytes] | Problem]
Content = dict[bytes, list[tuple[bytes, bytes]]]


def _build(path: Path, seed: int) -> Content:
    """An LMDB environment with sub-databases of small, large (overflow) and mixed values,
    deep enough for branch pages; what each holds."""
    rng = random.Random(seed)
    env = lmdb.open(str(path), max_dbs=8, map_size=1 << 28)
    content: dict[bytes, dict[bytes, bytes]] = {}
    with env.begin(write=True) as txn:
        for name, count, sizes in (
            (b"small", 3000, (0, 1, 8, 40)),
            (b"large", 60, (3000, 5000, 9000)),
            (b"mixed", 800, (5, 100, 2100, 4100)),
        ):
            db = env.open_db(name, txn=txn)
            held = content.setdefault(name, {})
            for _ in range(count):
                key = rng.randbytes(rng.randint(1, 40))
                value = rng.randbytes(rng.choice(sizes))
                txn.put(key, value, db=db)
                held[key] = value
            for key in rng.sample(sorted(held), count // 10):  # deletions: pages change
                txn.delete(key, db=db)
                del held[key]
    env.close()
    return {name: sorted(held.items()) for name, held in content.items()}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Content]:
    path = tmp_path_factory.mktemp("btree")
    return path, _build(path, 1)


def _reader(path: Path) -> tuple[TreeReader, dict[bytes, pagecheck.DbRecord]]:
    file = DataFile(str(path / "data.mdb"))
    newest = meta_pages(file)[0].meta
    reader = TreeReader(file, newest)
    trees, problems = reader.subdatabases(newest.main)
    assert problems == []
    return reader, trees


def _copy(source: Path, target: Path) -> Path:
    target.mkdir()
    (target / "data.mdb").write_bytes((source / "data.mdb").read_bytes())
    return target


def _zero(path: Path, page: int) -> None:
    with open(path / "data.mdb", "r+b") as f:
        f.seek(page * PAGE)
        f.write(bytes(PAGE))


def _records(items: Items) -> list[tuple[bytes, bytes]]:
    return [item for item in items if not isinstance(item, Problem)]


def _a_subsequence(kept: list[tuple[bytes, bytes]], records: list[tuple[bytes, bytes]]) -> bool:
    """Whether ``kept`` holds records of ``records`` only, each once, in their order."""
    chosen = set(kept)
    return len(chosen) == len(kept) and [r for r in records if r in chosen] == kept


def _lost(kept: list[tuple[bytes, bytes]], records: list[tuple[bytes, bytes]]) -> list[bytes]:
    chosen = set(kept)
    return [k for k, v in records if (k, v) not in chosen]


def _problems(items: Items) -> list[Problem]:
    return [item for item in items if isinstance(item, Problem)]


def test_every_tree_reads_as_lmdb_holds_it(env: tuple[Path, Content]) -> None:
    path, content = env
    reader, trees = _reader(path)
    assert set(trees) == set(content)
    for name, records in content.items():
        assert list(reader.records(name.decode(), trees[name])) == records
    assert trees[b"large"].overflow_pages > 0 and trees[b"small"].depth >= 2


def test_key_ranges_read_as_lmdb_holds_them(env: tuple[Path, Content]) -> None:
    path, content = env
    reader, trees = _reader(path)
    rng = random.Random(2)
    for name, records in content.items():
        keys = [k for k, _ in records]
        for _ in range(40):
            low, high = sorted(rng.sample(keys, 2))
            low = low if rng.random() < 0.8 else low[:-1] + b"\0"  # bounds between keys too
            want = [r for r in records if low <= r[0] < high]
            assert list(reader.records(name.decode(), trees[name], low, high)) == want


def test_a_zeroed_leaf_is_reported_between_the_keys_around_it(
    env: tuple[Path, Content], tmp_path: Path
) -> None:
    path, content = env
    reader, trees = _reader(path)
    root = trees[b"small"].root
    damaged = _copy(path, tmp_path / "d")
    page = reader.page(root)
    assert isinstance(page, bytes)
    child = _children(page)[3]
    _zero(damaged, child)
    reader, trees = _reader(damaged)
    items = list(reader.records("small", trees[b"small"]))
    [problem] = _problems(items)
    assert problem.page == child and "zeroed" in problem.what
    kept = _records(items)
    lost = _lost(kept, content[b"small"])
    assert lost and all(problem.low <= k < problem.high for k in lost)  # type: ignore[operator]
    assert _a_subsequence(kept, content[b"small"])  # in order, nothing invented


def _children(branch: bytes) -> list[int]:
    """The child pages of a branch page, in order."""
    lower = struct.unpack_from("=H", branch, 12)[0]
    out = []
    for i in range((lower - 16) // 2):
        at = struct.unpack_from("=H", branch, 16 + 2 * i)[0]
        lo, hi, flags, _ = struct.unpack_from("=HHHH", branch, at)
        out.append(lo | hi << 16 | flags << 32)
    return out


def test_a_reference_to_another_page_loses_only_the_page_it_replaced(
    env: tuple[Path, Content], tmp_path: Path
) -> None:
    """A child pointer damaged into the number of its sibling: the sibling is read once, in
    its place; the page no longer reached is reported."""
    path, content = env
    damaged = _copy(path, tmp_path / "d")
    _redirect(damaged, b"small", 2, 3)  # node 2 of the root points at child 3 instead
    _assert_one_misplaced_page(damaged, b"small", content[b"small"])


def _redirect(path: Path, tree: bytes, node: int, to: int) -> None:
    """Damage node ``node`` of the root of ``tree`` into a reference to child ``to``."""
    reader, trees = _reader(path)
    root = trees[tree].root
    page = reader.page(root)
    assert isinstance(page, bytes)
    children = _children(page)
    assert len(children) > max(node, to)
    at = struct.unpack_from("=H", page, 16 + 2 * node)[0]
    with open(path / "data.mdb", "r+b") as f:
        f.seek(root * PAGE + at)
        f.write(struct.pack("=HH", children[to] & 0xFFFF, children[to] >> 16 & 0xFFFF))


def _assert_one_misplaced_page(
    path: Path, tree: bytes, records: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """One problem, the damaged reference; the records lost lie inside its bounds, the others
    come once each, in order.  The records kept."""
    reader, trees = _reader(path)
    items = list(reader.records(tree.decode(), trees[tree]))
    [problem] = _problems(items)
    assert "damaged reference" in problem.what
    kept = _records(items)
    assert _a_subsequence(kept, records)
    lost = _lost(kept, records)
    assert lost and all(problem.low <= k < problem.high for k in lost)  # type: ignore[operator]
    return kept


def test_an_unreadable_sector_is_a_lost_page_not_an_error(
    env: tuple[Path, Content], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, content = env
    reader, trees = _reader(path)
    page = reader.page(trees[b"small"].root)
    assert isinstance(page, bytes)
    bad = _children(page)[1]
    real = os.pread

    def failing(fd: int, length: int, offset: int) -> bytes:
        if offset <= bad * PAGE < offset + length:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, length, offset)

    monkeypatch.setattr(btree_file.os, "pread", failing)
    items = list(reader.records("small", trees[b"small"]))
    [problem] = _problems(items)
    assert problem.page == bad and "Input/output error" in problem.what
    assert len(_records(items)) < len(content[b"small"])


def test_a_truncated_file_keeps_what_lies_before_the_cut(
    env: tuple[Path, Content], tmp_path: Path
) -> None:
    path, content = env
    damaged = _copy(path, tmp_path / "d")
    reader, trees = _reader(damaged)
    os.truncate(damaged / "data.mdb", (reader.last_page // 2) * PAGE + 100)
    reader, trees = _reader(damaged)
    problems = []
    for name, tree in trees.items():
        items = list(reader.records(name.decode(), tree))
        problems += _problems(items)
        assert _a_subsequence(_records(items), content[name])
    assert problems and all("truncated" in p.what for p in problems)


def test_the_older_meta_page_is_found_when_the_first_is_damaged(
    env: tuple[Path, Content], tmp_path: Path
) -> None:
    path, _ = env
    damaged = _copy(path, tmp_path / "d")
    with DataFile(str(damaged / "data.mdb")) as file:
        both = meta_pages(file)
    _zero(damaged, 0)  # the page size is recorded there: the other one is found anyway
    with DataFile(str(damaged / "data.mdb")) as file:
        [only] = meta_pages(file)
    assert only.slot == 1 and only in both


def test_random_damage_never_raises_nor_misorders(
    env: tuple[Path, Content], tmp_path: Path
) -> None:
    path, content = env
    original = (path / "data.mdb").read_bytes()
    rng = random.Random(3)
    every = {k: v for records in content.values() for k, v in records}
    for trial in range(60):
        data = bytearray(original)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(2 * PAGE, len(data))
            data[at] ^= 1 << rng.randrange(8)
        damaged = tmp_path / f"t{trial}"
        damaged.mkdir()
        (damaged / "data.mdb").write_bytes(bytes(data))
        with DataFile(str(damaged / "data.mdb")) as file:
            for slot in meta_pages(file):
                reader = TreeReader(file, slot.meta)
                trees, _ = reader.subdatabases(slot.meta.main)
                for name, tree in trees.items():
                    kept = _records(list(reader.records(name.decode(errors="replace"), tree)))
                    keys = [k for k, _ in kept]
                    assert keys == sorted(set(keys)), trial
                    # what is unchanged is LMDB's; a damaged record is the caller's to catch
                    changed = [k for k, v in kept if every.get(k) != v]
                    assert len(changed) <= 6, (trial, name)


def test_a_reference_to_another_branch_page_loses_only_the_subtree_it_replaced(
    tmp_path: Path,
) -> None:
    """A tree three levels deep: the root's reference to its second child damaged into the
    number of the third (a branch page); that one is read once, in its own place."""
    path = tmp_path / "deep"
    env = lmdb.open(str(path), max_dbs=2, map_size=1 << 28)
    rng = random.Random(4)
    with env.begin(write=True) as txn:
        db = env.open_db(b"deep", txn=txn)
        records = sorted({rng.randbytes(12): rng.randbytes(20) for _ in range(40_000)}.items())
        for key, value in records:
            txn.put(key, value, db=db)
    env.close()
    assert _reader(path)[1][b"deep"].depth == 3
    _redirect(path, b"deep", 1, 2)
    kept = _assert_one_misplaced_page(path, b"deep", records)
    assert len(kept) > len(records) // 2
