"""``rstore report`` (:mod:`rstore.monitor.report`): the HTML says what the store holds -- bars
that count each minute's entries, the groups' numbers, names escaped --, the same from a store
and from an RDB file of it; a real headless Chromium draws it (bars of the right colour and
heights, with the network off); the CLI writes it and fails in one line."""

from __future__ import annotations

import inspect
import io
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rstore_cli.main import cli

import rstore
from rstore.monitor.charts import HISTORY_COLOUR
from rstore.monitor.report import bucket_width_ms, write_report

MINUTE = 60_000
#: The first minute of the known stream (a whole minute, UTC).
BASE = 1_700_000_040_000 // MINUTE * MINUTE
#: Entries per minute of ``events``: minute offset -> entries.
PER_MINUTE = {0: 3, 2: 7, 5: 1, 9: 12}
#: The report's time in the tests: an hour after the first entry.
NOW = BASE + 3_600_000
HOSTILE = b"<script>alert('x')</script>\xff"


def _event_ids() -> list[str]:
    """``events``' IDs: each minute's entries a second apart, two of them at the same ms."""
    ids = []
    for minute, count in sorted(PER_MINUTE.items()):
        for k in range(count):
            ms = BASE + minute * MINUTE + (k // 2) * 1000
            ids.append(f"{ms}-{k % 2}")
    return ids


def _fill_known(store: rstore.Store) -> None:
    """``events`` (23 entries at :func:`_event_ids`), groups ``billing`` (10 delivered to
    alice, the first 4 acknowledged: lag 13, 6 pending) and ``audit`` (at the end: lag 0);
    the hostile name with one entry."""
    for entry_id in _event_ids():
        store.execute("XADD", "events", entry_id, "n", entry_id)
    store.execute("XGROUP", "CREATE", "events", "billing", "0")
    store.execute("XGROUP", "CREATE", "events", "audit", "$")
    store.execute(
        "XREADGROUP", "GROUP", "billing", "alice", "COUNT", "10", "STREAMS", "events", ">"
    )
    store.execute("XACK", "events", "billing", *_event_ids()[:4])
    store.execute("XADD", HOSTILE, f"{BASE}-1", "a", "b")


@pytest.fixture
def known(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "store") as store:
        _fill_known(store)
        yield store


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the ``data-key`` of the stream
    section it is in (``None`` outside them); the tags seen, and the text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str], str | None]] = []
        self.section: str | None = None
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        if tag == "section" and "data-key" in values:
            self.section = values["data-key"]
        self.items.append((tag, values, self.section))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, cls: str, section: str | None = None) -> list[dict[str, str]]:
        """The attributes of each element of class ``cls`` (in that stream's section)."""
        return [
            a
            for _, a, where in self.items
            if cls in a.get("class", "").split() and (section is None or where == section)
        ]


def _report(out: Path, now_ms: int = NOW, **source: Any) -> Elements:
    write_report(out, now_ms=now_ms, **source)
    return Elements(out.read_text("utf-8"))


def _a_minute_from_now() -> int:
    """A report time after the fixtures' deliveries (which happen now, by the clock)."""
    return time.time_ns() // 1_000_000 + MINUTE


def _bars(page: Elements, key: str) -> dict[int, int]:
    return {int(b["data-start-ms"]): int(b["data-count"]) for b in page.find("bar", key)}


def _groups(page: Elements, key: str) -> dict[str, dict[str, str]]:
    rows = page.find("group", key)
    return {r["data-group"]: {k: v for k, v in r.items() if k.startswith("data-")} for r in rows}


# ----------------------------------------------------------------------------- the HTML


def test_bars_count_each_minutes_entries(known: rstore.Store, tmp_path: Path) -> None:
    page = _report(tmp_path / "r.html", store=known)
    expected = {BASE + minute * MINUTE: count for minute, count in PER_MINUTE.items()}
    assert _bars(page, "events") == expected
    (section,) = [a for t, a, _ in page.items if t == "section" and a.get("data-key") == "events"]
    assert section["data-bucket-ms"] == str(MINUTE)
    assert section["data-length"] == "23"
    cards = {c["data-name"]: c.get("data-value") for c in page.find("card", "events")}
    assert cards["length"] == "23" and cards["entries-added"] == "23"
    assert cards["first-entry"] == f"{BASE}-0"
    assert cards["last-entry"] == _event_ids()[-1]
    totals = {c["data-name"]: c["data-value"] for c in page.find("card", None) if "data-name" in c}
    assert totals["streams"] == "2" and totals["entries"] == "24" and totals["pending"] == "6"


