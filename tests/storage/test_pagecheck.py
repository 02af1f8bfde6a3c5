"""The walk of LMDB's trees from the file: sound stores pass, every damaged page in use is
found, the C walk says exactly what the Python reference says, and a damaged file is refused
at open instead of crashing the process (LMDB aborts on a zeroed page, SIGBUS on a short file).
"""

from __future__ import annotations

import os
import random
import signal

import pytest

import rstore
from rstore.storage.checks import pagecheck

from .helpers import PAGE, copy_store, data_file, in_child, populate, write_page


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("pagecheck") / "store")
    populate(path)
    return path


def test_a_sound_store_has_no_problems(sound: str) -> None:
    report = pagecheck.verify(data_file(sound))
    assert report.problems == []
    assert report.page_size == PAGE
    assert {
        "nodes",
        "pel",
        "keys",
        "streams",
        "groups",
        "consumers",
        "consumer_pel",
        "meta",
    } <= set(report.trees)
    assert report.trees["nodes"].overflow_pages > 0  # the walk went through overflow runs
    assert report.trees["pel"].depth >= 2  # and through branch pages


def test_stores_of_every_shape_are_sound(tmp_path: os.PathLike[str]) -> None:
    path = str(tmp_path)
    with rstore.Store(path) as s:
        assert pagecheck.verify(data_file(path)).problems == []  # empty
        for i in range(500):
            s.xadd(f"s{i % 7}", {"i": str(i)})
        s.delete("s1", "s2")
        s.xtrim("s3", maxlen=0, approximate=False)
        assert pagecheck.verify(data_file(path)).problems == []
        s.flushall()
        assert pagecheck.verify(data_file(path)).problems == []


def test_every_page_in_use_is_missed_when_zeroed(sound: str, tmp_path: os.PathLike[str]) -> None:
    """Zeroing any page the trees use (branch, leaf or overflow) is found; zeroing a free page
    is harmless and not reported."""
    clean = pagecheck.verify(data_file(sound))
    original = _read(data_file(sound))
    target = str(tmp_path / "data.mdb")
    flagged = 0
    for page in range(2, len(original) // PAGE):
        _write(target, original[: page * PAGE] + bytes(PAGE) + original[(page + 1) * PAGE :])
        flagged += bool(pagecheck.verify(target).problems)
    assert flagged == clean.pages_walked


@pytest.mark.skipif(not pagecheck.ACCELERATED, reason="the C walk is not built")
def test_the_c_walk_reports_what_the_python_walk_reports(
    sound: str, tmp_path: os.PathLike[str]
) -> None:
    original = _read(data_file(sound))
    rng = random.Random(int(os.environ.get("RSTORE_PAGECHECK_SEED", "8")))
    target = str(tmp_path / "data.mdb")
    found = 0
    for trial in range(600):
        data = bytearray(original)
        page = rng.randrange(len(data) // PAGE)
        kind = trial % 5
        if kind == 0:
            data[page * PAGE : (page + 1) * PAGE] = bytes(PAGE)
        elif kind == 1:
            data[page * PAGE : (page + 1) * PAGE] = rng.randbytes(PAGE)
        elif kind == 2:
            for _ in range(rng.randint(1, 8)):
                offset = rng.randrange(len(data))
                data[offset] ^= 1 << rng.randrange(8)
        elif kind == 3:
            del data[rng.randrange(2 * PAGE, len(data)) :]
        else:  # the page header and the first node offsets
            offset = page * PAGE + rng.randrange(32)
            data[offset : offset + 2] = rng.randbytes(2)
        _write(target, bytes(data))
        in_c = pagecheck.verify(target, accelerated=True)
        in_python = pagecheck.verify(target, accelerated=False)
        assert (in_c.problems, in_c.pages_walked, in_c.trees) == (
            in_python.problems,
            in_python.pages_walked,
            in_python.trees,
        ), f"trial {trial}"
        found += bool(in_c.problems)
    # the damage was real: ~1 trial in 4 lands on a page in use (a store with the log keeps the
    # pages of the commits between two checkpoints free in the file, which the walk ignores)
    assert found > 100


@pytest.mark.parametrize("cut", [PAGE * 3, PAGE * 3 + 100, PAGE * 40, -PAGE, -1])
def test_a_truncated_store_is_refused_not_a_crash(
    sound: str, tmp_path: os.PathLike[str], cut: int
) -> None:
    """Reading a page past the end of the file through LMDB's map killed the process with
    SIGBUS.  A file cut short is refused at open -- unless only free pages were cut off (LMDB
    itself lets the file end before free pages), and then every answer is right."""
    with rstore.Store(sound) as s:
        length = s.xlen("big")
    damaged = copy_store(sound, str(tmp_path / "copy"))
    size = os.path.getsize(data_file(damaged))
    os.truncate(data_file(damaged), cut if cut > 0 else size + cut)

    def use() -> object:
        with rstore.Store(damaged) as s:
            return s.xlen("big"), s.check()

    status, died_of, result = in_child(use)
    assert died_of is None, f"the process died of {signal.Signals(died_of).name}"
    assert status == 0
    assert isinstance(result, tuple)
    if cut > 0:  # pages in use are gone
        assert result[:2] == ("raised", "CorruptStoreError"), result
        assert "data.mdb" in result[2] and "truncated" in result[2]
        assert "rstore check" in result[2]
    else:
        assert result in (("ok", (length, [])),) or result[1] == "CorruptStoreError", result


def test_a_zeroed_leaf_page_is_refused_not_an_abort(sound: str, tmp_path: os.PathLike[str]) -> None:
    """A zeroed page under a stream's nodes made LMDB abort the process (IS_LEAF assertion in
    mdb_cursor_next) on the first scan that crossed it."""
    original = _read(data_file(sound))
    target = str(tmp_path / "data.mdb")
    for page in range(2, len(original) // PAGE):
        _write(target, original[: page * PAGE] + bytes(PAGE) + original[(page + 1) * PAGE :])
        problems = pagecheck.verify(target).problems
        if problems and problems[0].tree == "nodes" and "zeroed" in problems[0].what:
            break
    else:
        pytest.fail("no leaf page of the nodes tree found")
    damaged = copy_store(sound, str(tmp_path / "copy"))
    write_page(damaged, page, bytes(PAGE))

    def use() -> object:
        with rstore.Store(damaged) as s:
            return [len(s.xrange(k)) for k in s.keys()]  # noqa: SIM118 - Store.keys is KEYS

    _, died_of, result = in_child(use)
    assert died_of is None, f"the process died of {signal.Signals(died_of).name}"
    assert isinstance(result, tuple) and result[:2] == ("raised", "CorruptStoreError"), result
    assert "sub-database nodes" in result[2]
