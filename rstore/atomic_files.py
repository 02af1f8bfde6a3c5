"""Files written whole or not at all: :func:`atomic_file`.

The file is written under a temporary name in its own directory (so the rename never crosses
a file system), flushed to disk, then renamed over the target: a reader sees the old file or
the complete new one, and a crash or an error leaves no half-written file under the name (the
temporary is removed).  The new file gets the mode any new file gets, 0666 less the umask,
like a file a shell redirection creates.  An :class:`OSError` names the target, never the
temporary.  Used for replay bookmark files, ``rstore export -o`` and ``rstore dump -o``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["atomic_file"]


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file open for writing that replaces ``path`` once the block ends without an
    exception (see the module docstring)."""
    target = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(target))
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, target) from None
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError) and exc.filename in (None, temp):
            raise OSError(exc.errno, exc.strerror or str(exc), target) from exc
        raise
