"""redis-py's XADD methods (the command: :mod:`rstore.commands.append`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from rstore.client.base import ClientBase
from rstore.client.delete import check_ref_policy
from rstore.client.shapes import status_reply
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
    """XADD and XCFGSET, as redis-py 8.1's ``Redis`` has them."""

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
        idmpauto: Any = None,
        idmp: tuple[Any, Any] | None = None,
    ) -> Any:
        """Append an entry; returns its ID (``bytes``), or ``None`` with ``nomkstream`` on a
        missing stream.  ``ref_policy`` (``KEEPREF | DELREF | ACKED``, Redis 8.2) applies to
        the trimming; with ``approximate`` (the default) ``DELREF`` and ``ACKED`` trim
        nothing, as in Redis 8.2.  ``idmp=(producer, iid)`` or ``idmpauto=producer`` (Redis
        8.6, only with ``id="*"``): an entry the producer already added with that idempotent
        ID (given, or derived from the fields) is not added again; its ID is returned."""
        plain = maxlen is None and minid is None and limit is None and ref_policy is None
        if plain and not nomkstream and idmpauto is None and idmp is None:
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
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ```maxlen``` or ```minid``` may be specified")
        pieces = _producer_options(id, nomkstream, ref_policy, idmpauto, idmp)
        pieces += _trim_options(maxlen, approximate, minid, limit)
        pieces.append(id)
        if not isinstance(fields, dict) or len(fields) == 0:
            raise DataError(_FIELDS_NEEDED)
        for pair in fields.items():
            pieces.extend(pair)
        return self._command([b"XADD", name, *pieces])

    def xcfgset(
        self, name: Any, idmp_duration: int | None = None, idmp_maxsize: int | None = None
    ) -> Any:
        """A stream's idempotency settings (Redis 8.6): seconds an idempotent ID is remembered,
        and how many are remembered per producer; a change forgets what was remembered.  The
        bounds checked here are redis-py 8.1's (1-300 s, 1-1,000,000); the store's own are
        1-86400 s and 1-10000.  ``b"OK"`` (``"OK"`` with ``decode_responses``)."""
        if idmp_duration is None and idmp_maxsize is None:
            raise DataError("XCFGSET requires at least one of idmp_duration or idmp_maxsize")
        pieces: list[Any] = [b"XCFGSET", name]
        if idmp_duration is not None:
            if not isinstance(idmp_duration, int) or not 1 <= idmp_duration <= 300:
                raise DataError("XCFGSET idmp_duration must be an integer between 1 and 300")
            pieces += [b"IDMP-DURATION", idmp_duration]
        if idmp_maxsize is not None:
            if not isinstance(idmp_maxsize, int) or not 1 <= idmp_maxsize <= 1_000_000:
                raise DataError("XCFGSET idmp_maxsize must be an integer between 1 and 1,000,000")
            pieces += [b"IDMP-MAXSIZE", idmp_maxsize]
        return self._command(pieces, status_reply)


def _producer_options(
    id: Any, nomkstream: bool, ref_policy: str | None, idmpauto: Any, idmp: Any
) -> list[Any]:
    """XADD's NOMKSTREAM, reference policy and IDMP / IDMPAUTO, checked as redis-py does."""
    if idmpauto is not None and idmp is not None:
        raise DataError("Only one of ```idmpauto``` or ```idmp``` may be specified")
    if (idmpauto is not None or idmp is not None) and id != "*":
        raise DataError("IDMPAUTO and IDMP can only be used with id='*'")
    if ref_policy is not None:
        check_ref_policy("XADD", ref_policy)
    pieces: list[Any] = [b"NOMKSTREAM"] if nomkstream else []
    if ref_policy is not None:
        pieces.append(ref_policy)
    if idmpauto is not None:
        pieces += [b"IDMPAUTO", idmpauto]
    if idmp is not None:
        if not isinstance(idmp, tuple) or len(idmp) != 2:
            raise DataError("XADD idmp must be a tuple of (producer_id, idempotent_id)")
        pieces += [b"IDMP", idmp[0], idmp[1]]
    return pieces


def _trim_options(
    maxlen: int | None, approximate: bool, minid: Any, limit: int | None
) -> list[Any]:
    """XADD's MAXLEN / MINID and LIMIT, checked as redis-py does."""
    pieces: list[Any] = []
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
    return pieces
