"""``Store(decode_responses=True)``: what is decoded and what is not.

The decoded shapes of the redis-py-style methods and pipelines are compared with real redis-py
in ``tests/oracle/test_redispy_client.py``; this file covers rstore's own entry points.
"""

from __future__ import annotations

from pathlib import Path

import rstore


def test_the_argv_api_keeps_bytes_and_execute_command_decodes(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "store", sync=False, decode_responses=True) as store:
        assert store.xadd("s", {"f": "é"}, id="1-0") == "1-0"
        raw = [[b"1-0", [b"f", "é".encode()]]]
        assert store.execute("XRANGE", "s", "-", "+") == raw  # rstore's argv API: bytes
        assert store.execute_raw("XRANGE", "s", "-", "+") == raw
        assert store.execute_command("XRANGE", "s", "-", "+") == [["1-0", ["f", "é"]]]
        assert store.execute_command("TYPE", "s") == "stream"
        assert isinstance(store.dump("s"), bytes)
        assert isinstance(store.dump("s", rdb_version=9), bytes)


def test_without_decode_responses_nothing_is_decoded(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "store", sync=False) as store:
        store.xadd("s", {"f": "v"}, id="1-0")
        assert store.xrange("s") == [(b"1-0", {b"f": b"v"})]
        assert store.execute_command("XRANGE", "s", "-", "+") == [[b"1-0", [b"f", b"v"]]]
        assert store.type("s") == b"stream"
