"""``range`` output: written as it is read, in bounded memory, and byte for byte the format
``format.entry_line`` defines, whatever the fast paths and the piecewise writing of long
values do."""

from __future__ import annotations

import io
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rstore_cli.output
from click.testing import Result
from hypothesis import given, settings
from hypothesis import strategies as st
from rstore_cli.format import entry_line
from rstore_cli.main import cli
from rstore_cli.output import EntryWriter
from rstore_cli.replies import Entry

import rstore

Run = Callable[..., Result]

# Names and values: mostly printable, some spaces, quotes, multibyte UTF-8, invalid bytes.
PIECES = st.sampled_from(
    [
        b"a",
        b"Z9",
        b" ",
        b'"',
        b"\\",
        b"=",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xff",
        b"\n",
        b"\x00",
        b"\xf0\x9f\x98\x80",
    ]
)
TEXT = st.lists(PIECES, max_size=12).map(b"".join)
ENTRIES = st.lists(
    st.tuples(
        st.integers(1, 10**13).map(lambda ms: b"%d-0" % ms),
        st.lists(st.tuples(TEXT, TEXT), max_size=4),
    ),
    max_size=8,
)


def _reference(entries: list[tuple[bytes, list[tuple[bytes, bytes]]]]) -> bytes:
    return b"".join(
        entry_line(Entry(i, tuple(pairs))).encode("utf-8", "backslashreplace") + b"\n"
        for i, pairs in entries
    )


@settings(max_examples=300, deadline=None)
@given(entries=ENTRIES, chunk=st.sampled_from([1, 2, 3, 5, 64]))
def test_the_writer_prints_what_entry_line_defines(
    entries: list[tuple[bytes, list[tuple[bytes, bytes]]]], chunk: int
) -> None:
    """Both the batch fast path and piece-by-piece writing (CHUNK made tiny, so that every
    long-value path runs and multibyte characters are cut between pieces)."""
    saved = rstore_cli.output.CHUNK
    rstore_cli.output.CHUNK = chunk
    try:
        out = io.BytesIO()
        flat = [(i, [x for pair in pairs for x in pair]) for i, pairs in entries]
        EntryWriter(out).pages([flat])  # type: ignore[list-item]
        assert out.getvalue() == _reference(entries)
        one = io.BytesIO()
        for i, fields in flat:
            EntryWriter(one).entry(i, fields)
        assert one.getvalue() == _reference(entries)
    finally:
        rstore_cli.output.CHUNK = saved


def test_output_starts_before_the_range_is_read(
    run: Run, store: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.pipeline() as pipe:
        for i in range(1, 3001):
            pipe.execute_command("XADD", "s", f"{i}-0", "n", str(i))
        pipe.execute()
    written_before: list[int] = []
    execute = rstore.Store.execute

    def spy(self: rstore.Store, *argv: Any) -> Any:
        if argv[0] == b"XRANGE":
            written_before.append(sys.stdout.buffer.getvalue().count(b"\n"))  # type: ignore[attr-defined]
        return execute(self, *argv)

    monkeypatch.setattr(rstore.Store, "execute", spy)
    result = run("range", "s")
    assert result.stdout.count("\n") == 3000
    assert len(written_before) > 3
    assert written_before[0] == 0
    assert written_before[1] >= 1  # the first page was printed before the second was read
    assert written_before == sorted(written_before) and written_before[-1] > 2000


@pytest.mark.slow
def test_large_values_are_printed_in_bounded_memory(store: rstore.Store, store_path: Path) -> None:
    """Python's own allocations while ``range`` prints 4 values of 8 MiB, two of them to be
    quoted (spaces, bytes that are not UTF-8), stay under 3 values' worth: one entry at a
    time (the store's read of it, the entry), none of the copies formatting once made."""
    size = 8 << 20
    values = [b"x" * size, (b"a b\xff" * (size // 4)), b"\xc3\xa9" * (size // 2), b"y" * size]
    for i, value in enumerate(values, start=1):
        store.execute("XADD", "big", f"{i}-0", "v", value)
    del values, value
    store.close()
    with open(Path(store_path).parent / "out.txt", "wb") as sink:
        wrapper = io.TextIOWrapper(sink, encoding="utf-8")
        saved = sys.stdout
        sys.stdout = wrapper
        tracemalloc.start()
        try:
            cli.main(["--store", str(store_path), "range", "big"], standalone_mode=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            wrapper.flush()
            sys.stdout = saved
    printed = (Path(store_path).parent / "out.txt").read_bytes()
    assert printed.count(b"\n") == 4 and printed.startswith(b"1-0  v=xxx")
    assert b"3-0  v=\xc3\xa9\xc3\xa9" in printed and b'2-0  v="a b\\xffa b' in printed
    assert peak < 3 * size, f"peak {peak / (1 << 20):.1f} MiB"
