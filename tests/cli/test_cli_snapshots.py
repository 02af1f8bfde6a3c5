"""``save``, ``restore``, ``inspect``, ``dump``, ``restore-key`` and ``range --from-dump``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rdb" / "queue-valkey-lzf.rdb"


def contents(store_path: Path) -> dict[bytes, bytes | None]:
    with rstore.Store(store_path, create=False) as s:
        return {k: s.dump(k) for k in sorted(s.execute("KEYS", "*"))}


def test_save_then_restore_round_trip(run: Run, billing: rstore.Store, tmp_path: Path) -> None:
    billing.close()
    out = tmp_path / "snap.rdb"
    result = run("save", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    saved = json.loads(result.stdout)
    assert saved["streams"] == 1 and saved["rdb-version"] == 11
    assert saved["bytes"] == out.stat().st_size
    other = tmp_path / "other"
    result = run("--store", str(other), "restore", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f"restored 1 stream (3 entries) from database 0 of {out}: RDB 11, "
        f"{saved['bytes']} bytes, {result.stdout.rsplit(', ', 1)[1]}"
    )
    assert saved["entries"] == 3
    assert contents(other) == contents(tmp_path / "store")


def test_save_says_which_servers_load_the_file(
    run: Run, billing: rstore.Store, tmp_path: Path
) -> None:
    """The summary names the servers that load the file, and the --rdb-version older ones
    need (Redis 7.0 refuses RDB 11), or what an older version leaves out."""
    billing.close()
    expected = {
        "11": "loads in Redis 7.2+ and Valkey 7.2+ (Redis 7.0 needs --rdb-version 10, Redis "
        "5.0-6.2 --rdb-version 9)",
        "10": "loads in Redis 7.0+ and Valkey 7.2+ (consumers' active times are left out: RDB "
        "10 has none)",
        "9": "loads in Redis 5.0+ and Valkey 7.2+ (groups' entries-read and consumers' active "
        "times are left out: RDB 9 has neither)",
    }
    for version, line in expected.items():
        result = run("save", str(tmp_path / f"v{version}.rdb"), "--rdb-version", version)
        assert result.exit_code == 0, result.stderr
        first, second = result.stdout.splitlines()
        assert first.startswith(f"saved 1 stream (3 entries) to {tmp_path}/v{version}.rdb: RDB ")
        assert second == line


def test_save_refuses_to_overwrite_without_force(
    run: Run, events: rstore.Store, tmp_path: Path
) -> None:
    events.close()
    out = tmp_path / "snap.rdb"
    out.write_bytes(b"keep me")
    result = run("save", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {out} exists; give --force to replace it\n"
    assert out.read_bytes() == b"keep me"
    assert run("save", str(out), "--force", "--rdb-version", "10").exit_code == 0
    assert rstore.inspect_rdb(str(out)).rdb_version == 10


def test_restore_reports_what_it_skipped(run: Run, store_path: Path) -> None:
    result = run("restore", str(FIXTURE), "--db", "3", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["streams"] == 1
    assert report["skipped"] == {"hash": 1}
    assert report["ttl-dropped"] == ["expiring"]
    assert report["other-databases"] == {"0": 10, "1": 3}
    assert list(contents(store_path)) == [b"expiring"]


def test_restore_refusals_leave_the_store_alone(
    run: Run, events: rstore.Store, store_path: Path, tmp_path: Path
) -> None:
    with rstore.Store(tmp_path / "src") as src:
        src.xadd("fresh", {"a": "1"})
        src.xadd("events", {"from": "file"}, id="9-9")
        src.save(tmp_path / "clash.rdb")
    events.close()
    before = contents(store_path)
    junk = tmp_path / "junk.rdb"
    junk.write_bytes(b"REDIS0011" + b"\xfe\x00\xfb\x01\x00\x15" + b"\x00" * 3)
    for args, message in (
        (["restore", str(tmp_path / "clash.rdb")], "already exists"),
        (["restore", str(junk)], "at byte"),
        (["restore", str(FIXTURE.with_suffix(".json"))], "not an RDB file"),
    ):
        result = run(*args)
        assert result.exit_code == 1, args
        assert message in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stdout == ""
    missing = run("restore", str(tmp_path / "missing.rdb"))
    assert missing.exit_code == 1
    assert missing.stderr == (
        f"Error: cannot read {tmp_path / 'missing.rdb'}: No such file or directory\n"
    )
    assert contents(store_path) == before
    result = run("restore", str(tmp_path / "clash.rdb"), "--replace")
    assert result.exit_code == 0
    assert "replaced: 1 existing stream\n" in result.stdout


def test_inspect_a_file(run: Run) -> None:
    result = run("inspect", str(FIXTURE), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    summary = rstore.inspect_rdb(str(FIXTURE))
    assert report["rdb-version"] == 11 and report["checksum"] == "verified"
    assert report["databases"]["0"]["stream"]["keys"] == 4
    assert report["databases"]["0"]["list"] == {
        "keys": 1, "bytes": 25, "elements": 3, "expiring": 1,
    }  # fmt: skip
    jobs = next(s for s in report["streams"] if s["key"] == "jobs")
    truth = next(s for s in summary.streams if s.key == b"jobs")
    assert jobs["length"] == truth.state.length == 399
    assert [g["name"] for g in jobs["groups"]] == ["audit", "late", "workers"]
    assert [g["pending"] for g in jobs["groups"]] == [g.state.pel_count for g in truth.groups]
    assert all(isinstance(g["consumers"], int) for g in jobs["groups"])
    text = run("inspect", str(FIXTURE)).stdout
    assert "RDB version 11" in text and "db 3: 2 keys" in text
    assert "stream jobs (db 0): length 399, 5 nodes" in text


def test_inspect_one_key_in_depth(run: Run, billing: rstore.Store, store_path: Path) -> None:
    billing.close()
    result = run("inspect", "--key", "events", "--json")
    assert result.exit_code == 0, result.stderr
    (stream,) = json.loads(result.stdout)["streams"]
    (group,) = stream["groups"]
    assert [(c["name"], c["pending"]) for c in group["consumers"]] == [("alice", 2), ("bob", 1)]
    text = run("inspect", "--key", "events").stdout
    assert "    consumer alice: pending 2, seen " in text
    missing = run("inspect", "--key", "nope")
    assert (missing.exit_code, missing.stderr) == (1, f"Error: no stream nope in {store_path}\n")


@pytest.mark.parametrize("fmt", [[], ["--json"], ["--nl"]])
@pytest.mark.parametrize("bounds", [[], ["(1700000000001-1", "1700000000003"], ["-", "+", "--rev"]])
def test_range_from_dump_prints_what_range_prints(
    run: Run, tmp_path: Path, fmt: list[str], bounds: list[str]
) -> None:
    assert run("restore", str(FIXTURE)).exit_code == 0
    args = ["range", "jobs", *bounds, "--count", "7", *fmt]
    from_store = run(*args)
    from_file = run("--store", str(tmp_path / "none"), *args, "--from-dump", str(FIXTURE))
    assert from_file.exit_code == 0, from_file.stderr
    assert from_file.stdout == from_store.stdout
    assert from_store.stdout.count("1700000000") >= 7
    assert not (tmp_path / "none").exists()  # no store needed, none created


def test_range_from_dump_errors(run: Run, tmp_path: Path) -> None:
    for args, message in (
        (["range", "nope", "--from-dump", str(FIXTURE)], "has no stream nope in database 0"),
        (["range", "jobs", "--from-dump", str(FIXTURE), "--db", "2"], "in database 2"),
        (["range", "jobs", "(18446744073709551615-18446744073709551615", "--from-dump",
          str(FIXTURE)], "ERR invalid start ID for the interval"),
    ):  # fmt: skip
        result = run(*args)
        assert result.exit_code != 0
        assert message in result.stderr and result.stderr.count("\n") == 1


def test_dump_and_restore_key(run: Run, billing: rstore.Store, tmp_path: Path) -> None:
    payload = billing.dump("events")
    billing.close()
    out = tmp_path / "events.dump"
    assert run("dump", "events", "-o", str(out)).exit_code == 0
    assert out.read_bytes() == payload
    assert run("restore-key", "copy", str(out)).stdout == "OK\n"
    busy = run("restore-key", "copy", str(out))
    assert busy.exit_code == 1 and "BUSYKEY Target key name already exists." in busy.stderr
    assert run("restore-key", "copy", str(out), "--replace").exit_code == 0
    with rstore.Store(tmp_path / "store") as s:
        assert s.dump("copy") == payload
    assert run("dump", "nope", "-o", str(tmp_path / "x")).exit_code == 1


def test_dump_through_a_pipe(billing: rstore.Store, tmp_path: Path) -> None:
    payload = billing.dump("events")
    billing.close()
    script = [sys.executable, "-m", "rstore_cli", "--store", str(tmp_path / "store")]
    dumped = subprocess.run([*script, "dump", "events"], capture_output=True, check=True)
    assert dumped.stdout == payload
    other = [sys.executable, "-m", "rstore_cli", "--store", str(tmp_path / "other")]
    restored = subprocess.run(
        [*other, "restore-key", "events", "-"], input=payload, capture_output=True, check=True
    )
    assert restored.stdout == b"OK\n"
    with rstore.Store(tmp_path / "other") as s:
        assert s.dump("events") == payload


def test_progress_only_when_asked(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    events.close()
    quiet = run("save", str(tmp_path / "a.rdb"))
    assert quiet.stderr == ""  # not a terminal: no bar by default
    shown = run("save", str(tmp_path / "b.rdb"), "--progress")
    assert "saving" in shown.stderr
    shown = run("inspect", str(FIXTURE), "--progress")
    assert "reading" in shown.stderr
