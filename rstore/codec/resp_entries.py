"""Stream entries in RESP, the bytes a Redis client reads: each entry an array of two, its ID
as a bulk string (``<ms>-<seq>``) and its fields and values as an array of bulk strings -- the
same in RESP2 and RESP3.  A server writing a big XRANGE reply a page at a time writes these
straight from the nodes (:func:`node_resp`), with no Python object per entry when the C
accelerator is built (``scan_resp`` in ``_speedups.c``); :func:`entries_resp` is the reference.
"""

from __future__ import annotations

from rstore.codec import stream_node as sn
from rstore.codec.speedups import c_scan_resp
from rstore.model import ID, Entry

__all__ = ["entries_resp", "entry_resp", "node_resp"]


def entries_resp(entries: list[Entry]) -> bytes:
    """The RESP bytes of ``entries`` (``((ms, seq), [field, value, ...])`` each), in order."""
    out = bytearray()
    for entry_id, fields in entries:
        entry_resp(entry_id, fields, out)
    return bytes(out)


def entry_resp(entry_id: ID, fields: list[bytes], out: bytearray) -> None:
    """Append the RESP bytes of one entry to ``out``."""
    sid = b"%d-%d" % entry_id
    out += b"*2\r\n$%d\r\n%s\r\n*%d\r\n" % (len(sid), sid, len(fields))
    for f in fields:
        out += b"$%d\r\n%s\r\n" % (len(f), f)


def node_resp(
    node: bytes, master_id: ID, start: ID, end: ID, limit: int, out: bytearray, reverse: bool
) -> int:
    """Append to ``out`` the RESP of the node's live entries with ``start <= id <= end``,
    ascending (descending with ``reverse``), at most ``limit`` (0: no limit); how many."""
    if c_scan_resp is not None:
        taken = c_scan_resp(node, master_id[0], master_id[1], start[0], start[1], end[0], end[1],
                            limit, out, reverse)  # fmt: skip
        if taken is not None:
            return int(taken)
    return node_resp_py(node, master_id, start, end, limit, out, reverse)


def node_resp_py(
    node: bytes, master_id: ID, start: ID, end: ID, limit: int, out: bytearray, reverse: bool
) -> int:
    """:func:`node_resp` in Python: the reference, and the fallback."""
    entries: list[Entry] = []
    if reverse:
        sn.scan_backward_py(node, master_id, start, end, limit, entries)
    else:
        sn.scan_forward_py(node, master_id, start, end, limit, entries)
    out += entries_resp(entries)
    return len(entries)
