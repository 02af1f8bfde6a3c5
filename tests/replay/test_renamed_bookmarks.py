"""Bookmarks were called checkpoints: every old public name still works for one release and
warns with a DeprecationWarning naming the new one, both names at once is an error, and the
bookmarks recorded before the rename (a store's ``meta/checkpoint:<name>`` record, a file's
JSON) are read as they were.  (The CLI's ``--checkpoint``: tests/cli/test_cli_replay.py.)"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstore
from rstore import LinesSink, Store, StoreSink
from rstore.storage.records import layout

ROWS = [("a", f"{ms}-0", ["n", str(ms)]) for ms in range(1, 31)]


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "src") as store:
        store.append_entries(ROWS)
        yield store


def _ids(store: Store, key: str = "a") -> list[bytes]:
    return [entry_id for entry_id, _ in store.execute("XRANGE", key, "-", "+")]


def test_store_methods_take_the_old_keyword_and_name_with_a_warning(tmp_path: Path) -> None:
    with Store(tmp_path / "s") as store:
        with pytest.warns(
            DeprecationWarning, match=r"checkpoint= is deprecated, use bookmark="
        ) as w:
            store.append_entries([("s", "1-1", ["k", "v"])], checkpoint=("r", b"one"))  # type: ignore[call-arg]
        assert w[0].filename == __file__  # the warning points at the caller's line
        assert "Store.append_entries" in str(w[0].message)
        assert store.bookmark("r") == b"one" and store.xlen("s") == 1
        node = store.view(lambda view: list(view.nodes(b"s")))[0]
        with Store(tmp_path / "t") as target:
            with pytest.warns(DeprecationWarning, match=r"Store.append_nodes\(\): checkpoint="):
                target.append_nodes([("s", *node)], checkpoint=("r", b"two"))  # type: ignore[call-arg]
            assert target.bookmark("r") == b"two" and target.xlen("s") == 1
        with pytest.warns(
            DeprecationWarning, match=r"Store.checkpoint is deprecated, use Store.bookmark"
        ) as w:
            assert store.checkpoint("r") == b"one"
        assert w[0].filename == __file__


def test_both_names_at_once_are_refused_and_nothing_is_written(
    tmp_path: Path, source: Store
) -> None:
    with Store(tmp_path / "s") as store:
        with pytest.raises(TypeError, match=r"got both bookmark= and checkpoint="):
            store.append_entries(
                [("s", "1-1", ["k", "v"])],
                bookmark=("r", b"new"),
                checkpoint=("r", b"old"),  # type: ignore[call-arg]
            )
        with pytest.raises(TypeError, match=r"got both bookmark= and checkpoint="):
            store.append_nodes([], bookmark=("r", b"new"), checkpoint=("r", b"old"))  # type: ignore[call-arg]
        assert store.bookmark("r") is None and store.keys() == []
        with pytest.raises(TypeError, match=r"run_replay\(\) got both bookmark= and checkpoint="):
            rstore.run_replay(
                rstore.entries_from_store(source),
                StoreSink(store),
                bookmark="x",
                checkpoint="y",  # type: ignore[call-arg]
            )
        assert store.keys() == []


def test_run_replay_takes_checkpoint_as_bookmark(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        with pytest.warns(
            DeprecationWarning, match=r"run_replay\(\): checkpoint= is deprecated"
        ) as w:
            first = rstore.run_replay(
                rstore.entries_from_store(source),
                StoreSink(dst),
                count=10,
                checkpoint="job",  # type: ignore[call-arg]
            )
        assert w[0].filename == __file__
        assert first.delivered == 10 and json.loads(dst.bookmark("job") or b"") == {"a": "10-0"}
        # the new name resumes from what the old one recorded: one bookmark
        second = rstore.run_replay(
            rstore.entries_from_store(source), StoreSink(dst), bookmark="job"
        )
        assert (second.resumed, second.delivered) == (10, 20) and _ids(dst) == _ids(source)


def test_the_old_module_level_names_give_the_new_functions(source: Store, tmp_path: Path) -> None:
    path = tmp_path / "cp.json"
    rstore.run_replay(rstore.entries_from_store(source), LinesSink(io.BytesIO()), count=3,
                      bookmark=str(path))  # fmt: skip
    with pytest.warns(
        DeprecationWarning,
        match=r"rstore.load_checkpoint_file is deprecated, use rstore.load_bookmark_file",
    ):
        load = rstore.load_checkpoint_file
    assert load is rstore.load_bookmark_file and load(str(path)) == {b"a": (3, 0)}
    with pytest.warns(
        DeprecationWarning, match=r"rstore.read_checkpoint is deprecated, use rstore.read_bookmark"
    ):
        from rstore import read_checkpoint
    assert read_checkpoint is rstore.read_bookmark
    assert read_checkpoint(LinesSink(io.BytesIO()), str(path)) == {b"a": (3, 0)}
    # each use warns (the old name is never cached in the module); neither is in __all__
    with pytest.warns(DeprecationWarning):
        rstore.read_checkpoint  # noqa: B018
    assert not {"read_checkpoint", "load_checkpoint_file"} & {*rstore.__all__, *dir(rstore)}
    with pytest.raises(AttributeError):
        rstore.read_nothing  # noqa: B018


def test_the_sinks_old_names_work_and_warn(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        sink = StoreSink(dst)
        with pytest.warns(
            DeprecationWarning, match=r"StoreSink.write\(\): checkpoint= is deprecated"
        ):
            sink.write([(b"a", (1, 0), [b"n", b"1"])], checkpoint=("job", b'{"a": "1-0"}'))  # type: ignore[call-arg]
        with pytest.warns(
            DeprecationWarning,
            match=r"StoreSink.load_checkpoint is deprecated, use StoreSink.load_bookmark",
        ):
            assert sink.load_checkpoint("job") == b'{"a": "1-0"}'  # type: ignore[attr-defined]
        node = source.view(lambda view: list(view.nodes(b"a")))[0]
        with pytest.warns(DeprecationWarning, match=r"StoreSink.write_nodes\(\): checkpoint="):
            sink.write_nodes([(b"b", *node)], checkpoint=("job", b"{}"))  # type: ignore[call-arg]
        assert dst.bookmark("job") == b"{}" and dst.xlen("b") == 30
    lines = LinesSink(io.BytesIO())
    with pytest.warns(DeprecationWarning, match=r"LinesSink.load_checkpoint is deprecated"):
        assert lines.load_checkpoint("x") is None  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match=r"LinesSink.write\(\): checkpoint="):
        lines.write([(b"a", (1, 0), [b"n", b"1"])], checkpoint=None)  # type: ignore[call-arg]
    assert lines.out.getvalue() == rstore.encode_entry(b"a", (1, 0), [b"n", b"1"]) + b"\n"  # type: ignore[attr-defined]


class _SinkOfBefore:
    """A transactional sink a user wrote before the rename: ``load_checkpoint``, and the
    bookmark as ``write``'s second argument (the engine passes it by position)."""

    transactional = True
    checks_ids = True

    def __init__(self, store: Store) -> None:
        self.store = store

    def last_id(self, stream: bytes) -> Any:
        return StoreSink(self.store).last_id(stream)

    def load_checkpoint(self, name: str) -> bytes | None:
        return self.store.bookmark(name)

    def write(self, batch: Any, checkpoint: Any) -> None:
        self.store.append_entries(batch, bookmark=checkpoint)


