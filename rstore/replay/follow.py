"""Following a store live after its history (``rstore replay --follow``), like ``tail -f``.

:func:`follow_store` gives the selected entries of a store as :func:`rstore.entries_from_store`
does, then waits for new ones with a blocking XREAD on the same streams (readers wake on
commits from any process, without polling) and gives them as they come, until the consumer
stops (^C).  Between waits it yields ``None``: :func:`rstore.run_replay` then delivers the
entries it holds, so a followed entry reaches the target as soon as it was read.

The streams followed are those selected when the replay started (a glob does not pick up a
stream created later).  Each stream is followed from the last entry given for it, or from just
below ``start`` when its history had none, so no entry appended meanwhile is missed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rstore import Store, select_streams

from .envelope import ReplayEntry
from .sources import MIN_ID, entries_from_store

__all__ = ["follow_store"]

ID = tuple[int, int]
#: Entries per blocking read, and the longest wait before the read is made again (ms).
FOLLOW_COUNT = 1000
FOLLOW_BLOCK_MS = 1000


def _before(entry_id: ID) -> ID:
    ms, seq = entry_id
    if seq:
        return ms, seq - 1
    return (ms - 1, (1 << 64) - 1) if ms else (0, 0)


def follow_store(
    store: Store,
    streams: Sequence[bytes] | None = None,
    start: ID = MIN_ID,
    *,
    block_ms: int = FOLLOW_BLOCK_MS,
) -> Iterator[ReplayEntry | None]:
    """The selected history of ``store`` from ``start``, then its new entries as they are
    added, forever (see the module docstring); ``None`` after each read that found nothing
    more for now."""
    chosen = store.view(lambda view: select_streams(view.keys(), streams))
    after = {key: _before(start) for key in chosen}
    for entry in entries_from_store(store, chosen or None, start):
        after[entry[0]] = entry[1]
        yield entry
    if not chosen:
        return
    while True:
        yield None
        ids = [b"%d-%d" % after[key] for key in chosen]
        reply = store.execute(
            "XREAD", "COUNT", FOLLOW_COUNT, "BLOCK", block_ms, "STREAMS", *chosen, *ids
        )
        for key, entries in reply or ():
            for raw_id, flat in entries:
                ms, _, seq = bytes(raw_id).partition(b"-")
                entry_id = (int(ms), int(seq))
                after[key] = entry_id
                yield key, entry_id, list(flat)
