"""Checking LMDB's own structures in ``data.mdb`` before LMDB is let loose on them.

LMDB trusts its file.  A zeroed or garbled page that a cursor reaches by moving to a sibling
makes it abort the whole process (an assertion in ``mdb_cursor_next``); a file shorter than the
pages in use makes a mapped read die of SIGBUS; a bit flipped in a branch key silently hides a
subtree.  So before a store is used, rstore walks every tree of the snapshot it is about to read
straight from the file, with its own bounds checks, and refuses the store when anything is not
what LMDB would expect.  The same walk is the structural half of ``Store.check()``.

The layout read here (LMDB 0.9, 64-bit, native byte order)::

    page header  u64 pgno | u16 pad | u16 flags | u16 lower | u16 upper     16 bytes
                 (an overflow page has u32 pages in place of lower/upper)
                 u16 ptrs[(lower - 16) / 2]: node offsets from the start of the page
    node         u16 lo | u16 hi | u16 flags | u16 ksize | key | data
                 branch: child page = lo | hi << 16 | flags << 32 (the first key is empty)
                 leaf:   data size = lo | hi << 16; F_BIGDATA: data is the u64 number of the
                         first page of an overflow run; F_SUBDATA: data is a db record
    meta         page 0 and page 1, after the header: u32 magic 0xBEEFC0DE | u32 version |
                 u64 address | u64 map size | db free | db main | u64 last page | u64 txnid
    db record    u32 pad (the page size, in the free db) | u16 flags | u16 depth |
                 u64 branch pages | u64 leaf pages | u64 overflow pages | u64 entries | u64 root
    free db      key: u64 txnid; data: u64 n followed by n page numbers (pages free since then)

Checked, for every tree (LMDB's free list, its main tree of sub-database records, and every
sub-database): each page lies inside the file and below the last page in use, carries its own
number (a zeroed or misplaced page does not), has the kind its depth calls for (branch above,
leaf at the tree's depth), sane bounds and node offsets, keys in ascending order inside the
bounds its parent gives, is reached once; overflow runs have the right header and length; the
counters of each db record match what the walk found; and no page is both in use and free.

:func:`verify` is the reference; :mod:`rstore.codec.speedups` may provide the same walk in C.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "ACCELERATED", "DB_RECORD_SIZE", "META_SIZE", "DbRecord", "MetaPage", "Problem", "Report",
    "StaleSnapshot", "parse_meta", "verify", "verify_pinned",
]  # fmt: skip


def _load_c_walk() -> Callable[..., Any] | None:
    """The C walk when it is built and not turned off, else ``None``."""
    if os.environ.get("RSTORE_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        from rstore.storage.checks import _pagecheck  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:  # not built: the Python walk below does the same, slower
        return None
    walk: Callable[..., Any] = _pagecheck.walk_tree
    return walk


_c_walk_tree = _load_c_walk()

#: Whether the C walk is in use (``RSTORE_NO_SPEEDUPS=1`` turns it off, as for the codecs).
ACCELERATED = _c_walk_tree is not None

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
HEADER_SIZE = 16
NODE_SIZE = 8
P_INVALID = (1 << 64) - 1
CURSOR_STACK = 32

P_BRANCH = 0x01
P_LEAF = 0x02
P_OVERFLOW = 0x04
P_META = 0x08
P_LEAF2 = 0x20
P_SUBP = 0x40
_KIND_BITS = P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP

F_BIGDATA = 0x01
F_SUBDATA = 0x02
F_DUPDATA = 0x04

MDB_INTEGERKEY = 0x08

_HEADER = struct.Struct("=QHHHH")
_OVERFLOW = struct.Struct("=QHHI")
_NODE = struct.Struct("=HHHH")
_DB = struct.Struct("=IHHQQQQQ")
_META = struct.Struct("=IIQQ")
_U16 = struct.Struct("=H")
_U64 = struct.Struct("=Q")
_META_DBS = HEADER_SIZE + _META.size
_META_LAST = _META_DBS + 2 * _DB.size
#: The bytes of a meta page that LMDB reads, its page header included.
META_SIZE = _META_LAST + 16
#: The size of LMDB's record of a tree (``MDB_db``), as the main tree holds it.
DB_RECORD_SIZE = _DB.size


@dataclass(frozen=True)
class DbRecord:
    """LMDB's record of one tree (``MDB_db``)."""

    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int

    @classmethod
    def unpack(cls, buf: bytes | mmap.mmap, offset: int) -> DbRecord:
        """Read a record at ``offset`` of ``buf``."""
        _, flags, depth, branch, leaf, overflow, entries, root = _DB.unpack_from(buf, offset)
        return cls(flags, depth, branch, leaf, overflow, entries, root)


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file: where (tree, page) and what; ``low``/``high`` are the keys
    that bound the damaged page (from its parent), when known; ``key`` the key of the record
    whose data is damaged, when the problem is one record's."""

    tree: str
    page: int | None
    what: str
    low: bytes | None = None
    high: bytes | None = None
    key: bytes | None = None


