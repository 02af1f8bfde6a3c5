"""Pipelines: queue commands, then run them all in one atomic LMDB transaction."""

from __future__ import annotations

import textwrap
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rstore.client import Callback, RedisCommands
from rstore.client.shapes import Decoder, finish
from rstore.codec.speedups import c_encode_args
from rstore.commands.argv import encode_argv
from rstore.commands.registry import lookup
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

    As in redis-py, leaving a ``with`` block *discards* commands that were not executed, replies
    are decoded when the store has ``decode_responses``, and the error raised names the command
    that failed: ``str(err)`` is ``"Command # 2 (XADD s 0-0 f v) of pipeline caused error: The
    ID specified in XADD must be greater than 0-0"`` (``err.line`` stays Valkey's line).
    """

    def __init__(
        self, store: Store, decode: Decoder | None = None, protocol: int | None = None
    ) -> None:
        self._store = store
        self._decode = decode  # the store's decode_responses
        self._protocol = protocol  # and its protocol (the reply shapes)
        self._argvs: list[list[bytes]] = []
        # per command, how to shape its reply: None for as it is (no callback, no options)
        self._shapes: list[tuple[Callback, dict[str, Any]] | None] = []

    def _command(self, argv: list[Any], callback: Callback = None, **options: Any) -> Any:
        # encode_argv's C half called directly: one Python call less per queued command
        encoded = None if c_encode_args is None else c_encode_args(argv)
        self._argvs.append(encode_argv(argv) if encoded is None else encoded)
        self._shapes.append(None if callback is None and not options else (callback, options))
        return self

    def execute_command(self, *args: Any, **options: Any) -> Pipeline:
        """Queue a raw command given as arguments (as redis-py's pipeline does)."""
        return self._command(list(args), None, **options)  # type: ignore[no-any-return]

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Run the queued commands atomically and return their replies in order.

        With ``raise_on_error`` the first refused command's error is raised after the
        transaction committed; otherwise errors are returned in place of replies.
        """
        batch, shapes = self._argvs, self._shapes
        self.reset()
        if not batch:
            return []
        try:
            out = self._store._run_batch(batch)
        except ResponseError as exc:  # refused before anything ran (Valkey's EXECABORT case)
            raise _annotated(exc, _refused_index(batch), batch) from None
        decode = self._decode
        first_error: int | None = None
        for i, shape in enumerate(shapes):
            reply = out[i]
            if isinstance(reply, ResponseError):
                if first_error is None:
                    first_error = i
            elif shape is not None:
                out[i] = finish(reply, shape[0], shape[1], decode, self._protocol)
            elif decode is not None:
                out[i] = decode(reply)  # finish() without a callback or options
        if raise_on_error and first_error is not None:
            raise _annotated(out[first_error], first_error, batch)
        return out

    def reset(self) -> None:
        """Discard the queued commands."""
        self._argvs = []
        self._shapes = []

    def __len__(self) -> int:
        return len(self._argvs)

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.reset()


def _refused_index(batch: list[list[bytes]]) -> int:
    """The position of the first command the dispatcher refuses outright."""
    for i, argv in enumerate(batch):
        try:
            lookup(argv)
        except ResponseError:
            return i
    return 0


def _annotated(exc: ResponseError, index: int, batch: list[list[bytes]]) -> ResponseError:
    """``exc`` with redis-py's pipeline message: the command's number and text, then the error
    (``line`` is left as it is)."""
    command = " ".join(arg.decode("utf-8", "replace") for arg in batch[index])
    command = textwrap.shorten(command, width=100, placeholder="...", break_long_words=True)
    exc.args = (f"Command # {index + 1} ({command}) of pipeline caused error: {exc.args[0]}",)
    return exc
