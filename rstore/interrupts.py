"""Ctrl-C held while a piece of work that must not be cut in two runs.

A ``KeyboardInterrupt`` raised in the middle of some work (the signal handler runs between two
bytecodes, anywhere) leaves it half done, and the caller cannot tell which half: a write may
have committed and the report not yet counted it (:func:`rstore.run_replay` writing a batch,
``docs/replay.md``), a message may have been handled and not yet acknowledged
(:meth:`rstore.Consumer.run`, ``docs/queue.md``).  So while such work runs, a first Ctrl-C is
only noted and raised right after it; a second one stops at once.  This needs SIGINT's
handler, so it is done only in the main thread and while the handler is Python's default one
(a program that set its own keeps it, and gets its exceptions as before).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

__all__ = ["HeldInterrupts"]


class HeldInterrupts:
    """SIGINT's handler for the length of a loop (:meth:`install` .. :meth:`uninstall`):
    between :meth:`hold` and :meth:`release` one Ctrl-C is noted, and raised by ``release``;
    outside, and for a second one, ``KeyboardInterrupt`` is raised at once, as Python does."""

    def __init__(self) -> None:
        self.holding = False
        self.pending = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.holding and not self.pending:
            self.pending = True  # raised at the end of the write
            return
        raise KeyboardInterrupt

    def install(self) -> None:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def hold(self) -> None:
        """From here a first Ctrl-C is only noted."""
        self.holding = True

    def release(self) -> None:
        """Raise the Ctrl-C noted since :meth:`hold`, if any."""
        self.holding = False
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt
