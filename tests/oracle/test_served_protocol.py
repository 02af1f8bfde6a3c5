"""``rstore serve`` reads requests as valkey-server does: the same bytes in, the same bytes out
(replies, protocol errors, and whether the connection is closed), for inline commands,
pipelines split anywhere, and malformed input; and RESP3 replies after HELLO 3."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from newer_fields import raw_as_older_server
from valkey_server import HOST

from rstore.server.protocol import ProtocolError, RequestParser

from .resp import encode_command

pytestmark = pytest.mark.oracle


def _exchange(port: int, chunks: list[bytes], quiet_s: float = 0.3) -> tuple[bytes, bool]:
    """Send ``chunks`` (a pause between them), read until the server closes the connection
    or stays quiet; the bytes read and whether it closed."""
    with socket.create_connection((HOST, port), timeout=10) as sock:
        for chunk in chunks:
            sock.sendall(chunk)
            time.sleep(0.02)
        sock.settimeout(quiet_s)
        got = b""
        closed = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not data:
                closed = True
                break
            got += data
        return got, closed


CASES = {
    "inline": [b"PING\r\n", b"XADD s 1-1 f v\r\nXLEN s\r\n", b'ECHO "a b\\x41\\n"\r\n'],
    "inline with LF only and quotes": [b"ECHO 'it''s'\n", b"ECHO 'don\\'t'\nEXISTS s\n"],
    "inline, empty lines": [b"\r\n\r\n\nPING\r\n"],
    "unbalanced quotes": [b'ECHO "abc\r\nPING\r\n'],
    "quote then a letter": [b'ECHO "a"b\r\n'],
    "split array": [b"*3\r\n$4\r\nXADD\r", b"\n$1\r\ns\r\n", b"$3\r\n", b"1-1\r\n"],
    "empty array": [b"*0\r\n*-1\r\nPING\r\n"],
    "bad multibulk length": [b"*abc\r\n"],
    "huge multibulk length": [b"*99999999999\r\n"],
    "multibulk plus sign": [b"*+1\r\n$4\r\nPING\r\n"],
    "expected dollar": [b"*1\r\n:4\r\nPING\r\n"],
    "bad bulk length": [b"*1\r\n$-4\r\n"],
    "bulk length letters": [b"*1\r\n$x\r\n"],
    "bulk over the limit": [b"*1\r\n$600000000\r\n"],
    "commands before an error": [b"PING\r\n*1\r\n$4\r\nPING\r\n*2\r\n?\r\n"],
    "unknown and arity": [b"*1\r\n$4\r\nNOPE\r\n*1\r\n$4\r\nXADD\r\n"],
    "too big inline": [b"A" * (64 * 1024 + 10)],
    "too big count string": [b"*" + b"1" * (64 * 1024 + 10)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_bytes_back_as_valkey(servers: tuple[int, int], name: str) -> None:
    valkey_port, rstore_port = servers
    expected = _exchange(valkey_port, CASES[name])
    actual = _exchange(rstore_port, CASES[name])
    assert actual == expected


def _read_reply(sock: socket.socket, buf: bytearray) -> bytes:
    """One whole RESP2/RESP3 reply, raw."""

    def line(at: int) -> int:
        while True:
            end = buf.find(b"\r\n", at)
            if end >= 0:
                return end
            buf.extend(sock.recv(65536))

    def walk(at: int) -> int:
        end = line(at)
        kind, head = buf[at : at + 1], buf[at + 1 : end]
        nxt = end + 2
        if kind in (b"$", b"=", b"!"):
            size = int(head)
            if size < 0:
                return nxt
            while len(buf) < nxt + size + 2:
                buf.extend(sock.recv(65536))
            return nxt + size + 2
        if kind in (b"*", b"~", b">"):
            for _ in range(max(0, int(head))):
                nxt = walk(nxt)
            return nxt
        if kind in (b"%", b"|"):
            for _ in range(2 * int(head)):
                nxt = walk(nxt)
            return nxt
        return nxt

    end = walk(0)
    reply = bytes(buf[:end])
    del buf[:end]
    return reply


SCRIPT: list[tuple[str, ...]] = [
    ("XADD", "s", "1-1", "f", "v", "g", "w"),
    ("XADD", "s", "2-1", "f", "x"),
    ("XGROUP", "CREATE", "s", "grp", "0"),
    ("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "s", ">"),
    ("XREAD", "COUNT", "5", "STREAMS", "s", "missing", "0", "0"),
    ("XREAD", "STREAMS", "missing", "0"),
    ("XREAD", "BLOCK", "50", "STREAMS", "missing", "$"),
    ("XRANGE", "s", "-", "+"),
    ("XPENDING", "s", "grp"),
    ("XAUTOCLAIM", "s", "grp", "bob", "0", "0"),
    ("XINFO", "GROUPS", "s"),
    ("XINFO", "STREAM", "s"),
    ("XLEN", "nothing"),
    ("TYPE", "s"),
    ("EXISTS", "s", "missing"),
    ("DEL", "missing"),
    ("PING",),
    ("ECHO", "hi"),
    ("CONFIG", "GET", "stream-node-max-entries"),  # one name: a pattern's order is a hash's
]


@pytest.mark.parametrize("proto", [2, 3])
def test_stream_replies_are_valkeys_bytes_in_resp2_and_resp3(
    servers: tuple[int, int], proto: int
) -> None:
    """Every reply of a script of stream commands, raw, after HELLO <proto> on both (no
    command of the script answers with times: idle times would differ by the run's pace)."""
    replies = []
    for port in servers:
        with socket.create_connection((HOST, port), timeout=10) as sock:
            buf = bytearray()
            sock.sendall(encode_command(["HELLO", str(proto)]))
            _read_reply(sock, buf)  # the servers describe themselves differently
            got = []
            for argv in SCRIPT:
                sock.sendall(encode_command(list(argv)))
                got.append((argv, _read_reply(sock, buf)))
            replies.append(got)
    for (argv, expected), (_, actual) in zip(*replies):
        assert raw_as_older_server(actual) == expected, argv  # replies[1]: rstore serve's


def _replies(
    servers: tuple[int, int],
    proto: int,
    keys: list[str],
    setup: list[tuple[str, ...]],
    queries: list[tuple[str, ...]],
    mask: Callable[[bytes], bytes],
) -> list[list[bytes]]:
    """Each server's raw replies (valkey's, then rstore serve's) to ``queries``, ``mask``ed,
    in RESP ``proto``, after ``keys`` were deleted and ``setup`` ran."""
    replies = []
    for port in servers:
        with socket.create_connection((HOST, port), timeout=10) as sock:
            buf = bytearray()
            for argv in [("HELLO", str(proto)), ("DEL", *keys), *setup]:
                sock.sendall(encode_command(list(argv)))
                _read_reply(sock, buf)
            got = []
            for argv in queries:
                sock.sendall(encode_command(list(argv)))
                got.append(mask(_read_reply(sock, buf)))
            replies.append(got)
    return replies


def _idle_masked(raw: bytes) -> bytes:
    """An XPENDING extended reply with each entry's idle time (which depends on the pace of
    the run) replaced by 0: an entry is ``*4``, its ID and owner (two lines each), then the
    idle time and the delivery count."""
    lines = raw.split(b"\r\n")
    for i, line in enumerate(lines):
        if line == b"*4" and i + 5 < len(lines):
            lines[i + 5] = b":0"
    return b"\r\n".join(lines)


def test_xpending_extended_replies_are_valkeys_bytes(servers: tuple[int, int]) -> None:
    """XPENDING's extended form -- written by rstore serve as RESP straight from the pending
    entries -- gives valkey's bytes in RESP2 and RESP3: ranges, COUNT, a consumer, IDLE."""
    setup = [("XADD", "p", f"{i}-1", "f", str(i)) for i in range(1, 8)] + [
        ("XGROUP", "CREATE", "p", "g", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "p", ">"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "p", ">"),
        ("XCLAIM", "p", "g", "bob", "0", "2-1"),
    ]
    queries = [
        ("XPENDING", "p", "g", "-", "+", "100"),
        ("XPENDING", "p", "g", "(2-1", "6", "3"),
        ("XPENDING", "p", "g", "-", "+", "0"),
        ("XPENDING", "p", "g", "-", "+", "10", "bob"),
        ("XPENDING", "p", "g", "-", "+", "10", "nobody"),
        ("XPENDING", "p", "g", "IDLE", "0", "-", "+", "10", "alice"),
        ("XPENDING", "p", "g", "IDLE", "3600000", "-", "+", "10"),
    ]
    for proto in (2, 3):
        valkey, served = _replies(servers, proto, ["p"], setup, queries, _idle_masked)
        assert served == valkey


def _times_masked(raw: bytes) -> bytes:
    """A reply with every integer that is a time in Unix milliseconds (delivery, seen and
    active times: they depend on the pace of the run) replaced by 0."""
    lines = raw.split(b"\r\n")
    for i, line in enumerate(lines):
        if line.startswith(b":") and int(line[1:]) > 10**12:
            lines[i] = b":0"
    return b"\r\n".join(lines)


def test_xinfo_stream_full_replies_are_valkeys_bytes(servers: tuple[int, int]) -> None:
    """XINFO STREAM FULL -- its entries and pending entries written by rstore serve as RESP
    while they are read -- gives valkey's bytes in RESP2 and RESP3 (times masked): COUNT 0,
    2 and the default, two groups (one empty), consumers with and without pending entries,
    a deleted entry still pending, an empty stream."""
    setup = [("XADD", "s", f"{i}-1", "f", str(i), "g", "x" * i) for i in range(1, 15)]
    setup += [
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "CREATE", "s", "idle", "$"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "bob", "COUNT", "4", "STREAMS", "s", ">"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "carol"),
        ("XDEL", "s", "2-1"),
        ("XADD", "e", "1-1", "f", "v"),
        ("XDEL", "e", "1-1"),
    ]
    queries = [
        ("XINFO", "STREAM", "s", "FULL"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "0"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "2"),
        ("XINFO", "STREAM", "e", "FULL"),
    ]
    for proto in (2, 3):
        valkey, served = _replies(servers, proto, ["s", "e"], setup, queries, _times_masked)
        assert [raw_as_older_server(raw) for raw in served] == valkey  # as valkey 8.0 shows it


