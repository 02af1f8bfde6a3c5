"""The body of a worker process that runs rstore commands for the blocking tests.

It lives in its own small module so that a ``spawn``-ed child imports little.  Protocol on the
pipe, one message at a time:

* ``("run", store_path, argv)`` -> the reply of ``Store(store_path).execute_raw(*argv)`` (an
  :class:`ErrorReply` for a refusal, a :class:`WorkerFailure` for anything unexpected);
* ``("close",)`` -> ``"closed"`` once the worker's Store is closed;
* ``None`` -> the worker exits.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection

from rstore import ResponseError, Store

from .resp import ErrorReply

__all__ = ["WorkerFailure", "serve"]


@dataclass(frozen=True)
class WorkerFailure:
    """An exception other than a refusal, raised in the worker (with its traceback)."""

    text: str


def serve(conn: Connection) -> None:
    store: Store | None = None
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            if message[0] == "close":
                if store is not None:
                    store.close()
                    store = None
                conn.send("closed")
                continue
            _, path, argv = message
            if store is None or store.path != path:
                if store is not None:
                    store.close()
                store = Store(path, sync=False)
            try:
                reply = store.execute_raw(*argv)
            except ResponseError as err:
                reply = ErrorReply(err.line)
            except Exception:
                reply = WorkerFailure(traceback.format_exc())
            conn.send(reply)
    finally:
        if store is not None:
            store.close()
        conn.close()
