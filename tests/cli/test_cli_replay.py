"""``rstore replay``: sources, targets, selection, ID policy, bookmarks, dry runs, reports and
errors, through click's runner (a live valkey-server for the server target)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

import rstore
from rstore import encode_entry

Run = Callable[..., Result]


def _seed(path: Path) -> None:
    with rstore.Store(path) as store:
        for i in range(1, 21):
            store.execute("XADD", "clicks", f"{i}-0", "user", str(i % 4), "action",
                          "buy" if i % 5 == 0 else "view")  # fmt: skip
        store.execute("XADD", "raw", "100-1", "b", b"\x00\xff", "b", "again")


def _xrange(path: Path, key: str) -> list[object]:
    with rstore.Store(path) as store:
        return store.execute("XRANGE", key, "-", "+")


def _lines(path: Path, key: str) -> bytes:
    with rstore.Store(path) as store:
        return b"".join(
            encode_entry(key.encode(), tuple(map(int, i.split(b"-"))), f) + b"\n"  # type: ignore[arg-type]
            for i, f in store.execute("XRANGE", key, "-", "+")
        )


def test_stdout_is_the_envelope_by_default_and_formats(run: Run, store_path: Path) -> None:
    _seed(store_path)
    result = run("replay")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == _lines(store_path, "clicks") + _lines(store_path, "raw")
    assert result.stderr == ""
    buys = run("replay", "clicks", "--where", "action=buy", "--format", "{id}\\t{user}")
    assert buys.stdout == "5-0\t1\n10-0\t2\n15-0\t3\n20-0\t0\n"
    xadd = run("replay", "raw", "--format", "xadd")
    assert xadd.stdout_bytes == b'XADD "raw" 100-1 "b" "\\x00\\xff" "b" "again"\n'
    window = run(
        "replay", "clicks", "--start", "3", "--end", "(5", "--count", "1", "--format", "{id}"
    )
    assert window.stdout == "3-0\n"


def test_on_conflict_fail_writes_nothing_when_a_later_stream_conflicts(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    """The conflict is in the second stream replayed ('raw'): the first ('clicks') must not
    have been written when the replay refuses; from a dump as from a store."""
    _seed(store_path)
    with rstore.Store(store_path) as source:
        last_raw = source.execute("XREVRANGE", "raw", "+", "-", "COUNT", 1)[0][0].decode()
        source.save(tmp_path / "dump.rdb")
    for extra in ((), ("--from-dump", str(tmp_path / "dump.rdb"))):
        dst = tmp_path / ("copy" + str(len(extra)))
        with rstore.Store(dst) as target:
            target.execute("XADD", "raw", last_raw, "already", "there")
        refused = run("replay", "--to-store", str(dst), *extra)
        assert refused.exit_code == 1
        assert (
            refused.stderr.startswith("Error: kept IDs not above the target's last ID: 'raw' from ")
            and "nothing was written" in refused.stderr
        )
        with rstore.Store(dst) as target:
            assert target.execute("EXISTS", "clicks") == 0 and target.xlen("raw") == 1
        # past a bookmark beyond the conflict, nothing conflicts any more
        partial = run("replay", "raw", "--to-store", str(dst), "--on-conflict", "skip")
        assert partial.exit_code == 0


def test_to_store_keeps_ids_and_bookmark_resumes(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    _seed(store_path)
    dst = tmp_path / "copy"
    first = run("replay", "--to-store", str(dst), "--bookmark", "c", "--count", "8", "--json")
    assert first.exit_code == 0, first.stderr
    assert json.loads(first.stdout)["delivered"] == 8
    second = run("replay", "--to-store", str(dst), "--bookmark", "c", "--json")
    report = json.loads(second.stdout)
    assert (report["resumed"], report["delivered"]) == (8, 13)
    for key in ("clicks", "raw"):
        assert _xrange(dst, key) == _xrange(store_path, key)
    assert run("replay", "--to-store", str(dst)).stderr.startswith(
        "Error: kept IDs not above the target's last ID: 'clicks' from 1-0 into 'clicks' "
        "(last ID 20-0)"
    )
    skip = run("replay", "--to-store", str(dst), "--on-conflict", "skip")
    assert (
        skip.stdout == "replayed 0 entries to " + str(dst) + " in " + skip.stdout.split(" in ")[1]
    )
    assert "21 skipped (conflicts)" in skip.stdout


def test_same_store_prefix_new_ids_and_dry_run(run: Run, store_path: Path) -> None:
    _seed(store_path)
    plan = run("replay", "clicks", "--to-stream", "clicks", "--dry-run", "--json", "--speed", "0.5")
    assert plan.exit_code == 0, plan.stderr
    data = json.loads(plan.stdout)
    assert data["streams"][0]["conflicts"] == 20 and data["paced-seconds"] == 0.038
    assert (
        _xrange(store_path, "clicks")[-1][0] == b"20-0" and len(_xrange(store_path, "clicks")) == 20
    )
    copy = run("replay", "clicks", "--prefix", "again:", "--where", "user=1")
    assert copy.exit_code == 0, copy.stderr
    assert [e[0] for e in _xrange(store_path, "again:clicks")] == [
        b"1-0",
        b"5-0",
        b"9-0",
        b"13-0",
        b"17-0",
    ]
    renewed = run("replay", "raw", "--to-stream", "raw", "--new-ids")
    assert renewed.exit_code == 0, renewed.stderr
    got = _xrange(store_path, "raw")
    assert len(got) == 2 and got[1][1] == got[0][1] and got[1][0] != got[0][0]


def test_errors_are_one_line(run: Run, store_path: Path, tmp_path: Path) -> None:
    _seed(store_path)
    cases = {
        ("replay", "nope"): "Error: no stream 'nope'\n",
        ("replay", "clicks", "--start", "50", "--end", "60"): (
            "Error: no entries to replay in the selected streams and window\n"
        ),
        ("replay", "--from-dump", str(tmp_path / "missing.rdb")): None,
        ("replay", "--speed", "fast"): None,
        ("replay", "--rate", "5/s", "--speed", "2"): None,
        ("replay", "--where", "novalue"): None,
    }
    for args, expected in cases.items():
        result = run(*args)
        assert result.exit_code in (1, 2), args
        # one error line, the last (a usage error has click's usage lines before it)
        lines = result.stderr.splitlines()
        assert [x for x in lines if x.startswith("Error: ")] == lines[-1:], args
        if expected is not None:
            assert result.stderr == expected
    damaged = tmp_path / "bad.jsonl"
    damaged.write_bytes(encode_entry(b"a", (1, 0), [b"k", b"v"]) + b"\n{oops\n")
    result = run("replay", "--from-jsonl", str(damaged), "--to-store", str(tmp_path / "t"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {damaged} line 2: not JSON")
    with rstore.Store(tmp_path / "t") as t:
        assert t.keys() == []  # nothing half-written


def test_jsonl_source_from_stdin(run: Run, store_path: Path, tmp_path: Path) -> None:
    _seed(store_path)
    exported = run("export").stdout_bytes
    dst = tmp_path / "copy"
    result = run("replay", "--from-jsonl", "-", "--to-store", str(dst), input=exported)
    assert result.exit_code == 0, result.stderr
    assert _xrange(dst, "raw") == _xrange(store_path, "raw")


def test_bookmark_file_for_stdout(run: Run, store_path: Path, tmp_path: Path) -> None:
    _seed(store_path)
    cp = tmp_path / "cp.json"
    first = run("replay", "clicks", "--count", "5", "--bookmark", str(cp), "--format", "{id}")
    assert first.stdout.split() == ["1-0", "2-0", "3-0", "4-0", "5-0"]
    assert json.loads(cp.read_bytes()) == {"clicks": "5-0"}
    rest = run("replay", "clicks", "--bookmark", str(cp), "--format", "{id}")
    assert rest.stdout.split() == [f"{i}-0" for i in range(6, 21)]


def test_a_bookmark_file_that_cannot_be_written_is_refused_before_any_entry(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    """The bookmark is written after each batch: a directory that is missing (or a directory
    in the file's place) is refused at the start, not after the first batch was printed."""
    _seed(store_path)
    (tmp_path / "a-dir").mkdir()
    for bookmark, why in (
        (tmp_path / "missing" / "cp.json", "No such file or directory"),
        (tmp_path / "a-dir", "Is a directory"),
    ):
        result = run("replay", "clicks", "--bookmark", str(bookmark), "--format", "{id}")
        assert result.exit_code == 1
        assert result.stdout == ""  # nothing replayed
        assert result.stderr == f"Error: cannot write {bookmark}: {why}\n"


def test_checkpoint_is_the_deprecated_name_of_bookmark(
    run: Run, store_path: Path, tmp_path: Path
) -> None:
    """``--checkpoint NAME`` (the option's name before bookmarks were renamed) still works, with
    one note on stderr; it is not in --help; giving both is a usage error."""
    _seed(store_path)
    dst = tmp_path / "copy"
    old = run("replay", "clicks", "--to-store", str(dst), "--checkpoint", "c", "--count", "5")
    assert old.exit_code == 0, old.stderr
    assert old.stderr == "note: --checkpoint is deprecated, use --bookmark (the same option)\n"
    assert old.stdout.startswith("replayed 5 entries to ")
    new = run("replay", "clicks", "--to-store", str(dst), "--bookmark", "c", "--json")
    assert new.stderr == "" and json.loads(new.stdout)["resumed"] == 5
    assert _xrange(dst, "clicks") == _xrange(store_path, "clicks")
    both = run("replay", "--to-store", str(dst), "--bookmark", "c", "--checkpoint", "c")
    assert both.exit_code == 2
    assert both.stderr.endswith(
        "Error: give --bookmark only (--checkpoint is its deprecated name)\n"
    )
    for command in ("replay", "import"):
        shown = run(command, "--help").stdout
        assert "--bookmark NAME" in shown and "--checkpoint" not in shown


@pytest.mark.oracle
def test_to_url_writes_through_xadd(run: Run, store_path: Path, tmp_path: Path) -> None:
    redis = pytest.importorskip("redis")
    from valkey_server import HOST, ValkeyServer, find_server_binary

    binary = find_server_binary()
    if binary is None:
        pytest.skip("valkey-server is not on PATH")
    _seed(store_path)
    (tmp_path / "v").mkdir()
    with ValkeyServer(binary, tmp_path / "v") as server:
        url = f"redis://{HOST}:{server.port}/0"
        cp = tmp_path / "cp.json"
        result = run("replay", "--to-url", url, "--bookmark", str(cp))
        assert result.exit_code == 0, result.stderr
        client = redis.Redis(host=HOST, port=server.port)
        client.set_response_callback("XRANGE", lambda reply, **_: [list(e) for e in reply])
        for key in ("clicks", "raw"):
            assert client.execute_command("XRANGE", key, "-", "+") == _xrange(store_path, key)
        assert json.loads(cp.read_bytes()) == {"clicks": "20-0", "raw": "100-1"}
        again = run("replay", "--to-url", url)  # a conflict: refused before anything is sent
        assert again.exit_code == 1
        assert "'clicks' from 1-0 into 'clicks' (last ID 20-0)" in again.stderr
        client.execute_command("SET", "taken", "x")
        refused = run("replay", "clicks", "--to-stream", "taken", "--to-url", url)
        assert refused.exit_code == 1
        assert refused.stderr.startswith(f"Error: redis://{HOST}:{server.port}/0: WRONGTYPE")
        client.close()
    gone = run("replay", "--to-url", url)
    assert gone.exit_code == 1 and gone.stderr.startswith(f"Error: redis://{HOST}")


def test_follow_delivers_new_entries_live_and_sigint_exits_130(
    store_path: Path, tmp_path: Path
) -> None:

    _seed(store_path)
    dst = tmp_path / "live"
    argv = [sys.executable, "-m", "rstore_cli", "--store", str(store_path), "replay", "clicks",
            "--follow", "--to-store", str(dst), "--bookmark", "live", "--json"]  # fmt: skip
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait_for(n: int) -> int:
        deadline = time.monotonic() + 30
        got = 0
        while time.monotonic() < deadline:
            if dst.exists():
                with rstore.Store(dst) as t:
                    got = t.xlen("clicks")
                if got >= n:
                    break
            time.sleep(0.05)
        return got

    try:
        assert wait_for(20) == 20  # the history
        with rstore.Store(store_path) as src:
            src.execute("XADD", "clicks", "30-0", "user", "9", "action", "late")
            src.execute("XADD", "raw", "200-0", "not", "followed")
        assert wait_for(21) == 21  # the new entry, while the replay runs
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    report = json.loads(out)
    assert report["interrupted"] is True and report["delivered"] == 21
    with rstore.Store(dst) as t:
        assert json.loads(t.bookmark("live") or b"") == {"clicks": "30-0"}
        assert t.keys() == [b"clicks"]
