"""redis-py's XADD methods (the command: :mod:`rstore.commands.append`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.delete import check_ref_policy
from rstore.errors import DataError

__all__ = ["AppendCommands"]

#: The argv of an XADD without options built and encoded in C (``rstore/client/_argv.c``), or
#: ``None`` when it is not built or ``RSTORE_NO_SPEEDUPS`` turns the accelerators off.
_c_xadd_argv: Callable[[Any, Any, Any], list[bytes] | None] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.client import _argv  # type: ignore[attr-defined]
    except ImportError:  # not built: built in Python
        pass
    else:
        _c_xadd_argv = _argv.xadd_argv

_FIELDS_NEEDED = "XADD fields must be a non-empty dict"  # redis-py's DataError text


class AppendCommands(ClientBase):
    """XADD, as redis-py 8.1's ``Redis`` has them."""

    def xadd(
        self,
        name: Any,
        fields: Mapping[Any, Any],
        id: Any = "*",
        maxlen: int | None = None,
        approximate: bool = True,
        nomkstream: bool = False,
        minid: Any = None,
        limit: int | None = None,
        ref_policy: str | None = None,
    ) -> Any:
        """Append an entry; returns its ID (``bytes``), or ``None`` with ``nomkstream`` on a
        missing stream.  ``ref_policy`` (``KEEPREF | DELREF | ACKED``, Redis 8.2) applies to
        the trimming; with ``approximate`` (the default) ``DELREF`` and ``ACKED`` trim
        nothing, as in Redis 8.2."""
        plain = maxlen is None and minid is None and limit is None and ref_policy is None
        if plain and not nomkstream:
            # no options (pipelines of plain XADDs): the same argv, built in one step (in C
            # when it is built and every argument is str or bytes)
            argv = None if _c_xadd_argv is None else _c_xadd_argv(name, id, fields)
            if argv is not None:
                return self._command(argv)
            if not isinstance(fields, dict) or len(fields) == 0:
                raise DataError(_FIELDS_NEEDED)
            argv = [b"XADD", name, id]
            for pair in fields.items():
                argv += pair
            return self._command(argv)
        pieces: list[Any] = []
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ```maxlen``` or ```minid``` may be specified")
        if ref_policy is not None:
            check_ref_policy("XADD", ref_policy)
        if nomkstream:
            pieces.append(b"NOMKSTREAM")
        if ref_policy is not None:
            pieces.append(ref_policy)
        if maxlen is not None:
            if not isinstance(maxlen, int) or maxlen < 0:
                raise DataError("XADD maxlen must be non-negative integer")
            pieces.append(b"MAXLEN")
            if approximate:
                pieces.append(b"~")
            pieces.append(str(maxlen))
        if minid is not None:
            pieces.append(b"MINID")
            if approximate:
                pieces.append(b"~")
            pieces.append(minid)
        if limit is not None:
            pieces.extend([b"LIMIT", limit])
        pieces.append(id)
        if not isinstance(fields, dict) or len(fields) == 0:
            raise DataError(_FIELDS_NEEDED)
        for pair in fields.items():
            pieces.extend(pair)
        return self._command([b"XADD", name, *pieces])
