"""redis-py's XTRIM methods (the command: :mod:`rstore.commands.trim`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
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
    ) -> Any:
        """Trim by ``maxlen`` or ``minid``; the number of entries removed."""
        if maxlen is not None and minid is not None:
            raise DataError("Only one of ``maxlen`` or ``minid`` may be specified")
        if maxlen is None and minid is None:
            raise DataError("One of ``maxlen`` or ``minid`` must be specified")
        pieces: list[Any] = [b"MAXLEN" if maxlen is not None else b"MINID"]
        if approximate:
            pieces.append(b"~")
        pieces.append(maxlen if maxlen is not None else minid)
        if limit is not None:
            pieces += [b"LIMIT", limit]
        return self._command([b"XTRIM", name, *pieces])
