"""The :class:`Store` facade: a stream store in a directory, with redis-py-style methods."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from rstore.client import Callback, RedisCommands
from rstore.client.shapes import Decoder, finish, make_decoder, parse_stream_list, parse_xread
from rstore.commands.argv import encode_arg, encode_argv
from rstore.commands.executor import execute, now_ms, run_batch
from rstore.commands.registry import lookup
from rstore.commands.reply import NIL_ARRAY, DictEntries, to_public
from rstore.databases import database_number, database_path
from rstore.errors import CorruptStoreError, ResponseError, StorageError, StoreClosedError
from rstore.model import DATABASES, AppendReport
from rstore.pipeline import Pipeline
from rstore.renames import renamed_alias, renamed_keywords
from rstore.storage import registry
from rstore.storage.env import Env
from rstore.storage.records.layout import FORMAT_VERSION, StoreConfig

# Snapshots, inspection and checks load when first used (start-up of one-command processes).
if TYPE_CHECKING:
    from rstore.commands.serving import BlockedCall, BlockWatch
    from rstore.model import Retention, StoreUsage, StreamInfo
    from rstore.snapshot.restore import RestoreReport
    from rstore.snapshot.save import Progress, SaveReport
    from rstore.streams.view import StoreView

__all__ = ["DEFAULT_PATH", "FORMAT_VERSION", "Store", "check_store", "upgrade_store"]

DEFAULT_PATH = "rstore-data"
#: How often :meth:`Store.check` starts again when commits overwrote its snapshot's meta page
#: before the walk of LMDB's trees could read it (each try loses that race rarely).
_CHECK_ATTEMPTS = 200
#: The callbacks whose result a command may build straight from its entries
#: (:class:`~rstore.commands.reply.DictEntries`): XRANGE's and XREAD's shapes.
_ENTRY_SHAPES = (parse_stream_list, parse_xread)

T = TypeVar("T")


class Store(RedisCommands):
    """A durable stream store living in the directory ``path``.

    Many threads and processes may open the same directory at once.  Writes are serialised by
    LMDB; readers work on consistent snapshots and never block writers.

    :param path: the store directory; created (with parents) if missing and ``create`` is true.
    :param sync: ``True`` (default): a write that returned is on disk (like Redis's
        ``appendfsync always``).  ``False``: commits are not flushed; a process crash loses
        nothing, an operating-system crash or power loss may lose the writes of the last
        moments (at most ~50 ms; see ``docs/durability.md``) but never damages the store.
        Every Store on one path in one process must use the same setting.
    :param node_max_bytes: Redis's ``stream-node-max-bytes`` for this store (default 4096);
        when given it is saved in the store, like ``CONFIG SET``.
    :param node_max_entries: Redis's ``stream-node-max-entries`` (default 100); likewise.
    :param map_size: initial LMDB map size in bytes (the map grows by itself when full).
    :param create: create the store when it does not exist (else :class:`NotAStoreError`).
    :param readonly: open for reading only: every write raises :class:`ReadOnlyStoreError`.
        Works on stores this user may not write (another user's service store, a read-only
        mount, a snapshot on read-only media); see ``docs/durability.md`` for what reading a
        store without access to its lock file means.
    :param wal: deprecated and ignored (a :class:`DeprecationWarning`): every store is written
        through its write-ahead log (store format 3 and later).  A store of an older format
        (3, 2 or 1) is brought to the current one by the first open that may write it
        (``docs/format.md``).
    :param decode_responses: as in redis-py: the redis-py-style methods, ``execute_command``
        and pipelines give every bulk string as ``str`` decoded with ``encoding`` /
        ``encoding_errors`` (``dump`` still gives ``bytes``; :meth:`execute` and
        :meth:`execute_raw` always give ``bytes``).
    :param protocol: as in redis-py: ``None`` (default) gives the reply shapes of redis-py
        8.1's default client, ``2`` those of a ``protocol=2`` client.  They differ only in the
        consumers of ``xinfo_stream(full=True)``, whose keys are ``bytes`` by default and
        ``str`` with ``2`` (both ``str`` with ``decode_responses``).  ``3`` (RESP3's own
        shapes) is refused with :class:`ValueError`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_PATH,
        *,
        sync: bool = True,
        node_max_bytes: int | None = None,
        node_max_entries: int | None = None,
        map_size: int | None = None,
        create: bool = True,
        readonly: bool = False,
        wal: bool | None = None,
        decode_responses: bool = False,
        encoding: str = "utf-8",
        encoding_errors: str = "strict",
        protocol: int | None = None,
    ) -> None:
        if protocol is not None and str(protocol) != "2":  # redis-py takes "2" as well
            raise ValueError(
                f"protocol must be None (redis-py's default shapes) or 2, not {protocol!r}"
            )
        for name, value in (
            ("node_max_bytes", node_max_bytes),
            ("node_max_entries", node_max_entries),
        ):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        if wal is not None:
            warnings.warn(
                "Store(wal=...) is deprecated and ignored: every store is written through its "
                "write-ahead log (store format 3)",
                DeprecationWarning,
                stacklevel=2,
            )
        self._path = os.fspath(path)
        self._env: Env | None = registry.acquire(
            self._path, sync=sync, map_size=map_size, create=create, readonly=readonly
        )
        self._sync = sync
        self._readonly = readonly
        self._databases: dict[int, Store] = {}  # database N -> its store (Store.database)
        self._databases_lock = threading.Lock()
        self._decode: Decoder | None = None
        self._protocol: int | None = None if protocol is None else 2
        if decode_responses:
            self._decode = make_decoder(encoding, encoding_errors)
        if node_max_bytes is not None or node_max_entries is not None:
            self._set_config(node_max_bytes, node_max_entries)

    # ------------------------------------------------------------------ lifecycle

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._env is None

    def _live_env(self) -> Env:
        env = self._env
        if env is None:
            raise StoreClosedError(f"the store at {self._path} is closed")
        return env

    @property
    def format(self) -> int:
        """The store's on-disk format (``docs/format.md``): 3 (checksums and a write-ahead log)
        once opened for writing; a store opened read-only may be in an older format, 1 (no
        checksums) or 2 (checksums), which the first open that may write it upgrades."""
        return self._live_env().format

    @property
    def wal(self) -> bool:
        """Whether the store is written through a write-ahead log (format 3): always, but for
        a store of an older format opened read-only."""
        return self.format >= FORMAT_VERSION

    @property
    def readonly(self) -> bool:
        """Whether writes are refused: the store was opened read-only."""
        return not self._live_env().writable

    def close(self) -> None:
        """Release the store (the LMDB handle closes with the last Store on this path).

        Safe while other threads use the store: the last close waits for the commands in
        flight, and blocked reads are woken; afterwards every call raises
        :class:`StoreClosedError`.  The stores :meth:`database` opened close with it."""
        with self._databases_lock:
            children, self._databases = list(self._databases.values()), {}
        for child in children:
            child.close()
        if self._env is not None:
            registry.release(self._env)
            self._env = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("sync" if self._sync else "nosync")
        return f"<rstore.Store {self._path!r} {state}>"

    def sync(self) -> None:
        """Flush committed writes to disk (only needed with ``sync=False``)."""
        self._live_env().sync()

    def inspect(
        self,
        key: bytes | str | None = None,
        *,
        progress: Progress | None = None,
        pending: bool = False,
    ) -> list[StreamInfo]:
        """Per-stream summaries (length, nodes, edge IDs, counters, groups with pending counts,
        lag and consumers), the same records :func:`rstore.inspect_rdb` gives for a file.
        ``progress(keys_done, keys_total)`` is called as the keys are read.  With ``pending``,
        each group's ``pending`` holds its whole PEL with owners, and each consumer's its own
        entries (as :func:`rstore.inspect_rdb` with ``pending=True``)."""
        name = None if key is None else encode_arg(key)
        from rstore.snapshot.inspection import inspect_store  # noqa: PLC0415 - loaded on first use

        return inspect_store(self._live_env(), key=name, progress=progress, pending=pending)

    def usage(self) -> StoreUsage:
        """The store's files now: the data file's size, the bytes its records use, the
        write-ahead log's size, and this process's log flushes (:class:`rstore.StoreUsage`;
        ``rstore metrics`` exports them)."""
        return self._live_env().usage()

    def view(self, fn: Callable[[StoreView], T]) -> T:
        """Run ``fn`` on a :class:`rstore.StoreView`: one consistent read snapshot of the whole
        store (stream names, states, node indexes, raw nodes) and return what it returns.  The
        view is valid only while ``fn`` runs; ``fn`` may be run again (when another process
        grew the map meanwhile), so it must not have effects outside what it returns."""
        from rstore.streams.view import StoreView  # noqa: PLC0415 - loaded on first use

        def run(txn: Any) -> T:
            view = StoreView(txn)
            try:
                return fn(view)
            finally:
                view._close()

        return self._live_env().read(run)

    def check(self) -> list[str]:
        """Verify the whole store: LMDB's structure in the file, every record's checksum, every
        node's structure and every stored counter (stream length, node count, first ID, group
        pending and consumer counts, both PEL indexes), and in a store with a write-ahead log the
        log's records since the last checkpoint.  Returns the problems found, each naming the
        place (sub-database, page, stream, log offset); an empty list means consistent.  See
        also :func:`rstore.check_store` for a store too damaged to open."""
        from rstore.storage.checks.pagecheck import StaleSnapshot  # noqa: PLC0415
        from rstore.storage.checks.wal_check import check_log  # noqa: PLC0415
        from rstore.streams.check import check_store as check_streams  # noqa: PLC0415

        env = self._live_env()
        for _ in range(_CHECK_ATTEMPTS):
            try:
                problems: list[str] = env.read(check_streams)
                break
            except StaleSnapshot:  # two commits came between the snapshot and its meta page
                continue
        else:
            raise StorageError(
                f"{self._path}: the store changed under the check {_CHECK_ATTEMPTS} times in "
                "a row; check it again when fewer writes run"
            )
        if self.wal:
            problems += check_log(self._path, env)
        return problems

    def upgrade(self) -> int:
        """How many records were rewritten when this process's open of the store brought it
        from an older on-disk format to the current one (``docs/format.md``): a format-1
        store's records all get their checksums, a format-2 store's none (0); 0 when it was
        current.  Every open that may write upgrades; a read-only store raises
        :class:`ReadOnlyStoreError`."""
        env = self._live_env()
        if env.readonly:
            raise env.refuse_write()
        return env.upgraded or 0

    # ------------------------------------------------------------------ databases

    def database(self, n: int) -> Store:
        """The store of database ``n`` (``SELECT n``): 0 is this store, 1 to 15 the store in
        the directory ``<path>/db<n>``, opened on first use with this store's ``sync``,
        ``readonly`` and ``decode_responses`` settings (created when missing, unless this
        store is read-only: then a missing database raises :class:`StoreNotFoundError`).

        The store returned belongs to this one: it is the same object on every call (from any
        thread) and closes with :meth:`close`.  Closing it yourself is allowed; the next call
        opens it again.  ``rstore serve`` and ``rstore save`` / ``restore`` use this layout,
        and any process may open ``<path>/db<n>`` as a store of its own."""
        if database_number(n) == 0:
            self._live_env()
            return self
        with self._databases_lock:
            self._live_env()
            child = self._databases.get(n)
            if child is None or child.closed:
                child = Store(
                    database_path(self._path, n), sync=self._sync,
                    readonly=self._readonly, create=not self._readonly,
                )  # fmt: skip
                child._decode = self._decode
                self._databases[n] = child
            return child

    def databases(self) -> list[int]:
        """The databases present: 0, and each N from 1 to 15 whose store ``<path>/db<N>``
        exists on disk (or was opened by :meth:`database`), in ascending order.  Present does
        not mean holding keys."""
        self._live_env()
        with self._databases_lock:
            opened = set(self._databases)
        return [0] + [
            n for n in range(1, DATABASES)
            if n in opened or os.path.isfile(os.path.join(database_path(self._path, n), "data.mdb"))
        ]  # fmt: skip

    def save(
        self,
        path: str | os.PathLike[str],
        rdb_version: int = 11,
        *,
        compress: bool | None = None,
        progress: Progress | None = None,
        databases: Iterable[int] | None = None,
    ) -> SaveReport:
        """Write the store to an RDB file that Redis and Valkey load: database 0 and every
        database :meth:`databases` lists (``databases=[0, 3]`` saves only those), each that
        holds keys under its SELECTDB, in ascending order.

        Version 11 (stream type 21) loads in Redis 7.2+ and Valkey 7.2+; 10 (type 19) in
        Redis 7.0+; 9 (type 15) in Redis 5.0+ (older versions lose stream fields added
        later).  ``compress`` is Redis's ``rdbcompression`` (``None``: the store's setting, which
        ``CONFIG SET rdbcompression`` changes; on by default).  Each database is saved as one
        consistent point in time while writers go on; the snapshots of the databases are
        taken one after another before anything is written, not at one instant (each database
        is its own store).  The file appears atomically (written to a temporary name, fsynced,
        renamed).  ``progress(keys_done, keys_total)`` counts the keys of all of them.
        """
        from rstore.snapshot.save import save_file  # noqa: PLC0415 - loaded on first use

        numbers = self.databases()
        if databases is not None:
            wanted = {database_number(n) for n in databases}
            numbers = [n for n in numbers if n in wanted]  # one not on disk holds no keys
        envs = [(n, self.database(n)._live_env()) for n in numbers]
        if compress is None:
            compress = self.config.rdb_compression
        return save_file(
            envs, os.fspath(path), rdb_version=rdb_version, compress=compress, progress=progress
        )

    def restore_file(
        self,
        path: str | os.PathLike[str],
        db: int | None = 0,
        replace: bool = False,
        *,
        progress: Progress | None = None,
    ) -> RestoreReport:
        """Import the streams of database ``db`` of an RDB file into this store, in one
        transaction; with ``db=None``, those of every database N of the file into
        :meth:`database` N (the report's ``databases`` holds one report per database).

        All or nothing: a damaged or unsupported file, or a key that already exists (unless
        ``replace``), leaves the store unchanged -- with ``db=None`` every database, the
        whole file and every name being checked before the first commit; the databases then
        commit one after another (see ``docs/snapshots.md`` for the window that leaves).
        Other value types are counted in the report and skipped.  Raises CorruptRDBError /
        UnsupportedRDBError naming the byte offset, KeyExistsError naming the key.
        """
        if db is None:
            from rstore.snapshot.restore_all import restore_all  # noqa: PLC0415

            return restore_all(
                self._database_env, os.fspath(path), replace=replace,
                now_ms=now_ms(), progress=progress,
            )  # fmt: skip
        from rstore.snapshot.restore import restore_file  # noqa: PLC0415 - loaded on first use

        return restore_file(
            self._live_env(), os.fspath(path), db=db, replace=replace,
            now_ms=now_ms(), progress=progress,
        )  # fmt: skip

    def _database_env(self, n: int, create: bool) -> Env | None:
        """The env of :meth:`database` ``n``; ``None`` when not on disk and not ``create``."""
        if not create and n not in self.databases():
            return None
        return self.database(n)._live_env()

    # ------------------------------------------------------------------ keys

    def dump(self, name: Any, rdb_version: int = 11) -> bytes | None:
        """redis-py's ``dump``: the key's DUMP payload, or ``None`` when it does not exist.

        ``rdb_version`` (an rstore extension) makes payloads older servers accept: 10 for
        Redis 7.0, 9 for Redis 5.0-6.2; or newer ones: 12, what Redis 7.4 to 8.4 write; 13,
        Redis 8.6's (with what idempotent production remembers); 14, Redis 8.8's (with the
        entries XNACK released, ownerless).  The default, 11, is what DUMP itself returns
        (Valkey 8.0 refuses 12 and later).
        """
        from rstore.commands.dump import dump_payload  # noqa: PLC0415 - loaded on first use

        if rdb_version == 11:
            result: bytes | None = super().dump(name)  # the DUMP command, decoding rules and all
            return result
        key = encode_arg(name)
        return self._live_env().read(lambda txn: dump_payload(txn, key, now_ms(), rdb_version))

    @renamed_keywords(checkpoint="bookmark")
    def append_entries(
        self,
        entries: Iterable[tuple[Any, Any, Sequence[Any]]],
        *,
        batch: tuple[str | bytes, int] | None = None,
        bookmark: tuple[str | bytes, bytes] | None = None,
    ) -> AppendReport:
        """Append many entries in ONE write transaction: all of them or none.

        ``entries`` yields ``(stream, id, [field, value, field, value, ...])``; ``id`` is
        ``None`` or ``"*"`` for an automatic ID, else an explicit ID as XADD takes it
        (``"<ms>-<seq>"``, ``"<ms>"``, ``"<ms>-*"``) or an ``(ms, seq)`` tuple of ints.  Each
        entry is appended exactly as ``XADD stream id field value ...`` would append it at that
        point, in order: the same IDs (automatic ones by XADD's rule, all under one time
        snapshot), the same nodes, the same errors.  The first entry XADD would refuse (an
        explicit ID not above the stream's last ID, a missing value, ...) raises
        :class:`ResponseError` with XADD's exact line (on Python 3.11+ with a note naming the
        entry), and nothing is written.  Names, IDs,
        fields and values are ``bytes`` or ``str`` (UTF-8).

        ``entries`` is read once, in one pass, so a load of any size runs in bounded memory
        when it is an iterator.  It may be read a second time: when the store's map must grow
        mid-way LMDB rolls the transaction back and the load starts over.  A re-iterable
        (a list, or an object whose ``__iter__`` starts over) is then read again; a one-shot
        iterator (a generator) cannot be, and the call raises ``ValueError`` having written
        nothing (``Store(map_size=...)`` large enough avoids growing mid-way).

        ``batch=(name, number)`` makes the load idempotent: it is applied only when
        ``number`` is greater than the last number applied under ``name`` (see
        :meth:`last_batch`), and the number is recorded in the same transaction -- a load
        replayed after a crash is skipped (``report.applied`` is false, ``entries`` is not
        read).  Readers blocked on the streams are woken after the commit.

        ``bookmark=(name, value)`` records the bytes ``value`` under ``name`` in the same
        transaction as the entries (replacing what was there; see :meth:`bookmark`): a
        reader of the bookmark sees exactly the position of what was committed with it --
        the resume point of ``rstore.run_replay`` into a store.  With ``batch``, a skipped load
        records nothing.  (``checkpoint=``, its name before, still works and warns.)
        """
        from rstore.commands.bulk import load  # noqa: PLC0415 - loaded on first use
        from rstore.streams.bulk import add_many  # noqa: PLC0415

        return load(
            self._live_env(), lambda txn, now: add_many(txn, entries, now),
            one_shot=iter(entries) is entries, what="entries", batch=batch, bookmark=bookmark,
        )  # fmt: skip

    @renamed_keywords(checkpoint="bookmark")
    def append_nodes(
        self,
        nodes: Iterable[tuple[Any, tuple[int, int], bytes]],
        *,
        batch: tuple[str | bytes, int] | None = None,
        bookmark: tuple[str | bytes, bytes] | None = None,
    ) -> AppendReport:
        """Append whole stream nodes in ONE write transaction: all of them or none.

        ``nodes`` yields ``(stream, master ID, node)``: a node as :meth:`StoreView.nodes` or
        :func:`rstore.read_rdb_nodes` give it (a Redis stream listpack) and its master ID as an
        ``(ms, seq)`` tuple.  Each node becomes the stream's new last node as it is, unchanged:
        the stream ends as if ``XADD`` had added the node's entries one by one with their IDs
        (length, first and last ID, entries-added); only the node boundaries differ.  The fast
        way to copy history from another store or a dump (``rstore replay`` uses it when IDs
        are kept).  Every node is checked in depth first; a damaged node raises
        :class:`CorruptDataError`, one with deleted entries :class:`ValueError`, one whose
        entries are not above the stream's last ID XADD's :class:`ResponseError` -- and then
        nothing is written.  ``batch`` and ``bookmark`` work as in :meth:`append_entries`.
        """
        from rstore.commands.bulk import load  # noqa: PLC0415 - loaded on first use
        from rstore.streams.node_copy import add_nodes  # noqa: PLC0415

        def loader(txn: Any, now: int) -> dict[bytes, tuple[int, tuple[int, int]]]:
            return add_nodes(txn, ((encode_arg(s), (m[0], m[1]), n) for s, m, n in nodes))

        return load(
            self._live_env(), loader,
            one_shot=iter(nodes) is nodes, what="nodes", batch=batch, bookmark=bookmark,
        )  # fmt: skip

    def last_batch(self, name: str | bytes) -> int | None:
        """The last batch number :meth:`append_entries` applied under ``name``, or ``None``."""
        from rstore.commands.bulk import read_batch  # noqa: PLC0415 - loaded on first use

        return read_batch(self._live_env(), name)

    def bookmark(self, name: str | bytes) -> bytes | None:
        """The bytes :meth:`append_entries` last recorded under bookmark ``name``, or
        ``None``."""
        from rstore.commands.bulk import read_bookmark  # noqa: PLC0415 - loaded on first use

        return read_bookmark(self._live_env(), name)

    checkpoint = renamed_alias(bookmark, "Store.checkpoint", "Store.bookmark")

    # ------------------------------------------------------------------ retention

    def set_retention(
        self,
        pattern: str | bytes,
        *,
        max_age_ms: int | None = None,
        max_entries: int | None = None,
        ref: str = "keepref",
        max_bytes: int | None = None,
    ) -> dict[bytes, int]:
        """Keep the streams whose name matches ``pattern`` (a Redis glob, or the exact name)
        within limits, without any producer passing MAXLEN or MINID (rstore's own; see
        :class:`rstore.Retention` and ``docs/retention.md``): entries older than
        ``max_age_ms`` (by their ID's time) and beyond the newest ``max_entries`` go, and the
        oldest while the rest would still hold ``max_bytes`` bytes of nodes
        (:meth:`stream_bytes`), whole nodes at a time, under the reference policy ``ref``
        (``keepref``, ``delref``, or ``acked``: never what a consumer group has not
        acknowledged).  Replaces the pattern's policy; applied now to the streams it
        governs, then by every XADD that opens a node.  Returns the entries removed now, per
        stream."""
        from rstore.model import Retention  # noqa: PLC0415 - loaded on first use
        from rstore.streams import retention  # noqa: PLC0415

        policy = Retention(encode_arg(pattern), max_age_ms, max_entries, ref, max_bytes)
        return self._live_env().write(lambda txn: retention.set_policy(txn, policy, now_ms()))

    def stream_bytes(self, name: str | bytes) -> int:
        """The bytes of the stream's node listpacks, as a retention policy's ``max_bytes``
        counts them (the entries' encoded size, deleted ones still in their nodes included;
        the file holds them plus LMDB's pages); 0 when there is no such stream."""
        from rstore.streams import retention  # noqa: PLC0415 - loaded on first use

        key = encode_arg(name)
        return self._live_env().read(lambda txn: retention.node_bytes(txn, key))

    def clear_retention(self, pattern: str | bytes) -> bool:
        """Remove the retention policy of ``pattern``; whether there was one."""
        from rstore.streams import retention  # noqa: PLC0415 - loaded on first use

        key = encode_arg(pattern)
        return self._live_env().write(lambda txn: retention.clear(txn, key))

    def retention_policies(self) -> list[Retention]:
        """Every retention policy of the store, in pattern order."""
        from rstore.streams import retention  # noqa: PLC0415 - loaded on first use

        return self._live_env().read(retention.policies)

    @property
    def config(self) -> StoreConfig:
        """The store's settings (node limits, ``rdbcompression``) as saved in the store."""
        return self._live_env().read(lambda txn: txn.config())

    def _set_config(self, node_max_bytes: int | None, node_max_entries: int | None) -> None:
        def update(txn: Any) -> None:
            limits = {"node_max_bytes": node_max_bytes, "node_max_entries": node_max_entries}
            given = {name: value for name, value in limits.items() if value is not None}
            txn.set_config(replace(txn.config(), **given))

        self._live_env().write(update)

    # ------------------------------------------------------------------ commands

    def execute(self, *argv: Any) -> Any:
        """Run one command given as argv (``str``, ``bytes``, ``int`` or ``float`` items).

        Returns the RESP2 reply as Python values: bulk string -> ``bytes`` (whatever
        ``decode_responses`` says), status -> ``str``, integer -> ``int``, nil -> ``None``,
        array -> ``list``.  A refused command raises :class:`rstore.ResponseError`: its
        ``line`` is Valkey's exact error line, its ``str()`` redis-py's message for it
        (``"ERR no such key"`` -> ``"no such key"``).
        """
        spec, reply = execute(self._live_env(), encode_argv(argv))
        return to_public(reply, spec.public)

    def execute_raw(self, *argv: Any) -> Any:
        """Like :meth:`execute`, but keeps RESP2's two nils apart: a nil bulk is ``None`` and a
        nil array is :data:`rstore.NIL_ARRAY`.  For network fronts and exact comparisons."""
        return execute(self._live_env(), encode_argv(argv))[1]

    def execute_many(
        self,
        commands: Iterable[Sequence[Any]],
        *,
        streamed: bool = False,
        waiting: Sequence[BlockedCall] = (),
    ) -> list[Any]:
        """Run the commands of independent clients in ONE transaction, each on its own: for a
        network front (``rstore serve``), where every client's command must get its own
        answer and the writes of all the clients that arrived together share one commit (one
        flush with ``sync=True``).

        Each command gives its reply as :meth:`execute_raw` does (the two nils apart), or its
        :class:`ResponseError` *in its place* (an unknown command or a wrong argument count
        refuses that command only), or, for XREAD / XREADGROUP with BLOCK that have nothing to
        serve yet, a :class:`rstore.BlockedCall` to park: watch it with :meth:`watch` and run
        its ``argv`` again in a later call until it is served or its ``deadline`` passes
        (its reply is then :data:`rstore.NIL_ARRAY`).  Commands run in order, each seeing the
        writes of those before it, exactly as if they had arrived one after another.

        With ``streamed``, an XRANGE or XREVRANGE over more than a MiB of nodes gives a
        :class:`rstore.StreamedEntries` instead of its list (an XREAD, a
        :class:`rstore.StreamedReads` of them): the entry count, then the entries
        a page at a time, decoded from nodes copied out of the transaction (the same snapshot)
        as the front writes them -- a reply of any size in bounded memory; a smaller one gives
        a :class:`rstore.RespReply`, its RESP bytes (the same in RESP2 and RESP3) written
        straight from the nodes.  An XREADGROUP of consumers' histories (no CLAIM, MAXCOUNT or
        MAXSIZE) gives a :class:`rstore.HistoryReads`, its RESP written while the history was
        read; an XPENDING's extended form, a :class:`rstore.RespReply`.

        ``waiting``: the front's parked reads (:class:`rstore.BlockedCall`), in the order they
        blocked.  Each runs again right after every command that writes to one of its
        streams, until it is served -- Valkey serves blocked clients after each command, so
        ten XADDs pipelined in one write give two blocked group readers ``1-0`` and ``2-0``,
        not five entries each.  Their results follow the commands', in their order: the reply
        of one that was served; for one that still waits (keep it parked), a new
        :class:`rstore.BlockedCall` when it ran, the same one when it did not run (nothing it
        waits on was written, or its group had nothing new for it).
        """
        from rstore.commands.serving import run_each  # noqa: PLC0415 - loaded on first use

        return run_each(self._live_env(), [encode_argv(c) for c in commands], streamed, waiting)

    def watch(self, call: BlockedCall) -> BlockWatch:
        """Wake-ups for a parked :class:`rstore.BlockedCall`: a :class:`rstore.BlockWatch`
        whose ``fileno()`` becomes readable when a write -- in this process or another --
        may have served it (close it when done with the call)."""
        from rstore.commands.serving import BlockWatch  # noqa: PLC0415 - loaded on first use

        blocked = call.blocked
        return BlockWatch(self._live_env().waiter(blocked.kind, blocked.keys, blocked.group))

    def execute_command(self, *args: Any, **options: Any) -> Any:
        """redis-py's low-level entry point: :meth:`execute`, decoded with
        ``decode_responses``."""
        return self._command(list(args))

    def _command(self, argv: list[Any], callback: Callback = None, **options: Any) -> Any:
        env = self._env
        if env is None:
            env = self._live_env()  # raises: closed
        # entries built straight into redis-py's form when nothing else shapes them
        dicts = callback in _ENTRY_SHAPES and self._decode is None and not options
        spec, reply = execute(env, encode_argv(argv), dicts)
        if type(reply) is DictEntries:
            return list(reply)
        public = to_public(reply, spec.public)
        if callback is None and self._decode is None and not options:
            return public  # nothing to decode or shape: what finish would give
        return finish(public, callback, options, self._decode, self._protocol)

    @staticmethod
    def is_write_command(*argv: Any) -> bool:
        """Whether the command would write (and so needs, or creates, a store).

        Raises :class:`ResponseError` for an unknown command or a wrong argument count.
        """
        return lookup(encode_argv(argv)).write

    def execute_batch(self, commands: Iterable[Sequence[Any]], *, raw: bool = False) -> list[Any]:
        """Run several commands, each given as argv, in ONE transaction: other processes see
        all of them or none, a crash keeps all of them or none.  As in MULTI/EXEC, a command
        refused while running gives its :class:`ResponseError` *in place of its reply* (it is
        not raised) and the others still apply; an unknown command or a wrong argument count
        refuses the whole batch before anything runs (raised).  Replies are as :meth:`execute`
        gives them (as :meth:`execute_raw` with ``raw=True``); BLOCK is ignored.  :meth:`pipeline`
        is the redis-py-style front of this, MULTI/EXEC of ``rstore serve`` another.
        """
        return self._run_batch([encode_argv(list(argv)) for argv in commands], raw=raw)

    def _run_batch(self, batch: list[list[bytes]], *, raw: bool = False) -> list[Any]:
        """:meth:`execute_batch` of argvs already encoded (pipelines encode as they queue)."""
        if not batch:
            return []
        specs, replies = run_batch(self._live_env(), batch)
        if raw:
            return replies
        for i, reply in enumerate(replies):
            public = specs[i].public
            if reply is NIL_ARRAY or (public is not None and not isinstance(reply, ResponseError)):
                replies[i] = to_public(reply, public)
        return replies

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        """A pipeline whose :meth:`~Pipeline.execute` runs in one atomic transaction
        (:meth:`execute_batch`).  ``transaction`` is accepted for redis-py compatibility; rstore
        pipelines are always atomic."""
        return Pipeline(self, self._decode, self._protocol)


def check_store(path: str | os.PathLike[str] = DEFAULT_PATH) -> list[str]:
    """Every problem of the store at ``path`` (empty when sound), even when the store is too
    damaged to open: then the damaged pages are found by reading the file, without letting
    LMDB walk them, and named by sub-database and stream.  Never writes."""
    opened = registry.open_mode(os.fspath(path))  # share this process's handle, in its mode
    try:
        store = Store(path, readonly=True if opened is None else opened, create=False)
    except CorruptStoreError:
        from rstore.storage.checks.diagnose import diagnose_file  # noqa: PLC0415

        return diagnose_file(os.path.realpath(os.fspath(path)))
    with store:
        return store.check()


def upgrade_store(
    path: str | os.PathLike[str] = DEFAULT_PATH, progress: Progress | None = None
) -> int:
    """Bring the store at ``path`` to the current on-disk format, as every open that may write
    it does (see :meth:`Store.upgrade`); the number of records rewritten.  ``progress(done,
    total)`` reports the rewriting of a format-1 store's records."""
    env = registry.acquire(os.fspath(path), sync=True, map_size=None, create=False,
                           on_upgrade=progress)  # fmt: skip
    try:
        return env.upgraded or 0
    finally:
        registry.release(env)
