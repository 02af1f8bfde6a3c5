"""rstore's write path in Python calls: how many, in how many modules, in what order.

Each case runs one operation on a warmed store -- the store opened and the same operation done
``--warmup`` times first, so first-use imports and caches do not count -- under a profile hook
(:func:`sys.setprofile`) in the calling thread, ``--samples`` times, each sample counted on its
own.  Cases (``--cases``, comma-separated; all by default):

* ``xadd-durable``: ``store.xadd("bench", fields)`` on ``Store(path)`` (``sync=True``, the
  default format: the write-ahead log);
* ``xadd-relaxed``: the same on ``Store(path, sync=False)``;
* ``xreadgroup-woken``: ``store.xreadgroup("g", "c", {"bench": ">"}, count=1, block=10000)``
  on ``Store(path)``, blocked, and woken by an XADD that another **process** makes (a helper,
  ``Store(path)`` as well) once the reader sits in its wait: counted from the call to its
  return, in the reader's thread only (the processes' checkpointer threads are not counted);
* ``xack``: ``store.xack("bench", "g", id)`` of one pending entry (``sync=True``);
* ``xreadgroup-ready``: ``store.xreadgroup("g", "c", {"bench": ">"}, count=1)`` that finds one
  new entry (no BLOCK; ``sync=True``).

What is counted, in the calling thread, between the call and its return:

* **Python calls**: the profile hook's ``call`` events whose code object's file lies inside
  the imported ``rstore`` package directory (the first entry of a generator counts as a call,
  its later resumptions -- also ``call`` events -- are counted apart as ``resumes``; a
  comprehension is a call of its own on Python 3.11, inlined from 3.12); their **modules**
  (distinct files); a module's **entries**: the calls into it from another module (the
  nearest rstore frame up the stack is elsewhere), i.e. how often control comes back to it.
* **C calls**: ``c_call`` events made by rstore's own Python code (C functions and methods:
  py-lmdb, ``os``, ``struct``, rstore's C extensions, builtins).  **Other Python calls**:
  calls of Python code outside the package while rstore code is on the stack: the standard
  library (``contextlib``, ``threading``, ...) and code generated at run time, whose file is
  ``<string>`` (the ``__init__`` of a dataclass, the ``__new__`` of a namedtuple -- rstore's
  records, but not counted as its calls).
* **Commits**, observed without changing rstore, two ways:

  * ``lmdb commits``: the ``c_call`` events of ``commit`` on a py-lmdb ``Transaction`` made by
    rstore's code in the thread (rstore ends its read transactions with ``abort``, so these
    are write transactions; one that changed nothing counts too -- LMDB then writes nothing);
  * ``store commits``: how far LMDB's last transaction id moved during the call, minus the
    commits other processes made meanwhile (the helper's one XADD: one write command, one
    write transaction).  The id is read from the two meta pages at the head of ``data.mdb``
    (``mm_txnid``, the newer of the two), with ``pread`` -- no LMDB handle, no lock -- before
    and after.  LMDB moves it only for a commit that wrote pages, and no checkpoint or other
    background work of rstore commits a write transaction, so on a ``sync=True`` store this
    is the number of durable commits the call made: each must be on disk before it returns.

  ``durable commits``: the commits the call waited on the disk for -- the entries into the
  engine's step that makes a commit durable (``LogFlusher.make_durable``: once per durable
  commit, whether it flushes or finds its record covered by another writer's flush).  A
  blocking XREADGROUP that finds nothing records its consumer in a *relaxed* commit, which
  does not wait for the disk (the flush of its next commit covers it).

  ``flushes``: the ``fdatasync``/``fsync`` (and py-lmdb ``Environment.sync``) calls made in
  the thread; a commit may be made durable by another writer's flush instead.  ``waits``: the
  times the thread blocked (``select``, ``poll``, ``time.sleep`` called from rstore).

The garbage collector is off during a sample (collected before it).  A case's figures are those
of its median sample (the low median of the Python calls: a real sample, not a mix), with the
range over the samples beside them: the path differs a little from one sample to the next (a
checkpoint falls due, the log file grows, another thread's flush already covered the commit).
Targets (issue 22, item 5): a durable XADD makes at most 35 Python calls in at most 12 modules,
a relaxed one fewer; an XREADGROUP woken by another process makes one durable commit (the
``durable commits`` column).

    python bench/write_path.py                             # every case, a table
    python bench/write_path.py --cases xadd-durable --verbose   # modules, the call sequence
    python bench/write_path.py --json > calls.json         # or --json FILE
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import json
import os
import shlex
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import lmdb
import machine
from common import FIELDS, STREAM, Child, child_hear, child_say, exit_on_sigterm, rstore_origin

import rstore

GROUP = "g"
CONSUMER = "c"
BLOCK_MS = 10_000
#: How long the helper waits for the reader to block before it writes anyway (the sample then
#: shows ``waits`` 0), and how long after the reader blocked it writes.
BLOCK_SEEN_TIMEOUT_S = 5.0
WRITE_AFTER_BLOCK_S = 0.01

CASES = ("xadd-durable", "xadd-relaxed", "xreadgroup-woken", "xack", "xreadgroup-ready")
OPERATIONS = {
    "xadd-durable": f"store.xadd({STREAM!r}, fields) on Store(path) (sync=True)",
    "xadd-relaxed": f"store.xadd({STREAM!r}, fields) on Store(path, sync=False)",
    "xreadgroup-woken": (
        f"store.xreadgroup({GROUP!r}, {CONSUMER!r}, {{{STREAM!r}: '>'}}, count=1, "
        f"block={BLOCK_MS}) on Store(path), woken by another process's XADD"
    ),
    "xack": f"store.xack({STREAM!r}, {GROUP!r}, id) of one pending entry, on Store(path)",
    "xreadgroup-ready": (
        f"store.xreadgroup({GROUP!r}, {CONSUMER!r}, {{{STREAM!r}: '>'}}, count=1) finding one "
        "entry, on Store(path)"
    ),
}
#: Issue 22, item 5: upper bounds on a case's figures (the relaxed XADD must also make fewer
#: Python calls than the durable one when both are measured).
TARGETS: dict[str, dict[str, int]] = {
    "xadd-durable": {"python_calls": 35, "modules": 12},
    "xadd-relaxed": {"python_calls": 35, "modules": 12},
    "xreadgroup-woken": {"durable_commits": 1},
}

#: The engine's step that makes one commit durable (counted as a durable commit).
DURABLE_MODULE, DURABLE_STEP = "rstore.storage.engine.log_flush", "LogFlusher.make_durable"
PACKAGE_DIR = os.path.dirname(os.path.abspath(rstore.__file__))
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
_FLUSH_NAMES = frozenset({"fdatasync", "fsync"})


# ----------------------------------------------------------------------------- counting


@dataclass(frozen=True)
class Call:
    """One Python call into rstore (``kind`` "call"), or a point where the thread blocked
    (``kind`` "wait", ``function`` naming the C call)."""

    depth: int  # rstore frames on the stack below it
    module: str
    function: str
    entry: bool  # called from another module (or from outside rstore)
    kind: str = "call"


@dataclass
class Sample:
    """What one operation did in the calling thread."""

    events: list[Call] = field(default_factory=list)
    c_calls: int = 0
    other_python_calls: int = 0
    resumes: int = 0
    lmdb_commits: int = 0
    flushes: int = 0
    waits: int = 0
    store_commits: int = 0
    durable_commits: int = 0
    other_files: set[str] = field(default_factory=set)

    @property
    def calls(self) -> list[Call]:
        return [e for e in self.events if e.kind == "call"]

    def module_calls(self) -> list[dict[str, Any]]:
        """The modules in order of first entry, each with its calls and entries."""
        out: dict[str, dict[str, Any]] = {}
        for call in self.calls:
            row = out.setdefault(call.module, {"module": call.module, "calls": 0, "entries": 0})
            row["calls"] += 1
            row["entries"] += call.entry
        return list(out.values())

    def figures(self) -> dict[str, int]:
        calls = self.calls
        return {
            "python_calls": len(calls),
            "modules": len({c.module for c in calls}),
            "entries": sum(c.entry for c in calls),
            "c_calls": self.c_calls,
            "other_python_calls": self.other_python_calls,
            "resumes": self.resumes,
            "lmdb_commits": self.lmdb_commits,
            "store_commits": self.store_commits,
            "durable_commits": self.durable_commits,
            "flushes": self.flushes,
            "waits": self.waits,
        }


def module_of(filename: str, cache: dict[str, str | None]) -> str | None:
    """The dotted name of the rstore module whose code is in ``filename``; None outside it."""
    try:
        return cache[filename]
    except KeyError:
        pass
    name = None
    for candidate in (os.path.abspath(filename), os.path.realpath(filename)):
        for root in (PACKAGE_DIR, os.path.realpath(PACKAGE_DIR)):
            if candidate.startswith(root + os.sep):
                relative = os.path.splitext(candidate[len(root) + 1 :])[0].split(os.sep)
                if relative[-1] == "__init__":
                    relative.pop()
                name = ".".join(["rstore", *relative])
                break
        if name is not None:
            break
    cache[filename] = name
    return name


class Counter:
    """The profile hook of one sample (installed in the calling thread only)."""

    def __init__(self, on_block: Callable[[], None] | None = None) -> None:
        self.sample = Sample()
        self._on_block = on_block
        self._modules: dict[str, str | None] = {}
        self._started: list[FrameType] = []  # generator frames seen (kept alive: ids stay unique)

    def _rstore_below(self, frame: FrameType | None) -> tuple[int, str | None]:
        """How many rstore frames are at and under ``frame``, and the module of the first."""
        depth, first = 0, None
        while frame is not None:
            module = module_of(frame.f_code.co_filename, self._modules)
            if module is not None:
                depth += 1
                first = first or module
            frame = frame.f_back
        return depth, first

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._python_call(frame)
        elif event == "c_call" and module_of(frame.f_code.co_filename, self._modules):
            self._c_call(frame, arg)

    def _python_call(self, frame: FrameType) -> None:
        code = frame.f_code
        module = module_of(code.co_filename, self._modules)
        if module is None:
            if self._rstore_below(frame.f_back)[0]:
                self.sample.other_python_calls += 1
                self.sample.other_files.add(os.path.basename(code.co_filename))
            return
        if code.co_flags & _GENERATOR_FLAGS:
            if any(f is frame for f in self._started):
                self.sample.resumes += 1
                return
            self._started.append(frame)
        depth, caller = self._rstore_below(frame.f_back)
        function = getattr(code, "co_qualname", code.co_name)
        if function == DURABLE_STEP and module == DURABLE_MODULE:
            self.sample.durable_commits += 1
        self.sample.events.append(Call(depth, module, function, caller != module))

    def _c_call(self, frame: FrameType, fn: Any) -> None:
        sample = self.sample
        sample.c_calls += 1
        name = getattr(fn, "__name__", "")
        owner = getattr(fn, "__self__", None)
        if name == "commit" and isinstance(owner, lmdb.Transaction):
            sample.lmdb_commits += 1
        elif name in _FLUSH_NAMES or (name == "sync" and isinstance(owner, lmdb.Environment)):
            sample.flushes += 1
        elif fn is time.sleep or (name in ("select", "poll") and _is_select(fn, owner)):
            sample.waits += 1
            depth, module = self._rstore_below(frame)
            where = type(owner).__name__ if name == "poll" else fn.__module__
            sample.events.append(Call(depth, module or "", f"{where}.{name}", False, "wait"))
            if self._on_block is not None:
                self._on_block()


def _is_select(fn: Any, owner: Any) -> bool:
    module = getattr(fn, "__module__", None) or type(owner).__module__
    return module == "select"


def lmdb_last_txnid(data_path: str) -> int:
    """LMDB's last committed transaction id, from the meta pages of ``data_path`` (pages 0
    and 1: a page header of 16 bytes, then ``MDB_meta``: magic, version, address, map size,
    two ``MDB_db`` of 48 bytes -- the first one's ``md_pad`` is the page size --, the last
    page number and the transaction id, at 144 on a 64-bit build); the newer of the two."""
    fd = os.open(data_path, os.O_RDONLY)
    try:
        first = os.pread(fd, 152, 0)
        magic, _, _, _, page_size = struct.unpack_from("=IIQQI", first, 16)
        if magic != 0xBEEFC0DE:
            raise RuntimeError(f"{data_path}: not an LMDB data file of a 64-bit build")
        second = os.pread(fd, 152, page_size)
    finally:
        os.close(fd)
    return max(int(struct.unpack_from("=Q", page, 144)[0]) for page in (first, second))


def profile_one(
    op: Callable[[], Any],
    store_path: str,
    *,
    other_commits: int = 0,
    on_block: Callable[[], None] | None = None,
) -> tuple[Sample, Any]:
    """Run ``op`` once under the hook; ``(sample, op's result)``.  ``other_commits``: the
    commits other processes make meanwhile (subtracted from LMDB's transaction ids)."""
    data_path = os.path.join(store_path, "data.mdb")
    counter = Counter(on_block)
    gc.collect()
    gc.disable()
    before = lmdb_last_txnid(data_path)
    try:
        sys.setprofile(counter.hook)
        try:
            result = op()
        finally:
            sys.setprofile(None)
    finally:
        gc.enable()
    counter.sample.store_commits = lmdb_last_txnid(data_path) - before - other_commits
    return counter.sample, result


# ----------------------------------------------------------------------------- cases


def xadd_samples(store: rstore.Store, samples: int, warmup: int) -> list[Sample]:
    def op() -> Any:
        return store.xadd(STREAM, FIELDS)

    for _ in range(warmup):
        op()
    return [profile_one(op, store.path)[0] for _ in range(samples)]


def xack_samples(store: rstore.Store, samples: int, warmup: int) -> list[Sample]:
    out = []
    store.xgroup_create(STREAM, GROUP, "$", mkstream=True)
    for i in range(warmup + samples):
        entry_id = store.xadd(STREAM, FIELDS)
        store.xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=1)

        def op(entry_id: Any = entry_id) -> Any:
            return store.xack(STREAM, GROUP, entry_id)

        if i < warmup:
            op()
            continue
        sample, acked = profile_one(op, store.path)
        if acked != 1:
            raise RuntimeError(f"XACK acknowledged {acked} entries, not 1")
        out.append(sample)
    return out


def xreadgroup_samples(store: rstore.Store, samples: int, warmup: int) -> list[Sample]:
    out = []
    store.xgroup_create(STREAM, GROUP, "$", mkstream=True)

    def op() -> Any:
        return store.xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=1)

    for i in range(warmup + samples):
        entry_id = store.xadd(STREAM, FIELDS)
        if i < warmup:
            op()
            continue
        sample, reply = profile_one(op, store.path)
        check_delivered(reply, entry_id)
        out.append(sample)
    return out


