"""Where a replay delivers entries (:func:`rstore.run_replay`): lines on a binary file
(stdout), a store (the same one under other stream names, or another), or a live Redis/Valkey
server.

A sink receives batches of ``(target stream, (ms, seq), [field, value, ...])`` whose IDs the
engine already chose (kept, or new), and writes each batch whole or raises:

* :class:`StoreSink` writes a batch in ONE transaction (:meth:`rstore.Store.append_entries`),
  the replay's bookmark recorded in that same transaction: ``transactional`` is true and
  :meth:`StoreSink.write` takes the bookmark value; it also takes whole nodes unchanged
  (:meth:`StoreSink.write_nodes`, :meth:`rstore.Store.append_nodes`);
* :class:`LinesSink` and :class:`UrlSink` are not transactional: the engine records their
  bookmark in a small file after :meth:`write` returned (at least once).  A server that
  refuses an entry of a batch raises :class:`SinkError` telling how many entries before it
  were delivered.

The sinks' ``load_checkpoint`` and the ``checkpoint=`` keyword of their ``write`` methods are
the names from before bookmarks were renamed: deprecated, they still work and warn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, Protocol

from rstore import RStoreError, Store, StoreView
from rstore.renames import renamed_alias, renamed_keywords

from .envelope import encode_entry

__all__ = ["LinesSink", "Sink", "SinkError", "StoreSink", "TargetEntry", "UrlSink"]

ID = tuple[int, int]
#: An entry as a sink receives it: the target stream, the ID to write, the flat fields.
TargetEntry = tuple[bytes, ID, list[bytes]]


class SinkError(RStoreError):
    """A write that failed part-way: ``delivered`` entries of the batch, from its start, were
    written before the failure (0 when unknown)."""

    def __init__(self, message: str, delivered: int = 0) -> None:
        super().__init__(message)
        self.delivered = delivered


class Sink(Protocol):
    """What the engine needs of a target."""

    #: whether :meth:`write` records the bookmark in the same transaction as the entries
    transactional: bool
    #: whether kept IDs must rise per target stream (a stream target); False for lines
    checks_ids: bool

    def last_id(self, stream: bytes) -> ID | None:
        """The target stream's last ID (the top one XADD compares with), ``None`` if none."""
        ...

    def write(self, batch: Sequence[TargetEntry], bookmark: tuple[str, bytes] | None) -> None:
        """Write ``batch`` whole (and, when transactional, the bookmark with it)."""
        ...

    def load_bookmark(self, name: str) -> bytes | None:
        """A transactional sink's bookmark ``name``; others give ``None``."""
        ...

    # A sink may also take whole nodes, ``write_nodes(nodes, bookmark)`` with ``nodes`` a
    # sequence of ``(target stream, master ID, node)``, written whole or not at all
    # (:class:`StoreSink`); the engine then copies nodes unchanged when it can.


def _format_id(entry_id: ID) -> bytes:
    return b"%d-%d" % entry_id


def _xadd(stream: bytes, entry_id: ID, flat: Sequence[bytes]) -> bytes:
    """``XADD stream ms-seq field value ...`` as a RESP array of bulk strings."""
    args = [b"XADD", stream, b"%d-%d" % entry_id, *flat]
    return b"*%d\r\n" % len(args) + b"".join([b"$%d\r\n%s\r\n" % (len(a), a) for a in args])


class LinesSink:
    """Lines on a binary file: the JSONL envelope (:func:`rstore.encode_entry`) unless
    ``encode`` gives another line (without its newline).  Flushed after every batch."""

    transactional = False
    checks_ids = False

    def __init__(
        self,
        out: BinaryIO,
        encode: Callable[[bytes, ID, Sequence[bytes]], bytes] = encode_entry,
    ) -> None:
        self.out = out
        self.encode = encode

    def last_id(self, stream: bytes) -> ID | None:
        return None

    def load_bookmark(self, name: str) -> bytes | None:
        return None

    load_checkpoint = renamed_alias(
        load_bookmark, "LinesSink.load_checkpoint", "LinesSink.load_bookmark"
    )

    @renamed_keywords(checkpoint="bookmark")
    def write(self, batch: Sequence[TargetEntry], bookmark: tuple[str, bytes] | None) -> None:
        encode = self.encode
        self.out.write(b"".join([encode(s, i, f) + b"\n" for s, i, f in batch]))
        self.out.flush()


