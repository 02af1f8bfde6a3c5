"""A full consistency check of a store: its files, then every stored counter against what it
counts.

First LMDB's structure, walked from the file, and every record's checksum
(:mod:`rstore.storage.checks.diagnose`): where the structure is damaged nothing more is read.  Then
stream metadata (length, node count, tail, first ID, last ID bound), every node's structure,
group and consumer counters, and the two PEL indexes (group PEL and per-consumer lists) must
agree.  Returns a list of problems; empty means consistent.
"""

from __future__ import annotations

from rstore.codec import stream_node as sn
from rstore.codec.node_validate import validate_node
from rstore.errors import CorruptDataError, CorruptStoreError
from rstore.ids import format_id
from rstore.storage.checks.diagnose import Names, record_problems, structure_problems
from rstore.storage.records import group_records
from rstore.storage.records.layout import TYPE_STREAM
from rstore.storage.records.txn import Txn
from rstore.streams.keyspace import StreamRef

__all__ = ["check_store", "check_stream"]


def check_store(txn: Txn) -> list[str]:
    """Problems found in the whole store (empty when consistent)."""
    report = txn.walk_structure()
    if report.problems:  # LMDB must not walk a damaged tree: report where, read nothing more
        return structure_problems(report, None)
    names = Names.read(txn)
    problems = record_problems(txn, names)
    keys = 0
    try:
        for _, name, rec in txn.iter_keys():
            keys += 1
            shown = repr(name.decode("utf-8", "backslashreplace"))
            if rec.type != TYPE_STREAM:
                problems.append(f"{shown}: unknown type {rec.type}")
                continue
            try:
                stream = StreamRef(rec.handle, txn.stream_get(rec.handle))
                problems += [f"{shown}: {p}" for p in check_stream(txn, stream)]
            except CorruptStoreError as exc:
                if not problems:  # already listed by the checksum sweep otherwise
                    problems.append(f"{shown}: {exc}")
    except CorruptStoreError as exc:
        if not problems:
            problems.append(str(exc))
        return problems
    if keys != txn.key_count():
        problems.append(f"keyspace iterates {keys} keys but counts {txn.key_count()}")
    return problems


def check_stream(txn: Txn, stream: StreamRef) -> list[str]:
    meta = stream.meta
    problems: list[str] = []
    length = nodes = size = 0
    first_live = None
    previous = None
    last_master = None
    for master_id, node in txn.iter_nodes(stream.handle):
        nodes += 1
        size += len(node)
        last_master = master_id
        try:
            validate_node(node, master_id, deep=True)
        except CorruptDataError as exc:
            problems.append(f"node {format_id(master_id)!r}: {exc}")
            continue
        count, deleted = sn.node_counts(node)
        physical = live = 0
        for entry_id, flags, _ in sn.iter_ids(node, master_id):
            physical += 1
            if previous is not None and entry_id <= previous:
                problems.append(f"entry {format_id(entry_id)!r} is not after its predecessor")
            previous = entry_id
            if not flags & sn.FLAG_DELETED:
                live += 1
                if first_live is None:
                    first_live = entry_id
        if live != count or physical != count + deleted:
            problems.append(f"node {format_id(master_id)!r}: counters {count}+{deleted}")
        length += live
    if length != meta.length:
        problems.append(f"length {meta.length} but {length} live entries")
    if nodes != meta.node_count:
        problems.append(f"node count {meta.node_count} but {nodes} nodes")
    if meta.node_bytes is not None and size != meta.node_bytes:
        problems.append(f"node bytes {meta.node_bytes} but {size} bytes of nodes")
    if nodes and last_master != meta.tail_id:
        problems.append(f"tail {meta.tail_id} but last node {last_master}")
    if (first_live or (0, 0)) != meta.first_id:
        problems.append(f"first id {meta.first_id} but first live entry {first_live}")
    if previous is not None and previous > meta.last_id:
        problems.append(f"entry {previous} after last id {meta.last_id}")
    problems += _check_groups(txn, stream)
    return problems


def _check_groups(txn: Txn, stream: StreamRef) -> list[str]:
    problems: list[str] = []
    groups = group_records.groups_of(txn, stream.handle)
    if len(groups) != stream.meta.group_count:
        problems.append(f"group count {stream.meta.group_count} but {len(groups)} groups")
    for group in groups:
        where = f"group {group.name!r}"
        owners: dict[bytes, int] = {}
        pel = list(group_records.pel_entries(txn, group))
        for entry_id, (_, _, owner) in pel:
            if owner is None:  # released by XNACK: no consumer holds it
                continue
            owners[owner] = owners.get(owner, 0) + 1
            if entry_id not in set(
                group_records.consumer_pel_ids(txn, group, owner, entry_id, entry_id)
            ):
                problems.append(f"{where}: {entry_id} missing from {owner!r}'s list")
        released = {eid for eid, (_, _, owner) in pel if owner is None}
        for entry_id, _, _ in group_records.released_entries(txn, group):
            if entry_id not in released:
                problems.append(f"{where}: {entry_id} listed as released, not so recorded")
        if len(pel) != group.pel_count:
            problems.append(f"{where}: pel count {group.pel_count} but {len(pel)} entries")
        consumers = group_records.consumers_of(txn, group)
        if len(consumers) != group.consumer_count:
            problems.append(f"{where}: consumer count {group.consumer_count} but {len(consumers)}")
        names = {c.name for c in consumers}
        for owner in owners:
            if owner not in names:
                problems.append(f"{where}: pending entries owned by missing consumer {owner!r}")
        for c in consumers:
            own = list(group_records.consumer_pel_ids(txn, group, c.name))
            if len(own) != c.pel_count or owners.get(c.name, 0) != c.pel_count:
                problems.append(
                    f"{where}: consumer {c.name!r} counts {c.pel_count}, lists {len(own)}, "
                    f"owns {owners.get(c.name, 0)}"
                )
    return problems
