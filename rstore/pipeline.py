"""Pipelines: queue commands, then run them all in one atomic LMDB transaction."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from rstore.client import Callback, RedisCommands
from rstore.commands.args import encode_argv
from rstore.commands.executor import run_batch
from rstore.commands.reply import to_public
from rstore.errors import ResponseError

if TYPE_CHECKING:
    from rstore.store import Store

__all__ = ["Pipeline"]


class Pipeline(RedisCommands):
    """Commands queued by the redis-py-style methods and run together by :meth:`execute`.

    Every method returns the pipeline itself (so calls chain).  :meth:`execute` runs the queue
    in a single LMDB write transaction: other readers see all of it or none of it, and a crash
    keeps all of it or none of it.  As in a Redis MULTI/EXEC, a command refused while running
    yields its error in the results and the others still apply; an unknown command or a wrong
    argument count refuses the whole pipeline before anything runs.

    As in redis-py, leaving a ``with`` block *discards* commands that were not executed.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._queue: list[tuple[list[bytes], Callback, dict[str, Any]]] = []

    def _command(self, argv: list[Any], callback: Callback = None, **options: Any) -> Any:
        self._queue.append((encode_argv(argv), callback, options))
        return self

    def execute_command(self, *args: Any, **options: Any) -> Pipeline:
        """Queue a raw command given as arguments (as redis-py's pipeline does)."""
        return self._command(list(args), None, **options)  # type: ignore[no-any-return]

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Run the queued commands atomically and return their replies in order.

        With ``raise_on_error`` the first refused command's error is raised after the
        transaction committed; otherwise errors are returned in place of replies.
        """
        queue, self._queue = self._queue, []
        if not queue:
            return []
        env = self._store._live_env()
        results = run_batch(env, [argv for argv, _, _ in queue])
        out: list[Any] = []
        first_error: ResponseError | None = None
        for (spec, reply), (_, callback, options) in zip(results, queue):
            if isinstance(reply, ResponseError):
                first_error = first_error or reply
                out.append(reply)
                continue
            public = to_public(reply, spec.public)
            out.append(callback(public, **options) if callback else public)
        if raise_on_error and first_error is not None:
            raise first_error
        return out

    def reset(self) -> None:
        """Discard the queued commands."""
        self._queue = []

    def __len__(self) -> int:
        return len(self._queue)

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.reset()
