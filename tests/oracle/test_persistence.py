"""Close and reopen the Store: the state on disk must still answer exactly like valkey."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Oracle
from .resp import RespClient

pytestmark = pytest.mark.oracle


def build(oracle: Oracle) -> None:
    both = oracle.both
    for i in range(1, 40):
        both("XADD", "s", f"{i}-{i % 3}", "f", str(i), "big", "x" * (i * 50))
    both("XDEL", "s", "5-2", "7-1")
    both("XTRIM", "s", "MAXLEN", "~", "30")
    both("XSETID", "s", "100-0", "ENTRIESADDED", "77", "MAXDELETEDID", "50-0")
    both("XADD", "e", "1-0", "f", "v")
    both("XDEL", "e", "1-0")


@pytest.mark.parametrize("sync", [True, False])
def test_reopen_keeps_everything(valkey: RespClient, tmp_path: Path, sync: bool) -> None:
    oracle = Oracle(valkey, tmp_path / "store", sync=sync, node_max_entries=3)
    try:
        build(oracle)
        oracle.reopen()
        oracle.assert_same_state()
        oracle.both_config_get("stream-node-*")
        oracle.both("XADD", "s", "100-*", "f", "v")
        oracle.both("XADD", "s", "101-0", "f", "v")
        oracle.reopen()
        oracle.assert_same_state()
    finally:
        oracle.close()


def test_config_set_survives_reopen(oracle: Oracle) -> None:
    oracle.both("CONFIG", "SET", "stream-node-max-entries", "2")
    oracle.both("CONFIG", "SET", "stream-node-max-bytes", "500")
    oracle.both("CONFIG", "SET", "rdbcompression", "no")
    oracle.reopen()
    oracle.both_config_get("stream-node-*", "rdbcompression")
    for i in range(1, 12):
        oracle.both("XADD", "s", f"{i}-0", "f", "v" * (i * 20))
    oracle.assert_same_state()