def check_delivered(reply: Any, entry_id: Any) -> None:
    """``reply`` of XREADGROUP COUNT 1 delivers ``entry_id``."""
    got = reply[0][1][0][0] if reply else None
    if got != entry_id:
        raise RuntimeError(f"XREADGROUP returned {reply!r}, expected the entry {entry_id!r}")


def woken_samples(store: rstore.Store, samples: int, warmup: int) -> list[Sample]:
    out = []
    store.xgroup_create(STREAM, GROUP, "$", mkstream=True)
    with Child([__file__, "--child", store.path]) as writer:
        writer.expect("ready")

        def op() -> Any:
            return store.xreadgroup(GROUP, CONSUMER, {STREAM: ">"}, count=1, block=BLOCK_MS)

        for i in range(warmup + samples):
            sample = woken_sample(op, store.path, writer)
            if i >= warmup:
                out.append(sample)
    return out


def woken_sample(op: Callable[[], Any], path: str, writer: Child) -> Sample:
    """One blocked XREADGROUP, the writer process told to XADD once the reader waits."""
    blocked = threading.Event()
    added: list[bytes] = []
    failed: list[BaseException] = []

    def write_when_blocked() -> None:
        try:
            blocked.wait(BLOCK_SEEN_TIMEOUT_S)
            time.sleep(WRITE_AFTER_BLOCK_S)
            writer.send("xadd")
            added.append(writer.expect("added")[0].encode())
        except BaseException as exc:  # raised in the reader's thread below
            failed.append(exc)

    helper = threading.Thread(target=write_when_blocked, name="write-when-blocked")
    helper.start()
    try:
        sample, reply = profile_one(op, path, other_commits=1, on_block=blocked.set)
    finally:
        helper.join()
    if failed:
        raise failed[0]
    check_delivered(reply, added[0])
    return sample