def test_groups_numbers(known: rstore.Store, tmp_path: Path) -> None:
    later = _a_minute_from_now()
    page = _report(tmp_path / "r.html", later, store=known)
    ids = _event_ids()
    groups = _groups(page, "events")
    assert set(groups) == {"audit", "billing"}
    billing = groups["billing"]
    assert billing["data-lag"] == "13" and billing["data-pending"] == "6"
    assert billing["data-consumers"] == "1" and billing["data-entries-read"] == "10"
    assert billing["data-last-delivered"] == ids[9]
    assert billing["data-oldest-pending"] == ids[4]
    oldest_ms = int(ids[4].split("-")[0])
    assert billing["data-oldest-age-ms"] == str(later - oldest_ms)
    assert MINUTE <= int(billing["data-idle-ms"]) < MINUTE + 30_000  # delivered by the fixture
    audit = groups["audit"]
    assert audit["data-lag"] == "0" and audit["data-pending"] == "0"
    assert audit["data-consumers"] == "0" and "data-oldest-pending" not in audit
    bars = {
        (b["data-row"], b["data-measure"]): b["data-value"] for b in page.find("hbar", "events")
    }
    assert bars == {("billing", "lag"): "13", ("billing", "pending"): "6",
                    ("billing", "age"): str(later - oldest_ms)}  # fmt: skip


