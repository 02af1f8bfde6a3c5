"""What ``top`` and ``metrics`` watch: the store given by the global options (opened
read-only: watching never writes), or a server given by ``--url``; the options both take."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

import rstore

from .context import StoreOpener
from .params import to_bytes

__all__ = ["pattern_bytes", "watched", "watching_options"]

F = TypeVar("F", bound=Callable[..., Any])


def watching_options(f: F) -> F:
    """``--url`` and ``--match``."""
    f = click.option(
        "--match",
        "pattern",
        metavar="PATTERN",
        help="Only the streams whose name matches this glob (as KEYS: *, ?, [abc]).",
    )(f)
    return click.option(
        "--url",
        metavar="URL",
        help="Watch a server instead of the store: redis://HOST:PORT[/DB] or unix:///PATH "
        "(rstore serve, Valkey or Redis; needs redis-py: pip install 'rstore[redis]').",
    )(f)


@contextlib.contextmanager
def watched(opener: StoreOpener, url: str | None) -> Iterator[rstore.HealthSource]:
    """The source ``--url`` names, or the store opened read-only; closed on the way out."""
    if url is not None:  # the server's, whatever --store or $RSTORE_PATH say
        yield rstore.server_health_source(url)
        return
    with opener._replace(readonly=True).open(create=False) as store:
        source = rstore.store_health_source(store)
        yield dataclasses.replace(source, name=opener.shown)


def pattern_bytes(pattern: str | None) -> bytes | None:
    """``--match`` as bytes (any byte of the name: the shell's text, UTF-8)."""
    return None if pattern is None else to_bytes(pattern, param="--match")
