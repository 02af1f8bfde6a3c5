"""Stream IDs: the ``<ms>-<seq>`` pair, its text form, and Redis's three parsers.

An ID is a pair of unsigned 64-bit integers compared ``ms`` first.  Internally rstore uses
plain ``tuple[int, int]`` (fast to build and compare); :class:`StreamID` is the same tuple with
names, returned by the public API.

Redis parses IDs with one routine in three flavours (``docs/semantics.md#stream-ids``):

* non-strict: ``-`` means ``0-0`` and ``+`` means ``max-max`` (range bounds, XGROUP SETID);
* strict: ``-`` and ``+`` are invalid (XDEL, XADD, XREAD ids, ...);
* strict with ``<ms>-*`` (XADD only): a sequence of exactly ``*`` means "pick it for me".

The argument is split at its first ``-``; each half goes through ``string2ull``.  Like the C
code, the text ends at the first NUL byte.  Every failure is
``ERR Invalid stream ID specified as stream command argument``.

For people, :func:`parse_range_bound` reads a range bound as XRANGE does and also accepts a
time, which stands for its Unix time in ms written as an ID (:func:`parse_time_ms`: an
ISO-8601 date and time such as ``2026-11-01T10:00``, or a duration ago such as ``1h``).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from rstore import messages
from rstore.errors import ResponseError
from rstore.model import ID
from rstore.numbers import UINT64_MAX, string2ull

__all__ = [
    "ID",
    "MAX_ID",
    "MIN_ID",
    "StreamID",
    "decrement",
    "format_id",
    "increment",
    "parse_id",
    "parse_interval_id",
    "parse_range_bound",
    "parse_time_ms",
]

MIN_ID: ID = (0, 0)
MAX_ID: ID = (UINT64_MAX, UINT64_MAX)


class StreamID(NamedTuple):
    """A stream entry ID; ``str(StreamID(5, 1)) == "5-1"``."""

    ms: int
    seq: int

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"


def format_id(sid: ID) -> bytes:
    """The reply form of an ID: ``b"<ms>-<seq>"``."""
    return b"%d-%d" % sid


def increment(sid: ID) -> ID | None:
    """The next ID, or ``None`` past ``max-max``."""
    ms, seq = sid
    if seq < UINT64_MAX:
        return (ms, seq + 1)
    if ms < UINT64_MAX:
        return (ms + 1, 0)
    return None


def decrement(sid: ID) -> ID | None:
    """The previous ID, or ``None`` before ``0-0``."""
    ms, seq = sid
    if seq > 0:
        return (ms, seq - 1)
    if ms > 0:
        return (ms - 1, UINT64_MAX)
    return None


# The common ``<ms>-<seq>`` of ASCII digits, parsed without the general path: up to 19 digits
# always fit in 64 bits, and Redis reads leading zeros as strtoull does, which int() agrees with.
_PLAIN_ID = re.compile(rb"([0-9]{1,19})-([0-9]{1,19})\Z").match


def _invalid() -> ResponseError:
    return ResponseError(messages.INVALID_ID)


def parse_id(
    arg: bytes,
    *,
    strict: bool = True,
    missing_seq: int = 0,
) -> ID:
    """Parse a stream ID argument (Redis ``streamGenericParseIDOrReply``).

    ``missing_seq`` is the sequence used when the argument has no ``-`` part (0 for start-like
    arguments, 2**64-1 for range ends).  Raises :class:`ResponseError` when invalid.
    """
    ms, seq = _parse(arg, strict, missing_seq, allow_star=False)
    assert seq is not None
    return (ms, seq)


def parse_ids(args: list[bytes]) -> list[ID]:
    """Parse a list of strict stream IDs (XACK, XCLAIM); the first invalid one raises."""
    out: list[ID] = []
    append = out.append
    plain_id = _PLAIN_ID
    for arg in args:
        plain = plain_id(arg)
        if plain is not None:
            append((int(plain[1]), int(plain[2])))
        else:
            append(parse_id(arg, strict=True))
    return out


def parse_xadd_id(arg: bytes) -> tuple[int, int | None]:
    """Parse an explicit XADD ID (``b"<ms>-<seq>"``, ``b"<ms>"`` as ``<ms>-0``, ``b"<ms>-*"``):
    ``(ms, seq)``, the seq ``None`` for ``*`` (XADD picks it).  Raises :class:`ResponseError`
    with XADD's line when the ID is invalid.  ``*`` alone is not an explicit ID: it raises."""
    return _parse(arg, True, 0, allow_star=True)


