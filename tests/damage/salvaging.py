"""What a salvage of a damaged copy must give, checked against the intact store.

* the source's files are byte for byte what they were, and no file was added (no lock file);
* the new store passes ``check`` and opens in the default format;
* every entry it holds is one the intact store held, under the same name and ID, with the same
  fields (a stream copied under a made-up name holds entries of one intact stream);
* per stream, the entries lost are exactly those the report's lost ranges cover: every entry of
  the intact store with an ID in a lost range is missing, every other entry is there;
* a report that says complete has every stream, entry, group, consumer and pending entry (the
  damage campaign's truth: every read a user can make, XINFO FULL and XPENDING included).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import rstore

from .population import Population
from .truth import Truth, first_difference, record

Entries = dict[bytes, dict[bytes, list[bytes]]]  # stream -> ID -> flat fields


def digests(path: Path) -> dict[str, str]:
    """Every file of a store directory (recursively) and the SHA-256 of its bytes."""
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = Path(root, name)
            out[str(full.relative_to(path))] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def entries_of(path: Path) -> Entries:
    """Every entry of every stream of the store at ``path``."""
    with rstore.Store(path, readonly=True, create=False) as store:
        return {
            key: {entry_id: _flat(fields) for entry_id, fields in store.xrange(key)}
            for key in store.keys("*")
        }


def _flat(fields: dict[bytes, bytes]) -> list[bytes]:
    return [x for pair in fields.items() for x in pair]


def _in_ranges(entry_id: bytes, stream: rstore.StreamSalvage) -> bool:
    ms, seq = (int(x) for x in entry_id.split(b"-"))
    return any(
        r.first <= (ms, seq) and (r.before is None or (ms, seq) < r.before)
        for r in stream.lost_entries
    )


def violations(original: Entries, report: rstore.SalvageReport, dst: Path) -> list[str]:
    """What the new store at ``dst`` gets wrong against the intact store's ``original``
    entries and the ``report`` (empty: nothing)."""
    problems = [f"check: {p}" for p in rstore.check_store(dst)]
    with rstore.Store(dst, readonly=True, create=False) as store:
        if store.format != rstore.FORMAT_VERSION:
            problems.append(f"the new store is in format {store.format}")
    got = entries_of(dst)
    by_name = {s.name: s for s in report.streams}
    if set(got) != set(by_name):
        problems.append(f"streams {sorted(set(got) ^ set(by_name))} differ from the report")
    for name, entries in got.items():
        stream = by_name.get(name)
        if stream is None:
            continue
        if stream.original_name is None:
            if not any(_subset(entries, theirs) for theirs in original.values()):
                problems.append(f"{name!r}: entries no intact stream held")
            continue
        theirs = original.get(stream.original_name)
        if theirs is None:
            problems.append(f"{name!r}: a stream the intact store did not hold")
            continue
        wrong = [i for i, fields in entries.items() if theirs.get(i) != fields]
        if wrong:
            problems.append(f"{name!r}: entries {wrong[:3]} are not the intact store's")
        missing = set(theirs) - set(entries)
        covered = {i for i in theirs if _in_ranges(i, stream)}
        if missing != covered:
            odd = sorted(missing ^ covered)[:3]
            problems.append(
                f"{name!r}: {len(missing)} entries missing, {len(covered)} in the lost ranges "
                f"{stream.lost_entries[:2]} (differing: {odd})"
            )
        if stream.entries != len(entries):
            problems.append(f"{name!r}: the report counts {stream.entries} entries")
    if report.complete and got != original:
        problems.append("the report says complete but the stores differ")
    return problems


def _subset(entries: dict[bytes, list[bytes]], theirs: dict[bytes, list[bytes]]) -> bool:
    return all(theirs.get(i) == fields for i, fields in entries.items())


def truth_differences(pop: Population, truth: Truth, dst: Path) -> list[str]:
    """Every read of the truth that the new store answers differently."""
    with rstore.Store(dst, readonly=True, create=False) as store:
        got = record(store, pop)
    return [f"{k}: {first_difference(truth[k], got[k])}" for k in truth if truth[k] != got[k]]
