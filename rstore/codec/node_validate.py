"""Deep structural validation of stream nodes (Redis ``streamValidateListpackIntegrity``).

Used on nodes that come from outside (RDB files, DUMP payloads) and by ``Store.check()``.
"""

from __future__ import annotations

from typing import NamedTuple

from rstore.codec import listpack as lp
from rstore.codec import stream_node as sn
from rstore.codec.listpack import read_int, skip_element
from rstore.codec.speedups import c_check_node
from rstore.codec.stream_node import FLAG_SAMEFIELDS
from rstore.errors import CorruptDataError
from rstore.model import ID

__all__ = ["NodeFacts", "node_facts", "validate_node"]


class NodeFacts(NamedTuple):
    """What a node holds, known once it is checked (:func:`rstore.node_facts`)."""

    live: int  # live entries
    first_live: ID | None  # the first live entry's ID
    last: ID  # the last entry's ID, tombstone or not
    deleted: int  # entries flagged deleted (tombstones)


# The last node checked and its facts: restoring a file checks each node as the reader parses
# it (where damage is reported at its offset in the file) and the importer asks for its facts
# again; the same immutable ``bytes`` object with the same master ID is not walked twice.  The
# entry is dropped once it served (the reference to the node is not kept beyond that).
_last_checked: tuple[bytes, ID, NodeFacts] | None = None


def checked(node: bytes, master_id: ID, facts: NodeFacts) -> None:
    """Record that ``node`` passed :func:`node_facts` (or its C twin) with ``facts``."""
    global _last_checked  # noqa: PLW0603 - a one-entry cache
    _last_checked = (node, master_id, facts)


def node_facts(node: bytes | bytearray, master_id: ID) -> NodeFacts:
    """Validate ``node`` in depth, and require its entry IDs to rise strictly from the master
    ID and its entries' deleted flags to agree with the master's live count (Redis checks
    neither; a node that breaks them would mislead XADD, XLEN and XRANGE).
    Raises :class:`CorruptDataError`."""
    global _last_checked  # noqa: PLW0603 - a one-entry cache
    last = _last_checked
    if last is not None and last[0] is node and last[1] == master_id:
        _last_checked = None
        return last[2]
    facts = _node_facts(node, master_id)
    if type(node) is bytes:
        checked(node, master_id, facts)
    return facts


def _node_facts(node: bytes | bytearray, master_id: ID) -> NodeFacts:
    if c_check_node is not None:
        got = c_check_node(node, master_id[0], master_id[1])
        if got is not None:
            _, count, deleted, ascending, last_ms, last_seq, first_ms, first_seq = got
            if ascending:
                first = None if first_ms < 0 else (first_ms, first_seq)
                return NodeFacts(count, first, (last_ms, last_seq), deleted)
    validate_node(node, master_id, deep=True)
    floor: ID | None = None
    flagged_live = 0
    for entry_id, flags, _ in sn.iter_ids(node, master_id):
        if entry_id < master_id or (floor is not None and entry_id <= floor):
            raise CorruptDataError(f"entry {entry_id} is out of order", None)
        floor = entry_id
        flagged_live += not flags & sn.FLAG_DELETED
    count, deleted = sn.node_counts(node)
    if flagged_live != count:  # Redis checks only count + deleted; XLEN and XRANGE would differ
        raise CorruptDataError(f"master count {count} but {flagged_live} live entries", None)
    first_entry = sn.first_live_entry(node, master_id)
    first_id = None if first_entry is None else first_entry[0]
    return NodeFacts(count, first_id, sn.last_entry_id(node, master_id), deleted)


def validate_node(node: bytes | bytearray, master_id: ID, *, deep: bool = True) -> int:
    """Check that ``node`` is a well-formed stream node; return its physical entry count.

    Shallow: the listpack checks and "not empty".  Deep (Redis ``streamValidateListpackIntegrity``):
    the full listpack walk, integer master counters and terminator, exactly ``count + deleted``
    entries, integer flags/deltas/num_fields, and each ``lp_count`` equal to ``N + 3`` or
    ``2n + 4``, ending exactly at EOF.
    """
    if deep and c_check_node is not None:
        got = c_check_node(node, master_id[0], master_id[1])
        if got is not None:
            return got[0]
    lp.validate(node, deep=deep)
    if len(node) == 7:
        raise CorruptDataError("corrupt stream node: empty listpack", lp.HEADER_SIZE)
    if not deep:
        return -1
    end = len(node) - 1
    try:
        count, p = read_int(node, lp.HEADER_SIZE)
        deleted, p = read_int(node, p)
        nmaster, p = read_int(node, p)
        if count < 0 or deleted < 0 or nmaster < 0:
            raise CorruptDataError("corrupt stream node: negative master counter", lp.HEADER_SIZE)
        for _ in range(nmaster):
            if p >= end:
                raise CorruptDataError("corrupt stream node: master fields past the end", p)
            p = skip_element(node, p)
        terminator, p = read_int(node, p)
        if terminator != 0:
            raise CorruptDataError("corrupt stream node: master terminator is not 0", p)
        entries = 0
        while p < end:
            flags, p = read_int(node, p)
            _, p = read_int(node, p)
            _, p = read_int(node, p)
            if flags & FLAG_SAMEFIELDS:
                nvals = nmaster
                expected = nmaster + 3
            else:
                n, p = read_int(node, p)
                if n < 0:
                    raise CorruptDataError("corrupt stream node: negative field count", p)
                nvals = 2 * n
                expected = 2 * n + 4
            for _ in range(nvals):
                if p >= end:
                    raise CorruptDataError("corrupt stream node: entry runs past the end", p)
                p = skip_element(node, p)
            if p >= end:
                raise CorruptDataError("corrupt stream node: missing lp-count", p)
            lp_count, p = read_int(node, p)
            if lp_count != expected:
                raise CorruptDataError(
                    f"corrupt stream node: lp-count {lp_count}, expected {expected}", p
                )
            entries += 1
    except IndexError as exc:
        raise CorruptDataError("corrupt stream node: element runs past the end", None) from exc
    if p != end:
        raise CorruptDataError("corrupt stream node: trailing bytes", p)
    if entries != count + deleted:
        raise CorruptDataError(
            f"corrupt stream node: {entries} entries, master says {count} + {deleted}",
            lp.HEADER_SIZE,
        )
    return entries
