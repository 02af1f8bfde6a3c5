"""RENAME and RENAMENX beside valkey-server: the stream moves with its groups and pending
entries, an existing target is replaced (RENAME) or kept (RENAMENX), a missing source is
``ERR no such key``, and renaming a key to itself is a no-op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.oracle


def test_rename_moves_the_stream_and_its_groups(oracle: Any, both: Callable[..., Any]) -> None:
    both("XADD", "a", "1-1", "f", "v")
    both("XADD", "a", "2-1", "f", "w")
    both("XGROUP", "CREATE", "a", "g", "0")
    both("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "a", ">")
    both("XADD", "b", "5-5", "x", "y")
    both("XGROUP", "CREATE", "b", "other", "$")
    both("RENAME", "a", "b")
    both("EXISTS", "a", "b")
    both("XRANGE", "b", "-", "+")
    both("XINFO", "GROUPS", "b")
    both("XPENDING", "b", "g")
    both("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "b", ">")
    both("RENAME", "missing", "c")
    both("RENAME", "b", "b")
    both("RENAME", "missing", "missing")
    both("XADD", "c", "1-1", "f", "v")
    both("RENAMENX", "b", "c")
    both("RENAMENX", "b", "d")
    both("RENAMENX", "d", "d")
    both("RENAMENX", "missing", "e")
    both("RENAME", "d")
    oracle.both_keys("*")  # in any order: valkey's is a hash table's


def test_renamed_stream_survives_reopening(oracle: Any) -> None:
    oracle.both("XADD", "a", "1-1", "f", "v")
    oracle.both("RENAME", "a", "z")
    oracle.reopen()
    oracle.both("XRANGE", "z", "-", "+")
    oracle.both("TYPE", "a")
    oracle.assert_same_state()
