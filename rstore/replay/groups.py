"""Copying consumer-group state along with a replay (``rstore replay --with-groups``).

:func:`groups_of_store` and :func:`groups_of_rdb` read every group of the selected streams --
its last-delivered ID and read counter, its consumers, its whole PEL with owners, delivery
times and counts -- through :meth:`rstore.Store.inspect` and :func:`rstore.inspect_rdb`
(``pending=True``).  :func:`copy_groups` re-creates them on a target with commands that a store
and a Redis/Valkey server both take: ``XGROUP CREATE key group last-id ENTRIESREAD n``,
``XGROUP CREATECONSUMER``, and per pending entry ``XCLAIM key group consumer 0 id TIME ms
RETRYCOUNT n FORCE JUSTID`` (its delivery time and count kept).

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
                if owner is None:
                    continue
                claimed = execute(
                    b"XCLAIM", key, name, owner, 0, _id(p.id), b"TIME", p.delivery_time_ms,
                    b"RETRYCOUNT", p.delivery_count, b"FORCE", b"JUSTID",
                )  # fmt: skip
                report.pending += len(claimed or ())
    return report
