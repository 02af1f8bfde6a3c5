"""``rstore top`` on a terminal: a full-screen view (curses) refreshed every interval, with keys
to change the order (s), filter by name (/) and quit (q, Esc or ^C)."""

from __future__ import annotations

import contextlib
import curses
import time
from typing import TYPE_CHECKING, Any

import rstore

from .top_view import SORT_KEYS, Frame, frame_lines

if TYPE_CHECKING:
    from .top import Sampler

__all__ = ["run_screen"]

_KEY_WAIT_MS = 100  # how often the loop looks for keys between refreshes
_ESC = 27
_ENTER = (10, 13, curses.KEY_ENTER)
_BACKSPACE = (8, 127, curses.KEY_BACKSPACE)


class _Screen:
    """The view's state: the frame shown, the order, the filter (and one being typed), the
    last error reading the source."""

    def __init__(self, window: Any, sampler: Sampler, sort: str, interval: float) -> None:
        self.window = window
        self.sampler = sampler
        self.sort = sort
        self.interval = interval
        self.text_filter = ""
        self.typing: str | None = None  # the filter being typed after "/"
        self.frame: Frame | None = None
        self.error = ""

    def refresh_frame(self) -> None:
        try:
            self.frame = self.sampler.frame(self.sort, self.text_filter)
            self.error = ""
        except rstore.RStoreError as exc:  # a server gone: say so, keep the last frame
            self.error = f"{exc} (trying again)"

    def key(self, key: int) -> bool:
        """Act on one key; ``False`` to quit."""
        if self.typing is not None:
            self._type(key)
        elif key in (ord("q"), ord("Q"), _ESC):
            return False
        elif key == ord("s"):
            self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
            self._reframe()
        elif key == ord("/"):
            self.typing = self.text_filter
        return True

    def _type(self, key: int) -> None:
        assert self.typing is not None
        if key in _ENTER:
            self.text_filter, self.typing = self.typing, None
            self._reframe()
        elif key == _ESC:
            self.typing = None
        elif key in _BACKSPACE:
            self.typing = self.typing[:-1]
        elif 32 <= key < 127:
            self.typing += chr(key)

    def _reframe(self) -> None:
        if self.frame is not None:
            self.frame = self.frame.shown_as(self.sort, self.text_filter)

    def draw(self) -> None:
        window = self.window
        window.erase()
        height, width = window.getmaxyx()
        lines = frame_lines(self.frame, keys_help=True) if self.frame else ["sampling..."]
        for row, line in enumerate(lines[: max(height - 1, 0)]):
            style = curses.A_BOLD if row in (0, 3) else curses.A_NORMAL
            with contextlib.suppress(curses.error):  # a terminal narrower than the line
                window.addnstr(row, 0, line, max(width - 1, 0), style)
        bottom = f"filter: {self.typing}_" if self.typing is not None else self.error
        if bottom and height > 1:
            with contextlib.suppress(curses.error):
                window.addnstr(height - 1, 0, bottom, max(width - 1, 0), curses.A_REVERSE)
        window.refresh()


def run_screen(sampler: Sampler, sort: str, interval: float) -> None:
    """Run the view until q, Esc or ^C (the terminal is restored however it ends)."""
    curses.wrapper(_loop, sampler, sort, interval)


def _loop(window: Any, sampler: Sampler, sort: str, interval: float) -> None:
    with contextlib.suppress(curses.error):
        curses.curs_set(0)
    window.timeout(_KEY_WAIT_MS)
    screen = _Screen(window, sampler, sort, interval)
    due = time.monotonic()
    while True:
        if time.monotonic() >= due:
            screen.refresh_frame()
            due = max(due + interval, time.monotonic())
        screen.draw()
        key = window.getch()
        if key != -1 and not screen.key(key):
            return
