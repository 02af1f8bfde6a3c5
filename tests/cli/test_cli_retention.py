"""``rstore retention set / show / clear``: human and --json output, usage errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]


def test_set_applies_now_show_lists_clear_removes(run: Run, store: rstore.Store) -> None:
    for i in range(1, 301):
        store.xadd("orders", {"n": i}, id=f"{i}-0")
    result = run("retention", "set", "orders", "--max-entries", "100", "--ref", "ACKED")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "set for 1 stream; 200 entries removed now\n  orders: 200\n"
    assert store.xlen("orders") == 100
    run("retention", "set", "logs:*", "--max-age", "36h", "--max-bytes", "1G")
    assert run("retention", "show").stdout == (
        "PATTERN  MAX-AGE  MAX-ENTRIES  MAX-BYTES   REF\n"
        "logs:*   36h      -            1000000000  keepref\n"
        "orders   -        100          -           acked\n"
    )
    assert json.loads(run("retention", "show", "--json").stdout) == [
        {"pattern": "logs:*", "max_age_ms": 129_600_000, "max_entries": None,
         "max_bytes": 10**9, "ref": "keepref"},
        {"pattern": "orders", "max_age_ms": None, "max_entries": 100, "max_bytes": None,
         "ref": "acked"},
    ]  # fmt: skip
    assert "retention-max-entries: 100" in run("info", "orders").stdout
    assert run("retention", "clear", "orders").stdout == "cleared\n"
    result = run("retention", "clear", "orders")
    assert (result.exit_code, result.stderr) == (1, "Error: no retention policy for orders\n")
    assert store.retention_policies() == [
        rstore.Retention(b"logs:*", 129_600_000, None, max_bytes=10**9)
    ]


def test_max_bytes_keeps_a_stream_within_two_nodes_of_it(run: Run, store: rstore.Store) -> None:
    for i in range(2000):
        store.xadd("orders", {"n": i, "pad": "x" * 40})
    assert store.stream_bytes("orders") > 100_000
    result = run("retention", "set", "orders", "--max-bytes", "20kb", "--json")
    assert result.exit_code == 0, result.stderr
    removed = json.loads(result.stdout)["removed"]["orders"]
    assert store.xlen("orders") == 2000 - removed
    for i in range(2000):  # each XADD that opens a node applies it again
        store.xadd("orders", {"n": i, "pad": "x" * 40})
    size = store.stream_bytes("orders")
    # at most two nodes (node-max-bytes) above: the head node it did not take, because the
    # rest would then hold less, and the tail node filling until the next one opens
    assert 20 * 1024 <= size <= 20 * 1024 + 2 * 4096
    info = run("info", "orders").stdout
    assert "retention-max-bytes: 20480\n" in info
    assert f"retention-node-bytes: {size}\n" in info


def test_set_json(run: Run, store: rstore.Store) -> None:
    store.xadd("s", {"n": 1}, id="1-0")
    result = run("retention", "set", "s", "--max-age", "1d", "--json")
    assert json.loads(result.stdout) == {"pattern": "s", "removed": {"s": 1}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set", "s"], "give --max-age, --max-entries, --max-bytes, or more than one"),
        (["set", "s", "--max-bytes", "1.5G"], "'1.5G' is not a size"),
        (["set", "s", "--max-age", "7x"], "'7x' is not a duration"),
        (["set", "s", "--max-entries", "-1"], "--max-entries"),
        (["set", "s", "--max-entries", "1", "--ref", "maybe"], "--ref"),
    ],
)
def test_usage_errors_exit_2_and_write_nothing(
    run: Run, store_path: Path, args: list[str], message: str
) -> None:
    result = run("retention", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not store_path.exists()


def test_show_on_a_store_without_policies(run: Run, store: rstore.Store) -> None:
    result = run("retention", "show")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "no retention policies\n")
    assert run("retention", "show", "--json").stdout == "[]\n"
