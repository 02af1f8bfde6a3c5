"""LMDB's B-trees read straight from ``data.mdb``, without LMDB, for salvage: every record that
can be read, in key order, and each part that cannot, named by the keys that bound it.

LMDB trusts its file and aborts the process on a damaged page
(:mod:`rstore.storage.checks.pagecheck`
says why), so a store whose structure is damaged is refused at open.  What is still readable
is read here instead, from the file alone:

* the file is opened read-only and read with ``pread`` -- never mapped, so an I/O error of a
  failing disk is an unreadable page, not a SIGBUS; nothing is ever written, no lock file is
  created;
* a tree is walked from its root in key order.  Every page is checked as pagecheck checks it
  (inside the file and below the last page in use, carrying its own number, a branch or leaf
  page with sane bounds and node offsets, reached once); a page that fails is skipped and
  reported as a :class:`~rstore.storage.checks.pagecheck.Problem` whose ``low`` and ``high`` are the
  keys its parent bounds it to (``None``: no bound on that side);
* the walk is lenient where pagecheck is strict, because the records carry their own checks
  (format 2 and later: a checksum over key and value, verified by the caller) and order is
  kept here: records come out strictly ascending whatever the damage, each exactly as LMDB
  stored it.  A leaf keeps the nodes that can be read (a broken node, or a key standing out of
  order, is reported with the keys of its readable neighbours as bounds); a branch page keeps
  the children it can reach (a separator key out of order is ignored, which widens its
  neighbours' bounds and loses nothing); a page whose keys straddle the bounds its parent
  gives is the right page under a damaged separator and is kept, while a page with none of
  its keys inside them was reached by a damaged reference and is reported in its place (and
  read where its own parent leads);
* a value in overflow pages is read when its run has the right header and length; otherwise the
  record is reported lost with its key (``Problem.key``);
* LMDB's free list is never read: damage there loses nothing.

The layout (LMDB 0.9, 64-bit, native byte order) is the one pagecheck's docstring draws.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from rstore.storage.checks import pagecheck
from rstore.storage.checks.pagecheck import DbRecord, MetaPage, Problem

__all__ = ["PROGRESS_PAGES", "DataFile", "Record", "TreeReader", "meta_pages"]

#: One record of a tree: its key and its value, as LMDB stores them.
Record = tuple[bytes, bytes]

_HEADER = struct.Struct("=QHHHH")
_OVERFLOW = struct.Struct("=QHHI")
_NODE = struct.Struct("=HHHH")
_U16 = struct.Struct("=H")
_U64 = struct.Struct("=Q")
_HEADER_SIZE = pagecheck.HEADER_SIZE
_NODE_SIZE = pagecheck.NODE_SIZE
_KINDS = pagecheck.P_BRANCH | pagecheck.P_LEAF | pagecheck.P_OVERFLOW | pagecheck.P_META
_PAGE_SIZES = tuple(1 << n for n in range(9, 17))  # 512 .. 65536
PROGRESS_PAGES = 1024


class DataFile:
    """``data.mdb`` opened read-only; :meth:`read` never raises for a short file or an I/O
    error, it says why the bytes cannot be had."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.size = os.fstat(self.fd).st_size
        except BaseException:
            os.close(self.fd)
            raise
        self.bytes_read = 0

    def read(self, offset: int, length: int) -> bytes | str:
        """``length`` bytes at ``offset``, or why they cannot be read."""
        if offset + length > self.size:
            return f"the file ends at byte {self.size} (truncated)"
        try:
            data = os.pread(self.fd, length, offset)
        except OSError as exc:
            return f"the disk could not read it ({exc.strerror or exc})"
        if len(data) != length:
            return f"the file ends before byte {offset + length} (truncated while read)"
        self.bytes_read += length
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> DataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Slot:
    """A valid meta page of the file: which slot (0 or 1) and what it names."""

    slot: int
    meta: MetaPage


def meta_pages(file: DataFile) -> list[Slot]:
    """The valid meta pages of ``file``, newest first.  The page size comes from the first meta
    page; when that one is damaged, each possible page size is tried for the second."""
    found: list[Slot] = []
    first = file.read(0, pagecheck.META_SIZE)
    sizes: tuple[int, ...] = _PAGE_SIZES
    if isinstance(first, bytes):
        meta = pagecheck.parse_meta(first, 0, 0)
        if meta is not None and meta.page_size in _PAGE_SIZES:
            found.append(Slot(0, meta))
            sizes = (meta.page_size,)
    for psize in sizes:
        second = file.read(psize, pagecheck.META_SIZE)
        if isinstance(second, bytes):
            meta = pagecheck.parse_meta(second, 0, 1)
            if meta is not None and meta.page_size == psize:
                found.append(Slot(1, meta))
                break
    return sorted(found, key=lambda s: s.meta.txnid, reverse=True)


