"""Salvage (issue 21, item 4): a damaged store's readable contents copied into a new store.

Each test damages a copy of the populated store at a chosen place, salvages it, and checks with
:mod:`.salvaging` that the source was not written, that the new store is sound and holds only
entries the intact store held, and that exactly the entries in the reported lost ranges are
missing -- then what the place chosen must give.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from rstore_cli.main import cli

import rstore
from rstore.storage.checks import pagecheck

from . import locate
from .mutations import PAGE
from .population import GROUP_MARK, MARK_MS, PEL_MARK, STREAM_MARK, VALUE_MARK
from .runner import Prepared, damaged_copy
from .salvaging import digests, entries_of, truth_differences, violations

SEED = 1


def _zero_page(path: Path, page: int) -> None:
    with open(path / "data.mdb", "r+b") as f:
        f.seek(page * PAGE)
        f.write(bytes(PAGE))


def _tree(path: Path, name: str, txnid: int | None = None) -> pagecheck.DbRecord:
    report = pagecheck.verify(str(path / "data.mdb"), txnid)
    assert not report.problems
    return report.trees[name]


def _salvage(prep: Prepared, src: Path, **options: object) -> rstore.SalvageReport:
    """Salvage ``src`` into a new directory; the source unchanged, the copy right."""
    before = digests(src)
    dst = src.with_name(src.name + "-salvaged")
    shutil.rmtree(dst, ignore_errors=True)
    report = rstore.salvage_store(src, dst, **options)  # type: ignore[arg-type]
    assert digests(src) == before  # every file, byte for byte, and no file added
    assert violations(entries_of(prep.pristine), report, dst) == []
    return report


def _damaged(prep: Prepared, name: str) -> Path:
    return damaged_copy(prep, prep.workdir / name, None)


def test_a_damaged_free_list_page_refuses_the_store_but_salvage_loses_nothing(
    prepared: Callable[[int], Prepared],
) -> None:
    """The user's report: LMDB's free list damaged, no stream damaged."""
    prep = prepared(SEED)
    src = _damaged(prep, "free-list")
    free = _tree(src, "free")
    assert free.root != pagecheck.P_INVALID and free.depth >= 1
    _zero_page(src, free.root)
    # The refusal stays: LMDB cannot be trusted on such a file.
    with pytest.raises(rstore.CorruptStoreError, match="sub-database free"):
        rstore.Store(src, readonly=True, create=False)
    runner = CliRunner()
    for args in (["range", "big"], ["save", str(src.with_name("out.rdb"))], ["export", "big"]):
        result = runner.invoke(cli, ["--read-only", "--store", str(src), *args])
        assert result.exit_code == 1, args
        assert "sub-database free" in result.output, args
    report = _salvage(prep, src)
    assert report.complete and report.losses() == []
    dst = src.with_name(src.name + "-salvaged")
    assert truth_differences(prep.pop, prep.truth, dst) == []  # groups, consumers, PEL too
    assert len(report.streams) == len(prep.pop.keys)


def test_a_zeroed_leaf_of_nodes_loses_its_nodes_and_nothing_else(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "nodes-leaf")
    pages = locate.zero_pages_holding(src / "data.mdb", VALUE_MARK)
    report = _salvage(prep, src)
    assert not report.complete
    marked = next(s for s in report.streams if s.name == b"marked")
    assert marked.lost_entries, report.losses()
    first = (MARK_MS, 1)  # the entry holding VALUE_MARK
    assert any(r.first <= first and (r.before is None or first < r.before)
               for r in marked.lost_entries)  # fmt: skip
    assert any(f"page {p}" in r.cause for p in pages for r in marked.lost_entries)
    original = entries_of(prep.pristine)
    got = entries_of(src.with_name(src.name + "-salvaged"))
    whole = [s.name for s in report.streams if not s.lost_entries]
    assert whole  # the streams whose nodes were elsewhere are whole
    for name in whole:
        assert got[name] == original[name]


def test_a_zeroed_branch_page_of_nodes_loses_the_entries_it_led_to(
    prepared: Callable[[int], Prepared],
) -> None:
    """The root of the nodes tree: every entry is lost, and said so per stream; the
    streams, their groups, consumers and pending entries are all copied."""
    prep = prepared(SEED)
    src = _damaged(prep, "nodes-branch")
    nodes = _tree(src, "nodes")
    assert nodes.depth >= 2  # the root is a branch page
    _zero_page(src, nodes.root)
    report = _salvage(prep, src)
    with rstore.Store(prep.pristine, readonly=True, create=False) as before:
        for stream in report.streams:
            name = stream.name
            assert stream.entries == 0
            if before.xlen(name):
                assert [(r.first, r.before) for r in stream.lost_entries] == [((0, 0), None)]
            pending = sum(g["pending"] for g in before.xinfo_groups(name))
            assert stream.pending == pending
            assert stream.groups == len(before.xinfo_groups(name))


def test_a_node_failing_its_checksum_is_lost_alone(prepared: Callable[[int], Prepared]) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "node-seal")
    locate.flip_in_bytes(src / "data.mdb", VALUE_MARK, 5)
    report = _salvage(prep, src)
    marked = next(s for s in report.streams if s.name == b"marked")
    assert len(marked.lost_entries) == 1 and "checksum" in marked.lost_entries[0].cause
    assert marked.entries == 0 and marked.pending == 1  # its one node; its PEL stays
    assert [s.name for s in report.streams if not s.complete] == [b"marked"]


def test_a_stream_whose_metadata_fails_its_checksum_is_copied_whole(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "stream-seal")
    locate.flip_in_number(src / "data.mdb", STREAM_MARK)
    report = _salvage(prep, src)
    marked = next(s for s in report.streams if s.name == b"marked")
    assert marked.lost_entries == [] and marked.entries == 5 and marked.pending == 1
    assert any("metadata is lost" in line for line in marked.lost)
    with rstore.Store(src.with_name(src.name + "-salvaged"), create=False) as store:
        info = store.xinfo_stream("marked")
        assert info["length"] == 5
        assert info["entries-added"] == 5  # recomputed: the record that held it is lost
        assert info["last-generated-id"] == f"{MARK_MS}-5".encode()


def test_a_group_failing_its_checksum_is_lost_with_what_only_it_links(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "group-seal")
    locate.flip_in_number(src / "data.mdb", GROUP_MARK)
    report = _salvage(prep, src)
    marked = next(s for s in report.streams if s.name == b"marked")
    assert marked.groups == 0 and marked.entries == 5
    assert any("group" in line and "lost" in line for line in marked.lost)
    assert any("1 consumers of a group whose record is lost" in line for line in report.lost)
    assert any("1 pending entries of a group whose record is lost" in line for line in report.lost)


def test_a_pending_entry_failing_its_checksum_is_rebuilt_from_its_owners_index(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "pel-seal")
    locate.flip_in_number(src / "data.mdb", PEL_MARK)
    report = _salvage(prep, src)
    marked = next(s for s in report.streams if s.name == b"marked")
    assert marked.pending == 1
    assert any("its record is lost" in line for line in marked.lost)
    assert any("1 of these pending entries rebuilt" in line for line in marked.lost)
    with rstore.Store(src.with_name(src.name + "-salvaged"), create=False) as store:
        [pending] = store.xpending_range("marked", "marked-group", "-", "+", 10)
    assert pending["message_id"] == f"{MARK_MS}-3".encode()
    assert pending["consumer"] == b"marked-consumer"
    assert pending["times_delivered"] == 1  # its count was in the lost record


def test_streams_whose_names_are_lost_are_copied_under_made_up_names(
    prepared: Callable[[int], Prepared],
) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "keys")
    keys = _tree(src, "keys")
    _zero_page(src, keys.root)  # one leaf: every name
    report = _salvage(prep, src)
    assert all(s.original_name is None for s in report.streams)
    assert all(s.name.startswith(b"salvage:lost-name:") for s in report.streams)
    original = entries_of(prep.pristine)
    got = entries_of(src.with_name(src.name + "-salvaged"))
    nonempty = sorted(sorted(e) for e in original.values() if e)
    assert sorted(sorted(e) for e in got.values() if e) == nonempty


def test_previous_reads_the_older_snapshot(prepared: Callable[[int], Prepared]) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "previous")
    newest = pagecheck.verify(str(src / "data.mdb")).txnid
    report = _salvage(prep, src, previous=True)
    assert report.snapshot == newest - 1
    assert report.complete  # the log's record of the last transaction applied to it


def test_the_source_directory_gets_no_lock_file(prepared: Callable[[int], Prepared]) -> None:
    prep = prepared(SEED)
    src = _damaged(prep, "no-lock")
    _salvage(prep, src)
    assert sorted(os.listdir(src)) == ["data.mdb", "wal.log"]
