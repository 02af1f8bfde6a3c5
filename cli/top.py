"""``top``: a live view of a queue's health -- per stream its length, entries in per second and
last entry's age; per group its lag, pending entries, deliveries and acknowledgements per
second, oldest pending entry's idle time and consumers alive -- refreshed every interval,
worst first.  On a terminal a full-screen view with keys; otherwise frames one after another
(as ``top -b``); ``--once`` one frame, ``--json`` JSON objects."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time

import click

import rstore

from .context import StoreOpener, json_option, pass_opener
from .top_view import SORT_KEYS, Frame, frame_json, frame_lines
from .watching import pattern_bytes, watched, watching_options

__all__ = ["COMMANDS", "Sampler"]


class Sampler:
    """Samples one source again and again; each :meth:`frame` holds the rates since the
    previous sample."""

    def __init__(self, source: rstore.HealthSource, pattern: bytes | None) -> None:
        # top shows neither a server's INFO nor the store's files: not read at each refresh
        self._source = dataclasses.replace(source, info=None, usage=None)
        self._pattern = pattern
        self._last: rstore.HealthSample | None = None

    def frame(self, sort: str, text_filter: str = "") -> Frame:
        """A new sample as a frame; raises :class:`rstore.RStoreError` when the source
        cannot be read."""
        started = time.perf_counter()
        sample = rstore.sample_health(self._source, self._pattern)
        took_ms = (time.perf_counter() - started) * 1000
        last, self._last = self._last, sample
        if last is None:
            return Frame(self._source.name, sample, None, None, took_ms, sort, text_filter)
        rates = rstore.health_rates(last, sample)
        over_ms = sample.now_ms - last.now_ms
        return Frame(self._source.name, sample, rates, over_ms, took_ms, sort, text_filter)


@click.command("top", short_help="Watch streams and groups live: lag, rates, backlog.")
@watching_options
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 3600),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between refreshes (and between the two samples of --once).",
)
@click.option(
    "--once",
    is_flag=True,
    help="Print one frame and exit: two samples --interval apart, for the rates.",
)
@click.option(
    "--sort",
    type=click.Choice(SORT_KEYS),
    default="lag",
    show_default=True,
    help="Worst first by the groups' lag, pending entries, oldest pending idle time, the "
    "streams' entries in per second, or by name.",
)
@json_option
@pass_opener
def top(
    opener: StoreOpener,
    url: str | None,
    pattern: str | None,
    interval: float,
    once: bool,
    sort: str,
    as_json: bool,
) -> None:
    """Watch the store's streams and consumer groups live: per stream its length, entries in
    per second (IN/S) and the last entry's age (LAST); per group its lag, pending entries,
    entries delivered and acknowledged per second, the oldest pending entry's idle time and
    its consumers alive (read in the last minute) of all.  Worst first.  It only reads: the
    store is opened read-only, and each refresh is a few read commands per stream (the title
    shows how long the last sample took).

    On a terminal: s changes the order, / filters by stream or group name (Enter applies,
    Esc cancels), q quits.  Elsewhere, or with --json, it prints a frame (a JSON object per
    line) every --interval until ^C.

    \b
    Examples:
      rstore top
      rstore top --once --sort pending
      rstore top --json --interval 5 --match 'orders:*'
      rstore top --url redis://localhost:6379
    """
    with watched(opener, url) as source:
        sampler = Sampler(source, pattern_bytes(pattern))
        if once:
            sampler.frame(sort)
            time.sleep(interval)
            _print(sampler.frame(sort), as_json, interval)
        elif as_json or not sys.stdout.isatty():
            _frames(sampler, sort, interval, as_json)
        else:
            from .top_screen import run_screen  # noqa: PLC0415 - curses, on a terminal only

            run_screen(sampler, sort, interval)


def _print(frame: Frame, as_json: bool, interval: float) -> None:
    if as_json:
        click.echo(json.dumps(frame_json(frame, interval), ensure_ascii=False))
    else:
        click.echo("\n".join(frame_lines(frame)))
    with contextlib.suppress(OSError):
        sys.stdout.flush()


def _frames(sampler: Sampler, sort: str, interval: float, as_json: bool) -> None:
    """A frame every ``interval`` until ^C (frames between blank lines); a source that
    cannot be read for a while: a line on stderr each time, and the next try."""
    deadline = time.monotonic()
    first = True
    while True:
        try:
            frame = sampler.frame(sort)
        except rstore.RStoreError as exc:
            click.echo(f"rstore top: {exc}", err=True)
        else:
            if not first and not as_json:
                click.echo("")
            _print(frame, as_json, interval)
            first = False
        deadline = max(deadline + interval, time.monotonic())
        time.sleep(deadline - time.monotonic())


COMMANDS = [top]
