"""Snapshot commands, exactly: inspect's output for a known store and its file, every kind of
bad input (one line on stderr, non-zero status, the store untouched), the --count 0 and --db
edges of ``range --from-dump``, RESTORE's TTL options, progress on a terminal, and the real
``rstore`` script end to end."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from rstore_cli.snapshots import progress_reporter

import rstore

Run = Callable[..., Result]

SEEN = "<time>"


def state(store_path: Path) -> dict[str, Any]:
    """Everything a refused command must leave alone: keys, payloads, XINFO STREAM FULL."""
    with rstore.Store(store_path, create=False) as s:
        keys = sorted(s.execute("KEYS", "*"))
        return {k: (s.dump(k), s.execute("XINFO", "STREAM", k, "FULL", "COUNT", "0")) for k in keys}


def no_times(record: dict[str, Any]) -> dict[str, Any]:
    for group in record["groups"]:
        for consumer in group["consumers"]:
            consumer["seen-time"] = consumer["active-time"] = SEEN
    return record


EVENTS = {
    "db": 0,
    "key": "events",
    "length": 3,
    "nodes": 1,
    "first-entry-id": "1-0",
    "last-entry-id": "3-0",
    "last-generated-id": "3-0",
    "entries-added": 3,
    "max-deleted-entry-id": "0-0",
    "expire-time": None,
    "bytes": 320,
    "groups": [
        {
            "name": "billing",
            "last-delivered-id": "3-0",
            "entries-read": 3,
            "lag": 0,
            "pending": 3,
            "consumers": [
                {"name": "alice", "pending": 2, "seen-time": SEEN, "active-time": SEEN},
                {"name": "bob", "pending": 1, "seen-time": SEEN, "active-time": SEEN},
            ],
        }
    ],
}


def test_inspect_a_known_store_and_its_file_exactly(
    run: Run, billing: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    billing.execute("XADD", "events", "4-0", "n", "4")
    # max deleted 4-0, entries added 4; a deletion after the group's last ID makes its lag
    # unknown (nil), as XINFO GROUPS says on Valkey
    billing.execute("XDEL", "events", "4-0")
    billing.close()
    expected = {
        **EVENTS,
        "entries-added": 4,
        "max-deleted-entry-id": "4-0",
        "last-entry-id": "4-0",  # the deleted entry still sits in the node
        "last-generated-id": "4-0",
    }
    expected["groups"] = [{**EVENTS["groups"][0], "lag": None}]  # type: ignore[index]

    result = run("inspect", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    current = rstore.FORMAT_VERSION
    assert (report["path"], report["format"], report["wal"]) == (str(store_path), current, True)
    (stream,) = report["streams"]
    assert stream == {**expected, "db": 0, "bytes": None, "groups": [
        {**expected["groups"][0], "consumers": 2}  # type: ignore[index]
    ]}  # fmt: skip

    assert run("inspect").stdout == (
        f"{store_path}: store in format {rstore.FORMAT_VERSION} (write-ahead log), "
        "1 database, 1 stream\n"
        "db 0: 1 stream, 3 entries\n"
        "stream events (db 0): length 3, 1 node\n"
        "  first 1-0, last 4-0, last generated 4-0, entries added 4, max deleted 4-0\n"
        "  group billing: last delivered 3-0, entries read 3, lag -, pending 3, 2 consumers\n"
    )
    text = run("inspect", "--key", "events").stdout.splitlines()
    assert text[-2].startswith("    consumer alice: pending 2, seen ")
    assert text[-1].startswith("    consumer bob: pending 1, seen ")

    out = tmp_path / "events.rdb"
    assert run("save", str(out)).exit_code == 0
    report = json.loads(run("inspect", str(out), "--key", "events", "--json").stdout)
    assert set(report) == {
        "path", "bytes", "rdb-version", "checksum", "aux", "functions", "module-aux",
        "databases", "streams",
    }  # fmt: skip
    assert (report["bytes"], report["rdb-version"], report["checksum"]) == (
        out.stat().st_size,
        11,
        "verified",
    )
    assert report["aux"]["rstore-ver"] == rstore.__version__
    (stream,) = report["streams"]
    size = stream["bytes"]
    assert report["databases"] == {
        "0": {"stream": {"keys": 1, "bytes": size, "elements": 3, "expiring": 0}}
    }
    assert no_times(stream) == {**expected, "bytes": size}
    lines = run("inspect", str(out)).stdout.splitlines()
    assert lines[0] == f"{out}: {out.stat().st_size} bytes, RDB version 11"
    assert lines[2:6] == [
        "db 0: 1 key",
        "  type    keys  bytes  elements  expiring",
        f"  stream  1     {size:<5}  3         0",
        f"stream events (db 0): length 3, 1 node, {size} bytes",
    ]


def test_inspect_progress_on_a_store(run: Run, events: rstore.Store) -> None:
    events.close()
    assert "reading" in run("inspect", "--progress").stderr
    assert run("inspect").stderr == ""


def _corrupt_copy(good: Path, tmp_path: Path) -> Path:
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte in the middle of the stream
    bad = tmp_path / "corrupt.rdb"
    bad.write_bytes(bytes(data))
    return bad


def test_bad_input_is_one_line_and_leaves_the_store_alone(
    run: Run, billing: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    with rstore.Store(tmp_path / "src") as src:
        src.xadd("events", {"from": "file"}, id="9-0")
        src.xadd("fresh", {"a": "1"})
        src.save(tmp_path / "good.rdb")
    billing.close()
    before = state(store_path)
    good = tmp_path / "good.rdb"
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    corrupt = _corrupt_copy(good, tmp_path)
    nope = tmp_path / "nope.rdb"
    not_rdb = f"Error: {text}: not an RDB file (no REDIS header) (at byte 0)"
    cases = [
        (["restore", str(corrupt)], f"Error: {corrupt}: "),
        (["restore", str(text)], not_rdb),
        (["restore", str(nope)], f"Error: cannot read {nope}: No such file or directory\n"),
        (["restore", str(good), "--db", "5"], "Error: database 5 of "),
        (["restore", str(good)], "Error: stream 'events' already exists in the store; nothing"),
        (["inspect", str(corrupt)], f"Error: {corrupt}: "),
        (["inspect", str(nope)], f"Error: cannot read {nope}: No such file or directory\n"),
        (["inspect", str(text)], not_rdb),
        (["range", "events", "--from-dump", str(text)], not_rdb),
        (["range", "events", "--from-dump", str(nope)], f"Error: cannot read {nope}: No such"),
        (["export", "--from-dump", str(text)], not_rdb),
        (["replay", "--from-dump", str(text)], not_rdb),
        (["restore-key", "x", str(nope)], f"Error: cannot read {nope}: No such file"),
        (["restore-key", "x", str(good)], "Error: ERR DUMP payload version or checksum are wrong"),
        (["restore-key", "events", str(good)], "Error: BUSYKEY Target key name already exists."),
    ]
    for args, start in cases:
        result = run(*args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(start), (args, result.stderr)
        assert result.stderr.count("\n") == 1, (args, result.stderr)
        assert result.stdout == "", args
    assert (
        "file has keys in database 0: choose one with --db"
        in run("restore", str(good), "--db", "5").stderr
    )
    assert state(store_path) == before


def test_a_missing_file_creates_no_store(run: Run, store_path: Path, tmp_path: Path) -> None:
    for args in (["restore", str(tmp_path / "nope.rdb")], ["restore-key", "k", "nope"]):
        assert run(*args).exit_code == 1
        assert not store_path.exists()


def test_restore_key_ttl_and_json(run: Run, billing: rstore.Store, tmp_path: Path) -> None:
    payload = tmp_path / "events.dump"
    payload.write_bytes(billing.dump("events"))
    billing.close()
    result = run("restore-key", "copy", str(payload), "--ttl", "5000")
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: ERR rstore keys do not expire: RESTORE needs a TTL of 0\n",
    )
    result = run("restore-key", "copy", str(payload), "--ttl", "0", "--absttl", "--json")
    assert (result.exit_code, result.stdout) == (0, '"OK"\n')
    assert run("range", "copy").stdout == run("range", "events").stdout


def test_range_from_dump_count_zero_and_db(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "e.rdb"
    events.save(out)
    events.close()
    assert run("range", "events", "--count", "0").stdout == ""
    result = run("range", "events", "--count", "0", "--from-dump", str(out))
    assert (result.exit_code, result.stdout) == (0, "")
    result = run("range", "events", "--count", "0", "--from-dump", str(out), "--json")
    assert result.stdout == run("range", "events", "--count", "0", "--json").stdout == "[]\n"
    missing = run("range", "events", "--db", "1")  # the store's database 1: there is none
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert missing.stderr.startswith("Error: no database 1 in the store at ")
    assert run("range", "events", "--db", "16").exit_code == 2  # the store has 0 to 15


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_defaults_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_reporter("restoring", None) as callback:
        assert callback is None  # not a terminal: no bar
    tty = _TTY()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress_reporter("restoring", None) as callback:
        assert callback is not None
        callback(0, None)  # an unknown size draws nothing
        callback(512, 1024)
        callback(1024, 1024)
    assert "restoring" in tty.getvalue() and "100%" in tty.getvalue()
    with progress_reporter("restoring", False) as callback:
        assert callback is None  # --no-progress wins


def _script() -> str:
    beside = Path(sys.executable).with_name("rstore")
    found = str(beside) if beside.exists() else shutil.which("rstore")
    if found is None:
        pytest.skip("the rstore console script is not installed (pip install -e .)")
    return found


def test_round_trip_through_the_script(billing: rstore.Store, tmp_path: Path) -> None:
    expected = state(tmp_path / "store") if billing.close() is None else {}

    def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [_script(), "--store", str(store), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    out = tmp_path / "snap.rdb"
    saved = cli(tmp_path / "store", "save", str(out), "--rdb-version", "10")
    assert saved.returncode == 0 and saved.stderr == ""
    assert saved.stdout.startswith(f"saved 1 stream (3 entries) to {out}: RDB 10, ")
    again = cli(tmp_path / "store", "save", str(out))
    assert (again.returncode, again.stderr) == (
        1,
        f"Error: {out} exists; give --force to replace it\n",
    )
    restored = cli(tmp_path / "copy", "restore", str(out), "--json")
    assert restored.returncode == 0, restored.stderr
    report = json.loads(restored.stdout)
    assert (report["streams"], report["entries"], report["bytes"]) == (1, 3, out.stat().st_size)
    copied = state(tmp_path / "copy")
    # RDB 10 has no consumer active time: the copy's active times come back as seen times.
    assert copied.keys() == expected.keys()
    assert copied[b"events"][1][:18] == expected[b"events"][1][:18]
    busy = cli(tmp_path / "copy", "restore", str(out))
    assert busy.returncode == 1 and busy.stdout == ""
    assert busy.stderr.count("\n") == 1 and "Traceback" not in busy.stderr


def test_library_progress_callbacks_reach_the_total(billing: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "p.rdb"
    calls: dict[str, list[tuple[int, int | None]]] = {}

    def record(name: str) -> Callable[[int, int | None], None]:
        return lambda done, total: calls.setdefault(name, []).append((done, total))

    billing.save(out, progress=record("save"))
    billing.inspect(progress=record("inspect_store"))
    rstore.inspect_rdb(str(out), progress=record("inspect_rdb"))
    rstore.read_rdb_range(str(out), "events", progress=record("range"))
    with rstore.Store(tmp_path / "copy") as copy:
        report = copy.restore_file(out, progress=record("restore"))
    size = out.stat().st_size
    assert calls["save"] == [(0, 1), (1, 1)]
    assert calls["inspect_store"] == [(1, 1)]
    for name in ("inspect_rdb", "range", "restore"):
        assert calls[name][-1] == (size, size), name
        assert [done for done, _ in calls[name]] == sorted(done for done, _ in calls[name])
    assert (report.entries, report.bytes) == (3, size)


def test_files_that_cannot_be_written_are_named_with_the_reason(
    run: Run, billing: rstore.Store, tmp_path: Path
) -> None:
    """One line naming the user's file and the reason in words: never a temporary name, never
    a bare errno."""
    billing.close()
    nowhere = tmp_path / "no-dir"
    plain = tmp_path / "a-file"
    plain.write_text("")
    cases = [
        (["save", str(nowhere / "x.rdb")], f"cannot write {nowhere / 'x.rdb'}: No such file"),
        (["save", str(plain / "x.rdb")], f"cannot write {plain / 'x.rdb'}: Not a directory"),
        (["dump", "events", "-o", str(nowhere / "x")], f"cannot write {nowhere / 'x'}: No such"),
        (["export", "-o", str(nowhere / "x")], f"cannot write {nowhere / 'x'}: No such file"),
        (["replay", "--bookmark", str(nowhere / "cp")], f"cannot write {nowhere / 'cp'}: No"),
    ]
    for args, message in cases:
        result = run(*args)
        assert result.exit_code == 1, args
        assert result.stderr.startswith(f"Error: {message}"), (args, result.stderr)
        assert result.stderr.count("\n") == 1 and ".tmp" not in result.stderr, result.stderr
        assert "Errno" not in result.stderr and "rstore-" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "store"]  # nothing left


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_files_get_the_mode_of_new_files(
    run: Run, billing: rstore.Store, tmp_path: Path, umask: int
) -> None:
    """save, export -o, dump -o and a replay's bookmark file all get 0666 less the umask, as
    any new file does (export wrote 0600 before, whatever the umask)."""
    billing.close()
    previous = os.umask(umask)
    try:
        for args in (
            ["save", str(tmp_path / "a.rdb")],
            ["export", "-o", str(tmp_path / "a.jsonl")],
            ["dump", "events", "-o", str(tmp_path / "a.dump")],
            ["replay", "--bookmark", str(tmp_path / "a.cp"), "--format", "json"],
        ):
            assert run(*args).exit_code == 0, args
    finally:
        os.umask(previous)
    for name in ("a.rdb", "a.jsonl", "a.dump", "a.cp"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name
