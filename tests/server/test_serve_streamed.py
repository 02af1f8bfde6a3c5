"""Streamed replies of ``rstore serve``: an XRANGE / XREVRANGE over more than a MiB of nodes is
written as it is decoded, a page at a time, with the bytes of a one-shot reply; the replies
around it keep their order, other clients are served meanwhile, a client that does not read
holds only its own reply back, and the output limit counts a streamed reply whole."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
import redis
from served import ServedStore
from valkey_server import HOST

import rstore
from rstore.commands.read import STREAM_BYTES
from rstore.server.resp import encode_py
from rstore.server.shapes import resp3

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
        return _read(sock, expect)


def _command(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def test_the_bytes_are_those_of_a_whole_reply(big: rstore.Store) -> None:
    with ServedStore(big) as served:
        for args in ([b"XRANGE", b"big", b"-", b"+"],
                     [b"XREVRANGE", b"big", b"+", b"-", b"COUNT", b"30000"],
                     [b"XRANGE", b"big", b"1-0", b"+", b"COUNT", b"5"]):  # fmt: skip
            out: list[bytes] = []
            encode_py(big.execute(*args), 2, out)  # the reference: the whole reply
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
    """The public API under the server: a big range as its count and pages, a small one as
    its RESP bytes, and without ``streamed`` both as their list."""
    whole = big.execute("XRANGE", "big", "-", "+")
    streamed, small = big.execute_many(
        [[b"XRANGE", b"big", b"-", b"+"], [b"XRANGE", b"big", b"-", b"+", b"COUNT", b"3"]],
        streamed=True,
    )
    assert isinstance(streamed, rstore.StreamedEntries) and streamed.count == ENTRIES
    three: list[bytes] = []
    encode_py(whole[:3], 2, three)
    assert isinstance(small, rstore.RespReply) and small == b"".join(three)
    assert streamed.build() == whole
    assert big.execute_many([[b"XRANGE", b"big", b"-", b"+"]]) == [whole]
    (again,) = big.execute_many([[b"XRANGE", b"big", b"-", b"+"]], streamed=True)
    out: list[bytes] = []
    encode_py(whole, 2, out)
    assert b"".join(again.chunks()) == b"".join(out)  # the bytes a server writes
    (third,) = big.execute_many([[b"XREVRANGE", b"big", b"+", b"-"]], streamed=True)
    assert [e for page in third.pages() for e in page][:2] == [
        (tuple(map(int, i.split(b"-"))), f) for i, f in whole[::-1][:2]
    ]


def _reference(store: rstore.Store, args: list[bytes], proto: int) -> bytes:
    """The bytes of the reply built whole, in the protocol's shape."""
    reply = store.execute_raw(*args)
    out: list[bytes] = []
    encode_py(resp3(args, reply) if proto == 3 else reply, proto, out)
    return b"".join(out)


def _read(sock: socket.socket, expect: int, got: bytes = b"") -> bytes:
    sock.settimeout(20)
    while len(got) < expect:
        data = sock.recv(1 << 20)
        if not data:
            break
        got += data
    return got


def _in_resp3(port: int, request: bytes, expect: int) -> bytes:
    """What the server sends for ``request`` on a connection switched to RESP3."""
    with socket.create_connection((HOST, port)) as sock:
        sock.sendall(_command(b"HELLO", b"3") + _command(b"ECHO", b"switched"))
        got = b""
        while b"$8\r\nswitched\r\n" not in got:
            got = _read(sock, len(got) + 1, got)
        rest = got.split(b"$8\r\nswitched\r\n", 1)[1]
        sock.sendall(request)
        return _read(sock, expect, rest)