def test_a_hostile_stream_name_is_text(known: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    page = _report(out, store=known)
    html = out.read_text("utf-8")
    assert "<script" not in html and "script" not in page.tags
    shown = HOSTILE.decode("utf-8", "backslashreplace")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;\\xff" in html
    assert _bars(page, shown) == {BASE: 1}
    assert shown in "".join(page.text)


def test_a_store_and_its_rdb_file_give_the_same_report(known: rstore.Store, tmp_path: Path) -> None:
    dump = tmp_path / "dump.rdb"
    known.save(dump)
    later = _a_minute_from_now()
    from_store = _report(tmp_path / "store.html", later, store=known)
    from_file = _report(tmp_path / "file.html", later, rdb=dump)

    def facts(page: Elements) -> list[Any]:
        out: list[Any] = []
        for tag, attrs, _ in page.items:
            data = {k: v for k, v in attrs.items() if k.startswith("data-")}
            if data and tag != "time":
                out.append((tag, data))
        return out

    assert facts(from_store) == facts(from_file)
    assert len(from_store.find("bin")) >= 2
    assert "RDB file" in "".join(from_file.text) and "store" in "".join(from_store.text)


def test_a_long_history_has_wider_buckets_as_rates(tmp_path: Path) -> None:
    """Three days: 5-minute buckets, each bar still counting its entries, the chart in entries
    per minute and saying the width."""
    times = [BASE + i * 10 * MINUTE for i in range(3 * 24 * 6)]  # every 10 minutes
    with rstore.Store(tmp_path / "s") as store:
        for ms in times:
            store.execute("XADD", "long", f"{ms}-0", "n", "1")
        page = _report(tmp_path / "r.html", store=store)
    width = bucket_width_ms(times[0], times[-1])
    assert width == 5 * MINUTE
    assert _bars(page, "long") == {ms // width * width: 1 for ms in times}  # epoch-aligned
    assert "bucket: 5 min" in "".join(page.text)
    assert "0.2" in "".join(page.text)  # the y axis: 1 entry per 5 minutes


def test_bucket_widths() -> None:
    assert bucket_width_ms(BASE, BASE + 999 * MINUTE) == MINUTE
    assert bucket_width_ms(BASE, BASE + 1000 * MINUTE) == 2 * MINUTE
    assert bucket_width_ms(0, 10 * 365 * 1440 * MINUTE) % (10080 * MINUTE) == 0
    huge = bucket_width_ms(0, (1 << 64) - 1)
    assert ((1 << 64) - 1) // huge < 1000


def test_ids_at_the_ends_of_their_range_and_empty_streams(tmp_path: Path) -> None:
    """IDs from 0-1 to the largest: every entry in a bar, times past year 9999 as ms; streams
    without entries (all deleted; made by a group) say so."""
    top = (1 << 64) - 1
    with rstore.Store(tmp_path / "s") as store:
        for entry_id in ("0-1", f"{BASE}-0", f"{top}-0"):
            store.execute("XADD", "wide", entry_id, "n", "1")
        store.execute("XADD", "emptied", "5-0", "n", "1")
        store.execute("XDEL", "emptied", "5-0")
        store.execute("XGROUP", "CREATE", "made", "g", "$", "MKSTREAM")
        page = _report(tmp_path / "r.html", store=store)
    assert sum(_bars(page, "wide").values()) == 3
    text = "".join(page.text)
    assert f"ms {top}" in text and "1970-01-01" in text
    assert not page.find("bar", "emptied") and not page.find("bar", "made")
    assert text.count("No entries.") == 2
    assert _groups(page, "made")["g"]["data-lag"] == "0"


def test_streams_and_sources(known: rstore.Store, tmp_path: Path) -> None:
    """A text stream and a binary stream get the same page as a file; one source, not two."""
    text, binary = io.StringIO(), io.BytesIO()
    for out in (text, binary, tmp_path / "r.html"):
        summary = write_report(out, store=known, now_ms=NOW)
    assert text.getvalue().encode() == binary.getvalue() == (tmp_path / "r.html").read_bytes()
    assert summary.bytes == len(binary.getvalue())
    with pytest.raises(ValueError, match="give one of store= and rdb="):
        write_report(tmp_path / "x.html", store=known, rdb=tmp_path / "dump.rdb")
    with pytest.raises(ValueError):
        write_report(tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_an_empty_store_says_there_are_no_streams(tmp_path: Path) -> None:
    with rstore.Store(tmp_path / "s") as store:
        summary = write_report(tmp_path / "r.html", store=store)
    page = Elements((tmp_path / "r.html").read_text("utf-8"))
    assert "No streams: there are no streams in the store." in "".join(page.text)
    assert summary.streams == 0 and summary.bytes == (tmp_path / "r.html").stat().st_size
    assert not page.find("stream")


def test_match_progress_and_summary(known: rstore.Store, tmp_path: Path) -> None:
    calls: list[tuple[int, int | None]] = []
    summary = write_report(
        tmp_path / "r.html", store=known, pattern=b"ev*", progress=lambda d, t: calls.append((d, t))
    )
    page = Elements((tmp_path / "r.html").read_text("utf-8"))
    assert [a["data-key"] for t, a, _ in page.items if t == "section" and "data-key" in a] == [
        "events"
    ]
    assert calls[-1] == (23, 23)
    assert (summary.streams, summary.entries, summary.groups, summary.pending) == (1, 23, 2, 6)


def test_the_page_fetches_nothing(known: rstore.Store, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    page = _report(out, store=known)
    html = out.read_text("utf-8")
    assert "default-src 'none'" in html  # the browser refuses any fetch
    assert not {"script", "link", "img", "iframe", "object"} & page.tags
    links = [a["href"] for _, a, _ in page.items if "href" in a]
    assert all(link.startswith("#") for link in links)
    assert "url(" not in html and " src=" not in html
    assert "://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


# ----------------------------------------------------------------------------- a real browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _screenshot(page: Path, png: Path, profile: Path) -> None:
    """Chromium draws ``page`` into ``png``, with every host name unresolvable and a proxy
    that refuses, so that nothing could have come from the network; killed after 60 s."""
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9", f"--user-data-dir={profile}", "--window-size=1200,1600",
        "--hide-scrollbars", f"--screenshot={png}", page.as_uri(),
    ]  # fmt: skip
    with subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    ) as browser:
        try:
            _, err = browser.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            err = b"(timed out after 60 s)"
        finally:
            if browser.poll() is None:
                os.killpg(browser.pid, signal.SIGKILL)  # the browser and its helpers
                browser.wait()
    assert png.exists(), f"chromium wrote no screenshot: {err.decode(errors='replace')[-2000:]}"


def test_chromium_draws_the_bars(tmp_path: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("no chromium here (CI installs it: .ci/install-browser)")
    from PIL import Image

    with rstore.Store(tmp_path / "s") as store:  # minute i holds i + 1 entries
        for minute in range(10):
            for k in range(minute + 1):
                store.execute("XADD", "rising", f"{BASE + minute * MINUTE + k}-0", "n", "1")
        store.execute("XGROUP", "CREATE", "rising", "slow", "0")
        write_report(tmp_path / "r.html", store=store, now_ms=NOW)
    _screenshot(tmp_path / "r.html", tmp_path / "r.png", tmp_path / "profile")
    with Image.open(tmp_path / "r.png") as image:
        shot = image.convert("RGB")
    width, height = shot.size
    pixels = shot.load()
    assert pixels is not None
    assert len(shot.getcolors(width * height) or []) > 50, "the page looks blank"
    blue = tuple(int(HISTORY_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    xs = [x for x in range(width) for y in range(0, height, 4) if pixels[x, y] == blue]
    assert xs, "no bar of the history's colour on the page"
    left, right = min(xs), max(xs)
    assert right - left > 900  # ten bars across the plot
    heights = []
    for i in range(10):  # the middle column of each bar: its height in pixels
        x = left + (right - left) * (2 * i + 1) // 20
        heights.append(sum(pixels[x, y] == blue for y in range(height)))
    assert heights == sorted(heights) and heights[0] > 0
    assert all(abs(h - heights[9] * (i + 1) / 10) <= 2 for i, h in enumerate(heights)), heights
    lag = (0xD9, 0x82, 0x2B)
    assert any(pixels[x, y] == lag for x in range(width) for y in range(0, height, 2))


# ----------------------------------------------------------------------------- the CLI


def _run(*args: str) -> Result:
    """``rstore *args`` in-process, stderr apart from stdout (click 8.1 mixes them unless told)."""
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    else:
        runner = CliRunner()
    return runner.invoke(cli, list(args), catch_exceptions=False)


def test_cli_writes_the_report(
    known: rstore.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known.close()
    monkeypatch.chdir(tmp_path)
    result = _run("--store", "store", "report")
    assert result.exit_code == 0, result.stderr
    written = tmp_path / "rstore-report.html"
    assert result.stdout.startswith("wrote rstore-report.html (")
    assert result.stdout.endswith("2 streams, 24 entries, 2 consumer groups\n")
    assert _bars(Elements(written.read_text("utf-8")), "events")[BASE] == 3
    result = _run("--store", "store", "report", "-o", "-", "--match", "events")
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")
    assert _groups(Elements(result.stdout), "events")["billing"]["data-lag"] == "13"


def test_cli_json_and_rdb(known: rstore.Store, tmp_path: Path) -> None:
    dump = tmp_path / "dump.rdb"
    known.save(dump)
    known.close()
    out = tmp_path / "from-dump.html"
    result = _run("report", "--rdb", str(dump), "-o", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["path"] == str(out) and summary["bytes"] == out.stat().st_size
    assert (summary["streams"], summary["entries"], summary["pending"]) == (2, 24, 6)
    assert summary["source"] == f"RDB file {dump}"
    assert _bars(Elements(out.read_text("utf-8")), "events")[BASE + 9 * MINUTE] == 12
    result = _run("report", "--rdb", str(dump), "-o", "-", "--json")
    assert result.exit_code == 2 and "give -o FILE" in result.stderr


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = _run("--store", str(tmp_path / "nothing"), "report", "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: no store at {tmp_path / 'nothing'}\n"
    missing = tmp_path / "missing.rdb"
    result = _run("report", "--rdb", str(missing), "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot read {missing}: No such file or directory\n"
    assert not out.exists() and os.listdir(tmp_path) == []