@dataclass
class Report:
    """The result of one walk: the snapshot checked and what was found."""

    txnid: int
    page_size: int
    last_page: int
    file_pages: int
    pages_walked: int = 0
    trees: dict[str, DbRecord] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


class StaleSnapshot(Exception):
    """The meta page of the requested transaction was overwritten meanwhile: walk again."""


class MetaPage(NamedTuple):
    """A valid meta page: its transaction, the last page in use, the two trees it names, and
    the page size it records (the free tree's ``pad`` field)."""

    txnid: int
    last_page: int
    free: DbRecord
    main: DbRecord
    page_size: int


def parse_meta(buf: bytes | mmap.mmap, offset: int, slot: int | None) -> MetaPage | None:
    """The meta page at ``offset`` of ``buf`` (at least :data:`META_SIZE` bytes from there),
    or ``None`` when it is not a valid one; ``slot``: the page number it must carry (``None``:
    any, for a copy of a meta page kept elsewhere)."""
    pgno, _, flags, _, _ = _HEADER.unpack_from(buf, offset)
    magic, version, _, _ = _META.unpack_from(buf, offset + HEADER_SIZE)
    if (slot is not None and pgno != slot) or not flags & P_META:
        return None
    if magic != MAGIC or version != DATA_VERSION:
        return None
    free = DbRecord.unpack(buf, offset + _META_DBS)
    main = DbRecord.unpack(buf, offset + _META_DBS + _DB.size)
    last, txnid = struct.unpack_from("=QQ", buf, offset + _META_LAST)
    psize = int(_DB.unpack_from(buf, offset + _META_DBS)[0])
    return MetaPage(txnid, last, free, main, psize)


def _meta(buf: mmap.mmap, page: int, psize: int) -> tuple[int, int, DbRecord, DbRecord] | None:
    """``(txnid, last page, free db, main db)`` of a valid meta page, else ``None``."""
    meta = parse_meta(buf, page * psize, page)
    return None if meta is None else (meta.txnid, meta.last_page, meta.free, meta.main)


def _page_size(buf: mmap.mmap) -> int:
    """The page size recorded in the first meta page (the free db's ``pad``)."""
    return int(_DB.unpack_from(buf, _META_DBS)[0])


