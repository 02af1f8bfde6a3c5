"""redis-py's XDEL, XDELEX and XACKDEL methods (the commands: :mod:`rstore.commands.delete`)."""

from __future__ import annotations

from typing import Any

from rstore.client.base import ClientBase
from rstore.errors import DataError

__all__ = ["REF_POLICIES", "DeleteCommands", "check_ref_policy"]

#: The reference policies of Redis 8.2, as redis-py 8.1 accepts them (upper case only).
REF_POLICIES = ("KEEPREF", "DELREF", "ACKED")


def check_ref_policy(command: str, ref_policy: Any) -> None:
    """redis-py's client-side check of a ``ref_policy`` argument."""
    if ref_policy not in REF_POLICIES:
        raise DataError(f"{command} ref_policy must be one of: KEEPREF, DELREF, ACKED")


class DeleteCommands(ClientBase):
    """XDEL, XDELEX, XACKDEL, as redis-py 8.1's ``Redis`` has them."""

    def xdel(self, name: Any, *ids: Any) -> Any:
        """Delete entries; the number actually deleted."""
        return self._command([b"XDEL", name, *ids])

    def xdelex(self, name: Any, *ids: Any, ref_policy: str = "KEEPREF") -> Any:
        """Delete entries under a reference policy (Redis 8.2); a code per ID: ``-1`` no such
        entry, ``1`` deleted, ``2`` kept because a group still references it (``ACKED``)."""
        if not ids:
            raise DataError("XDELEX requires at least one message ID")
        check_ref_policy("XDELEX", ref_policy)
        return self._command([b"XDELEX", name, ref_policy, b"IDS", len(ids), *ids])

    def xackdel(self, name: Any, groupname: Any, *ids: Any, ref_policy: str = "KEEPREF") -> Any:
        """Acknowledge entries in a group and delete them under a reference policy (Redis
        8.2); a code per ID: ``-1`` not pending in the group, ``1`` acknowledged and deleted,
        ``2`` acknowledged but kept because a group still references it (``ACKED``)."""
        if not ids:
            raise DataError("XACKDEL requires at least one message ID")
        check_ref_policy("XACKDEL", ref_policy)
        return self._command([b"XACKDEL", name, groupname, ref_policy, b"IDS", len(ids), *ids])
