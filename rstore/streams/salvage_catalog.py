"""The small sub-databases of a store being salvaged, read whole: stream names, stream metadata,
groups, consumers and the store's own records -- with what could not be read, in words.

The large ones (``nodes``, ``pel``, ``consumer_pel``) are read stream by stream and group by
group (:mod:`rstore.streams.salvage`).  Every record here comes from
:meth:`rstore.storage.checks.salvage.SalvageSource.records`, its checksum verified; a record that
decodes badly (possible in format 1, which has no checksums) or whose key does not match its
contents is treated as damaged.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from rstore.storage.checks.pagecheck import Problem
from rstore.storage.checks.salvage import SalvageSource
from rstore.storage.records import idmp_records, layout
from rstore.storage.records.layout import ConsumerMeta, GroupMeta, StoreConfig, StreamMeta

__all__ = ["Catalog", "count_orphans", "handle_span", "read_catalog", "shown", "where"]

_DECODE_ERRORS = (struct.error, ValueError, IndexError)
_LAST_HANDLE = (1 << 64) - 1
_MARKS = (layout.META_BATCH_PREFIX, layout.META_BOOKMARK_PREFIX)


def shown(name: bytes, limit: int = 60) -> str:
    """A stream, group or consumer name for a report line: quoted, bytes that are not UTF-8 as
    ``\\xHH``, a long one cut (with its length)."""
    text = repr(name[:limit].decode("utf-8", "backslashreplace"))
    return text if len(name) <= limit else f"{text[:-1]}...' ({len(name)} bytes)"


def where(problem: Problem) -> str:
    """Where a problem is, in the words ``rstore check`` uses."""
    if problem.page is None:
        key = "" if problem.key is None else f", record {problem.key.hex()}"
        return f"sub-database {problem.tree}{key}: {problem.what}"
    return f"data.mdb page {problem.page} (sub-database {problem.tree}): {problem.what}"


def handle_span(problem: Problem) -> tuple[int, int]:
    """The first and last handle (the keys' first 8 bytes) whose records a problem may have
    held; an empty span when the last is below the first."""
    if problem.key is not None and len(problem.key) >= 8:
        handle = layout.unpack_u64(problem.key[:8])
        return handle, handle
    low, high = problem.low, problem.high
    first = 0 if low is None or len(low) < 8 else layout.unpack_u64(low[:8])
    if high is None or len(high) < 8:
        return first, _LAST_HANDLE
    last = layout.unpack_u64(high[:8])
    return first, last - 1 if not any(high[8:]) else last


@dataclass
class _Losses:
    """Lost records of a sub-database keyed by handle: per handle, and spans of handles."""

    by_handle: dict[int, list[str]] = field(default_factory=dict)
    spans: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, problem: Problem, what: str) -> None:
        first, last = handle_span(problem)
        if first == last:
            self.by_handle.setdefault(first, []).append(what)
        elif first < last:
            self.spans.append((first, last, what))

    def of(self, handle: int) -> list[str]:
        return self.by_handle.get(handle, []) + [w for a, b, w in self.spans if a <= handle <= b]

    def any(self) -> bool:
        return bool(self.by_handle or self.spans)


@dataclass
class Catalog:
    """What the small sub-databases held, and what of them was lost."""

    names: dict[int, bytes] = field(default_factory=dict)  # stream handle -> key name
    metas: dict[int, StreamMeta] = field(default_factory=dict)  # stream handle -> metadata
    groups: dict[int, list[GroupMeta]] = field(default_factory=dict)  # stream handle -> groups
    consumers: dict[int, dict[bytes, ConsumerMeta]] = field(default_factory=dict)  # group
    group_losses: _Losses = field(default_factory=_Losses)  # by stream handle
    consumer_losses: _Losses = field(default_factory=_Losses)  # by group handle
    lost: list[str] = field(default_factory=list)  # store-wide losses, in words
    damaged: list[str] = field(default_factory=list)  # every damaged place met, in words
    config: StoreConfig | None = None
    marks: list[tuple[bytes, bytes]] = field(default_factory=list)  # batch numbers and bookmarks

    def handles(self) -> list[int]:
        """Every stream handle some record names."""
        return sorted({*self.names, *self.metas, *self.groups})

    def group_handles(self) -> set[int]:
        return {g.handle for groups in self.groups.values() for g in groups}

    def problem(self, problem: Problem) -> str:
        """Record a damaged place; its description."""
        text = where(problem)
        self.damaged.append(text)
        return text


def read_catalog(source: SalvageSource) -> Catalog:
    """Read the small sub-databases of ``source``."""
    cat = Catalog()
    _read_names(source, cat)
    _read_metas(source, cat)
    _read_groups(source, cat)
    _read_consumers(source, cat)
    _read_store_records(source, cat)
    return cat


def _read_names(source: SalvageSource, cat: Catalog) -> None:
    for item in source.records(layout.DB_KEYS):
        if isinstance(item, Problem):
            cat.lost.append(
                f"stream names lost ({cat.problem(item)}): the streams whose "
                "other records were read are copied under made-up names"
            )
            continue
        key, value = item
        try:
            rec = layout.unpack_key_record(value)
            name = layout.name_from_key_entry(key, value)
        except _DECODE_ERRORS:
            rec, name = None, b""
        if rec is None or rec.type != layout.TYPE_STREAM or layout.key_db_key(name) != key:
            cat.lost.append(f"a stream name is lost: {cat.problem(_bad(layout.DB_KEYS, key))}")
            continue
        cat.names.setdefault(rec.handle, name)


def _bad(db: bytes, key: bytes) -> Problem:
    return Problem(db.decode(), None, "the record is malformed", key, None, key)


def _read_metas(source: SalvageSource, cat: Catalog) -> None:
    for item in source.records(layout.DB_STREAMS):
        if isinstance(item, Problem):
            cat.problem(item)  # the streams concerned say their metadata is lost
            continue
        key, value = item
        if len(key) != 8 or len(value) not in layout.STREAM_META_SIZES:
            cat.problem(_bad(layout.DB_STREAMS, key))
            continue
        cat.metas[layout.unpack_u64(key)] = StreamMeta.unpack(value)


M = TypeVar("M", GroupMeta, ConsumerMeta)


def _members(
    source: SalvageSource, cat: Catalog, db: bytes, kind: type[M], losses: _Losses
) -> Iterator[tuple[int, M]]:
    """The group or consumer records of ``db`` that decode and match their keys, with the
    handle their key starts with; the others are lost, in ``losses`` by that handle."""
    what = "group" if kind is GroupMeta else "consumer"
    for item in source.records(db):
        if isinstance(item, Problem):
            if item.key is not None:
                text = f"{what} {shown(item.key[8:])} lost"
            else:  # a page of them: which, and whose, is not known
                text = f"{what}s may be missing: a page of their records is lost"
            losses.add(item, f"{text} ({cat.problem(item)})")
            continue
        key, value = item
        try:
            member: M | None = kind.unpack(key, value)
        except _DECODE_ERRORS:
            member = None
        if len(key) < 8 or member is None or layout.member_part(member.name) != key[8:]:
            problem = _bad(db, key)
            losses.add(problem, f"a {what} lost ({cat.problem(problem)})")
            continue
        yield layout.unpack_u64(key[:8]), member


def _read_groups(source: SalvageSource, cat: Catalog) -> None:
    for handle, group in _members(source, cat, layout.DB_GROUPS, GroupMeta, cat.group_losses):
        cat.groups.setdefault(handle, []).append(group)


def _read_consumers(source: SalvageSource, cat: Catalog) -> None:
    losses = cat.consumer_losses
    for handle, consumer in _members(source, cat, layout.DB_CONSUMERS, ConsumerMeta, losses):
        cat.consumers.setdefault(handle, {})[consumer.name] = consumer


def _read_store_records(source: SalvageSource, cat: Catalog) -> None:
    """The store's settings and the batch numbers and bookmarks of ``append_entries``."""
    idempotency = False
    for item in source.records(layout.DB_META):
        if isinstance(item, Problem):
            cat.lost.append(
                "store records lost (settings, batch numbers or replay "
                f"bookmarks): {cat.problem(item)}"
            )
            continue
        key, value = item
        if key == layout.META_CONFIG:
            try:
                cat.config = StoreConfig.unpack(value)
            except _DECODE_ERRORS:
                cat.problem(_bad(layout.DB_META, key))
        elif key.startswith(_MARKS):
            cat.marks.append((key, value))
        elif key.startswith(idmp_records.PREFIX):
            idempotency = True
    if idempotency:
        cat.lost.append(
            "what idempotent production (XADD IDMP) remembered is not salvaged: a retry of an "
            "earlier XADD is added again"
        )
    if cat.config is None:
        cat.lost.append(
            "the store's settings (node sizes) are lost: the new store has the defaults"
        )


def count_orphans(source: SalvageSource, cat: Catalog) -> None:
    """Consumers and pending entries of groups whose record is lost cannot be attached to a
    stream: count them, per group handle (the pending entries only when some group record was
    lost: otherwise there are none)."""
    known = cat.group_handles()
    for handle, consumers in sorted(cat.consumers.items()):
        if handle not in known:
            cat.lost.append(
                f"{len(consumers)} consumers of a group whose record is lost "
                f"(group handle {handle}): not copied"
            )
    if not cat.group_losses.any():
        return
    orphans: dict[int, int] = {}
    for item in source.records(layout.DB_PEL):
        if not isinstance(item, Problem) and len(item[0]) == 24:
            handle = layout.unpack_u64(item[0][:8])
            if handle not in known:
                orphans[handle] = orphans.get(handle, 0) + 1
    for handle, count in sorted(orphans.items()):
        cat.lost.append(
            f"{count} pending entries of a group whose record is lost (group "
            f"handle {handle}): not copied"
        )
