"""``Store(decode_responses=True)``: what is decoded and what is not.

The decoded shapes of the redis-py-style methods and pipelines are compared with real redis-py
in ``tests/oracle/test_redispy_client.py``; this file covers rstore's own entry points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_protocol_2_and_the_default_differ_only_where_redis_py_does(tmp_path: Path) -> None:
    """``xinfo_stream(full=True)``'s consumers: ``bytes`` keys by default, as redis-py 8.1's
    default client gives them, ``str`` keys with ``protocol=2`` (both compared with redis-py on
    valkey in ``tests/oracle/test_redispy_client.py``); RESP3's own shapes are refused."""
    path = tmp_path / "store"
    with rstore.Store(path, sync=False) as store:
        store.xadd("s", {"f": "v"}, id="1-0")
        store.xgroup_create("s", "g", 0)
        store.xreadgroup("g", "c", {"s": ">"})
        consumer = store.xinfo_stream("s", full=True)["groups"][0]["consumers"][0]
        assert set(consumer) == {b"name", b"seen-time", b"active-time", b"pel-count", b"pending"}
    for protocol in (2, "2"):
        with rstore.Store(path, sync=False, protocol=protocol) as store:  # type: ignore[arg-type]
            info = store.xinfo_stream("s", full=True)
            assert info["groups"][0]["consumers"][0]["name"] == b"c"
            with store.pipeline() as pipe:
                [piped] = pipe.xinfo_stream("s", full=True).execute()
            assert piped["groups"][0]["consumers"][0]["name"] == b"c"
    with pytest.raises(ValueError, match="protocol must be None"):
        rstore.Store(path, protocol=3)
