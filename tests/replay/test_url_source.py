"""rstore.entries_from_url against a live valkey-server 8.0: the same entries XRANGE gives on
rstore for the same writes, repeated and binary fields kept, in pages, with the selection rules
of every source; server errors as one RStoreError line without the password."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from valkey_server import HOST, ValkeyServer, find_server_binary

import rstore
from rstore import SelectionError, entries_from_store, entries_from_url

redis = pytest.importorskip("redis")

pytestmark = pytest.mark.oracle

WRITES: list[list[bytes | str]] = [
    *(["XADD", "events:a", f"{i}-{i % 2}", "n", str(i), "n", b"\xff\x00", "e", ""] for i in
      range(1, 40)),
    ["XADD", "events:b", "7-7", "only", "one"],
    ["XADD", b"bin\x00key", "1-1", b"\x00", b"\xfe"],
    ["XADD", "gone", "1-0", "a", "b"],
    ["XDEL", "gone", "1-0"],
    ["XDEL", "events:a", "10-0", "11-1"],
    ["SET", "not-a-stream", "x"],
]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ValkeyServer]:
    binary = find_server_binary()
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    with ValkeyServer(binary, tmp_path_factory.mktemp("valkey")) as started:
        client = redis.Redis(host=HOST, port=started.port)
        for argv in WRITES:
            client.execute_command(*argv)
        client.close()
        yield started


@pytest.fixture
def same_store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(str(tmp_path / "s")) as store:
        for argv in WRITES:
            if argv[0] != "SET":  # rstore holds streams only
                store.execute(*argv)
        yield store


def test_the_server_gives_what_a_store_gives_for_the_same_writes(
    server: ValkeyServer, same_store: rstore.Store
) -> None:
    url = f"redis://{HOST}:{server.port}/0"
    assert list(entries_from_url(url, page=7)) == list(entries_from_store(same_store))
    for streams, lo, hi in (
        ([b"events:a"], (5, 0), (30, 1)),
        ([b"events:*", b"bin\x00key"], (0, 0), (2**64 - 1, 2**64 - 1)),
        ([b"events:a"], (12, 0), (12, 0)),
    ):
        got = list(entries_from_url(url, streams, lo, hi, page=3))
        assert got == list(entries_from_store(same_store, streams, lo, hi))
        assert got


def test_selection_errors_and_server_errors(server: ValkeyServer) -> None:
    url = f"redis://{HOST}:{server.port}"
    with pytest.raises(SelectionError, match=r"^no stream 'nope' on the server$"):
        list(entries_from_url(url, [b"nope"]))
    with pytest.raises(SelectionError, match=r"^no stream 'not-a-stream' on the server$"):
        list(entries_from_url(url, [b"not-a-stream"]))
    with pytest.raises(SelectionError, match=r"^no stream matches 'zz\*' on the server$"):
        list(entries_from_url(url, [b"zz*"]))
    with ValkeyServer(find_server_binary() or "", None) as other:
        port = other.port
    with pytest.raises(rstore.RStoreError) as caught:  # nobody listens there any more
        list(entries_from_url(f"redis://me:secret@{HOST}:{port}/0"))
    assert str(caught.value).startswith(f"redis://{HOST}:{port}/0: ")
    assert "secret" not in str(caught.value) and "\n" not in str(caught.value)
