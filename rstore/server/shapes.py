"""RESP3 reply shapes of the stream commands.

The command layer answers in RESP2 shapes; in RESP3 Valkey sends some of those arrays as maps:
XREAD and XREADGROUP (stream name -> entries), XINFO STREAM (field -> value; with FULL its
groups and their consumers too), XINFO GROUPS and XINFO CONSUMERS (an array of maps), CONFIG
GET (name -> value).  Entries
keep their array shape (a field may repeat).  :func:`resp3` turns an internal reply into the
RESP3 shape for its command.
"""

from __future__ import annotations

from typing import Any

from rstore import NIL_ARRAY

from .resp import Map

__all__ = ["resp3"]


def _pairs(flat: list[Any]) -> Map:
    return Map(zip(flat[::2], flat[1::2]))


def _stream_info(flat: list[Any]) -> Map:
    info = _pairs(flat)
    for i, (key, value) in enumerate(info):
        if key == b"groups" and isinstance(value, list):  # FULL: each group a map
            groups = []
            for group in value:
                as_map = _pairs(group)
                for j, (gkey, gvalue) in enumerate(as_map):
                    if gkey == b"consumers" and isinstance(gvalue, list):
                        as_map[j] = (gkey, [_pairs(c) for c in gvalue])
                groups.append(as_map)
            info[i] = (key, groups)
    return info


def _reads(reply: Any) -> Any:
    if reply is NIL_ARRAY or not isinstance(reply, list):
        return reply
    return Map((key, entries) for key, entries in reply)


def _list_of_maps(reply: Any) -> Any:
    return [_pairs(item) for item in reply] if isinstance(reply, list) else reply


_SHAPES = {
    b"xread": _reads,
    b"xreadgroup": _reads,
}
_XINFO = {
    b"stream": lambda r: _stream_info(r) if isinstance(r, list) else r,
    b"groups": _list_of_maps,
    b"consumers": _list_of_maps,
}


def resp3(argv: list[bytes], reply: Any) -> Any:
    """``reply`` to the command ``argv`` in its RESP3 shape."""
    name = argv[0].lower()
    shape = _SHAPES.get(name)
    if shape is not None:
        return shape(reply)
    if name == b"config" and len(argv) > 1 and argv[1].lower() == b"get":
        return _pairs(reply) if isinstance(reply, list) else reply
    if name == b"xinfo" and len(argv) > 1:
        sub = _XINFO.get(argv[1].lower())
        if sub is not None:
            return sub(reply)
    return reply
