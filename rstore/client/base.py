"""What every family of redis-py methods stands on: the one hook that runs a command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Callback", "ClientBase"]

#: How a method shapes the reply into redis-py's return value (``None``: as it is).
Callback = Callable[..., Any] | None


class ClientBase:
    """The command hook the redis-py methods call: :class:`rstore.Store` runs the command,
    a pipeline queues it."""

    def _command(self, argv: list[Any], callback: Callback = None, **options: Any) -> Any:
        raise NotImplementedError