def child_main(path: str) -> int:
    """The writer process of ``xreadgroup-woken``: one XADD per ``xadd`` line."""
    with rstore.Store(path) as store:
        for _ in range(3):
            store.xadd("warm-up", FIELDS)
        child_say("ready")
        while child_hear() != ["quit"]:
            entry_id = store.xadd(STREAM, FIELDS)
            child_say("added", entry_id.decode())
    return 0


MEASURES: dict[str, Callable[[rstore.Store, int, int], list[Sample]]] = {
    "xadd-durable": xadd_samples,
    "xadd-relaxed": xadd_samples,
    "xreadgroup-woken": woken_samples,
    "xack": xack_samples,
    "xreadgroup-ready": xreadgroup_samples,
}


def run_case(name: str, base_dir: str, samples: int, warmup: int) -> tuple[int, list[Sample]]:
    """``(the store's format, the samples)`` of case ``name``, on a new store."""
    with rstore.Store(os.path.join(base_dir, name), sync=name != "xadd-relaxed") as store:
        return store.format, MEASURES[name](store, samples, warmup)


# ----------------------------------------------------------------------------- results


def summarize(name: str, store_format: int, samples: list[Sample], verbose: bool) -> dict[str, Any]:
    """A case's result: the figures of its median sample, the range of each over samples."""
    counts = [len(s.calls) for s in samples]
    median = next(s for s in samples if len(s.calls) == statistics.median_low(counts))
    per_sample = [s.figures() for s in samples]
    result: dict[str, Any] = {
        "case": name,
        "operation": OPERATIONS[name],
        "store_format": store_format,
        "samples": len(samples),
        **median.figures(),
        "range": {k: [min(f[k] for f in per_sample), max(f[k] for f in per_sample)]
                  for k in per_sample[0]},
        "per_sample": per_sample,
        "module_calls": median.module_calls(),
        "other_files": sorted(median.other_files),
        "target": TARGETS.get(name),
        "met": None,
    }  # fmt: skip
    if verbose:
        result["sequence"] = [
            {"depth": e.depth, "module": e.module, "function": e.function, "kind": e.kind}
            for e in median.events
        ]
    return result


