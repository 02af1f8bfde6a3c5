"""Copying consumer-group state along with a replay (``rstore replay --with-groups``).

:func:`groups_of_store` and :func:`groups_of_rdb` read every group of the selected streams --
its last-delivered ID and read counter, its consumers, its whole PEL with owners, delivery
times and counts -- through :meth:`rstore.Store.inspect` and :func:`rstore.inspect_rdb`
(``pending=True``).  :func:`copy_groups` re-creates them on a target with commands that a store
and a Redis/Valkey server both take: ``XGROUP CREATE key group last-id ENTRIESREAD n``,
``XGROUP CREATECONSUMER``, and per pending entry ``XCLAIM key group consumer 0 id TIME ms
RETRYCOUNT n FORCE JUSTID`` (its delivery time and count kept).  An entry XNACK released (no
owner: Redis 8.8) is released again with ``XNACK key group FAIL IDS n id... RETRYCOUNT n
FORCE``, in ID order (the order they were released in is not kept); a target without XNACK
(Valkey 8.0, Redis before 8.8) gets it pending to a consumer ``rstore:released`` at time 0,
which any claim takes, as RDB files before version 14 hold it.

What is not kept: a consumer's seen and active times (no command sets them: they are the copy's
time), and pending entries whose entry is not in the target stream (XCLAIM ignores them, as a
server does for a deleted entry).  A group that already exists on the target is an error
(``BUSYGROUP``), reported before any of its state is written -- unless ``existing="update"``
(a resumed replay, whose first run may have copied the groups already): then the group is set
to the copied state with ``XGROUP SETID ... ENTRIESREAD n`` and the consumers and pending
entries are written again, which changes nothing that the first copy wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rstore import GroupInfo, Store, inspect_rdb, select_streams

__all__ = ["GroupsReport", "copy_groups", "groups_of_rdb", "groups_of_store"]

ID = tuple[int, int]
Groups = dict[bytes, tuple[GroupInfo, ...]]

#: The consumer that holds released entries on a target without XNACK (as in RDB files).
RELEASED_OWNER = b"rstore:released"


class GroupsReport:
    """What :func:`copy_groups` did: groups, consumers and pending entries written."""

    def __init__(self) -> None:
        self.groups = 0
        self.consumers = 0
        self.pending = 0


def groups_of_store(store: Store, streams: Sequence[bytes] | None = None) -> Groups:
    """The groups of the selected streams of ``store`` (``{stream: groups}``, streams with
    groups only), PELs whole."""
    chosen = store.view(lambda view: select_streams(view.keys(), streams))
    out: Groups = {}
    for key in chosen:
        for info in store.inspect(key, pending=True):
            if info.groups:
                out[info.key] = info.groups
    return out


def groups_of_rdb(path: str, streams: Sequence[bytes] | None = None, *, db: int = 0) -> Groups:
    """The groups of the selected streams of database ``db`` of an RDB file."""
    summary = inspect_rdb(path, pending=True)
    of_db = {s.key: s for s in summary.streams if s.db == db}
    chosen = select_streams(of_db, streams, where=f" in database {db} of {path}")
    return {key: of_db[key].groups for key in chosen if of_db[key].groups}


def _id(entry_id: ID) -> bytes:
    return b"%d-%d" % entry_id


def copy_groups(
    groups: Groups,
    execute: Callable[..., Any],
    *,
    target: Callable[[bytes], bytes] | None = None,
    existing: str = "fail",
) -> GroupsReport:
    """Create ``groups`` on a target through ``execute(*command)`` (``Store.execute``, or a
    redis-py client's ``execute_command``), stream names mapped by ``target``; ``existing``
    says what to do with a group the target has already: ``"fail"`` (BUSYGROUP raised) or
    ``"update"`` (set to the copied state: see the module docstring)."""
    if existing not in ("fail", "update"):
        raise ValueError(f"existing must be fail or update, not {existing!r}")
    report = GroupsReport()
    for stream, infos in groups.items():
        key = target(stream) if target else stream
        for info in infos:
            name = info.state.name
            create: list[Any] = [b"XGROUP", b"CREATE", key, name, _id(info.state.last_id)]
            if info.entries_read is not None:
                create += [b"ENTRIESREAD", info.entries_read]
            try:
                execute(*create)
            except Exception as exc:  # a store's or redis-py's ResponseError
                if existing != "update" or not str(exc).startswith("BUSYGROUP"):
                    raise
                execute(b"XGROUP", b"SETID", *create[2:])
            report.groups += 1
            owners: dict[ID, bytes] = {}
            for consumer in info.consumers:
                execute(b"XGROUP", b"CREATECONSUMER", key, name, consumer.state.name)
                report.consumers += 1
                for p in consumer.pending:
                    owners[p.id] = consumer.state.name
            for p in info.pending:
                owner = p.consumer or owners.get(p.id)
                if owner is None or p.released:
                    continue
                report.pending += _claim(execute, key, name, owner, p.id, p.delivery_time_ms,
                                         p.delivery_count)  # fmt: skip
            released = [p for p in info.pending if p.released]
            if released:
                report.pending += _release(execute, key, name, released)
    return report


def _claim(
    execute: Callable[..., Any], key: bytes, group: bytes, owner: bytes, entry_id: ID,
    time_ms: int, count: int,
) -> int:  # fmt: skip
    claimed = execute(
        b"XCLAIM", key, group, owner, 0, _id(entry_id), b"TIME", time_ms,
        b"RETRYCOUNT", count, b"FORCE", b"JUSTID",
    )  # fmt: skip
    return len(claimed or ())


def _release(execute: Callable[..., Any], key: bytes, group: bytes, pending: list[Any]) -> int:
    """Release ``pending`` entries again (XNACK FORCE, one command per delivery count), or
    on a target without XNACK leave them pending to :data:`RELEASED_OWNER` at time 0."""
    by_count: dict[int, list[ID]] = {}
    for p in pending:
        by_count.setdefault(p.delivery_count, []).append(p.id)
    done = 0
    try:
        for count, ids in by_count.items():
            done += int(execute(b"XNACK", key, group, b"FAIL", b"IDS", len(ids),
                                *map(_id, ids), b"RETRYCOUNT", count, b"FORCE"))  # fmt: skip
        return done
    except Exception as exc:  # a store's or redis-py's ResponseError
        if "unknown command" not in str(exc).lower():
            raise
    return sum(_claim(execute, key, group, RELEASED_OWNER, p.id, 0, p.delivery_count)
               for p in pending)  # fmt: skip
