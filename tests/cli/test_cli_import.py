"""``rstore import``: export | import round-trips byte for byte (hypothesis over arbitrary
bytes); batches are all or nothing; a bookmark resumes exactly once."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import make_runner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rstore_cli.main import cli

import rstore

names = st.binary(min_size=1, max_size=12)
blobs = st.binary(max_size=40)
stream_entries = st.lists(
    st.lists(st.tuples(blobs, blobs), min_size=1, max_size=4), min_size=1, max_size=6
)


def _invoke(
    runner: CliRunner, store: Path, *args: str, stdin: bytes | None = None
) -> tuple[int, bytes, str]:
    result = runner.invoke(cli, ["--store", str(store), *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes, result.stderr


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.dictionaries(names, stream_entries, min_size=1, max_size=3))
def test_export_import_round_trips_byte_for_byte(tmp_path_factory, data) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("rt")
    runner = make_runner()
    with rstore.Store(tmp / "a") as src:
        src.append_entries(
            [
                (name, f"{ms + 1}-{ms % 3}", [x for pair in pairs for x in pair])
                for name, entries in data.items()
                for ms, pairs in enumerate(entries)
            ]
        )
        expected = {name: src.execute("XRANGE", name, "-", "+") for name in data}
    code, exported, err = _invoke(runner, tmp / "a", "export")
    assert code == 0, err
    code, _, err = _invoke(runner, tmp / "b", "import", "--batch", "3", stdin=exported)
    assert code == 0, err
    with rstore.Store(tmp / "b") as dst:
        assert {name: dst.execute("XRANGE", name, "-", "+") for name in data} == expected
    code, again, err = _invoke(runner, tmp / "b", "export")
    assert again == exported


def test_import_batches_are_all_or_nothing_and_resume(tmp_path: Path) -> None:
    runner = make_runner()
    lines = [
        rstore.encode_entry(b"s", (i, 0), [b"n", str(i).encode()]) + b"\n" for i in range(1, 11)
    ]
    broken = b"".join(lines[:7]) + b'{"stream":"s"}\n' + b"".join(lines[7:])
    args = ("import", "--batch", "4", "--bookmark", "load")
    # entries go in whole nodes (of the store's stream-node-max-entries), a batch is the nodes
    # that reach --batch entries: nodes of 2 here, so the batches are 1-4 and 5-8
    rstore.Store(tmp_path / "st", node_max_entries=2).close()
    code, _, err = _invoke(runner, tmp_path / "st", *args, stdin=broken)
    assert (
        code == 1
        and err == 'Error: stdin line 8: no "id" key (an entry has "stream", "id", "fields")\n'
    )
    with rstore.Store(tmp_path / "st") as store:
        # the first batch (4 entries) landed with its bookmark; the second never started
        assert [e[0] for e in store.execute("XRANGE", "s", "-", "+")] == [
            b"1-0",
            b"2-0",
            b"3-0",
            b"4-0",
        ]
        assert json.loads(store.bookmark("load") or b"") == {"s": "4-0"}
    fixed = b"".join(lines)
    code, out, err = _invoke(
        runner, tmp_path / "st", "import", "--bookmark", "load", "--json", stdin=fixed
    )
    assert code == 0, err
    report = json.loads(out)
    assert (report["resumed"], report["delivered"]) == (4, 6)
    with rstore.Store(tmp_path / "st") as store:
        assert [int(e[1][1]) for e in store.execute("XRANGE", "s", "-", "+")] == list(range(1, 11))


def test_import_takes_checkpoint_as_the_deprecated_name_of_bookmark(tmp_path: Path) -> None:
    runner = make_runner()
    lines = [rstore.encode_entry(b"s", (i, 0), [b"n", b"%d" % i]) + b"\n" for i in range(1, 7)]
    code, out, err = _invoke(
        runner, tmp_path / "st", "import", "--checkpoint", "load", stdin=b"".join(lines[:4])
    )
    assert code == 0 and out.startswith(b"imported 4 entries to ")
    assert err == "note: --checkpoint is deprecated, use --bookmark (the same option)\n"
    code, out, err = _invoke(
        runner, tmp_path / "st", "import", "--bookmark", "load", "--json", stdin=b"".join(lines)
    )
    assert code == 0 and err == ""
    assert (json.loads(out)["resumed"], json.loads(out)["delivered"]) == (4, 2)
    code, _, err = _invoke(
        runner, tmp_path / "st", "import", "--bookmark", "a", "--checkpoint", "b", stdin=b""
    )
    assert code == 2 and err.endswith(
        "give --bookmark only (--checkpoint is its deprecated name)\n"
    )


def test_import_from_a_file_and_conflicts(tmp_path: Path) -> None:
    runner = make_runner()
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b"".join(rstore.encode_entry(b"s", (i, 0), [b"k", b"v"]) + b"\n" for i in (1, 2))
    )
    code, out, err = _invoke(runner, tmp_path / "st", "import", str(path))
    assert code == 0 and out.startswith(b"imported 2 entries to ")
    code, out, err = _invoke(runner, tmp_path / "st", "import", str(path))
    assert (code, err) == (
        1,
        "Error: entry 1-0 of 's' is not above the last ID of 's' (2-0); nothing of its batch "
        "was written (--on-conflict skip leaves such entries out, --on-conflict new-id gives "
        "them new IDs)\n",
    )  # the options import has: not replay's --new-ids
    code, out, err = _invoke(runner, tmp_path / "st", "import", "--on-conflict", "skip", str(path))
    assert code == 0 and out.startswith(b"imported 0 entries to ")
    missing = tmp_path / "missing.jsonl"
    code, out, err = _invoke(runner, tmp_path / "st", "import", str(missing))
    assert (code, err) == (1, f"Error: cannot read {missing}: No such file or directory\n")
    code, out, err = _invoke(runner, tmp_path / "new", "import", str(missing))
    assert code == 1 and not (tmp_path / "new").exists()  # checked before a store is made


def test_import_of_nothing_is_one_line(tmp_path: Path) -> None:
    code, _, err = _invoke(make_runner(), tmp_path / "st", "import", stdin=b"\n")
    assert (code, err) == (1, "Error: no entries in stdin\n")


def _stderr_on_a_terminal(args: list[str], stdin: Any) -> str:
    """What ``rstore *args`` writes on stderr when stderr is a terminal (a pty)."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rstore_cli", *args],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=child,
    )
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, out
    return out.decode("utf-8", "replace")


def test_import_progress_bar_knows_the_total(tmp_path: Path) -> None:
    """A file's lines are counted first, so the bar has a total (and so a percentage and an
    ETA), from a named file or from stdin redirected from one."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b"".join(rstore.encode_entry(b"s", (i, 0), [b"k", b"v"]) + b"\n" for i in range(1, 8))
    )
    shown = _stderr_on_a_terminal(["--store", str(tmp_path / "a"), "import", str(path)], None)
    assert "0/7" in shown and "7/7" in shown
    with open(path, "rb") as stdin:
        shown = _stderr_on_a_terminal(["--store", str(tmp_path / "b"), "import"], stdin)
    assert "0/7" in shown and "7/7" in shown