def _parse(arg: bytes, strict: bool, missing_seq: int, allow_star: bool) -> tuple[int, int | None]:
    plain = _PLAIN_ID(arg)
    if plain is not None:
        return (int(plain[1]), int(plain[2]))
    if len(arg) > 127:
        raise _invalid()
    nul = arg.find(b"\0")
    if nul >= 0:
        arg = arg[:nul]
    if arg in {b"-", b"+"}:
        if strict:
            raise _invalid()
        return MIN_ID if arg == b"-" else MAX_ID
    dash = arg.find(b"-")
    if dash < 0:
        ms = string2ull(arg)
        if ms is None:
            raise _invalid()
        return (ms, missing_seq)
    ms = string2ull(arg[:dash])
    if ms is None:
        raise _invalid()
    seq_part = arg[dash + 1 :]
    if allow_star and seq_part == b"*":
        return (ms, None)
    seq = string2ull(seq_part)
    if seq is None:
        raise _invalid()
    return (ms, seq)


def parse_interval_id(arg: bytes, *, missing_seq: int, is_end: bool) -> ID:
    """Parse a range bound that may be exclusive (``(id``), Redis ``streamParseIntervalIdOrReply``.

    An exclusive start is incremented and an exclusive end decremented; overflow gives
    ``ERR invalid start ID for the interval`` / ``ERR invalid end ID for the interval``.
    The part after ``(`` is parsed strictly, so ``(-`` and ``(+`` are invalid.
    """
    if len(arg) > 1 and arg[0] == 0x28:  # '('
        sid = parse_id(arg[1:], strict=True, missing_seq=missing_seq)
        moved = decrement(sid) if is_end else increment(sid)
        if moved is None:
            raise ResponseError(
                messages.INVALID_END_INTERVAL if is_end else messages.INVALID_START_INTERVAL
            )
        return moved
    return parse_id(arg, strict=False, missing_seq=missing_seq)


# ----------------------------------------------------------------------------- times

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DURATION = re.compile(r"(?:[0-9]+(?:ms|s|m|h|d|w))+\Z")
_DURATION_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_duration_ms(text: str | bytes) -> int | None:
    """A duration written with units ``ms``, ``s``, ``m``, ``h``, ``d``, ``w`` together
    (``90s``, ``1h30m``, ``7d``) in ms, or ``None`` when ``text`` is not one."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    if not _DURATION.match(text):
        return None
    return sum(int(n) * _UNIT_MS[unit] for n, unit in _DURATION_PART.findall(text))


def parse_time_ms(text: str | bytes, *, now_ms: int | None = None) -> int | None:
    """The Unix time in ms that ``text`` names, or ``None`` when it is not a time.

    Two forms:

    * a duration ago: numbers with units ``ms``, ``s``, ``m``, ``h``, ``d``, ``w``, written
      together (``90s``, ``1h``, ``1h30m``, ``7d``), with or without a leading ``-`` (``-2h``
      reads as "2 hours ago" too): that long before ``now_ms`` (default: now);
    * a date, or a date and time, in ISO 8601 (``2026-11-01``, ``2026-11-01T10:00``,
      ``2026-11-01 10:00:05.250``, ``2026-11-01T10:00Z``, ``2026-11-01T10:00+01:00``): local
      time unless it ends with ``Z`` or an offset.

    Raises :class:`ValueError` for a date that is not a real one (``2026-13-01``) or a time
    before 1970 (stream IDs start there).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            return None
    duration = text[1:] if text.startswith("-") else text
    ago = parse_duration_ms(duration)
    if ago is not None:
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        if ago > now:
            raise ValueError(f"{duration} ago is before 1970")
        return now - ago
    if not _DATE.match(text):
        return None
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(f"{text} is not a valid date and time (ISO 8601)") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time
    ms = (moment - _EPOCH) // timedelta(milliseconds=1)
    if ms < 0:
        raise ValueError(f"{text} is before 1970")
    return ms


def parse_range_bound(arg: bytes | str, *, is_end: bool, now_ms: int | None = None) -> StreamID:
    """A range bound as XRANGE reads it (``-``, ``+``, ``MS``, ``MS-SEQ``, ``(`` for an
    exclusive bound), or a time (:func:`parse_time_ms`, also after ``(``), which stands for
    its ms written as an ID: ``1h`` is the ID ``<now - 1 hour>`` (``-0`` as a start, ``-<max>``
    as an end).  Returns the bound as an inclusive :class:`StreamID`.

    Raises :class:`ResponseError` with XRANGE's error texts when ``arg`` is neither, and
    :class:`ValueError` for a malformed date (see :func:`parse_time_ms`).
    """
    raw = arg.encode("utf-8", "surrogateescape") if isinstance(arg, str) else arg
    missing_seq = UINT64_MAX if is_end else 0
    try:
        return StreamID(*parse_interval_id(raw, missing_seq=missing_seq, is_end=is_end))
    except ResponseError:
        exclusive = raw[:1] == b"(" and len(raw) > 1
        ms = parse_time_ms(raw[1:] if exclusive else raw, now_ms=now_ms)
        if ms is None:
            raise
    as_id = b"(%d" % ms if exclusive else b"%d" % ms
    return StreamID(*parse_interval_id(as_id, missing_seq=missing_seq, is_end=is_end))