def judge(results: list[dict[str, Any]]) -> None:
    """Set ``met`` of each result that has a target."""
    by_name = {r["case"]: r for r in results}
    for r in results:
        target = r["target"]
        if target is None:
            continue
        met = all(r[k] <= bound for k, bound in target.items())
        durable = by_name.get("xadd-durable")
        if r["case"] == "xadd-relaxed" and durable is not None:
            met = met and r["python_calls"] < durable["python_calls"]
        r["met"] = met


def target_text(r: dict[str, Any]) -> str:
    target = r["target"]
    if target is None:
        return "—"
    words = {"python_calls": "calls", "modules": "modules", "durable_commits": "durable commit"}
    text = ", ".join(f"≤ {bound} {words[k]}" for k, bound in target.items())
    return ("fewer calls than durable, " + text) if r["case"] == "xadd-relaxed" else text


def cell(r: dict[str, Any], key: str) -> str:
    low, high = r["range"][key]
    return f"{r[key]}" if low == high else f"{r[key]} ({low}–{high})"


def table(results: list[dict[str, Any]]) -> str:
    columns = ("python_calls", "modules", "entries", "c_calls", "other_python_calls",
               "lmdb_commits", "store_commits", "durable_commits", "flushes", "waits")  # fmt: skip
    lines = [
        "| case | Python calls | modules | module entries | C calls | other Python calls "
        "| LMDB commits | store commits | durable commits | flushes | waits | target | met? |",
        "|---|" + "---:|" * len(columns) + "---|:---:|",
    ]
    for r in results:
        met = {None: "—", True: "yes", False: "**no**"}[r["met"]]
        cells = " | ".join(cell(r, k) for k in columns)
        lines.append(f"| {r['case']} | {cells} | {target_text(r)} | {met} |")
    return "\n".join(lines)


