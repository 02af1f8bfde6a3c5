"""Streamed replies of ``rstore serve``: an XRANGE / XREVRANGE over more than a MiB of nodes is
written as it is decoded, a page at a time, with the bytes of a one-shot reply; the replies
around it keep their order, other clients are served meanwhile, a client that does not read
holds only its own reply back, and the output limit counts a streamed reply whole."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
import redis
from served import ServedStore
from valkey_server import HOST

import rstore
from rstore.commands.read import STREAM_BYTES
from rstore.server.resp import encode

ENTRIES = 40_000  # about 2.5 MiB of nodes: streamed


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("streamed") / "s"
    with rstore.Store(path, sync=False) as store:
        store.append_entries(
            ("big", None, [b"n", b"%d" % i, b"pad", b"x" * 40]) for i in range(ENTRIES)
        )
        store.xadd("small", {"a": "b"})
        size = store.view(lambda v: sum(len(n) for _, n in v.nodes(b"big")))
        assert size > 2 * STREAM_BYTES  # the reply is streamed, in more than one page
        yield store


def _raw(port: int, request: bytes, expect: int) -> bytes:
    """The bytes the server sends for ``request``, up to ``expect`` bytes."""
    with socket.create_connection((HOST, port)) as sock:
        sock.sendall(request)
        got = b""
        sock.settimeout(20)
        while len(got) < expect:
            data = sock.recv(1 << 20)
            if not data:
                break
            got += data
        return got


def _command(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def test_the_bytes_are_those_of_a_whole_reply(big: rstore.Store) -> None:
    with ServedStore(big) as served:
        for args in ([b"XRANGE", b"big", b"-", b"+"],
                     [b"XREVRANGE", b"big", b"+", b"-", b"COUNT", b"30000"],
                     [b"XRANGE", b"big", b"1-0", b"+", b"COUNT", b"5"]):  # fmt: skip
            out: list[bytes] = []
            encode(big.execute(*args), 2, out)  # the reference: the whole reply
            whole = b"".join(out)
            assert _raw(served.port, _command(*args), len(whole)) == whole


def test_replies_around_a_streamed_one_keep_their_order(big: rstore.Store) -> None:
    want = big.xrange("big")
    with ServedStore(big) as served:
        for protocol in (2, 3):
            client = redis.Redis(port=served.port, protocol=protocol)
            pipe = client.pipeline(transaction=False)
            pipe.xlen("big").xrange("big").xrange("small").xrevrange("big").xlen("small")
            got = pipe.execute()
            assert got[0] == ENTRIES and got[4] == 1 and len(got[2]) == 1
            assert got[1] == want and got[3] == want[::-1]
            with client.pipeline(transaction=True) as multi:
                assert multi.xrange("big").xlen("big").execute() == [want, ENTRIES]


def test_a_client_that_does_not_read_holds_back_only_itself(big: rstore.Store) -> None:
    with ServedStore(big) as served:
        lazy = socket.create_connection((HOST, served.port))
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        lazy.sendall(_command(b"XRANGE", b"big", b"-", b"+") * 3)
        time.sleep(0.3)  # its reply is paused: the socket and the transport's buffer are full
        other = redis.Redis(port=served.port, socket_timeout=10)
        started = time.monotonic()
        assert other.xlen("big") == ENTRIES and len(other.xrange("big", count=10)) == 10
        assert time.monotonic() - started < 5
        listed = other.execute_command("CLIENT", "LIST")
        assert listed.count(b"id=") == 2  # the lazy one is still there, waiting
        lazy.close()


def test_the_output_limit_counts_a_streamed_reply_whole(big: rstore.Store) -> None:
    with ServedStore(big, client_output_buffer_limit=1 << 20) as served:
        got = _raw(served.port, _command(b"XRANGE", b"big", b"-", b"+"), 10 << 20)
        assert 0 < len(got) < 4 << 20  # cut: the reply is bigger than the limit
        assert redis.Redis(port=served.port).xlen("big") == ENTRIES


def test_execute_many_gives_big_ranges_streamed(big: rstore.Store) -> None:
    """The public API under the server: a big range as its count and pages, a small one and
    one without ``streamed`` as their list."""
    whole = big.execute("XRANGE", "big", "-", "+")
    streamed, small = big.execute_many(
        [[b"XRANGE", b"big", b"-", b"+"], [b"XRANGE", b"big", b"-", b"+", b"COUNT", b"3"]],
        streamed=True,
    )
    assert isinstance(streamed, rstore.StreamedEntries) and streamed.count == ENTRIES
    assert small == whole[:3]
    assert streamed.build() == whole
    assert big.execute_many([[b"XRANGE", b"big", b"-", b"+"]]) == [whole]
    (again,) = big.execute_many([[b"XRANGE", b"big", b"-", b"+"]], streamed=True)
    out: list[bytes] = []
    encode(whole, 2, out)
    assert b"".join(again.chunks()) == b"".join(out)  # the bytes a server writes
    (third,) = big.execute_many([[b"XREVRANGE", b"big", b"+", b"-"]], streamed=True)
    assert [e for page in third.pages() for e in page][:2] == [
        (tuple(map(int, i.split(b"-"))), f) for i, f in whole[::-1][:2]
    ]
