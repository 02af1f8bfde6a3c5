"""Public names that were renamed: the old name keeps working for one release, with a
``DeprecationWarning`` that names the new one (DEVELOPERS.md, "Renaming a public name").

:func:`renamed_keywords` renames keyword arguments of a function or method (giving both the
old and the new name is a ``TypeError``); :func:`renamed_alias` keeps a function or method
under its old name.  A module-level name of ``rstore`` keeps its old name through the table
``_RENAMED`` of ``rstore/__init__.py``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["renamed_alias", "renamed_keywords"]

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keywords(**renamed: str) -> Callable[[F], F]:
    """A decorator: the function also takes each keyword argument ``old`` of ``renamed``
    (``old="new"``) as the argument ``new``, with a ``DeprecationWarning`` pointing at the
    caller's line; a call giving both ``old`` and ``new`` raises ``TypeError``.  The
    function's signature, and so type checkers and ``help()``, show the new names only."""

    def decorate(function: F) -> F:
        name = function.__qualname__

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{name}() got both {new}= and {old}= (its deprecated name): "
                        f"give {new}= only"
                    )
                warnings.warn(
                    f"{name}(): {old}= is deprecated, use {new}= (the same argument)",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return cast(F, wrapper)

    return decorate


def renamed_alias(function: F, old: str, new: str) -> F:
    """``function`` under its old name ``old``: the same call, with a ``DeprecationWarning``
    that says to use ``new`` (both as the user writes them, e.g. ``"Store.checkpoint"``)."""

    @functools.wraps(function)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old} is deprecated, use {new} (the same)", DeprecationWarning, stacklevel=2
        )
        return function(*args, **kwargs)

    alias.__name__, alias.__qualname__ = old.rsplit(".", 1)[-1], old
    alias.__doc__ = f"Deprecated: the name of :meth:`{new}` before it was renamed."
    return cast(F, alias)
