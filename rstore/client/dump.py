"""redis-py's DUMP, RESTORE methods (the command: :mod:`rstore.commands.dump`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.client.shapes import (
    NEVER_DECODE,
    status_reply,
)
from rstore.errors import DataError

__all__ = ["DumpCommands"]


class DumpCommands(ClientBase):
    """DUMP, RESTORE, as redis-py 8.1's ``Redis`` has them."""

    def dump(self, name: Any) -> Any:
        """The key's value as a DUMP payload (``bytes``, even with ``decode_responses``), or
        ``None`` when it does not exist."""
        return self._command([b"DUMP", name], None, **{NEVER_DECODE: True})

    def restore(
        self,
        name: Any,
        ttl: int,
        value: bytes,
        replace: bool = False,
        absttl: bool = False,
        idletime: int | None = None,
        frequency: int | None = None,
    ) -> Any:
        """Create ``name`` from a DUMP payload (from rstore, Redis or Valkey); ``b"OK"`` (``"OK"``
        with ``decode_responses``).

        rstore keys never expire, so ``ttl`` must be 0.
        """
        params: list[Any] = [name, ttl, value]
        if replace:
            params.append(b"REPLACE")
        if absttl:
            params.append(b"ABSTTL")
        if idletime is not None:
            params.append(b"IDLETIME")
            try:
                params.append(int(idletime))
            except ValueError as exc:
                raise DataError("idletimemust be an integer") from exc
        if frequency is not None:
            params.append(b"FREQ")
            try:
                params.append(int(frequency))
            except ValueError as exc:
                raise DataError("frequency must be an integer") from exc
        return self._command([b"RESTORE", *params], status_reply)