def _lower(a: bytes | None, b: bytes | None) -> bytes | None:
    """The tighter of two lower bounds (``None``: none)."""
    return b if a is None else a if b is None else max(a, b)


def _upper(a: bytes | None, b: bytes | None) -> bytes | None:
    """The tighter of two upper bounds (``None``: none)."""
    return b if a is None else a if b is None else min(a, b)


def _misplaced(nodes: list[_Node | None], lo: bytes | None, hi: bytes | None) -> bool:
    """Whether every readable key of a page (but a branch page's first, which is implicit)
    lies outside the bounds its parent gives: the page is not the one the parent meant (a
    damaged child reference).  A page with some keys inside is the right one whose parent's
    separator key is damaged: it is kept."""
    keys = [n.key for n in nodes if n is not None]
    return bool(keys) and all(
        (lo is not None and k < lo) or (hi is not None and k >= hi) for k in keys
    )


def _following(nodes: list[_Node | None]) -> list[bytes | None]:
    """For each node of a page, the key of the next readable node after it (``None``: none)."""
    out: list[bytes | None] = [None] * len(nodes)
    following: bytes | None = None
    for i in range(len(nodes) - 1, -1, -1):
        out[i] = following
        node = nodes[i]
        if node is not None:
            following = node.key
    return out


def _in_order(last: bytes | None, key: bytes, following: bytes | None) -> bool:
    """Whether a leaf's node with ``key`` may be handed out after ``last``: it comes after it,
    and it is not a damaged key standing above the ``following`` readable one while that one
    follows ``last`` (then the following one is kept, this one dropped)."""
    if last is not None and key <= last:
        return False
    return following is None or key < following or (last is not None and following <= last)


class _Node:
    """One node of a page as read: its key and, for a leaf, where its data is; for a branch,
    its child page."""

    __slots__ = ("child", "data", "flags", "key", "size")

    def __init__(self, key: bytes, child: int, size: int, flags: int, data: int) -> None:
        self.key = key
        self.child = child
        self.size = size
        self.flags = flags
        self.data = data


class _Walk:
    """The state of one walk: the query's bounds, the pages seen, the last key handed out."""

    def __init__(self, tree: str, low: bytes | None, high: bytes | None) -> None:
        self.tree = tree
        self.low = low
        self.high = high
        self.seen: set[int] = set()
        self.last: bytes | None = None

    def problem(
        self,
        page: int | None,
        what: str,
        low: bytes | None,
        high: bytes | None,
        key: bytes | None = None,
    ) -> Problem:
        """A problem bounded by the tighter of its own and the query's bounds."""
        return Problem(self.tree, page, what, _lower(low, self.low), _upper(high, self.high), key)

    def wanted(self, low: bytes | None, high: bytes | None) -> bool:
        """Whether ``[low, high)`` meets the query's range."""
        if self.low is not None and high is not None and high <= self.low:
            return False
        return not (self.high is not None and low is not None and low >= self.high)


