"""redis-py's XTRIM methods (the command: :mod:`rstore.commands.trim`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.delete import check_ref_policy
from rstore.errors import DataError

__all__ = ["TrimCommands"]


class TrimCommands(ClientBase):
    """XTRIM, as redis-py 8.1's ``Redis`` has them."""

    def xtrim(
        self,
        name: Any,
        maxlen: int | None = None,
        approximate: bool = True,
        minid: Any = None,
        limit: int | None = None,
        ref_policy: str | None = None,
    ) -> Any:
        """Trim by ``maxlen`` or ``minid``; the number of entries removed.  ``ref_policy``
        (``KEEPREF | DELREF | ACKED``, Redis 8.2): what becomes of the groups' references; with
        ``approximate`` (the default) ``DELREF`` and ``ACKED`` trim nothing, as in Redis 8.2."""
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ``maxlen`` or ``minid`` may be specified")
        if maxlen is None and minid is None:
            raise DataError("One of ``maxlen`` or ``minid`` must be specified")
        pieces: list[Any] = [b"MAXLEN" if maxlen is not None else b"MINID"]
        if approximate:
            pieces.append(b"~")
        pieces.append(maxlen if maxlen is not None else minid)
        if ref_policy is not None:
            check_ref_policy("XTRIM", ref_policy)
        if limit is not None:
            pieces += [b"LIMIT", limit]
        if ref_policy is not None:
            pieces.append(ref_policy)
        return self._command([b"XTRIM", name, *pieces])
