"""Reply shapes of redis-py 8.1 for the façade's methods, with and without
``decode_responses``.

As in redis-py, decoding comes first: with ``decode_responses=True`` every bulk string of the
reply, at any depth, becomes ``str`` (:func:`make_decoder`), and the shaping functions below
then run on the decoded reply.  So they take keys and values that are ``bytes`` or ``str``.
Status replies are ``str`` inside rstore; :func:`status_reply` gives them as redis-py does.

**Protocols.**  redis-py 8.1's default client (``protocol`` not given) speaks RESP3 and turns
the replies back into its RESP2 shapes, except in one place: the consumers of ``xinfo_stream(
full=True)`` keep ``bytes`` keys (``str`` with ``decode_responses``), where a
``protocol=2`` client gives ``str`` keys.  The callbacks receive the store's ``protocol``
(:data:`PROTOCOLS`) and give the shapes of that client.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

#: :func:`parse_stream_list` in C (``rstore/client/_shapes.c``), or ``None`` when it is not
#: built or ``RSTORE_NO_SPEEDUPS`` turns the accelerators off.
_c_stream_list: Callable[[Any], list[Any] | None] | None = None
if os.environ.get("RSTORE_NO_SPEEDUPS", "") in ("", "0"):
    try:
        from rstore.client import _shapes  # type: ignore[attr-defined]
    except ImportError:  # not built: shaped in Python
        pass
    else:
        _c_stream_list = _shapes.stream_list

#: Option of a method's command: never decode its reply (DUMP payloads are binary).
NEVER_DECODE = "_never_decode"

Decoder = Callable[[Any], Any]

#: The ``protocol`` values whose reply shapes the methods give: ``None``, redis-py's default
#: client, and ``2``, a ``protocol=2`` one.
PROTOCOLS = (None, 2)


def make_decoder(encoding: str, errors: str) -> Decoder:
    """A function decoding every ``bytes`` of a reply (lists nested at any depth) to ``str``."""

    def decode(reply: Any) -> Any:
        if type(reply) is bytes:
            return reply.decode(encoding, errors)
        if type(reply) is list:
            return [decode(item) for item in reply]
        return reply

    return decode


def finish(
    reply: Any,
    callback: Callable[..., Any] | None,
    options: dict[str, Any],
    decode: Decoder | None,
    protocol: int | None = None,
) -> Any:
    """Decode (unless the command never decodes), then shape with the method's callback, for
    a client of ``protocol`` (:data:`PROTOCOLS`).  ``options`` are the command's (consumed:
    :data:`NEVER_DECODE` is removed from it)."""
    if options.pop(NEVER_DECODE, False):
        decode = None
    if decode is not None:
        reply = decode(reply)
        if callback is status_reply:
            return reply
    return reply if callback is None else callback(reply, protocol=protocol, **options)


def text(value: Any) -> Any:
    """redis-py's ``str_if_bytes``: bytes as UTF-8 text (bad bytes replaced), else as it is."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def pairs_to_dict(flat: list[Any] | None) -> dict[Any, Any]:
    if not flat:
        return {}
    it = iter(flat)
    return dict(zip(it, it))


def text_keys(flat: list[Any]) -> dict[Any, Any]:
    return {text(k): v for k, v in zip(flat[0::2], flat[1::2])}


def parse_stream_list(reply: list[Any] | None, **options: Any) -> list[Any] | None:
    """``[(id, {field: value}), ...]``: the entries of an XRANGE, XREVRANGE, XREAD or
    XREADGROUP reply as redis-py gives them (in C when ``_shapes.c`` is built, but for
    XREADGROUP's CLAIM extras: :func:`parse_stream_list_py` is the reference)."""
    if _c_stream_list is not None and "claim_min_idle_time" not in options:
        out = _c_stream_list(reply)
        if out is not None:
            return out
    return parse_stream_list_py(reply, **options)


def parse_stream_list_py(reply: list[Any] | None, **options: Any) -> list[Any] | None:
    """:func:`parse_stream_list` in Python."""
    if reply is None:
        return None
    extra = "claim_min_idle_time" in options  # XREADGROUP CLAIM adds idle time and deliveries
    out: list[Any] = []
    for r in reply:
        if r is None:
            out.append((None, None))
        elif extra:
            out.append((r[0], pairs_to_dict(r[1]), *r[2:]))
        else:
            out.append((r[0], pairs_to_dict(r[1])))
    return out


def parse_xread(reply: list[Any] | None, **options: Any) -> list[Any]:
    if reply is None:
        return []
    return [[r[0], parse_stream_list(r[1], **options)] for r in reply]


def parse_xinfo_stream(reply: list[Any], **options: Any) -> dict[str, Any]:
    data = text_keys(reply)
    if not options.get("full"):
        for name in ("first-entry", "last-entry"):
            entry = data.get(name)
            if entry is not None and entry[0] is not None:
                data[name] = (entry[0], pairs_to_dict(entry[1]))
    else:
        data["entries"] = {eid: pairs_to_dict(fv) for eid, fv in data["entries"]}
        groups = [text_keys(group) for group in data["groups"]]
        # redis-py's default client leaves the consumers' keys as the reply gives them
        consumer = text_keys if options.get("protocol") == 2 else pairs_to_dict
        for g in groups:
            if g["consumers"] and g["consumers"][0] is not None:
                g["consumers"] = [consumer(c) for c in g["consumers"]]
        data["groups"] = groups
    return data


def bool_ok(reply: Any, **_: Any) -> bool:
    return bool(text(reply) == "OK")


def status_reply(reply: Any, **_: Any) -> Any:
    """A status reply as redis-py gives it: ``bytes`` (``str`` with ``decode_responses``,
    where :func:`finish` does not call this)."""
    return reply.encode() if isinstance(reply, str) else reply


def parse_scan(reply: list[Any], **_: Any) -> tuple[int, list[Any]]:
    return int(reply[0]), reply[1]


def parse_config_get(reply: list[Any], **_: Any) -> dict[Any, Any]:
    items = [text(r) for r in reply]
    return dict(zip(items[0::2], items[1::2]))


def parse_list_of_dicts(reply: list[Any], **_: Any) -> list[dict[str, Any]]:
    return [text_keys(item) for item in reply]


def parse_xpending(reply: list[Any], **options: Any) -> Any:
    if options.get("parse_detail"):
        keys = ("message_id", "consumer", "time_since_delivered", "times_delivered")
        return [dict(zip(keys, item)) for item in reply]
    consumers = [{"name": n, "pending": int(p)} for n, p in reply[3] or []]
    return {"pending": reply[0], "min": reply[1], "max": reply[2], "consumers": consumers}


def parse_xclaim(reply: list[Any], **options: Any) -> Any:
    return reply if options.get("parse_justid") else parse_stream_list(reply)


def parse_xautoclaim(reply: list[Any], **options: Any) -> Any:
    if options.get("parse_justid"):
        return reply[1]
    reply[1] = parse_stream_list(reply[1])
    return reply