class TreeReader:
    """The trees of one snapshot (a meta page) of ``file``."""

    def __init__(self, file: DataFile, meta: MetaPage) -> None:
        self.file = file
        self.psize = meta.page_size
        self.last_page = meta.last_page
        self.pages_read = 0
        #: Called after every :data:`PROGRESS_PAGES` pages read (a progress report).
        self.on_pages: Callable[[], None] | None = None

    def page(self, pgno: int, count: int = 1) -> bytes | str:
        """Pages ``pgno .. pgno+count-1``, or why they cannot be read."""
        if pgno < 2 or pgno + count - 1 > self.last_page:
            return f"page number {pgno} is outside the pages in use (2..{self.last_page})"
        data = self.file.read(pgno * self.psize, count * self.psize)
        if isinstance(data, bytes):
            before = self.pages_read
            self.pages_read += count
            if self.on_pages is not None and before // PROGRESS_PAGES != (
                self.pages_read // PROGRESS_PAGES
            ):
                self.on_pages()
        return data

    def records(
        self,
        tree: str,
        db: DbRecord,
        low: bytes | None = None,
        high: bytes | None = None,
        *,
        values: bool = True,
    ) -> Iterator[Record | Problem]:
        """The records of ``tree`` (its LMDB record ``db``) with ``low <= key < high``, in key
        order, and a :class:`Problem` for each part that cannot be read, in its place.  With
        ``values=False`` overflow runs are checked by their header and their values are
        returned empty (a structural survey)."""
        if db.root == pagecheck.P_INVALID:
            return
        walk = _Walk(tree, low, high)
        stack: list[tuple[int, int, bytes | None, bytes | None]] = [(db.root, 1, None, None)]
        while stack:
            pgno, level, lo, hi = stack.pop()
            page = self._checked_page(walk, pgno, level, lo, hi)
            if isinstance(page, Problem):
                yield page
                continue
            branch = _HEADER.unpack_from(page)[2] & _KINDS == pagecheck.P_BRANCH
            nodes = self._nodes(page)
            if _misplaced(nodes[1:] if branch else nodes, lo, hi):  # a damaged reference
                walk.seen.discard(pgno)  # to another page of the tree: its own parent may too
                if walk.wanted(lo, hi):
                    yield walk.problem(pgno, "the page holds none of the keys its parent "
                                       "bounds it to (a damaged reference)", lo, hi)  # fmt: skip
            elif branch:
                children, problems = self._branch(walk, pgno, nodes, lo, hi)
                yield from problems
                stack += [
                    (child, level + 1, c_lo, c_hi) for child, c_lo, c_hi in reversed(children)
                ]
            else:
                yield from self._leaf(walk, pgno, page, nodes, lo, hi, values)
                if walk.high is not None and walk.last is not None and walk.last >= walk.high:
                    return

    def _checked_page(
        self, walk: _Walk, pgno: int, level: int, lo: bytes | None, hi: bytes | None
    ) -> bytes | Problem:
        if level > pagecheck.CURSOR_STACK:
            return walk.problem(pgno, f"the tree is deeper than {pagecheck.CURSOR_STACK}", lo, hi)
        if pgno in walk.seen:
            return walk.problem(pgno, "the page is reached twice", lo, hi)
        walk.seen.add(pgno)
        page = self.page(pgno)
        if isinstance(page, str):
            return walk.problem(pgno, page, lo, hi)
        number, _, flags, lower, upper = _HEADER.unpack_from(page)
        if number != pgno:
            return walk.problem(
                pgno, f"the page says it is page {number} (zeroed or misplaced)", lo, hi
            )
        if flags & _KINDS not in (pagecheck.P_BRANCH, pagecheck.P_LEAF) or flags & (
            pagecheck.P_LEAF2 | pagecheck.P_SUBP
        ):
            return walk.problem(
                pgno, f"a branch or leaf page was expected, its flags are {flags:#x}", lo, hi
            )
        psize = self.psize
        if lower < _HEADER_SIZE or upper > psize or lower > upper or (lower - _HEADER_SIZE) % 2:
            return walk.problem(pgno, f"bounds {lower}..{upper} are impossible", lo, hi)
        if lower == _HEADER_SIZE:
            return walk.problem(pgno, "a page with no keys", lo, hi)
        return page

    def _nodes(self, page: bytes) -> list[_Node | None]:
        """The page's nodes in order; ``None`` for one that cannot be read."""
        psize = self.psize
        lower, upper = _HEADER.unpack_from(page)[3:]
        nodes: list[_Node | None] = []
        for i in range((lower - _HEADER_SIZE) // 2):
            at = _U16.unpack_from(page, _HEADER_SIZE + 2 * i)[0]
            if at < upper or at + _NODE_SIZE > psize:
                nodes.append(None)
                continue
            lo16, hi16, flags, ksize = _NODE.unpack_from(page, at)
            start = at + _NODE_SIZE
            if start + ksize > psize:
                nodes.append(None)
                continue
            size = lo16 | hi16 << 16
            nodes.append(
                _Node(page[start : start + ksize], size | flags << 32, size, flags, start + ksize)
            )
        return nodes

    def _branch(
        self, walk: _Walk, pgno: int, nodes: list[_Node | None], lo: bytes | None,
        hi: bytes | None,
    ) -> tuple[list[tuple[int, bytes | None, bytes | None]], list[Problem]]:  # fmt: skip
        """The children of a branch page with their bounds (those meeting the query), and the
        problems of the page.  A child whose node cannot be read is lost (a problem between
        its neighbours' keys); a key out of order is ignored, which widens its neighbours'
        bounds (their records are still handed out in order) and loses nothing."""
        keys: list[bytes | None] = [lo]  # the first key of a branch page is implicit
        previous = lo
        problems: list[Problem] = []
        for node in nodes[1:]:
            key = None if node is None else node.key
            ok = key is not None and (previous is None or key > previous)
            if ok and hi is not None and key is not None and key >= hi:
                ok = False
            keys.append(key if ok else None)
            previous = key if ok else previous
        children: list[tuple[int, bytes | None, bytes | None]] = []
        for i, node in enumerate(nodes):
            c_lo = next((k for k in reversed(keys[: i + 1]) if k is not None), lo)
            c_hi = next((k for k in keys[i + 1 :] if k is not None), hi)
            if not walk.wanted(c_lo, c_hi):
                continue
            if node is None:
                problems.append(
                    walk.problem(pgno, f"node {i} is outside the node area", c_lo, c_hi)
                )
                continue
            children.append((node.child, c_lo, c_hi))
        return children, problems

    def _leaf(
        self,
        walk: _Walk,
        pgno: int,
        page: bytes,
        nodes: list[_Node | None],
        lo: bytes | None,
        hi: bytes | None,
        values: bool,
    ) -> Iterator[Record | Problem]:
        following = _following(nodes)
        broken: list[int] = []  # nodes since the last good one that could not be used
        for i, node in enumerate(nodes):
            if node is None or not _in_order(walk.last, node.key, following[i]):
                broken.append(i)
                continue
            if broken:
                yield from self._broken(walk, pgno, broken, lo, node.key)
                broken = []
            key = node.key
            if walk.low is not None and key < walk.low:
                continue
            if walk.high is not None and key >= walk.high:
                walk.last = key
                return
            walk.last = key
            value = self._value(walk, pgno, page, node, values, lo, hi)
            if isinstance(value, Problem):
                yield value
            else:
                yield key, value
        if broken:
            yield from self._broken(walk, pgno, broken, lo, hi)

    def _broken(
        self, walk: _Walk, pgno: int, broken: list[int], lo: bytes | None, hi: bytes | None
    ) -> Iterator[Problem]:
        """The problem of nodes that cannot be used, bounded by the last key handed out (or
        the page's lower bound) and the next good key (or the page's upper bound), when that
        range meets the query's."""
        low = _lower(lo, walk.last)
        if walk.wanted(low, hi):
            which = f"node {broken[0]}" if len(broken) == 1 else f"{len(broken)} nodes"
            yield walk.problem(pgno, f"{which} cannot be read or lie out of order", low, hi)

    def _value(
        self,
        walk: _Walk,
        pgno: int,
        page: bytes,
        node: _Node,
        values: bool,
        lo: bytes | None,
        hi: bytes | None,
    ) -> bytes | Problem:
        key, size, flags = node.key, node.size, node.flags
        if flags & (pagecheck.F_DUPDATA | pagecheck.F_SUBDATA) and walk.tree != "main":
            return walk.problem(pgno, f"a record with flags {flags:#x}", lo, hi, key)
        if not flags & pagecheck.F_BIGDATA:
            if node.data + size > self.psize:
                return walk.problem(pgno, "a record's data runs past the page", lo, hi, key)
            return page[node.data : node.data + size]
        if node.data + 8 > self.psize:
            return walk.problem(
                pgno, "a record's overflow reference runs past the page", lo, hi, key
            )
        first = _U64.unpack_from(page, node.data)[0]
        count = (_HEADER_SIZE - 1 + size) // self.psize + 1
        run = self.page(first)  # its header first: a damaged size never reads the whole file
        if isinstance(run, bytes):
            number, _, oflags, pages = _OVERFLOW.unpack_from(run)
            if number != first or not oflags & pagecheck.P_OVERFLOW or pages < count:
                run = f"the overflow run at page {first} has a bad header"
            elif values and count > 1:
                rest = self.page(first + 1, count - 1)
                run = run + rest if isinstance(rest, bytes) else rest
        if isinstance(run, str):
            return walk.problem(pgno, f"a record's value is lost: {run}", lo, hi, key)
        return run[_HEADER_SIZE : _HEADER_SIZE + size] if values else b""

    def subdatabases(self, main: DbRecord) -> tuple[dict[bytes, DbRecord], list[Problem]]:
        """The sub-databases the main tree names, and the problems met reading it."""
        found: dict[bytes, DbRecord] = {}
        problems: list[Problem] = []
        for item in self.records("main", main):
            if isinstance(item, Problem):
                problems.append(item)
                continue
            key, value = item
            if len(value) != pagecheck.DB_RECORD_SIZE:
                problems.append(
                    Problem(
                        "main",
                        None,
                        f"the record of sub-database {key!r} has {len(value)} bytes",
                        key=key,
                    )
                )
                continue
            found[key] = DbRecord.unpack(value, 0)
        return found, problems
