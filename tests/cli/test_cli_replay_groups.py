"""``rstore replay --with-groups``: groups, consumers and PELs (owners, delivery times and
counts) copied along, store -> store, dump -> store and dump -> valkey-server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]


def _seed(path: Path) -> None:
    with rstore.Store(path) as a:
        for i in range(1, 11):
            a.execute("XADD", "s", f"{i}-0", "n", str(i))
        a.execute("XGROUP", "CREATE", "s", "g", "0")
        a.execute("XGROUP", "CREATE", "s", "idle", "$")
        a.execute("XREADGROUP", "GROUP", "g", "alice", "COUNT", 3, "STREAMS", "s", ">")
        a.execute("XREADGROUP", "GROUP", "g", "bob", "COUNT", 2, "STREAMS", "s", ">")
        a.execute("XCLAIM", "s", "g", "bob", 0, "1-0")
        a.execute("XACK", "s", "g", "2-0")


def _state(execute: Callable[..., Any]) -> tuple[Any, ...]:
    groups = execute("XINFO", "GROUPS", "s")
    pending = [p[:2] + p[3:] for p in execute("XPENDING", "s", "g", "-", "+", 10)]  # no idle
    consumers = sorted(c[1] for c in execute("XINFO", "CONSUMERS", "s", "g"))
    return groups, pending, consumers


def _times(path: Path) -> list[tuple[Any, ...]]:
    with rstore.Store(path) as s:
        group = s.inspect("s", pending=True)[0].groups[0]
        return [(p.id, p.delivery_time_ms, p.delivery_count, p.consumer) for p in group.pending]


def test_store_to_store_and_dump_to_store(run: Run, store_path: Path, tmp_path: Path) -> None:
    _seed(store_path)
    with rstore.Store(store_path) as src:
        expected = _state(src.execute)
        src.save(tmp_path / "dump.rdb")
    assert expected[1] == [[b"1-0", b"bob", 2], [b"3-0", b"alice", 1], [b"4-0", b"bob", 1],
                           [b"5-0", b"bob", 1]]  # fmt: skip
    copy = tmp_path / "copy"
    result = run("replay", "--to-store", str(copy), "--with-groups")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1] == "copied 2 groups, 2 consumers, 4 pending entries"
    with rstore.Store(copy) as t:
        assert _state(t.execute) == expected
    assert _times(copy) == _times(store_path)
    from_dump = tmp_path / "from-dump"
    result = run("replay", "--from-dump", str(tmp_path / "dump.rdb"), "--to-store",
                 str(from_dump), "--with-groups")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    with rstore.Store(from_dump) as t:
        assert _state(t.execute) == expected
    assert _times(from_dump) == _times(store_path)
    again = run("replay", "--to-store", str(copy), "--with-groups", "--on-conflict", "skip")
    assert again.exit_code == 1
    assert again.stderr == "Error: BUSYGROUP Consumer Group name already exists\n"
    assert run("replay", "--with-groups").exit_code == 2  # stdout: no groups to write to


@pytest.mark.oracle
def test_dump_to_valkey(run: Run, store_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("redis")
    from valkey_server import HOST, ValkeyServer, find_server_binary

    binary = find_server_binary()
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    _seed(store_path)
    with rstore.Store(store_path) as src:
        expected = _state(src.execute)
        src.save(tmp_path / "dump.rdb")
    (tmp_path / "v").mkdir()
    with ValkeyServer(binary, tmp_path / "v") as server:
        url = f"redis://{HOST}:{server.port}"
        result = run("replay", "--from-dump", str(tmp_path / "dump.rdb"), "--to-url", url,
                     "--with-groups")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        got = _state(lambda *args: server.call(*(str(a).encode() for a in args)))
    assert got == expected


def test_a_rerun_with_a_bookmark_updates_the_groups_it_copied(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    """The groups are copied after the entries: a rerun of the same command (resuming from its
    bookmark, e.g. after being killed during the group copy) sets them again instead of
    failing with BUSYGROUP; without a bookmark an existing group is still an error."""
    _seed(store_path)
    with rstore.Store(store_path) as src:
        expected = _state(src.execute)
    copy = tmp_path / "copy"
    args = ("replay", "--to-store", str(copy), "--with-groups", "--bookmark", "c")
    assert run(*args).exit_code == 0
    with rstore.Store(copy) as t:  # a copy interrupted half-way: one group moved on
        t.execute("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", 0)
        t.execute("XACK", "s", "g", "3-0")
    again = run(*args)
    assert again.exit_code == 0, again.stderr
    with rstore.Store(copy) as t:
        assert _state(t.execute) == expected
    assert _times(copy) == _times(store_path)
    plain = run("replay", "--to-store", str(tmp_path / "copy"), "--with-groups",
                "--on-conflict", "skip")  # fmt: skip
    assert plain.exit_code == 1 and "BUSYGROUP" in plain.stderr


def test_counts_of_one_are_singular(run: Run, store_path: Path, tmp_path: Path) -> None:
    with rstore.Store(store_path) as a:
        a.execute("XADD", "s", "1-0", "n", "1")
        a.execute("XGROUP", "CREATE", "s", "g", "0")
        a.execute("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    result = run("replay", "--to-store", str(tmp_path / "copy"), "--with-groups")
    assert result.exit_code == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith(f"replayed 1 entry to {tmp_path / 'copy'} in ")
    assert second == "copied 1 group, 1 consumer, 1 pending entry"


def _seed_released(path: Path) -> None:
    """Entries 2-0 and 4-0 released by XNACK (no owner), 3-0 held by alice."""
    with rstore.Store(path) as a:
        for i in range(1, 6):
            a.execute("XADD", "s", f"{i}-0", "n", str(i))
        a.execute("XGROUP", "CREATE", "s", "g", "0")
        a.execute("XREADGROUP", "GROUP", "g", "alice", "COUNT", 4, "STREAMS", "s", ">")
        a.execute("XACK", "s", "g", "1-0")
        a.execute("XNACK", "s", "g", "FAIL", "IDS", 2, "4-0", "2-0", "RETRYCOUNT", 3)


def test_released_entries_stay_released(run: Run, store_path: Path, tmp_path: Path) -> None:
    _seed_released(store_path)
    with rstore.Store(store_path) as src:
        expected = _state(src.execute)
        src.save(tmp_path / "dump.rdb", rdb_version=14)
    assert expected[1] == [[b"2-0", b"", 3], [b"3-0", b"alice", 1], [b"4-0", b"", 3]]
    for source in ([], ["--from-dump", str(tmp_path / "dump.rdb")]):
        copy = tmp_path / f"copy{len(source)}"
        result = run("replay", *source, "--to-store", str(copy), "--with-groups")
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines()[1] == "copied 1 group, 1 consumer, 3 pending entries"
        with rstore.Store(copy) as t:
            assert _state(t.execute) == expected


@pytest.mark.oracle
def test_released_entries_to_a_server_without_xnack(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    """Valkey 8.0 has no XNACK: the released entries go to rstore:released at time 0, where
    any claim takes them (as RDB files before version 14 hold them)."""
    pytest.importorskip("redis")
    from valkey_server import HOST, ValkeyServer, find_server_binary

    binary = find_server_binary()
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    _seed_released(store_path)
    (tmp_path / "v").mkdir()
    with ValkeyServer(binary, tmp_path / "v") as server:
        url = f"redis://{HOST}:{server.port}"
        result = run("replay", "--to-url", url, "--with-groups")
        assert result.exit_code == 0, result.stderr
        got = _state(lambda *args: server.call(*(str(a).encode() for a in args)))
        claimed = server.call(b"XAUTOCLAIM", b"s", b"g", b"bob", b"3600000", b"0", b"JUSTID")
    assert got[1] == [[b"2-0", b"rstore:released", 3], [b"3-0", b"alice", 1],
                      [b"4-0", b"rstore:released", 3]]  # fmt: skip
    assert claimed[1] == [b"2-0", b"4-0"]  # idle since 1970: any claim takes them
