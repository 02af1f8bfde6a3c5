"""``rstore export``: the envelope of every selected entry (what the library's encoder writes
for XRANGE's entries), from the store or a dump, to stdout or a file that appears only when
complete; the summary, the errors and the exit statuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

import rstore
from rstore import decode_lines, encode_entry, read_rdb_entries

Run = Callable[..., Result]

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rdb" / "queue-valkey-lzf.rdb"


def _lines(store: rstore.Store, key: bytes, start: str = "-", end: str = "+") -> bytes:
    """What the envelope holds for XRANGE key start end (the encoder's own tests pin it)."""
    out = b""
    for entry_id, flat in store.execute("XRANGE", key, start, end):
        ms, seq = (int(p) for p in entry_id.split(b"-"))
        out += encode_entry(key, (ms, seq), flat) + b"\n"
    return out


def _seed(store: rstore.Store) -> None:
    store.execute("XADD", "orders:1", "10-0", "item", "book", "item", "pen")  # a repeated field
    store.execute("XADD", "orders:2", "20-0", "raw", b"\x00\xff", "text", 'caf\xe9 "q"\n')
    store.execute("XADD", "orders:2", "30-5", "n", "1")
    store.execute("XADD", b"odd\xffname", "5-0", "k", "v")


def test_export_writes_every_stream_in_name_order(run: Run, events: rstore.Store) -> None:
    _seed(events)
    result = run("export")
    assert result.exit_code == 0, result.stderr
    names = [b"events", b"odd\xffname", b"orders:1", b"orders:2"]
    assert result.stdout_bytes == b"".join(_lines(events, k) for k in names)
    assert result.stderr == ""
    first = json.loads(result.stdout_bytes.splitlines()[0])
    assert first == {
        "stream": "events",
        "id": "1-0",
        "fields": [["user", "42"], ["action", "login"]],
    }


def test_names_globs_and_bounds(run: Run, events: rstore.Store) -> None:
    _seed(events)
    result = run("export", "orders:*", "events", "--start", "2", "--end", "(30-5")
    want = b"".join(_lines(events, k, "2", "(30-5") for k in (b"events", b"orders:1", b"orders:2"))
    assert result.exit_code == 0 and result.stdout_bytes == want
    assert run("export", "-e", "odd\\xffname").stdout_bytes == _lines(events, b"odd\xffname")
    # a time bound: the IDs here are from 1970, so "1h" ago is after all of them
    assert run("export", "--start", "1h").stdout_bytes == b""


def test_export_then_decode_gives_back_the_bytes(
    run: Run, events: rstore.Store, tmp_path: Path
) -> None:
    _seed(events)
    exported = run("export").stdout_bytes
    with rstore.Store(str(tmp_path / "copy")) as copy:
        for stream, (ms, seq), flat in decode_lines(exported.splitlines()):
            copy.execute("XADD", stream, f"{ms}-{seq}", *flat)
        for key in (b"events", b"odd\xffname", b"orders:1", b"orders:2"):
            assert copy.execute("XRANGE", key, "-", "+") == events.execute("XRANGE", key, "-", "+")


def test_output_file_summary_and_json_report(
    run: Run, events: rstore.Store, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    result = run("export", "events", "-o", str(out))
    assert result.exit_code == 0
    assert out.read_bytes() == _lines(events, b"events")
    assert result.stdout.startswith(f"exported 3 entries of 1 stream to {out} (")
    refused = run("export", "events", "-o", str(out))
    assert refused.exit_code == 1
    assert refused.stderr == f"Error: {out} exists; give --force to replace it\n"
    result = run("export", "events", "-o", str(out), "--force", "--json", "--end", "2")
    report = json.loads(result.stdout)
    assert report["entries"] == 2 and report["output"] == str(out)
    assert report["streams"] == [
        {"stream": "events", "entries": 2, "first-id": "1-0", "last-id": "2-0"}
    ]
    assert report["bytes"] == out.stat().st_size == len(_lines(events, b"events", "-", "2"))
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl", "store"]  # no temporary left
    # to stdout, the JSON report goes to stderr
    result = run("export", "events", "--json")
    assert result.stdout_bytes == _lines(events, b"events")
    assert json.loads(result.stderr)["entries"] == 3


def test_a_failed_export_leaves_no_file(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run("export", "events", "nope", "-o", str(out))
    assert (result.exit_code, result.stderr) == (1, "Error: no stream 'nope'\n")
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["store"]


def test_errors_are_one_line(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    cases = {
        ("export", "nope"): (1, "Error: no stream 'nope'\n"),
        ("export", "x*"): (1, "Error: no stream matches 'x*'\n"),
        ("export", "--start", "2026-13-01"): (2, None),
        ("export", "--start", "bad"): (2, None),
        ("export", "--db", "1"): (1, None),  # the store has no database 1
        ("export", "--db", "16"): (2, None),  # a store has databases 0 to 15
    }
    for args, (status, stderr) in cases.items():
        result = run(*args)
        assert result.exit_code == status, (args, result.stderr)
        if stderr is not None:
            assert result.stderr == stderr
        assert result.stdout == ""
    bad = run("export", "--start", "bad").stderr
    assert "Invalid value for '--start': bad is neither an ID nor a time: give an ID" in bad
    nowhere = run("export", "-o", str(tmp_path / "no-dir" / "x.jsonl"))
    assert nowhere.exit_code == 1
    assert (
        nowhere.stderr
        == f"Error: cannot write {tmp_path}/no-dir/x.jsonl: No such file or directory\n"
    )
    missing = run("--store", str(tmp_path / "none"), "export")
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: no store at ")


def test_an_empty_window_prints_a_note(run: Run, events: rstore.Store) -> None:
    result = run("export", "events", "--start", "100")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "note: no entries in the selected streams and range\n"


def test_export_from_a_dump(run: Run, tmp_path: Path) -> None:
    result = run("export", "--from-dump", str(FIXTURE), "small-nodes", "jobs")
    assert result.exit_code == 0, result.stderr
    want = b""
    for key in (b"jobs", b"small-nodes"):
        for entry_id, flat in read_rdb_entries(str(FIXTURE), key) or []:
            ms, seq = (int(p) for p in entry_id.split(b"-"))
            want += encode_entry(key, (ms, seq), flat) + b"\n"
    assert result.stdout_bytes == want and want
    in_db1 = run("export", "--from-dump", str(FIXTURE), "--db", "1", "jobs").stdout_bytes
    assert [e[0] for e in decode_lines(in_db1.splitlines())] == [b"jobs"]
    result = run("export", "--from-dump", str(FIXTURE), "nope")
    assert result.exit_code == 1
    assert result.stderr == f"Error: no stream 'nope' in database 0 of {FIXTURE}\n"
    damaged = tmp_path / "damaged.rdb"
    data = bytearray(FIXTURE.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    result = run("export", "--from-dump", str(damaged))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


def test_export_as_a_process_to_a_pipe(events: rstore.Store, store_path: Path) -> None:
    events.close()
    cmd = [sys.executable, "-m", "rstore_cli", "--store", str(store_path), "export"]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    with rstore.Store(str(store_path)) as store:
        assert done.stdout == _lines(store, b"events")
    env = {**os.environ, "RSTORE_PATH": str(store_path)}
    head = subprocess.run(
        f"{sys.executable} -m rstore_cli export | head -c 10",
        shell=True,
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert head.stdout == done.stdout[:10] and head.stderr == b""


def test_progress_on_request(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    """--progress draws the bar on stderr (only its label when stderr is no terminal) and
    changes nothing else; --from-dump too."""
    result = run("export", "--progress")
    assert result.exit_code == 0 and result.stdout_bytes == _lines(events, b"events")
    assert "exporting" in result.stderr
    result = run("export", "--from-dump", str(FIXTURE), "jobs", "--progress", "-o", "-")
    assert result.exit_code == 0 and "exporting" in result.stderr
    assert len(result.stdout_bytes.splitlines()) == 399