def test_xreadgroup_histories_are_valkeys_bytes(servers: tuple[int, int]) -> None:
    """XREADGROUP of a consumer's history -- written by rstore serve as RESP while the
    history is read -- gives valkey's bytes in RESP2 and RESP3: deleted entries (first, last,
    in a row) as ``[id, nil]``, COUNT, a start ID, two streams, an empty history, history
    beside new entries (of the same stream, after it), the same history twice; and each
    read counts its deliveries as valkey does (XPENDING after)."""
    setup = [
        ("XADD", key, f"{i}-1", "f", str(i), "g", "x" * i) for key in "pq" for i in range(1, 9)
    ]
    setup += [("XGROUP", "CREATE", key, "g", "0") for key in "pq"]
    setup += [
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "6", "STREAMS", "p", "q", ">", ">"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "p", ">"),
        ("XDEL", "p", "1-1", "3-1", "4-1", "6-1"),
    ]
    queries = [
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "p", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "p", "q", "0", "2-1"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "p", "q", "5-1", "0"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "p", "q", "0", "0"),
        ("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "p", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "p", "q", "0", ">"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", "p", "0", "0"),
        ("XADD", "p", "9-1", "f", "9"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "p", "p", "8-1", ">"),  # history first
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "p", "p", "8-1", "8-1"),
        ("XPENDING", "p", "g", "-", "+", "100"),
        ("XPENDING", "q", "g", "-", "+", "100"),
    ]
    for proto in (2, 3):
        valkey, served = _replies(servers, proto, ["p", "q"], setup, queries, _idle_masked)
        assert served == valkey


@settings(max_examples=60, deadline=None)
@given(
    commands=st.lists(st.lists(st.binary(max_size=30), min_size=1, max_size=5), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_the_parser_reads_any_split_of_a_pipeline(
    commands: list[list[bytes]], cuts: list[int]
) -> None:
    """Requests encoded as RESP arrays and fed in pieces cut anywhere come out whole."""
    data = b"".join(encode_command(c) for c in commands)
    parser = RequestParser()
    got: list[list[bytes]] = []
    last = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        parser.feed(data[last:cut])
        parser.requests(got)
        last = cut
    assert got == commands and parser.pending_bytes == 0


def test_unauthenticated_limits() -> None:
    parser = RequestParser()
    parser.feed(b"*11\r\n")
    with pytest.raises(ProtocolError, match="unauthenticated multibulk length"):
        parser.requests([], authenticated=False)
    parser = RequestParser()
    parser.feed(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n")
    with pytest.raises(ProtocolError, match="unauthenticated bulk length"):
        parser.requests([], authenticated=False)