def details(r: dict[str, Any]) -> str:
    """The modules of a case's median sample in order of first entry, and its call sequence."""
    lines = [
        f"### {r['case']}: {r['python_calls']} Python calls in {r['modules']} modules",
        "",
        f"{r['operation']}, a store of format {r['store_format']}; the median of "
        f"{r['samples']} samples.  Python code outside rstore run under it: "
        f"{r['other_python_calls']} calls, in {', '.join(r['other_files']) or 'no file'}.",
        "",
        "| module (in order of first entry) | calls | entries |",
        "|---|---:|---:|",
    ]
    lines += [f"| {m['module']} | {m['calls']} | {m['entries']} |" for m in r["module_calls"]]
    lines += ["", "```"]
    for e in r.get("sequence", []):
        module = e["module"].removeprefix("rstore.")
        text = (
            f"[blocks in {e['function']}]" if e["kind"] == "wait" else f"{module}  {e['function']}"
        )
        lines.append("  " * e["depth"] + text)
    lines.append("```")
    return "\n".join(lines)


def facts(argv: list[str], base_dir: str, formats: list[int]) -> dict[str, Any]:
    """What the figures depend on: the command, rstore and Python, the machine."""
    described = machine.describe(base_dir)
    extensions = sorted(
        name.removeprefix("rstore.")
        for name, module in list(sys.modules.items())
        if name.startswith("rstore.") and str(getattr(module, "__file__", "")).endswith(".so")
    )
    return {
        "command": shlex.join(["python", "bench/write_path.py", *argv]),
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rstore": f"{rstore.__version__} ({rstore_origin()})",
        "package_dir": PACKAGE_DIR,
        "c_extensions": extensions,
        "no_speedups": os.environ.get("RSTORE_NO_SPEEDUPS", "") not in ("", "0"),
        "store_formats": sorted(set(formats)),
        "python": sys.version.split()[0],
        "py_lmdb": f"{lmdb.__version__} (LMDB {'.'.join(str(x) for x in lmdb.version())})",
        "cpu": described["cpu"],
        "cores": described["cores"],
        "kernel": described["kernel"],
        "load_average": list(os.getloadavg()),
    }


