"""Progress bars on stderr for long commands (save, restore, inspect, upgrade)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

__all__ = ["Progress", "progress_option", "progress_reporter"]

F = TypeVar("F", bound=Callable[..., Any])

#: ``progress(done, total)``, as the library's long operations call it.
Progress = Callable[[int, int | None], None]


def progress_option(f: F) -> F:
    """``--progress/--no-progress``: a progress bar on stderr; by default only on a terminal."""
    return click.option(
        "--progress/--no-progress",
        "progress",
        default=None,
        help="Show a progress bar on stderr (default: when stderr is a terminal).",
    )(f)


@contextmanager
def progress_reporter(label: str, wanted: bool | None) -> Iterator[Progress | None]:
    """A callback ``(done, total)`` that drives a progress bar on stderr, or ``None``."""
    if wanted is None:
        wanted = sys.stderr.isatty()
    if not wanted:
        yield None
        return
    bar: Any = None
    shown = 0

    def report(done: int, total: int | None) -> None:
        nonlocal bar, shown
        if not total:  # unknown size (a pipe) or nothing to do: no bar to draw
            return
        if bar is None:
            bar = click.progressbar(length=total or 0, label=label, file=sys.stderr)
            bar.__enter__()
        if bar.length != total:
            bar.length = total
        bar.update(done - shown)
        shown = done

    try:
        yield report
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
