"""A JSONL file imported as whole nodes (rstore.runs_from_jsonl, behind ``rstore import``)
gives the store what importing it entry by entry (rstore.entries_from_jsonl) gives: the same
entries, counters, conflicts, errors and bookmarks -- and, for a stream written in one piece
into an empty store, the same nodes byte for byte; with the C decoders and the Python ones."""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore.codec import stream_append
from rstore.replay import envelope

Entry = tuple[bytes, tuple[int, int], list[bytes]]
VALUES = st.one_of(st.binary(max_size=12), st.text(max_size=8).map(str.encode), st.just(b"12"))


@st.composite
def files(draw: st.DrawFn) -> list[Entry]:
    """Entries of up to three streams, each stream in one piece or interleaved with others;
    IDs rising, but now and then at or below the last (a conflict)."""
    out: list[Entry] = []
    last = {b"a": 0, b"b": 0, "é".encode(): 0}
    names = draw(st.lists(st.sampled_from(sorted(last)), min_size=1, max_size=6))
    for name in names:
        for _ in range(draw(st.integers(1, 40))):
            step = draw(st.sampled_from([1, 1, 1, 1, 7, 0, -2]))
            last[name] = max(0, last[name] + step)
            n = draw(st.integers(1, 3))
            shared = [b"user", b"action", b"page"][:n]
            flat = [x for f in shared for x in (f, draw(VALUES))]
            out.append((name, (1000 + last[name] // 3, last[name] % 3), flat))
    return out


def _text(entries: list[Entry]) -> bytes:
    return b"".join(rstore.encode_entry(*e) + b"\n" for e in entries)


def _state(store: rstore.Store) -> dict[bytes, Any]:
    out = {}
    for key in sorted(store.execute("KEYS", "*")):
        info = dict(zip(*[iter(store.execute("XINFO", "STREAM", key))] * 2))
        counters = {k: v for k, v in info.items() if not k.startswith(b"radix-tree")}  # nodes
        out[key] = (store.execute("XRANGE", key, "-", "+"), counters)
    return out


def _nodes(store: rstore.Store) -> dict[bytes, list[Any]]:
    return store.view(lambda v: {key: list(v.nodes(key)) for key in sorted(v.keys())})


def _import(path: Path, data: bytes, fast: bool, **options: Any) -> Any:
    with rstore.Store(path, sync=False, node_max_entries=options.pop("entries", 100)) as store:
        config = store.config
        limits = {
            "node_max_bytes": config.node_max_bytes,
            "node_max_entries": config.node_max_entries,
        }
        source = (
            rstore.runs_from_jsonl(io.BytesIO(data), name="f", **limits)
            if fast
            else rstore.entries_from_jsonl(io.BytesIO(data), name="f")
        )
        try:
            report = rstore.run_replay(source, rstore.StoreSink(store), **options)
            outcome: Any = (report.delivered, report.skipped, report.resumed)
        except rstore.RStoreError as exc:
            outcome = (type(exc).__name__, str(exc))
        return outcome, _state(store), _nodes(store)


@pytest.fixture(params=["c", "python"])
def decoders(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The fast path with the C decoders (when built), or with the Python references."""
    if request.param == "python":
        monkeypatch.setattr(envelope, "_c_decode_run", None)
        monkeypatch.setattr(stream_append, "_c_append_columns", None)
        monkeypatch.setattr(stream_append, "_c_new_node_columns", None)
    return str(request.param)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    entries=files(),
    on_conflict=st.sampled_from(["skip", "fail"]),
    node_entries=st.sampled_from([1, 3, 100]),
    batch=st.sampled_from([1, 5, 5000]),
)
def test_nodes_give_what_entries_give(
    tmp_path_factory: pytest.TempPathFactory,
    decoders: str,
    entries: list[Entry],
    on_conflict: str,
    node_entries: int,
    batch: int,
) -> None:
    data = _text(entries)
    tmp = tmp_path_factory.mktemp("import")
    options = {"on_conflict": on_conflict, "batch_entries": batch, "entries": node_entries}
    fast = _import(tmp / "fast", data, True, **dict(options))
    slow = _import(tmp / "slow", data, False, **dict(options))
    assert fast[0] == slow[0]  # what was delivered and skipped; or the same error
    if not isinstance(fast[0][0], str):
        assert fast[1] == slow[1]  # every stream's entries and counters
    else:  # stopped at a conflict: whole batches landed before it, and the batches of whole
        for key, (stored, _) in fast[1].items():  # nodes may hold more than entry batches
            assert stored == slow[1].get(key, ([], None))[0][: len(stored)] or (
                slow[1][key][0] == stored[: len(slow[1][key][0])]
            )
    in_one_piece = len(
        [i for i in range(len(entries)) if i == 0 or entries[i - 1][0] != entries[i][0]]
    )
    rising = all(a[1] < b[1] for a, b in itertools.pairwise(entries) if a[0] == b[0]) and all(
        e[1] > (0, 0) for e in entries
    )
    if in_one_piece == len({e[0] for e in entries}) and rising:
        assert fast[2] == slow[2]  # each stream in one piece, no conflict: XADD's nodes


def test_into_streams_that_have_entries_and_a_bookmark_resumes(tmp_path: Path) -> None:
    """Entries above a stream's last ID go in as new nodes after its last one (the node
    boundaries differ from XADD's, the entries do not); a rerun with the bookmark after a
    malformed line resumes after the last batch written, exactly once."""
    entries = [(b"s", (ms, 0), [b"n", b"%d" % ms]) for ms in range(1, 301)]
    data = _text(entries)
    broken = _text(entries[:250]) + b'{"stream":"s","id":"x"}\n' + _text(entries[250:])
    for fast in (True, False):
        path = tmp_path / ("fast" if fast else "slow")
        with rstore.Store(path, sync=False) as store:
            store.append_entries([(b"s", (0, seq), [b"old", b"1"]) for seq in range(1, 51)])
        (kind, message), _, _ = _import(path, broken, fast, bookmark="cp", batch_entries=100)
        assert kind == "EnvelopeError" and message.startswith("f line 251: ")
        with rstore.Store(path) as store:
            assert store.xlen("s") == 50 + 200  # two batches of 100 landed, the third did not
        outcome, state, _ = _import(path, data, fast, bookmark="cp", batch_entries=100)
        assert outcome == (100, 0, 200)
        assert state[b"s"][0][50:] == [[b"%d-0" % ms, [b"n", b"%d" % ms]] for ms in range(1, 301)]


def _count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Callable[[], int]:
    calls = [0]
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return lambda: calls[0]


def test_whole_nodes_reach_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken: 1000 entries go in as 10 nodes, none entry by entry."""
    appended = _count_calls(monkeypatch, rstore.Store, "append_entries")
    nodes = _count_calls(monkeypatch, rstore.Store, "append_nodes")
    data = _text([(b"s", (1, seq), [b"f", b"v"]) for seq in range(1, 1001)])
    outcome, _, stored = _import(tmp_path / "s", data, True)
    assert outcome == (1000, 0, 0) and len(stored[b"s"]) == 10
    assert (appended(), nodes()) == (0, 1)