def header(f: dict[str, Any]) -> str:
    return "\n".join([
        f"# {f['command']}",
        f"# measured {f['measured']}; rstore {f['rstore']}, Python {f['python']}, "
        f"py-lmdb {f['py_lmdb']}",
        f"# rstore C extensions loaded: {', '.join(f['c_extensions']) or 'none'}"
        + (" (RSTORE_NO_SPEEDUPS set)" if f["no_speedups"] else ""),
        "# stores of format " + " and ".join(str(n) for n in f["store_formats"])
        + " (4: the default, with the write-ahead log; 2: RSTORE_BENCH_WAL=0, without)",
        f"# machine: {f['cpu']}, {f['cores']} cores, Linux {f['kernel']}, load average "
        + ", ".join(f"{x:.2f}" for x in f["load_average"]),
    ])  # fmt: skip


# ----------------------------------------------------------------------------- command line


def parse_cases(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown case {', '.join(unknown) or '(none given)'}; the cases: {', '.join(CASES)}"
        )
    return names


def _check_durable_step() -> None:
    """The step counted as a durable commit must exist (a rename would count none)."""
    owner, _, name = DURABLE_STEP.partition(".")
    module = importlib.import_module(DURABLE_MODULE)
    if not callable(getattr(getattr(module, owner, None), name, None)):
        raise SystemExit(f"write_path.py: {DURABLE_MODULE}.{DURABLE_STEP} is gone: update it")


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["--child"]:
        return child_main(args_in[1])
    exit_on_sigterm()
    _check_durable_step()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases",
        type=parse_cases,
        default=list(CASES),
        metavar="NAME,...",
        help=f"which cases, comma-separated (default: all of {', '.join(CASES)})",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=9,
        metavar="N",
        help="operations counted per case, each on its own (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=5,
        metavar="N",
        help="operations of the case done before counting (default: %(default)s)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="modules with their calls, and the call sequence"
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the results as JSON to FILE, or to stdout (instead of the tables) without it",
    )
    parser.add_argument("--dir", default=None, help="parent of the temporary stores")
    args = parser.parse_args(args_in)
    if args.samples < 1 or args.warmup < 0:
        parser.error("--samples must be at least 1 and --warmup at least 0")
    work = tempfile.mkdtemp(prefix="bench-write-path-", dir=args.dir)
    try:
        results = [
            summarize(name, *run_case(name, work, args.samples, args.warmup), args.verbose)
            for name in args.cases
        ]
        about = facts(args_in, work, [r["store_format"] for r in results])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    judge(results)
    report = {**about, "results": results}
    if args.json is not None:
        text = json.dumps(report, indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
            return 0
        Path(args.json).write_text(text)
    print(header(about))
    print()
    print(table(results))
    if args.verbose:
        for r in results:
            print()
            print(details(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
