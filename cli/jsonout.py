"""The JSON mapping used by every ``--json`` output.

=========================================  ==============================================
value                                      JSON
=========================================  ==============================================
bytes that are valid UTF-8                 a string
bytes that are not valid UTF-8             ``{"base64": "<standard base64 of the bytes>"}``
a path holding bytes that are not UTF-8    the same, for the path's bytes
status reply (``OK``, ``PONG``)            a string
integer                                    a number
nil (nil bulk and nil array alike)         ``null``
array                                      an array
stream entry                               ``{"id": "<ms>-<seq>", "fields": [[field, value], ...]}``
deleted entry (pending, no longer stored)  ``{"id": "<ms>-<seq>", "fields": null}``
XINFO map                                  an object with the reply's field names as keys
=========================================  ==============================================

So a script can rely on this: every string-like value is either a JSON string (the exact text)
or an object with the single key ``base64``.  Entry fields are ``[field, value]`` pairs, in
stored order, because a stream entry may repeat a field name and a field name need not be text.
Output is UTF-8.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import click

from rstore import NIL_ARRAY

from .replies import Entry

__all__ = ["array_lines", "dumps", "echo_json", "echo_reply", "echo_utf8", "entry_json", "jsonable"]


def jsonable(value: Any) -> Any:
    """``value`` (a reply, a record, or a tree of them) as plain JSON-ready Python values."""
    if value is None or value is NIL_ARRAY:
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": binascii.b2a_base64(value, newline=False).decode("ascii")}
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a path holding bytes that are not UTF-8 (surrogateescape)
            return jsonable(value.encode("utf-8", "surrogateescape"))
        return value
    if isinstance(value, int | float):
        return value
    if isinstance(value, Entry):
        return {
            "id": jsonable(value.id),
            "fields": None
            if value.deleted
            else [[jsonable(f), jsonable(v)] for f, v in value.fields],
        }
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    raise TypeError(f"no JSON mapping for {type(value).__name__}")


def entry_json(entry_id: bytes, flat: Sequence[bytes] | None) -> str:
    """One entry object on one line, from an entry as a reply holds it (``flat`` is
    ``[field, value, ...]``, or ``None`` for a pending entry deleted from the stream)."""
    if flat is None:
        fields = None
    else:
        fields = [[jsonable(flat[i]), jsonable(flat[i + 1])] for i in range(0, len(flat), 2)]
    import json  # noqa: PLC0415 (loaded on the first JSON output: start-up)

    return json.dumps({"id": jsonable(entry_id), "fields": fields}, ensure_ascii=False)


def dumps(value: Any) -> str:
    """One line of JSON for ``value`` (see :func:`jsonable`)."""
    import json  # noqa: PLC0415 (loaded on the first JSON output: start-up)

    return json.dumps(jsonable(value), ensure_ascii=False)


def echo_utf8(line: str) -> None:
    """Print one line as UTF-8 bytes, whatever the locale's encoding (JSON must be UTF-8)."""
    click.echo((line + "\n").encode("utf-8"), nl=False)


def echo_json(value: Any) -> None:
    """Print ``value`` as one line of JSON."""
    echo_utf8(dumps(value))


def echo_reply(value: Any, as_json: bool) -> None:
    """Print a command's plain reply (a count, a status): one line of JSON with ``--json``,
    else its text."""
    if as_json:
        echo_json(value)
    else:
        click.echo(str(value))


def array_lines(items: Iterable[Any]) -> Iterator[str]:
    """A JSON array written one element per line, as the elements come::

    [{"id": "1-0", ...},
     {"id": "2-0", ...}]
    """
    previous: str | None = None
    for item in items:
        if previous is not None:
            yield previous + ","
            previous = " " + dumps(item)
        else:
            previous = "[" + dumps(item)
    yield "[]" if previous is None else previous + "]"
