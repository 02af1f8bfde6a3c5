"""What every command shares: the store opener and the common option decorators.

A command receives the :class:`StoreOpener` built from the global option ``--store`` and
opens the store itself, saying whether it may create one::

    @click.command("len")
    @click.argument("stream")
    @json_option
    @pass_opener
    def len_command(opener: StoreOpener, stream: str, as_json: bool) -> None:
        with opener.open(create=False) as store:
            length = store.xlen(to_bytes(stream))
        ...

Errors are not handled here: :class:`rstore_cli.main.RStoreGroup` maps them once for all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

import rstore

__all__ = [
    "ERROR_PREFIX",
    "StoreOpener",
    "json_option",
    "pass_opener",
    "unescape_option",
]

F = TypeVar("F", bound=Callable[..., Any])

# Key in ``click.Context.meta``: the text printed before an rstore error's message.  ``exec``
# sets it to redis-cli's ``(error) ``; every other command keeps ``Error: ``.
ERROR_PREFIX = "rstore_cli.error_prefix"


@dataclass(frozen=True)
class StoreOpener:
    """The store the global options point at, opened on demand."""

    path: str

    def open(self, *, create: bool) -> rstore.Store:
        """Open the store.  With ``create=False`` a missing store raises
        :class:`rstore.StoreNotFoundError` (``no store at PATH``) instead of being created.

        Always ``sync=True``: a CLI call is one process and one write, so ``sync=False`` would
        save one fsync (about 0.5 ms) out of ~200 ms of process start-up (docs/cli.md)."""
        return rstore.Store(self.path, create=create)


pass_opener = click.make_pass_decorator(StoreOpener)


def json_option(f: F) -> F:
    """``--json``: machine-readable output (the mapping is in :mod:`rstore_cli.jsonout`)."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print JSON instead of text (strings that are not UTF-8 become "
        '{"base64": ...}; see docs/cli.md).',
    )(f)


def unescape_option(f: F) -> F:
    """``--unescape``: read redis-cli style backslash escapes in the arguments."""
    return click.option(
        "--unescape",
        "-e",
        is_flag=True,
        help="Read backslash escapes in the arguments as redis-cli does inside double quotes "
        "(\\xHH, \\n, \\t, \\\\ ...).  By default arguments are passed byte for byte.",
    )(f)
