"""The ``rstore`` console script.

It imports nothing at first: the CLI and the store are imported inside :func:`main`, so a
Ctrl-C while Python loads them (the first tenths of a second of every call) ends the process
with status 130 and no traceback, like a Ctrl-C at any later moment.
"""

from __future__ import annotations

import sys

__all__ = ["EXIT_INTERRUPTED", "main"]

#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def main() -> None:
    """Entry point of the ``rstore`` script and of ``python -m rstore_cli``."""
    try:
        from .main import main as run  # noqa: PLC0415 (inside the Ctrl-C guard)

        run()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
