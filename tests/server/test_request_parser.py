"""The server's request parser with its C scanner and without it: for any bytes, fed in any
pieces, both give the same requests, the same protocol error at the same point, and keep the
same bytes pending -- the scanner only reads canonical arrays, and the Python code everything
else (inline commands, unusual numbers, incomplete requests, errors, limits)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstore.server import protocol
from rstore.server.protocol import ProtocolError, RequestParser

pytestmark = pytest.mark.skipif(protocol.c_scan is None, reason="the C scanner was not built")

_word = st.binary(min_size=0, max_size=12)


def _canonical(args: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


# pieces of a client's byte stream: mostly canonical arrays, and every kind of thing the
# scanner must leave to the Python parser, or stop before
_piece = st.one_of(
    st.lists(_word, min_size=1, max_size=5).map(_canonical),
    st.lists(_word, min_size=1, max_size=3).map(lambda a: _canonical(a).replace(b"*", b"*0", 1)),
    st.lists(_word, min_size=1, max_size=3).map(lambda a: _canonical(a).replace(b"$", b"$0", 1)),
    st.lists(_word, min_size=1, max_size=3).map(lambda a: _canonical(a).replace(b"\r\n", b"\n", 1)),
    st.lists(st.binary(min_size=1, max_size=6).filter(lambda w: b"\n" not in w), max_size=3).map(
        lambda words: b" ".join(words) + b"\r\n"
    ),  # inline
    st.sampled_from(
        [
            b"*0\r\n",
            b"*-1\r\n",
            b"*1\r\n$-1\r\n",
            b"*1\r\n$x\r\n",
            b"*1\r\n:1\r\n",
            b"*+1\r\n$1\r\na\r\n",
            b"*2\r\n$1\r\na\r\n",  # a count larger than what follows: waits, or reads on
            b"*1\r\n$2\r\nabXY",  # the two bytes after a bulk string are not looked at
            b"*1\r\n$200\r\n",
            b"*11\r\n" + b"$1\r\na\r\n" * 11,  # over the limit before AUTH
            b"*1\r\n$16385\r\n" + b"a" * 16385 + b"\r\n",
            b"*99999999999\r\n",
            b"*1\r\n$99999999999\r\n",
            b'"unbalanced\r\n',
            b"\r\n",
        ]
    ),
    st.binary(max_size=8),
)


def _run(data: bytes, cuts: list[int], authenticated: bool, max_bulk: int) -> list[object]:
    """What the parser gives for ``data`` fed in pieces: requests, then an error if any, and
    the bytes left pending at the end."""
    parser = RequestParser(max_bulk)
    seen: list[object] = []
    last = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        parser.feed(data[last:cut])
        last = cut
        got: list[list[bytes]] = []
        try:
            parser.requests(got, authenticated=authenticated)
        except ProtocolError as exc:
            seen.extend(got)
            seen.append(("error", str(exc)))
            return seen
        seen.extend(got)
    seen.append(("pending", parser.pending_bytes))
    return seen


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(_piece, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
    authenticated=st.booleans(),
    max_bulk=st.sampled_from([512 * 1024 * 1024, 5]),
)
def test_c_scanner_and_python_parser_agree(
    pieces: list[bytes], cuts: list[int], authenticated: bool, max_bulk: int
) -> None:
    data = b"".join(pieces)
    with_c = _run(data, cuts, authenticated, max_bulk)
    scan, protocol.c_scan = protocol.c_scan, None
    try:
        without = _run(data, cuts, authenticated, max_bulk)
    finally:
        protocol.c_scan = scan
    assert with_c == without


def test_the_scanner_reads_canonical_arrays_and_stops_at_anything_else() -> None:
    """Its own contract, directly: what it reads and where it stops."""
    assert protocol.c_scan is not None
    out: list[list[bytes]] = []
    data = _canonical([b"XADD", b"s", b"*", b"f", b"v"]) + _canonical([b"PING"]) + b"PING\r\n"
    stop = protocol.c_scan(data, 0, 1 << 29, out)
    assert out == [[b"XADD", b"s", b"*", b"f", b"v"], [b"PING"]]
    assert data[stop:] == b"PING\r\n"  # inline: left to the Python parser
    for other in (b"*01\r\n$1\r\na\r\n", b"*1\r\n$01\r\na\r\n", b"*1\r\n$1\r\na", b"*0\r\n"):
        assert protocol.c_scan(other, 0, 1 << 29, []) == 0
    assert protocol.c_scan(_canonical([b"abcdef"]), 0, 5, []) == 0  # over max_bulk
