"""The user's files: errors that name them, and outputs that appear whole or not at all.

An :class:`OSError` about a file the user named becomes one line saying what could not be done
to which file, and why, in words: ``cannot read dump.rdb: No such file or directory``
(:func:`file_errors`); what the library raises already names the user's file, never a
temporary one.  :func:`atomic_output` writes a file whole or not at all
(:func:`rstore.atomic_file`: a temporary name in its directory, renamed once complete, with
the mode any new file gets, 0666 less the umask, as ``save`` writes its file).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

import click

import rstore

from .format import show_path

__all__ = ["atomic_output", "file_errors", "os_error_text"]


def os_error_text(exc: OSError) -> str:
    """``PATH: reason`` (``reason`` alone without a file name): an :class:`OSError` in words,
    without ``[Errno N]``."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"{show_path(os.fsdecode(exc.filename))}: {reason}"


@contextlib.contextmanager
def file_errors(path: str, verb: str) -> Iterator[None]:
    """An :class:`OSError` about ``path`` (or about no file, such as a read error) raised
    inside as ``cannot <verb> PATH: reason``; one about another file is left alone."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None and os.path.abspath(os.fsdecode(exc.filename)) != (
            os.path.abspath(path)
        ):
            raise
        reason = exc.strerror or str(exc)
        raise click.ClickException(f"cannot {verb} {show_path(path)}: {reason}") from None


@contextlib.contextmanager
def atomic_output(path: str | None, force: bool) -> Iterator[BinaryIO]:
    """Where output goes: stdout (``None`` or ``-``); a regular FILE written under a temporary
    name in its directory, fsynced and renamed once complete (removed on failure); or, as it
    is, a file that is no regular file (``/dev/null``, a FIFO).  An existing regular FILE is
    refused unless ``force``."""
    if path is None or path == "-":
        sys.stdout.flush()
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    if os.path.exists(path) and not os.path.isfile(path):
        with file_errors(path, "write"), open(path, "wb") as special:
            yield special
        return
    if os.path.exists(path) and not force:
        raise click.ClickException(f"{show_path(path)} exists; give --force to replace it")
    with file_errors(path, "write"), rstore.atomic_file(path) as out:
        yield out