def test_a_sink_written_before_the_rename_still_resumes(source: Store, tmp_path: Path) -> None:
    with Store(tmp_path / "dst") as dst:
        sink = _SinkOfBefore(dst)
        with pytest.warns(
            DeprecationWarning,
            match=r"_SinkOfBefore.load_checkpoint is deprecated: name the method load_bookmark",
        ) as w:
            first = rstore.run_replay(
                rstore.entries_from_store(source), sink, count=12, bookmark="b"
            )  # type: ignore[arg-type]
        # it points at the method to rename
        assert (
            w[0].filename == __file__
            and w[0].lineno == _SinkOfBefore.load_checkpoint.__code__.co_firstlineno
        )
        assert first.delivered == 12
        with pytest.warns(DeprecationWarning):
            again = rstore.run_replay(rstore.entries_from_store(source), sink, bookmark="b")  # type: ignore[arg-type]
        assert (again.resumed, again.delivered) == (12, 18) and _ids(dst) == _ids(source)


def test_a_bookmark_recorded_before_the_rename_is_resumed_from(
    source: Store, tmp_path: Path
) -> None:
    """What the rename left unchanged on disk: the store record's key is
    ``checkpoint:<name>`` in the metadata, as rstore wrote it before; a bookmark file is the
    same JSON.  A store or a file from before resumes where it stopped."""
    with Store(tmp_path / "dst") as dst:
        dst.append_entries(ROWS[:7])
        before = b'{"a": "7-0"}'  # what the rstore before this rename wrote, as it wrote it
        dst._live_env().write(lambda txn: txn.put(layout.DB_META, b"checkpoint:old", before))
        assert dst.bookmark("old") == before
        report = rstore.run_replay(
            rstore.entries_from_store(source), StoreSink(dst), bookmark="old"
        )
        assert (report.resumed, report.delivered) == (7, 23) and _ids(dst) == _ids(source)
        # and a bookmark written now is under the same key, for an older rstore to read
        dst.append_entries([], bookmark=("new", b"now"))
        assert (
            dst._live_env().read(lambda txn: txn.get(layout.DB_META, b"checkpoint:new")) == b"now"
        )
    path = tmp_path / "before.json"
    path.write_bytes(b'{"a": "25-0"}')  # a checkpoint file of an earlier run to stdout
    out = io.BytesIO()
    report = rstore.run_replay(
        rstore.entries_from_store(source), LinesSink(out), bookmark=str(path)
    )
    assert (report.resumed, report.delivered) == (25, 5)
    assert out.getvalue().count(b"\n") == 5 and json.loads(path.read_bytes()) == {"a": "30-0"}