class _Walker:
    def __init__(
        self, buf: mmap.mmap, file_size: int, report: Report, *, accelerated: bool = ACCELERATED
    ) -> None:
        self.accelerated = accelerated
        self.buf = buf
        self.file_size = file_size
        self.report = report
        self.psize = report.page_size
        self.last = report.last_page
        self.used = bytearray(report.last_page + 1)
        self.used[0] = self.used[1] = 1
        self.subdbs: list[tuple[bytes, DbRecord]] = []
        self.free_pages: list[tuple[int, int]] = []  # (page, listed in page)

    def problem(self, tree: str, page: int | None, what: str, low: bytes | None = None,
                high: bytes | None = None, key: bytes | None = None) -> None:  # fmt: skip
        self.report.problems.append(Problem(tree, page, what, low, high, key))

    def in_file(self, page: int, count: int = 1) -> str | None:
        """Why pages ``page .. page+count-1`` cannot be read, or ``None``."""
        if page < 2 or page + count - 1 > self.last:
            return f"page number {page} is outside the pages in use (2..{self.last})"
        if (page + count) * self.psize > self.file_size:
            return (
                f"the file is truncated: page {page + count - 1} is in use but the file ends "
                f"at page {self.file_size // self.psize} ({self.file_size} bytes)"
            )
        return None

    def walk(self, tree: str, db: DbRecord, integer_keys: bool) -> None:
        """Walk one tree from its root, checking everything on the way."""
        if db.root == P_INVALID:
            if db.depth or db.entries or db.leaf_pages or db.branch_pages or db.overflow_pages:
                self.problem(tree, None, f"an empty tree with counters {db}")
            return
        if not 1 <= db.depth <= CURSOR_STACK:
            self.problem(tree, db.root, f"tree depth {db.depth} is impossible")
            return
        if self.accelerated and _c_walk_tree is not None:
            counts = self.walk_in_c(tree, db, integer_keys)
        else:
            counts = [0, 0, 0, 0]  # branch pages, leaf pages, overflow pages, entries
            stack: list[tuple[int, int, bytes | None, bytes | None]] = [(db.root, 1, None, None)]
            while stack:
                page, level, low, high = stack.pop()
                self.page(tree, db, integer_keys, page, level, low, high, stack, counts)
        found = DbRecord(db.flags, db.depth, counts[0], counts[1], counts[2], counts[3], db.root)
        if found != db:
            self.problem(
                tree, db.root,
                f"its record counts {db.branch_pages} branch, {db.leaf_pages} leaf, "
                f"{db.overflow_pages} overflow pages and {db.entries} entries; the tree holds "
                f"{counts[0]}, {counts[1]}, {counts[2]} and {counts[3]}",
            )  # fmt: skip

    def walk_in_c(self, tree: str, db: DbRecord, integer_keys: bool) -> list[int]:
        assert _c_walk_tree is not None
        kind = {"main": 1, "free": 2}.get(tree, 0)
        branch, leaf, overflow, entries, walked, problems, subdbs, free = _c_walk_tree(
            self.buf, self.file_size, self.psize, self.last, self.used, tree, db.depth, db.root,
            integer_keys, kind,
        )  # fmt: skip
        self.report.pages_walked += walked
        self.report.problems += [Problem(*p) for p in problems]
        self.subdbs += [(name, DbRecord.unpack(record, 0)) for name, record in subdbs]
        self.free_pages += free
        return [branch, leaf, overflow, entries]

    def page(
        self,
        tree: str,
        db: DbRecord,
        integer_keys: bool,
        page: int,
        level: int,
        low: bytes | None,
        high: bytes | None,
        stack: list[tuple[int, int, bytes | None, bytes | None]],
        counts: list[int],
    ) -> None:
        why = self.in_file(page)
        if why is not None:
            self.problem(tree, page, why, low, high)
            return
        if self.used[page]:
            self.problem(tree, page, "the page is reached twice", low, high)
            return
        self.used[page] = 1
        self.report.pages_walked += 1
        buf, off, psize = self.buf, page * self.psize, self.psize
        pgno, _, flags, lower, upper = _HEADER.unpack_from(buf, off)
        if pgno != page:
            self.problem(tree, page, f"the page says it is page {pgno} (zeroed or misplaced)",
                         low, high)  # fmt: skip
            return
        leaf = level == db.depth
        want = P_LEAF if leaf else P_BRANCH
        if flags & _KIND_BITS != want:
            kind = "leaf" if leaf else "branch"
            self.problem(tree, page, f"a {kind} page was expected, its flags are {flags:#x}",
                         low, high)  # fmt: skip
            return
        if lower < HEADER_SIZE or upper > psize or lower > upper or (lower - HEADER_SIZE) % 2:
            self.problem(tree, page, f"bounds {lower}..{upper} are impossible", low, high)
            return
        nkeys = (lower - HEADER_SIZE) // 2
        if nkeys == 0 or (not leaf and nkeys < 2 and tree != "free"):
            self.problem(tree, page, f"a {'leaf' if leaf else 'branch'} page with {nkeys} keys",
                         low, high)  # fmt: skip
            return
        counts[1 if leaf else 0] += 1
        previous: bytes | None = None
        children: list[tuple[int, bytes | None]] = []
        for i in range(nkeys):
            node = _U16.unpack_from(buf, off + HEADER_SIZE + 2 * i)[0]
            if node < upper or node + NODE_SIZE > psize:
                self.problem(tree, page, f"node {i} at offset {node} is outside the node area",
                             low, high)  # fmt: skip
                return
            lo, hi, nflags, ksize = _NODE.unpack_from(buf, off + node)
            kstart = off + node + NODE_SIZE
            if node + NODE_SIZE + ksize > psize:
                self.problem(tree, page, f"node {i}'s key runs past the page", low, high)
                return
            key = bytes(buf[kstart : kstart + ksize])
            if leaf or i > 0:  # a branch page's first key is implicit (the lower bound)
                if integer_keys and len(key) != 8:
                    self.problem(tree, page, f"node {i} has a key of {ksize} bytes", low, high)
                    return
                if not self.ordered(previous, key, low, high, integer_keys):
                    self.problem(tree, page, f"node {i}'s key is out of order", low, high)
                    return
                previous = key
            if not leaf:
                children.append((lo | hi << 16 | nflags << 32, key if i > 0 else low))
                continue
            counts[3] += 1
            if not self.leaf_data(tree, page, i, node, lo | hi << 16, nflags, ksize, key, counts,
                                  low, high):  # fmt: skip
                return
        for i, (child, child_low) in enumerate(children):
            child_high = children[i + 1][1] if i + 1 < len(children) else high
            stack.append((child, level + 1, child_low, child_high))

    def ordered(self, previous: bytes | None, key: bytes, low: bytes | None, high: bytes | None,
                integer_keys: bool) -> bool:  # fmt: skip
        """Whether ``key`` comes after ``previous`` and inside ``[low, high)``."""
        if integer_keys:
            return _in_order(*(_int_key(x) if x is not None else None
                               for x in (previous, key, low, high)))  # fmt: skip
        return _in_order(previous, key, low, high)

    def leaf_data(self, tree: str, page: int, i: int, node: int, size: int, nflags: int,
                  ksize: int, key: bytes, counts: list[int], low: bytes | None,
                  high: bytes | None) -> bool:  # fmt: skip
        """Check one leaf node's data; collect sub-databases and free pages.  ``False`` stops the
        page (the problem is recorded)."""
        buf, psize, off = self.buf, self.psize, page * self.psize + node + NODE_SIZE + ksize
        if nflags & F_DUPDATA or (nflags & F_SUBDATA and tree != "main"):
            self.problem(tree, page, f"node {i} has flags {nflags:#x}", low, high, key)
            return False
        if nflags & F_BIGDATA:
            if node + NODE_SIZE + ksize + 8 > psize:
                self.problem(tree, page, f"node {i}'s overflow reference runs past the page",
                             low, high, key)  # fmt: skip
                return False
            first = _U64.unpack_from(buf, off)[0]
            pages = (HEADER_SIZE - 1 + size) // psize + 1
            why = self.in_file(first, pages)
            if why is None:
                pgno, _, oflags, count = _OVERFLOW.unpack_from(buf, first * psize)
                if pgno != first or not oflags & P_OVERFLOW or count < pages:
                    why = f"the overflow run at page {first} has a bad header (node {i})"
                elif first + count - 1 > self.last:
                    why = f"the overflow run at page {first} ends past the pages in use"
                elif any(self.used[first : first + count]):
                    why = f"the overflow run at page {first} overlaps another page in use"
                else:
                    self.used[first : first + count] = b"\1" * count
                    counts[2] += count
                    self.report.pages_walked += count
                    data_off = first * psize + HEADER_SIZE
            if why is not None:
                self.problem(tree, page, why, low, high, key)
                return False
        else:
            if node + NODE_SIZE + ksize + size > psize:
                self.problem(tree, page, f"node {i}'s data runs past the page", low, high, key)
                return False
            data_off = off
        if tree == "main" and nflags & F_SUBDATA:
            if size != _DB.size:
                self.problem(tree, page, f"the record of sub-database {key!r} has {size} bytes")
                return False
            self.subdbs.append((key, DbRecord.unpack(buf, data_off)))
        elif tree == "free":
            n = _U64.unpack_from(buf, data_off)[0] if size >= 8 else -1
            if n < 0 or size != 8 * (n + 1):
                self.problem(tree, page, f"a free-page list of {size} bytes claims {n} pages")
                return False
            for j in range(n):
                self.free_pages.append((_U64.unpack_from(buf, data_off + 8 * (j + 1))[0], page))
        return True

    def check_free_pages(self) -> None:
        seen: set[int] = set()
        for free, listed_in in self.free_pages:
            if free < 2 or free > self.last:
                self.problem("free", listed_in, f"free page {free} is outside the pages in use")
            elif self.used[free]:
                self.problem("free", listed_in, f"page {free} is both free and in use")
            elif free in seen:
                self.problem("free", listed_in, f"page {free} is listed free twice")
            seen.add(free)