def test_a_big_xread_is_streamed_with_the_bytes_of_a_whole_reply(big: rstore.Store) -> None:
    """XREAD over more than a MiB of nodes, one stream or several (missing and empty ones
    left out), in RESP2 (an array of pairs) and RESP3 (a map)."""
    with ServedStore(big) as served:
        for args in ([b"XREAD", b"STREAMS", b"big", b"small", b"0", b"0"],
                     [b"XREAD", b"COUNT", b"30000", b"STREAMS", b"nosuch", b"big", b"0", b"5-0"],
                     [b"XREAD", b"STREAMS", b"small", b"big", b"+", b"39990-0"]):  # fmt: skip
            whole = _reference(big, args, 2)
            assert _raw(served.port, _command(*args), len(whole)) == whole, args
            whole = _reference(big, args, 3)
            assert _in_resp3(served.port, _command(*args), len(whole)) == whole, args


def test_execute_many_gives_big_reads_streamed(big: rstore.Store) -> None:
    args = [b"XREAD", b"STREAMS", b"big", b"small", b"0", b"0"]
    (streamed,) = big.execute_many([args], streamed=True)
    assert isinstance(streamed, rstore.StreamedReads)
    assert [(key, entries.count) for key, entries in streamed.streams] == [
        (b"big", ENTRIES),
        (b"small", 1),
    ]
    assert streamed.build() == big.execute("XREAD", "STREAMS", "big", "small", "0", "0")
    (small,) = big.execute_many(
        [[b"XREAD", b"COUNT", b"2", b"STREAMS", b"big", b"0"]], streamed=True
    )
    assert small == big.execute("XREAD", "COUNT", "2", "STREAMS", "big", "0")


def test_a_blocked_read_woken_by_a_big_append_gets_it_streamed(tmp_path: Any) -> None:
    with rstore.Store(tmp_path / "s", sync=False) as store, ServedStore(store) as served:
        reader = redis.Redis(port=served.port, socket_timeout=30)
        got: list[Any] = []
        thread = threading.Thread(
            target=lambda: got.append(reader.xread({"later": "$"}, block=20_000))
        )
        thread.start()
        deadline = time.monotonic() + 10
        while b"cmd=xread" not in reader.execute_command("CLIENT", "LIST") + b"cmd=xread" * 0:
            if time.monotonic() > deadline or not thread.is_alive():
                break
            time.sleep(0.02)
        time.sleep(0.2)
        store.append_entries(
            ("later", None, [b"n", b"%d" % i, b"pad", b"x" * 40]) for i in range(ENTRIES)
        )
        thread.join(30)
        assert got == [[[b"later", store.xrange("later")]]]
        assert len(got[0][0][1]) == ENTRIES


def test_a_big_xreadgroup_is_streamed_and_delivers_every_entry(tmp_path: Any) -> None:
    """XREADGROUP ``>`` without COUNT over more than a MiB of nodes: streamed, with the bytes
    the whole reply would have, and every entry pending for the consumer -- in RESP2 and
    RESP3, with a small stream beside it in the same call."""
    with rstore.Store(tmp_path / "s", sync=False) as store, ServedStore(store) as served:
        rows = [b"n", b"pad"]
        for name in ("big", "other"):
            store.append_entries(
                (name, None, [rows[0], b"%d" % i, rows[1], b"x" * 40])
                for i in range(ENTRIES if name == "big" else 3)
            )
        for proto, group in ((2, b"g2"), (3, b"g3")):
            for key in (b"big", b"other"):
                store.execute("XGROUP", "CREATE", key, group, "0")
            args = [b"XREADGROUP", b"GROUP", group, b"c", b"STREAMS", b"big", b"other",
                    b">", b">"]  # fmt: skip
            whole = [[key, store.execute("XRANGE", key, "-", "+")] for key in (b"big", b"other")]
            out: list[bytes] = []
            encode_py(resp3([b"xreadgroup"], whole) if proto == 3 else whole, proto, out)
            want = b"".join(out)
            if proto == 2:
                got = _raw(served.port, _command(*args), len(want))
            else:
                got = _in_resp3(served.port, _command(*args), len(want))
            assert got == want
            pending = store.execute("XPENDING", "big", group)
            assert pending[0] == ENTRIES and pending[3] == [[b"c", b"%d" % ENTRIES]]
            info = store.execute("XINFO", "GROUPS", "big")[-1]
            assert dict(zip(info[::2], info[1::2]))[b"entries-read"] == ENTRIES
        (again,) = store.execute_many(
            [[b"XREADGROUP", b"GROUP", b"g2", b"d", b"STREAMS", b"big", b">"]], streamed=True
        )
        assert again is rstore.NIL_ARRAY  # all delivered already


