"""Independent reference models for the codec tests, written from docs/listpack.md.

Nothing here calls rstore: these are the naive versions the codec is compared with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ID = tuple[int, int]
U64 = (1 << 64) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_CANONICAL = re.compile(rb"0|-?[1-9][0-9]*")


def ref_string2ll(s: bytes) -> int | None:
    """Redis's strict integer test (docs/listpack.md#strings-that-are-integers)."""
    if not _CANONICAL.fullmatch(s):
        return None
    v = int(s)
    return v if INT64_MIN <= v <= INT64_MAX else None


def as_element(s: bytes) -> int | bytes:
    """What a listpack stores for the string ``s``: an integer when it passes the test."""
    v = ref_string2ll(s)
    return s if v is None else v


# --------------------------------------------------------------------------- listpack bytes


def ref_backlen(size: int) -> bytes:
    """docs/listpack.md#backlen: 7-bit groups, most significant first, continuation bit on all
    but the first byte; the byte count uses Redis's strict ``<`` limits."""
    limits = [128, 16383, 2097151, 268435455]
    nbytes = 1 + sum(size >= lim for lim in limits)
    groups = [(size >> (7 * i)) & 127 for i in reversed(range(nbytes))]
    return bytes([groups[0]] + [g | 128 for g in groups[1:]])


def ref_decode_backlen(buf: bytes, end: int) -> tuple[int, int]:
    """Read a backlen that ends just before ``end``, right to left: ``(size, byte count)``."""
    size = 0
    shift = 0
    q = end - 1
    while True:
        size |= (buf[q] & 127) << shift
        if not buf[q] & 128:
            return size, end - q
        shift += 7
        q -= 1


def ref_element(value: int | bytes) -> bytes:
    """One listpack element (encoding + payload + backlen) in Redis's canonical form
    (docs/listpack.md#elements)."""
    if isinstance(value, int):
        if 0 <= value <= 127:
            enc = bytes([value])
        elif -4096 <= value <= 4095:
            u = value % 8192
            enc = bytes([0xC0 | (u >> 8), u & 0xFF])
        else:
            for tag, width in ((0xF1, 2), (0xF2, 3), (0xF3, 4), (0xF4, 8)):
                if -(1 << (8 * width - 1)) <= value < 1 << (8 * width - 1):
                    enc = bytes([tag]) + (value % (1 << (8 * width))).to_bytes(width, "little")
                    break
            else:
                raise ValueError(f"{value} does not fit in 64 bits")
    else:
        n = len(value)
        if n < 64:
            enc = bytes([0x80 | n]) + value
        elif n < 4096:
            enc = bytes([0xE0 | (n >> 8), n & 0xFF]) + value
        else:
            enc = b"\xf0" + n.to_bytes(4, "little") + value
    return enc + ref_backlen(len(enc))


def ref_listpack(values: list[int | bytes]) -> bytes:
    """A whole listpack: total bytes, saturating count, elements, EOF (docs/listpack.md#header)."""
    body = b"".join(ref_element(v) for v in values)
    total = 6 + len(body) + 1
    return (
        total.to_bytes(4, "little") + min(len(values), 65535).to_bytes(2, "little") + body + b"\xff"
    )


# --------------------------------------------------------------------------- stream nodes


@dataclass
class ModelEntry:
    """One physical entry of a node as the naive model sees it."""

    id: ID
    fv: list[bytes]
    deleted: bool = False
    fields: list[bytes] = field(init=False)

    def __post_init__(self) -> None:
        self.fields = self.fv[0::2]


def signed_delta(a: int, b: int) -> int:
    """``a - b`` modulo 2**64 read as a signed 64-bit integer (docs/listpack.md#entries)."""
    d = (a - b) % (1 << 64)
    return d - (1 << 64) if d >= 1 << 63 else d


def node_elements(entries: list[ModelEntry]) -> list[int | bytes]:
    """The elements of the node holding ``entries`` (the first created it), per
    docs/listpack.md#master-entry and docs/listpack.md#entries."""
    master = entries[0]
    live = sum(not e.deleted for e in entries)
    out: list[int | bytes] = [live, len(entries) - live, len(master.fields)]
    out += [as_element(f) for f in master.fields]
    out.append(0)
    for e in entries:
        same = e.fields == master.fields
        flags = (2 if same else 0) | (1 if e.deleted else 0)
        out += [flags, signed_delta(e.id[0], master.id[0]), signed_delta(e.id[1], master.id[1])]
        if same:
            out += [as_element(v) for v in e.fv[1::2]]
            out.append(len(e.fields) + 3)
        else:
            out.append(len(e.fields))
            out += [as_element(x) for x in e.fv]
            out.append(2 * len(e.fields) + 4)
    return out


def ref_node(entries: list[ModelEntry]) -> bytes:
    """The exact bytes Redis would hold for ``entries`` in one node."""
    return ref_listpack(node_elements(entries))


def live_entries(entries: list[ModelEntry]) -> list[tuple[ID, list[bytes]]]:
    return [(e.id, e.fv) for e in entries if not e.deleted]
