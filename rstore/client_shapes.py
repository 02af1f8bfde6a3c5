"""Reply shapes of redis-py (``decode_responses=False``, RESP2) for the façade's methods."""

from __future__ import annotations

from typing import Any


def pairs_to_dict(flat: list[Any] | None) -> dict[Any, Any]:
    if not flat:
        return {}
    it = iter(flat)
    return dict(zip(it, it))


def parse_stream_list(reply: list[Any] | None, **_: Any) -> list[Any] | None:
    if reply is None:
        return None
    out: list[Any] = []
    for r in reply:
        if r is None:
            out.append((None, None))
        else:
            it = iter(r[1] or ())
            out.append((r[0], dict(zip(it, it))))
    return out


def parse_xread(reply: list[Any] | None, **_: Any) -> list[Any]:
    if reply is None:
        return []
    return [[r[0], parse_stream_list(r[1])] for r in reply]


def parse_xinfo_stream(reply: list[Any], **options: Any) -> dict[str, Any]:
    data = {k.decode(): v for k, v in zip(reply[0::2], reply[1::2])}
    if not options.get("full"):
        for name in ("first-entry", "last-entry"):
            entry = data.get(name)
            if entry is not None and entry[0] is not None:
                data[name] = (entry[0], pairs_to_dict(entry[1]))
    else:
        data["entries"] = {eid: pairs_to_dict(fv) for eid, fv in data["entries"]}
        groups = []
        for group in data["groups"]:
            g = {k.decode(): v for k, v in zip(group[0::2], group[1::2])}
            if g.get("consumers"):
                g["consumers"] = [
                    {k.decode(): v for k, v in zip(c[0::2], c[1::2])} for c in g["consumers"]
                ]
            groups.append(g)
        data["groups"] = groups
    return data


def bool_ok(reply: Any, **_: Any) -> bool:
    return bool(reply == "OK")


def status_bytes(reply: Any, **_: Any) -> Any:
    """redis-py (without decoding) returns status replies as bytes."""
    return reply.encode() if isinstance(reply, str) else reply


def parse_scan(reply: list[Any], **_: Any) -> tuple[int, list[bytes]]:
    return int(reply[0]), reply[1]


def parse_config_get(reply: list[bytes], **_: Any) -> dict[str, str]:
    items = [r.decode() for r in reply]
    return dict(zip(items[0::2], items[1::2]))


def decode_pairs(flat: list[Any]) -> dict[str, Any]:
    return {k.decode(): v for k, v in zip(flat[0::2], flat[1::2])}


def parse_list_of_dicts(reply: list[Any], **_: Any) -> list[dict[str, Any]]:
    return [decode_pairs(item) for item in reply]


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
