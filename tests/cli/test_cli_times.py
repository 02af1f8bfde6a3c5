"""Times wherever a position is read (range, tail, trim, pending, group, read-group); dates in
``inspect``; one JSON key style; one report shape for save and restore; file names that are not
UTF-8."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

import rstore

Run = Callable[..., Result]

HOUR_MS = 3_600_000


@pytest.fixture
def aged(store: rstore.Store) -> dict[str, bytes]:
    """A stream ``s`` with entries 3 h, 2 h and 30 min old, and one of now."""
    now = time.time_ns() // 1_000_000
    ids = {}
    for name, age in (("3h", 3 * HOUR_MS), ("2h", 2 * HOUR_MS), ("30m", HOUR_MS // 2), ("now", 0)):
        ids[name] = store.execute("XADD", "s", f"{now - age}-0", "age", name)
    return ids


def _ids(result: Result) -> list[bytes]:
    assert result.exit_code == 0, result.stderr
    return [line.split()[0].encode() for line in result.stdout.splitlines()]


def test_range_since_and_until(run: Run, aged: dict[str, bytes]) -> None:
    assert _ids(run("range", "s", "--since", "1h")) == [aged["30m"], aged["now"]]
    assert _ids(run("range", "s", "--since", "-1h")) == [aged["30m"], aged["now"]]
    assert _ids(run("range", "s", "1h")) == [aged["30m"], aged["now"]]  # START itself
    assert _ids(run("range", "s", "--until", "1h")) == [aged["3h"], aged["2h"]]
    assert _ids(run("range", "s", "--since", "150m", "--until", "1h")) == [aged["2h"]]
    assert _ids(run("range", "s", "--since", "2h30m", "--rev", "--count", "1")) == [aged["now"]]
    start = aged["2h"].decode().split("-")[0]
    iso = datetime.fromtimestamp(int(start) / 1000).isoformat(timespec="milliseconds")
    assert _ids(run("range", "s", "--since", iso)) == [aged["2h"], aged["30m"], aged["now"]]
    assert _ids(run("range", "s", "--since", f"({iso}")) == [aged["30m"], aged["now"]]
    conflict = run("range", "s", "-", "--since", "1h")
    assert conflict.exit_code == 2 and "START or --since" in conflict.stderr
    bad = run("range", "s", "--since", "2026-02-30")
    assert bad.exit_code == 2 and "not a valid date" in bad.stderr
    bad = run("range", "s", "--since", "yesterday")
    assert bad.exit_code == 2
    assert "'--since': yesterday is neither an ID nor a time: give an ID (" in bad.stderr


def test_trim_minid_and_pending_take_times(run: Run, aged: dict[str, bytes]) -> None:
    run("group", "create", "s", "g", "--id", "0")
    run("read-group", "s", "g", "c")
    rows = json.loads(run("pending", "s", "g", "--start", "1h", "--json").stdout)
    assert [row["id"].encode() for row in rows] == [aged["30m"], aged["now"]]
    rows = json.loads(run("pending", "s", "g", "--end", "(150m", "--json").stdout)
    assert [row["id"].encode() for row in rows] == [aged["3h"]]
    assert run("trim", "s", "--minid", "150m").stdout == "1\n"
    assert _ids(run("range", "s")) == [aged["2h"], aged["30m"], aged["now"]]


def test_groups_and_read_group_take_times(run: Run, aged: dict[str, bytes]) -> None:
    assert run("group", "create", "s", "recent", "--id", "1h").stdout == "OK\n"
    assert _ids(run("read-group", "s", "recent", "c")) == [aged["30m"], aged["now"]]
    assert run("group", "setid", "s", "recent", "150m").stdout == "OK\n"
    assert _ids(run("read-group", "s", "recent", "c")) == [aged["2h"], aged["30m"], aged["now"]]
    history = _ids(run("read-group", "s", "recent", "c", "--id", "1h"))
    assert history == [aged["30m"], aged["now"]]
    assert run("group", "setid", "s", "recent", "2026-13-01").exit_code == 2


# ----------------------------------------------------------------------------- idle times

DAY_MS = 24 * HOUR_MS


def test_durations_in_the_units_the_cli_reads() -> None:
    from rstore_cli.timefmt import duration

    cases = {
        0: "0ms",
        634: "634ms",
        1000: "1s",
        1634: "1s634ms",
        60_000: "1m",
        65_999: "1m5s",
        3_725_000: "1h2m",
        DAY_MS + HOUR_MS + 61_000: "1d1h",
        9 * DAY_MS + 59_000: "9d",
        -1500: "-1s500ms",
    }
    assert {ms: duration(ms) for ms in cases} == cases
    for ms in (1634, 65_000, DAY_MS + HOUR_MS):  # what it prints reads back as a time ago
        assert rstore.parse_time_ms(duration(ms), now_ms=10 * DAY_MS) == 10 * DAY_MS - ms


def test_pending_and_consumers_show_idle_times_and_info_full_dates(
    run: Run, store: rstore.Store
) -> None:
    """Idle times print as durations (``1d1h``), times as dates; ``--json`` keeps the ms."""
    now = time.time_ns() // 1_000_000
    delivered = now - (DAY_MS + HOUR_MS + 61_000)
    store.execute("XADD", "s", "1-0", "a", "1")
    store.execute("XGROUP", "CREATE", "s", "g", "0")
    store.execute("XGROUP", "CREATECONSUMER", "s", "g", "idle-one")
    store.execute("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", str(delivered), "FORCE")
    lines = run("pending", "s", "g", "--count", "10").stdout.splitlines()
    assert lines[1].split()[:3] == ["1-0", "c", "1d1h"]
    [row] = json.loads(run("pending", "s", "g", "--count", "10", "--json").stdout)
    assert row["idle"] >= now - delivered and isinstance(row["idle"], int)
    table = run("group", "consumers", "s", "g").stdout.splitlines()
    cells = {line.split()[0]: line.split()[1:] for line in table[1:]}
    assert all(re.fullmatch(r"\d+(ms|s)", cell) for cell in cells["c"][1:])  # claimed just now
    assert cells["idle-one"][2] == "never"
    rows = json.loads(run("group", "consumers", "s", "g", "--json").stdout)
    assert [r["inactive"] >= 0 for r in rows] == [True, False] and rows[1]["inactive"] == -1
    text = run("info", "s", "--full").stdout
    shown = datetime.fromtimestamp(delivered / 1000).astimezone()
    assert f"delivery-time: {shown:%Y-%m-%dT%H:%M:%S}.{delivered % 1000:03d}" in text
    assert "(1 d ago)" in text and "active-time: never" in text
    assert str(delivered) not in text  # no raw epoch milliseconds left
    full = json.loads(run("info", "s", "--full", "--json").stdout)
    assert full["groups"][0]["pending"][0]["delivery-time"] == delivered


# ----------------------------------------------------------------------------- inspect dates


def test_inspect_shows_dates_and_json_keeps_ms(
    run: Run, billing: rstore.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    billing.close()
    monkeypatch.setenv("TZ", "XYZ-02")  # local time is UTC+2
    time.tzset()
    try:
        text = run("inspect", "--key", "events").stdout
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    report = json.loads(run("inspect", "--key", "events", "--json").stdout)
    consumers = report["streams"][0]["groups"][0]["consumers"]
    found = re.findall(
        r"consumer (\w+): pending \d+, seen (\S+) \((.+?)\), active (\S+) \((.+?)\)", text
    )
    assert [name for name, *_ in found] == [c["name"] for c in consumers]
    for (_, seen, seen_ago, active, _), consumer in zip(found, consumers):
        assert seen.endswith("+02:00")
        assert datetime.fromisoformat(seen).timestamp() * 1000 == consumer["seen-time"]
        assert datetime.fromisoformat(active).timestamp() * 1000 == consumer["active-time"]
        assert re.fullmatch(r"\d+ (ms|s|min|h|d) ago|just now", seen_ago)
        assert isinstance(consumer["seen-time"], int) and consumer["seen-time"] > 1e12
    assert " ms" not in text.replace(" ms ago", "")  # no raw epoch milliseconds left


# ----------------------------------------------------------------------------- JSON shapes


def _keys(value: Any, skip: tuple[str, ...] = ("aux",)) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            if key not in skip:
                yield from _keys(inner, skip)
    elif isinstance(value, list):
        for inner in value:
            yield from _keys(inner, skip)


def test_one_json_key_style_and_one_report_for_save_and_restore(
    run: Run, billing: rstore.Store, tmp_path: Path
) -> None:
    billing.close()
    out = tmp_path / "snap.rdb"
    saved = json.loads(run("save", str(out), "--json").stdout)
    restored = json.loads(run("--store", str(tmp_path / "b"), "restore", str(out), "--json").stdout)
    every = run("--store", str(tmp_path / "c"), "restore", str(out), "--all-databases", "--json")
    restored_all = json.loads(every.stdout)
    assert saved.keys() == restored.keys() == restored_all.keys()
    for name, value in saved.items():  # a save writes every database, as --all-databases reads
        assert type(value) is type(restored_all[name]), name
    assert (saved["streams"], saved["entries"], saved["db"]) == (1, 3, None)
    assert saved["databases"]["0"] == restored_all["databases"]["0"]
    assert (restored["streams"], restored["entries"], restored["db"]) == (1, 3, 0)
    documents = [
        saved,
        restored,
        restored_all,
        json.loads(run("inspect", "--json", "--key", "events").stdout),
        json.loads(run("inspect", str(out), "--json", "--key", "events").stdout),
        json.loads(run("info", "events", "--full", "--json").stdout),
        json.loads(run("group", "list", "events", "--json").stdout),
        json.loads(run("pending", "events", "billing", "--start", "-", "--json").stdout),
    ]
    for document in documents:
        underscored = [key for key in _keys(document) if "_" in key]
        assert underscored == [], underscored


# ----------------------------------------------------------------------------- names


def test_file_names_that_are_not_utf8(run: Run, events: rstore.Store, tmp_path: Path) -> None:
    """Once "unexpected UnicodeEncodeError (a bug in rstore)", and save --json exited 1 after
    the save was done."""
    events.close()
    raw = os.fsencode(tmp_path) + b"/bad\xff.rdb"
    name = os.fsdecode(raw)
    as_base64 = {"base64": base64.b64encode(raw).decode()}
    shown = os.fsdecode(tmp_path) + "/bad\\xff.rdb"

    saved = run("save", name, "--json")
    assert (saved.exit_code, saved.stderr) == (0, "")
    assert json.loads(saved.stdout)["path"] == as_base64
    assert os.path.exists(raw)
    again = run("save", name)
    assert again.stderr == f"Error: {shown} exists; give --force to replace it\n"
    text = run("save", name, "--force")
    assert text.exit_code == 0 and f" to {shown}: RDB 11" in text.stdout

    other = str(tmp_path / "other")
    restored = run("--store", other, "restore", name, "--json")
    assert (restored.exit_code, json.loads(restored.stdout)["path"]) == (0, as_base64)
    assert f"of {shown}: RDB 11" in run("--store", str(tmp_path / "third"), "restore", name).stdout
    inspected = run("inspect", name)
    assert inspected.exit_code == 0 and inspected.stdout.startswith(f"{shown}: ")
    assert json.loads(run("inspect", name, "--json").stdout)["path"] == as_base64
    missing = run("range", "nope", "--from-dump", name)
    assert missing.stderr == f"Error: {shown} has no stream nope in database 0\n"