def _in_order(previous: Any, key: Any, low: Any, high: Any) -> bool:
    """``previous < key`` and ``low <= key < high``, each bound ignored when ``None``."""
    if previous is not None and not previous < key:
        return False
    if low is not None and key < low:
        return False
    return high is None or key < high


def _int_key(key: bytes) -> int | None:
    return _U64.unpack(key)[0] if len(key) == 8 else None


def verify(path: str, txnid: int | None = None, *, accelerated: bool = ACCELERATED) -> Report:
    """Walk the snapshot of transaction ``txnid`` (default: the newest) of the LMDB data file
    at ``path``.  Raises :class:`StaleSnapshot` when that transaction's meta page has been
    overwritten meanwhile (hold a read transaction open while walking, and walk again), and
    ``OSError`` when the file cannot be read.  An unreadable meta is reported as a problem."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 2 * 512:
            return Report(
                0, 0, 0, 0, problems=[Problem("meta", None, f"the file has {size} bytes")]
            )
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _verify(buf, size, txnid, accelerated)


def verify_pinned(
    path: str,
    pin: Callable[[], AbstractContextManager[int]],
    *,
    accelerated: bool = ACCELERATED,
) -> Report:
    """:func:`verify` of the snapshot ``pin()`` holds while it is entered (a read transaction:
    it gives the transaction's id).  The file is mapped first and the snapshot taken then, so
    that its meta page is read right after: a writer busy enough to commit twice between
    taking a snapshot and opening the file would otherwise make every try stale.  A snapshot
    whose pages reach past the mapped file (the file grew meanwhile) is stale too."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 2 * 512:
            return verify(path)  # too short to map: reported as such
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf, pin() as txnid:
            if _grew_past(buf, f.fileno(), size, txnid):
                raise StaleSnapshot("the file grew after it was mapped")
            return _verify(buf, size, txnid, accelerated)


def _grew_past(buf: mmap.mmap, fd: int, size: int, txnid: int) -> bool:
    """Whether the snapshot ``txnid`` uses pages past the ``size`` bytes mapped because the
    file grew since (a file that is that short is damaged instead: :func:`_verify` says so)."""
    psize = _page_size(buf)
    if psize < 512 or psize > 65536 or psize & (psize - 1) or 2 * psize > size:
        return False
    for meta in (_meta(buf, 0, psize), _meta(buf, 1, psize)):
        if meta is not None and meta[0] == txnid and meta[1] >= size // psize:
            return os.fstat(fd).st_size > size
    return False


def _verify(buf: mmap.mmap, size: int, txnid: int | None, accelerated: bool) -> Report:
    psize = _page_size(buf)
    if psize < 512 or psize > 65536 or psize & (psize - 1) or 2 * psize > size:
        problem = Problem("meta", 0, f"page size {psize} is impossible")
        return Report(0, psize, 0, size // max(psize, 1), problems=[problem])
    metas = [m for m in (_meta(buf, 0, psize), _meta(buf, 1, psize)) if m is not None]
    if txnid is None:
        if not metas:
            problem = Problem("meta", None, "neither meta page is valid")
            return Report(0, psize, 0, size // psize, problems=[problem])
        chosen = max(metas, key=lambda m: m[0])
    else:
        found = [m for m in metas if m[0] == txnid]
        if not found:
            raise StaleSnapshot(f"no meta page holds transaction {txnid}")
        chosen = found[0]
    txn, last, free, main = chosen
    report = Report(txn, psize, last, size // psize)
    report.trees = {"free": free, "main": main}
    if last < 1 or last > 2 * report.file_pages + 4096:  # never allocate for a garbage number
        report.problems.append(Problem(
            "meta", txn % 2,
            f"the meta page names page {last} as the last in use but the file holds "
            f"{report.file_pages} pages (truncated, or a damaged meta page)",
        ))  # fmt: skip
        return report
    walker = _Walker(buf, size, report, accelerated=accelerated)
    walker.walk("free", free, integer_keys=True)
    walker.walk("main", main, integer_keys=False)
    for name, db in walker.subdbs:
        label = name.decode("utf-8", "backslashreplace")
        report.trees[label] = db
        if db.flags & ~MDB_INTEGERKEY:
            walker.problem(label, db.root, f"sub-database flags {db.flags:#x} are not rstore's")
            continue
        walker.walk(label, db, integer_keys=bool(db.flags & MDB_INTEGERKEY))
    walker.check_free_pages()
    return report
