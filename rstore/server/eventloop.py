"""The event loop ``rstore serve`` runs on: uvloop's (libuv's loop and transports, in C) when
it is installed, else asyncio's own.

uvloop does in C what asyncio's selector loop does in Python for every request -- waiting for
sockets, reading, buffering and writing replies -- which is about a sixth of the server's CPU
per request (docs/benchmarks.md, "The server against issue 25's throughput targets").  Both
run the same code and give the same replies.  ``RSTORE_EVENT_LOOP=asyncio`` picks asyncio's
loop where uvloop is installed (to compare the two, or to rule uvloop out), and
``RSTORE_NO_SPEEDUPS=1`` (every C accelerator off) does too, which is how the tests keep the
asyncio path covered.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Coroutine
from typing import Any

__all__ = ["LOOP_NAME", "run"]


def _uvloop() -> Any:
    if os.environ.get("RSTORE_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    if os.environ.get("RSTORE_EVENT_LOOP", "") == "asyncio":
        return None
    try:
        return importlib.import_module("uvloop")
    except ImportError:
        return None


_UVLOOP = _uvloop()

#: which loop :func:`run` uses, as INFO server's ``multiplexing_api`` names it
LOOP_NAME = "uvloop" if _UVLOOP is not None else "asyncio"


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` to its end on a new event loop (see the module docstring)."""
    if _UVLOOP is not None:
        _UVLOOP.run(main)
    else:
        asyncio.run(main)