def test_execute_many_gives_a_big_group_read_streamed(tmp_path: Any) -> None:
    with rstore.Store(tmp_path / "s", sync=False) as store:
        store.append_entries(
            ("big", None, [b"n", b"%d" % i, b"pad", b"x" * 40]) for i in range(ENTRIES)
        )
        store.execute("XGROUP", "CREATE", "big", "g", "0")
        ids = [entry_id for entry_id, _ in store.execute("XRANGE", "big", "-", "+")]
        store.execute("XDEL", "big", ids[4])
        args = [b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"30000", b"STREAMS", b"big", b">"]
        (streamed,) = store.execute_many([args], streamed=True)
        assert isinstance(streamed, rstore.StreamedReads)
        ((key, entries),) = streamed.streams
        assert key == b"big" and entries.count == 30000
        got = [rstore.ids.format_id(e[0]) for page in entries.pages() for e in page]
        assert got == ids[:4] + ids[5:30001]  # the deleted one skipped
        assert store.execute("XPENDING", "big", "g")[:3] == [30000, ids[0], ids[30000]]


def test_a_big_history_is_written_while_read_with_the_bytes_of_a_whole_reply(
    tmp_path: Any,
) -> None:
    """XREADGROUP of a consumer's history of 40,000 entries (more than one 64 KiB piece, with
    deleted entries among them): rstore serve writes it as RESP while it reads it
    (:class:`rstore.HistoryReads`), with the bytes of the whole reply in RESP2 and RESP3, and
    every entry's delivery is counted."""
    with rstore.Store(tmp_path / "s", sync=False) as store, ServedStore(store) as served:
        store.append_entries(
            ("big", None, [b"n", b"%d" % i, b"pad", b"x" * 40]) for i in range(ENTRIES)
        )
        store.execute("XGROUP", "CREATE", "big", "g", "0")
        store.execute("XREADGROUP", "GROUP", "g", "c", "STREAMS", "big", ">")
        ids = [entry_id for entry_id, _ in store.execute("XRANGE", "big", "-", "+")]
        store.execute("XDEL", "big", ids[0], ids[7], ids[8], ids[-1])
        args = [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"big", b"0"]
        for proto, deliveries in ((2, 3), (3, 5)):  # one by > before, two reads a round
            whole = store.execute_raw(*args)  # the reference, built whole (not on the wire)
            out: list[bytes] = []
            encode_py(resp3([b"xreadgroup"], whole) if proto == 3 else whole, proto, out)
            want = b"".join(out)
            assert len(want) > 4 << 16 and whole[0][1][7][1] is rstore.NIL_ARRAY
            if proto == 2:
                got = _raw(served.port, _command(*args), len(want))
            else:
                got = _in_resp3(served.port, _command(*args), len(want))
            assert got == want
            rows = store.execute("XPENDING", "big", "g", "-", "+", "10")
            counts = {row[0]: row[3] for row in rows}
            # each read of a live entry counted, the served one too; a deleted one's stays 1
            assert counts == {i: 1 if i in (ids[0], ids[7], ids[8]) else deliveries
                              for i in ids[:10]}  # fmt: skip
        (history,) = store.execute_many([args], streamed=True)
        assert isinstance(history, rstore.HistoryReads)
        assert [(key, count) for key, count, _, _ in history.streams] == [(b"big", ENTRIES)]
