"""Bulk loads in one write transaction (``Store.append_entries``, ``Store.append_nodes``): the
load, an optional batch mark that makes it idempotent, an optional bookmark written with it,
and the wake-up of the readers of the streams it grew."""

from __future__ import annotations

from collections.abc import Callable

from rstore.commands.executor import in_transaction
from rstore.commands.registry import Context
from rstore.ids import ID, format_id
from rstore.model import AppendReport
from rstore.storage.env import Env
from rstore.storage.records.batch_marks import batch_get, batch_put, bookmark_get, bookmark_put
from rstore.storage.records.layout import MAX_BATCH_NAME, MAX_BOOKMARK_VALUE
from rstore.storage.records.txn import Txn

__all__ = ["bulk_key", "load", "read_batch", "read_bookmark"]

#: ``load(txn, now_ms)``: what was added, ``{stream: (entries added, last ID)}``
Loader = Callable[[Txn, int], dict[bytes, tuple[int, ID]]]


def bulk_key(name: str | bytes) -> bytes:
    """A batch or bookmark name as stored: 1 to MAX_BATCH_NAME bytes (str is UTF-8)."""
    key = name.encode("utf-8") if isinstance(name, str) else bytes(name)
    if not key or len(key) > MAX_BATCH_NAME:
        raise ValueError(f"batch name must be 1 to {MAX_BATCH_NAME} bytes, not {len(key)}")
    return key


def read_batch(env: Env, name: str | bytes) -> int | None:
    key = bulk_key(name)
    return env.read(lambda txn: batch_get(txn, key))


def read_bookmark(env: Env, name: str | bytes) -> bytes | None:
    key = bulk_key(name)
    return env.read(lambda txn: bookmark_get(txn, key))


def load(
    env: Env,
    loader: Loader,
    *,
    one_shot: bool,
    what: str,
    batch: tuple[str | bytes, int] | None = None,
    bookmark: tuple[str | bytes, bytes] | None = None,
) -> AppendReport:
    """Run ``loader`` in one write transaction with the batch mark and the bookmark.

    ``one_shot``: the items ``loader`` reads cannot be read twice, so a transaction that LMDB
    rolls back to grow the map fails with :class:`ValueError` instead of starting over; ``what``
    names them in that message (``"entries"``, ``"nodes"``)."""
    bookmark_key = bookmark_value = None
    if bookmark is not None:
        bookmark_key, bookmark_value = bulk_key(bookmark[0]), bookmark[1]
        if not isinstance(bookmark_value, bytes) or len(bookmark_value) > MAX_BOOKMARK_VALUE:
            raise ValueError(f"bookmark value must be bytes of at most {MAX_BOOKMARK_VALUE} bytes")
    mark = number = None
    if batch is not None:
        mark, number = bulk_key(batch[0]), batch[1]
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 1 << 64:
            raise ValueError(f"batch number must be an integer in [0, 2**64), not {number!r}")
    attempts = 0

    def body(ctx: Context) -> AppendReport:
        nonlocal attempts
        attempts += 1
        if attempts > 1 and one_shot:
            raise ValueError(
                f"append_{what}: the store's map had to grow during the load and the {what}, "
                "a one-shot iterator, cannot be read again; nothing was written (pass a "
                "re-iterable, or open the store with a larger map_size)"
            )
        if mark is not None and number is not None:
            last = batch_get(ctx.txn, mark)
            if last is not None and last >= number:
                return AppendReport(0, {}, False)
            batch_put(ctx.txn, mark, number)
        added = loader(ctx.txn, ctx.now_ms)
        if bookmark_key is not None and bookmark_value is not None:
            bookmark_put(ctx.txn, bookmark_key, bookmark_value)
        for name in added:
            ctx.signal(name)
        return AppendReport(
            sum(n for n, _ in added.values()),
            {name: (n, format_id(last_id)) for name, (n, last_id) in added.items()},
            True,
        )

    return in_transaction(env, body, write=True, in_batch=True)