class StoreSink:
    """A store: each batch in one :meth:`rstore.Store.append_entries` transaction, with the
    bookmark (``meta/checkpoint:<name>`` of this store).  All or nothing per batch."""

    transactional = True
    checks_ids = True

    def __init__(self, store: Store) -> None:
        self.store = store

    def last_id(self, stream: bytes) -> ID | None:
        def read(view: StoreView) -> ID | None:
            state = view.state(stream)
            return None if state is None else state.last_id

        return self.store.view(read)

    def load_bookmark(self, name: str) -> bytes | None:
        return self.store.bookmark(name)

    load_checkpoint = renamed_alias(
        load_bookmark, "StoreSink.load_checkpoint", "StoreSink.load_bookmark"
    )

    @renamed_keywords(checkpoint="bookmark")
    def write(self, batch: Sequence[TargetEntry], bookmark: tuple[str, bytes] | None) -> None:
        self.store.append_entries(batch, bookmark=bookmark)  # IDs as (ms, seq) tuples

    @renamed_keywords(checkpoint="bookmark")
    def write_nodes(
        self, nodes: Sequence[tuple[bytes, ID, bytes]], bookmark: tuple[str, bytes] | None
    ) -> None:
        """Whole nodes, unchanged, in one transaction with the bookmark
        (:meth:`rstore.Store.append_nodes`)."""
        self.store.append_nodes(nodes, bookmark=bookmark)


class UrlSink:
    """A live Redis or Valkey server: each batch as one pipeline of ``XADD key ms-seq field
    value ...`` (not a MULTI: a refused entry does not undo the ones before it).  Needs
    redis-py (``pip install 'rstore[redis]'``), imported when the sink is made."""

    transactional = False
    checks_ids = True

    def __init__(self, url: str) -> None:
        from .remote import connect, response_error, shown_url  # noqa: PLC0415 - redis-py: when used

        self.shown = shown_url(url)
        self.client, self._errors = connect(url)
        self._refusals = response_error()

    def _fail(self, exc: Exception, delivered: int = 0) -> SinkError:
        return SinkError(f"{self.shown}: {exc}", delivered)

    def last_id(self, stream: bytes) -> ID | None:
        try:
            if self.client.type(stream) != b"stream":
                return None
            info: Any = self.client.execute_command("XINFO", "STREAM", stream)
        except self._errors as exc:
            raise self._fail(exc) from None
        fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
        raw: Any = fields.get(b"last-generated-id", fields.get("last-generated-id"))
        ms, _, seq = (raw.encode() if isinstance(raw, str) else bytes(raw)).partition(b"-")
        return int(ms), int(seq)

    def load_bookmark(self, name: str) -> bytes | None:
        return None

    load_checkpoint = renamed_alias(
        load_bookmark, "UrlSink.load_checkpoint", "UrlSink.load_bookmark"
    )

    @renamed_keywords(checkpoint="bookmark")
    def write(self, batch: Sequence[TargetEntry], bookmark: tuple[str, bytes] | None) -> None:
        """One pipeline: the XADDs packed as RESP by hand (the bytes redis-py would send), sent
        at once, then every reply read; the first refused entry raises :class:`SinkError`
        with the number of entries before it."""
        payload = b"".join([_xadd(stream, entry_id, flat) for stream, entry_id, flat in batch])
        pool = self.client.connection_pool
        conn = pool.get_connection()
        refused: tuple[int, Exception] | None = None
        try:
            conn.send_packed_command([payload], check_health=False)
            for i in range(len(batch)):
                try:
                    conn.read_response()
                except self._refusals as exc:
                    refused = refused or (i, exc)
        except self._errors as exc:
            conn.disconnect()
            raise self._fail(exc) from None
        finally:
            pool.release(conn)
        if refused is not None:
            raise self._fail(refused[1], refused[0])

    def close(self) -> None:
        self.client.close()
