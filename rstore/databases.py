"""The databases of a store (``SELECT``): where each lives and how they are numbered
(:meth:`rstore.Store.database`, :meth:`~rstore.Store.databases`, :meth:`~rstore.Store.save`
and :meth:`~rstore.Store.restore_file` use them).

Database 0 is the store itself; database N (1 to 15) the store in the directory
``<path>/db<N>``: an ordinary store any process may open, which ``rstore serve`` uses for
``SELECT N`` and which ``save`` / ``restore`` write under ``SELECTDB N``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rstore.model import DATABASES

if TYPE_CHECKING:
    pass

__all__ = ["DATABASES", "database_number", "database_path"]


def database_path(path: str | os.PathLike[str], n: int) -> str:
    """The directory of database ``n`` of the store at ``path``: ``path`` itself for 0,
    ``<path>/db<n>`` for 1 to 15 (:class:`ValueError` for any other number)."""
    root = os.fspath(path)
    return root if database_number(n) == 0 else os.path.join(root, f"db{n}")


def database_number(n: int) -> int:
    """``n`` when it numbers a database (0 to 15), else :class:`ValueError`."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < DATABASES:
        raise ValueError(f"databases are numbered 0 to {DATABASES - 1}, not {n!r}")
    return n
