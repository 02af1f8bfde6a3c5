"""What a user does with a (possibly damaged) store, step by step, compared with the truth.

Open it (``sync=False``: the same reads and writes, without an fsync per write); run every
read of the truth; ``check()``; write (XADD to an existing stream and to a new one, XACK of a
pending entry) and read back what was written; ``check()`` again; close.
Each step ends in a :data:`StepRecord` (plain JSON types, so a child process can send it):

* ``phase``: open, read, check, write, readback, close;
* ``status``: ``equal`` / ``different`` (reads, readbacks, XACK's count), ``ok`` (a write
  that returned, open, close), ``clean`` / ``problems`` (check), ``raised``;
* ``detail``: the first difference, the problems found, the ID written;
* ``error``: for ``raised``, the exception's class, module, message, whether it is an
  ``rstore.RStoreError``, and the innermost frames.

Exceptions are caught per step (``Exception``, not ``BaseException``): a read that raises does
not stop the others.  Only a failed open ends the battery early.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import rstore

from .population import Population
from .truth import Truth, first_difference, key_label, reads

StepRecord = dict[str, Any]

PROBE_FIELDS = {b"probe": b"damage", b"bin": b"\x00\xff\x01"}
PROBE_FLAT = [x for pair in PROBE_FIELDS.items() for x in pair]


class Recorder(Protocol):
    def start(self, step: str) -> None: ...

    def done(self, record: StepRecord) -> None: ...


def describe_error(exc: BaseException, full_traceback: bool = False) -> dict[str, Any]:
    """An exception as plain data: class, module, message, rstore or not, where it was raised
    (the two innermost frames; the whole traceback too when asked)."""
    frames = traceback.extract_tb(exc.__traceback__)[-2:]
    where = " <- ".join(
        f"{_short_path(f.filename)}:{f.lineno} in {f.name}" for f in reversed(frames)
    )
    error = {
        "class": type(exc).__qualname__,
        "module": type(exc).__module__,
        "message": str(exc)[:300],
        "rstore": isinstance(exc, rstore.RStoreError),
        "where": where,
    }
    if full_traceback:
        error["traceback"] = "".join(traceback.format_exception(exc))
    return error


def _short_path(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("rstore", "tests", "lmdb"):
        if anchor in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(anchor) - 1 :])
    return filename


class _Run:
    """One battery: runs steps and hands their records to the recorder."""

    def __init__(self, recorder: Recorder, full_tracebacks: bool) -> None:
        self.recorder = recorder
        self.full_tracebacks = full_tracebacks

    def step(self, name: str, phase: str, fn: Callable[[], StepRecord]) -> StepRecord:
        self.recorder.start(name)
        try:
            record = fn()
        except Exception as exc:
            record = {"status": "raised", "error": describe_error(exc, self.full_tracebacks)}
        record = {"step": name, "phase": phase, **record}
        self.recorder.done(record)
        return record

    def compare(self, name: str, phase: str, expected: Any, fn: Callable[[], Any]) -> StepRecord:
        def run() -> StepRecord:
            got = fn()
            if got == expected:
                return {"status": "equal"}
            return {"status": "different", "detail": first_difference(expected, got)}

        return self.step(name, phase, run)


def _check(store: rstore.Store) -> StepRecord:
    problems = store.check()
    if not problems:
        return {"status": "clean"}
    return {"status": "problems", "detail": f"{len(problems)}: " + "; ".join(problems[:3])[:400]}


def _write_id(store: rstore.Store, key: bytes) -> tuple[StepRecord, bytes]:
    entry_id = store.xadd(key, PROBE_FIELDS)
    return {"status": "ok", "detail": repr(entry_id)}, entry_id


def run(
    path: Path, pop: Population, truth: Truth, recorder: Recorder, full_tracebacks: bool = False
) -> None:
    """The whole battery on the store in ``path``."""
    r = _Run(recorder, full_tracebacks)
    opened: list[rstore.Store] = []

    def open_store() -> StepRecord:
        opened.append(rstore.Store(path, sync=False, create=False))
        return {"status": "ok"}

    if r.step("open", "open", open_store)["status"] != "ok":
        return
    store = opened[0]
    for read in reads(pop):
        r.compare(read.name, "read", truth[read.name], partial(read.run, store))
    r.step("check", "check", lambda: _check(store))
    _writes(r, store, pop, truth)
    r.step("check-after-writes", "check", lambda: _check(store))

    def close() -> StepRecord:
        store.close()
        return {"status": "ok"}

    r.step("close", "close", close)


def _append(r: _Run, store: rstore.Store, name: str, key: bytes, truth: Truth) -> None:
    """XADD to ``key``; when it returned an ID, that entry must read back, and one more."""
    written: list[bytes] = []

    def write() -> StepRecord:
        record, entry_id = _write_id(store, key)
        written.append(entry_id)
        return record

    if r.step(name, "write", write)["status"] != "ok":
        return
    entry_id = written[0]
    r.compare(
        f"{name}/xrange",
        "readback",
        [[entry_id, PROBE_FLAT]],
        lambda: store.execute("XRANGE", key, entry_id, entry_id),
    )
    before = truth.get(f"xlen[{key_label(key)}]", 0)
    r.compare(f"{name}/xlen", "readback", before + 1, lambda: store.xlen(key))


def _writes(r: _Run, store: rstore.Store, pop: Population, truth: Truth) -> None:
    _append(r, store, "xadd-existing", pop.append_key, truth)
    _append(r, store, "xadd-new", pop.new_key, truth)
    key, group = pop.ack_target
    where = f"{key_label(key)}/{key_label(group)}"
    pending = truth[f"xpending-range[{where}]"]
    target = pending[0][0]
    acked = r.compare("xack", "write", 1, lambda: store.execute("XACK", key, group, target))
    if acked["status"] != "equal":
        return  # refused (an error) or wrong (a different count): nothing to read back
    r.compare(
        "xack/xpending-range",
        "readback",
        [],
        lambda: store.execute("XPENDING", key, group, target, target, 10),
    )
    summary = truth[f"xpending[{where}]"]
    r.compare(
        "xack/xpending",
        "readback",
        summary[0] - 1,
        lambda: store.execute("XPENDING", key, group)[0],
    )
