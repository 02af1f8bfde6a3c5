"""``rstore salvage SRC DST``: its output, JSON report, exit statuses and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import make_runner
from rstore_cli.main import cli
from store_formats import downgrade

import rstore
from rstore.storage.checks import pagecheck

PAGE = 4096


def _store(path: Path) -> Path:
    """A store without the log (format 2, as an older rstore wrote it): with the log, a
    salvage may rebuild from its records the nodes a damaged page held, depending on when its
    last checkpoint ran."""
    with rstore.Store(path, node_max_entries=5) as s:
        for i in range(200):
            s.xadd("orders", {"i": str(i)}, id=f"{1000 + i}-0")
        s.xadd("other", {"x": "y"}, id="5-0")
        s.xgroup_create("orders", "billing", "0")
        s.xreadgroup("billing", "alice", {"orders": ">"}, count=30)
    downgrade(str(path), 2)
    return path


def _salvage(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["salvage", *args])
    return result.exit_code, result.stdout, result.stderr


def _damage_a_leaf_of_nodes(path: Path) -> int:
    nodes = pagecheck.verify(str(path / "data.mdb")).trees["nodes"]
    assert nodes.depth == 2
    with open(path / "data.mdb", "rb") as f:
        f.seek(nodes.root * PAGE)
        root = f.read(PAGE)
    assert int.from_bytes(root[12:14], "little") >= 16 + 2 * 2  # two children or more
    at = int.from_bytes(root[16:18], "little")  # the first child: the first nodes of 'orders'
    leaf = int.from_bytes(root[at : at + 4], "little") | root[at + 4] << 32
    with open(path / "data.mdb", "r+b") as f:
        f.seek(leaf * PAGE)
        f.write(bytes(PAGE))
    return leaf


def test_a_sound_store_is_salvaged_with_status_0(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    code, out, err = _salvage(make_runner(), str(src), str(tmp_path / "dst"))
    assert code == 0, err
    assert out.startswith(
        f"salvaged {src} into {tmp_path / 'dst'}: 2 streams, 201 entries, 1 group, "
        "1 consumer, 30 pending entries (transaction "
    )
    assert "lost:" not in out and err == ""
    assert rstore.check_store(tmp_path / "dst") == []


def test_losses_are_listed_with_status_3(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    leaf = _damage_a_leaf_of_nodes(src)
    code, out, err = _salvage(make_runner(), str(src), str(tmp_path / "dst"))
    assert code == 3
    lost = [line for line in out.splitlines() if line.startswith("lost: ")]
    assert lost
    assert all(line.startswith("lost: stream 'orders': lost entries from ") for line in lost)
    assert f"data.mdb page {leaf} (sub-database nodes)" in lost[0]
    assert err.startswith("Error: salvage incomplete: ") and err.count("\n") == 1


def test_json_report(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    _damage_a_leaf_of_nodes(src)
    code, out, _ = _salvage(make_runner(), str(src), str(tmp_path / "dst"), "--json")
    assert code == 3
    report = json.loads(out)
    assert report["complete"] is False and report["format"] == 2
    assert {s["name"] for s in report["streams"]} == {"orders", "other"}
    orders = next(s for s in report["streams"] if s["name"] == "orders")
    [lost] = orders["lost-entries"]
    assert set(lost) == {"from", "before", "cause"} and lost["before"] is not None
    assert lost["from"] == "0-0"  # the first leaf: from the stream's start (IDs from 1000-0)
    assert orders["entries"] == 200 - (int(lost["before"].split("-")[0]) - 1000)
    assert report["lost"] and report["databases"] == {}
    assert report["entries"] == orders["entries"] + 1


def test_one_line_errors_with_status_1(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    runner = make_runner()
    for args, message in (
        ((str(src), str(tmp_path / "full")), "exists and is not empty"),
        ((str(tmp_path / "missing"), str(tmp_path / "dst")), "no store at"),
        ((str(tmp_path / "full"), str(tmp_path / "dst")), "is not an rstore store"),
        ((str(src), str(src / "inside")), "inside the store"),
    ):
        code, out, err = _salvage(runner, *args)
        assert code == 1 and out == "", args
        assert err.startswith("Error: ") and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "dst").exists()


def test_the_new_store_has_the_current_format(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    runner = make_runner()
    assert _salvage(runner, str(src), str(tmp_path / "default"))[0] == 0
    result = runner.invoke(cli, ["--no-wal", "salvage", str(src), str(tmp_path / "no-wal")])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith("note: --wal/--no-wal are deprecated and ignored")
    for made in ("default", "no-wal"):
        with rstore.Store(tmp_path / made, readonly=True) as s:
            assert s.format == rstore.FORMAT_VERSION


def test_progress_on_request(tmp_path: Path) -> None:
    src = _store(tmp_path / "src")
    code, _, err = _salvage(make_runner(), str(src), str(tmp_path / "dst"), "--progress")
    assert code == 0 and "salvaging" in err
