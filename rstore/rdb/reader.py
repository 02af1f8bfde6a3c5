"""Reading RDB files (versions 9 to 12: Redis 5.0 to 7.4, Valkey 7.2 and 8.0) as a stream of
events, in constant memory.

File layout::

    "REDIS" + 4-digit version
    AUX fields, FUNCTION2 / MODULE_AUX records
    per database: SELECTDB, RESIZEDB, then per key: [SLOT_INFO] [EXPIRETIME(_MS)] [IDLE|FREQ]
                  type byte, key, value
    EOF (0xFF), then the CRC64 of everything before it (8 bytes, little-endian; 0 = disabled)

Streams come out as :mod:`rstore.model` records between :class:`KeyStart` and
:class:`KeyEnd` (the events are named tuples: cheap to define, which ``import rstore`` users
pay for at start-up); every other value type is parsed past and summarised in its ``KeyEnd``.
Anything this reader does not know -- a newer version, another format, a module value, a newer
type -- raises :class:`~rstore.errors.UnsupportedRDBError`; damage raises
:class:`~rstore.errors.CorruptRDBError`.  Both name the byte offset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, NamedTuple

from rstore.codec.crc64 import crc64
from rstore.errors import CorruptRDBError, UnsupportedRDBError, in_file
from rstore.model import StreamState
from rstore.rdb.decoding import Source
from rstore.rdb.values import (
    FIRST_VERSION,
    STREAM_TYPES,
    TYPE_NAMES,
    StreamRecord,
    read_stream,
    skip_value,
)

__all__ = [
    "MAX_VERSION",
    "MIN_VERSION",
    "Aux",
    "End",
    "Event",
    "Function",
    "KeyEnd",
    "KeyStart",
    "ModuleAux",
    "RDBReader",
    "ResizeDB",
    "SelectDB",
    "open_rdb",
]

MIN_VERSION = 9
MAX_VERSION = 14

OP_KEY_META = 0xF3  # RDB 13: a key's module metadata, before its type byte
OP_SLOT_INFO, OP_FUNCTION2, OP_FUNCTION_PRE_GA, OP_MODULE_AUX = 0xF4, 0xF5, 0xF6, 0xF7
OP_IDLE, OP_FREQ, OP_AUX, OP_RESIZEDB = 0xF8, 0xF9, 0xFA, 0xFB
OP_EXPIRETIME_MS, OP_EXPIRETIME, OP_SELECTDB, OP_EOF = 0xFC, 0xFD, 0xFE, 0xFF
_MODULE_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@contextmanager
def open_rdb(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """The RDB file at ``path``, open for reading; damage or an unsupported format found
    while it is open raises an error that names it (:func:`rstore.errors.in_file`)."""
    with open(path, "rb") as f:
        try:
            yield f
        except (CorruptRDBError, UnsupportedRDBError) as exc:
            in_file(exc, path)
            raise


class Aux(NamedTuple):
    key: bytes
    value: bytes


class SelectDB(NamedTuple):
    db: int


class ResizeDB(NamedTuple):
    keys: int
    expires: int


class Function(NamedTuple):
    code: bytes


class ModuleAux(NamedTuple):
    module: str  # the module type name and encoding version, e.g. "ReJSON-RL/3"
    offset: int


class KeyStart(NamedTuple):
    db: int
    key: bytes
    rdb_type: int
    type_name: str
    expire_ms: int | None
    idle_s: int | None
    freq: int | None
    offset: int


class KeyEnd(NamedTuple):
    db: int
    key: bytes
    rdb_type: int
    type_name: str
    elements: int  # elements (stream: length), -1 when unknown
    size: int  # bytes the key and value occupy in the file


class End(NamedTuple):
    checksum: int  # the stored CRC64; 0 = written without one
    verified: bool


Event = Aux | SelectDB | ResizeDB | Function | ModuleAux | KeyStart | KeyEnd | End | StreamRecord


def _module_name(module_id: int) -> str:
    chars = "".join(_MODULE_CHARS[(module_id >> (64 - 6 * (i + 1))) & 63] for i in range(9))
    return f"{chars}/{module_id & 1023}"


class RDBReader:
    """Events of one RDB file; iterate :meth:`events` once.

    ``deep`` says which streams get the whole node check a restore makes (every node, in
    depth) besides the header checks every node gets: all (``True``), none (``False``), or
    those for which ``deep(db, key)`` is true.  Damage found is reported at the offset of the
    damaged byte in the file (:func:`~rstore.rdb.values.node_error`), whichever reader found it.

    ``runs``: the records of streams read in depth come out in runs where the C reader reads
    them (:func:`~rstore.rdb.values.read_stream`), for a restore's importer.
    """

    def __init__(
        self,
        f: BinaryIO,
        *,
        deep: bool | Callable[[int, bytes], bool] = True,
        check_crc: bool = True,
        runs: bool = False,
    ) -> None:
        self.source = Source(f)
        self._file = f
        self.deep = deep
        self.runs = runs
        self.check_crc = check_crc
        self.version = 0

    @property
    def offset(self) -> int:
        return self.source.offset

    @property
    def size(self) -> int | None:
        """Total bytes of the input, when known (for progress reports)."""
        return self.source.size

    def _header(self) -> None:
        src = self.source
        remaining = src.remaining()
        magic = src.read(9 if remaining is None else min(9, remaining))
        if magic.startswith(b"VALKEY"):
            raise UnsupportedRDBError(
                "a Valkey 9+ RDB file (magic VALKEY); this rstore reads RDB versions "
                f"{MIN_VERSION} to {MAX_VERSION}",
                0,
            )
        if len(magic) < 9 or not magic.startswith(b"REDIS") or not magic[5:].isdigit():
            raise CorruptRDBError("not an RDB file (no REDIS header)", 0)
        self.version = int(magic[5:])
        if not MIN_VERSION <= self.version <= MAX_VERSION:
            raise UnsupportedRDBError(
                f"RDB version {self.version}; this rstore reads versions {MIN_VERSION} to "
                f"{MAX_VERSION} (Redis 5.0 to 8.8, Valkey 7.2 and 8.0)",
                5,
            )

    def events(self) -> Iterator[Event]:
        """Every event, ending with :class:`End` after the checksum was verified."""
        self._header()
        src = self.source
        db = 0
        expire_ms: int | None = None
        idle: int | None = None
        freq: int | None = None
        while True:
            at = src.offset
            op = src.byte()
            if op == OP_EOF:
                yield self._end()
                return
            if op == OP_AUX:
                yield Aux(src.string(), src.string())
            elif op == OP_SELECTDB:
                db = src.length()
                yield SelectDB(db)
            elif op == OP_RESIZEDB:
                yield ResizeDB(src.length(), src.length())
            elif op == OP_EXPIRETIME_MS:
                expire_ms = src.ms_time()
            elif op == OP_EXPIRETIME:
                expire_ms = int.from_bytes(src.read(4), "little", signed=True) * 1000
            elif op == OP_IDLE:
                idle = src.length()
            elif op == OP_FREQ:
                freq = src.byte()
            elif op == OP_FUNCTION2:
                yield Function(src.string())
            elif op == OP_FUNCTION_PRE_GA:
                src.string()  # name
                src.string()  # engine
                if src.length():
                    src.string()  # description
                yield Function(src.string())
            elif op == OP_MODULE_AUX:
                yield self._module_aux(at)
            elif op == OP_SLOT_INFO:
                src.length()
                src.length()
                src.length()
            elif op == OP_KEY_META and self.version >= 13:
                self._key_meta(at)
            elif op in TYPE_NAMES or op > 27:
                yield from self._key(op, db, expire_ms, idle, freq, at)
                expire_ms = idle = freq = None
            else:
                raise src.corrupt(f"unknown opcode or value type {op}", at)

    def _module_aux(self, at: int) -> ModuleAux:
        src = self.source
        name = _module_name(src.length())
        if src.length() != 2:  # the "when" opcode must be an unsigned integer
            raise src.corrupt(f"module aux data of {name} has a bad header", at)
        src.length()
        self._module_fields(f"{name} aux data")
        return ModuleAux(name, at)

    def _module_fields(self, what: str) -> None:
        """Skip a module's typed fields, up to and with the module EOF opcode."""
        src = self.source
        while True:
            opcode = src.length()
            if opcode == 0:
                return
            if opcode in (1, 2):
                src.length()
            elif opcode == 3:
                src.skip(4)
            elif opcode == 4:
                src.skip(8)
            elif opcode == 5:
                src.skip_string()
            else:
                raise src.corrupt(f"unknown module field opcode {opcode} in {what}")

    def _key_meta(self, at: int) -> None:
        """Skip a key's module metadata (RDB 13): per class a 4-byte class spec and its typed
        fields.  Streams carry none; a key that does is read without it."""
        src = self.source
        for _ in range(src.count("key metadata classes", 4 + 1)):
            spec = int.from_bytes(src.read(4), "little")
            self._module_fields(f"key metadata class {spec:08x}")

    def _key(
        self,
        rdb_type: int,
        db: int,
        expire_ms: int | None,
        idle: int | None,
        freq: int | None,
        at: int,
    ) -> Iterator[Event]:
        src = self.source
        src.key = None
        if rdb_type > 27 or self.version < FIRST_VERSION.get(rdb_type, 0):
            if self._checksum_fails():  # a damaged byte, not a newer server's value
                raise CorruptRDBError(
                    f"wrong RDB checksum, and byte {at} holds value type {rdb_type}, which no "
                    "server writes: the file is damaged",
                    at,
                )
            what = f"RDB value type {rdb_type} in an RDB {self.version} file"
            raise UnsupportedRDBError(what, at)
        key = src.string()
        src.key = key
        name = TYPE_NAMES[rdb_type]
        yield KeyStart(db, key, rdb_type, name, expire_ms, idle, freq, at)
        if rdb_type in STREAM_TYPES:
            count = -1
            deep = self.deep if isinstance(self.deep, bool) else self.deep(db, key)
            for record in read_stream(src, rdb_type, deep=deep, runs=self.runs):
                if isinstance(record, StreamState):
                    count = record.length
                yield record
        else:
            count = skip_value(src, rdb_type)
        src.key = None
        yield KeyEnd(db, key, rdb_type, name, count, src.offset - at)

    def _checksum_fails(self) -> bool:
        """Whether the file's stored checksum disagrees with its bytes, read once more from
        the start; ``False`` when that cannot be told (a pipe, no checksum stored)."""
        f = self._file
        if self.version < 5 or not self.check_crc:
            return False
        try:
            if not f.seekable():
                return False
            size = f.seek(0, os.SEEK_END)
            if size < 8:
                return False
            f.seek(size - 8)
            stored = int.from_bytes(f.read(8), "little")
            f.seek(0)
            computed = 0
            left = size - 8
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    return False
                computed = crc64(chunk, computed)
                left -= len(chunk)
        except (OSError, ValueError):
            return False
        return stored not in (0, computed)

    def _end(self) -> End:
        src = self.source
        computed = src.crc()
        if self.version < 5:
            return End(0, False)
        at = src.offset
        stored = int.from_bytes(src.read(8), "little")
        if stored == 0:
            return End(0, False)
        if self.check_crc and stored != computed:
            raise CorruptRDBError(
                f"wrong RDB checksum: the file says {stored:#018x}, "
                f"the data gives {computed:#018x}",
                at,
            )
        return End(stored, self.check_crc)
