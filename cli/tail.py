"""``rstore tail``: follow a stream like ``tail -f``, alone or as a consumer of a group.

The loop alternates blocking reads (XREAD / XREADGROUP with BLOCK, woken by writes from any
process) with printing.  Ctrl-C and SIGTERM stop it cleanly: while it waits they interrupt
the wait at once; while it prints and acknowledges a batch they take effect right after the
batch's printed entries are acknowledged (a second signal stops at once), so what was printed
is never left unacknowledged by a stop.  A closed stdout (``| head``) is noticed on the next
write or within :data:`BLOCK_SLICE_MS` while idle.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import click

import rstore

from .context import StoreOpener, json_option, pass_opener, unescape_option
from .jsonout import dumps, echo_utf8
from .output import EntryWriter
from .params import range_bound, to_bytes
from .replies import Entry, read_entries

__all__ = ["BLOCK_SLICE_MS", "COMMANDS", "Stopper"]

#: One blocking read waits at most this long; then tail checks that stdout is still open.
BLOCK_SLICE_MS = 1000

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Stop(BaseException):
    """Raised by :class:`Stopper`'s handler (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` on the way swallows it)."""


class Stopper:
    """SIGINT / SIGTERM handling for a loop that must not stop between printing and acking.

    Inside :meth:`critical` a signal is only recorded (a second one stops at once); anywhere
    else it raises :class:`_Stop`.  ``signum`` is the first signal received.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._deferring = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if not (self._deferring and first):
            raise _Stop

    def __enter__(self) -> Stopper:
        if threading.current_thread() is threading.main_thread():
            for signum in _SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        """Defer a stop until the block is done (then raise it)."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.signum is not None:
            raise _Stop

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe (or terminal, socket) whose other end went away."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # not a real file (tests): never "closed"
    poller = select.poll()
    poller.register(fd, 0)  # errors and hang-ups are always reported
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


@dataclass
class _Follower:
    """The state of one ``tail`` run: where to print, what to ack, when to stop."""

    store: rstore.Store
    key: bytes
    stopper: Stopper
    print_entry: Callable[[Entry], None]
    count: int
    remaining: int | None  # --max: entries still to print (None: no limit)
    ack_group: bytes | None = None  # acknowledge printed entries in this group

    def batch_size(self) -> int:
        return self.count if self.remaining is None else min(self.count, self.remaining)

    def done(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def read(self, *argv: bytes) -> list[Entry]:
        """Run one read; a stop signal interrupts it at once."""
        if self.stopper.signum is not None:
            raise _Stop
        return read_entries(self.store.execute(*argv), self.key)

    def idle(self) -> None:
        """After a wait that timed out: stop if nobody reads stdout any more."""
        if _stdout_closed():
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    def emit(self, entries: list[Entry]) -> None:
        """Print the entries (each line flushed), then acknowledge those printed."""
        printed: list[bytes] = []
        with self.stopper.critical():
            try:
                for entry in entries:
                    if self.stopper.signum is not None or self.done():
                        break
                    self.print_entry(entry)
                    printed.append(entry.id)
                    if self.remaining is not None:
                        self.remaining -= 1
            finally:
                if self.ack_group is not None and printed:
                    self.store.xack(self.key, self.ack_group, *printed)

    def follow(self, last_id: bytes) -> None:
        """Plain mode: XREAD the entries after ``last_id``, forever (or until --max)."""
        slice_ms = str(BLOCK_SLICE_MS).encode()
        while not self.done():
            count = str(self.batch_size()).encode()
            entries = self.read(
                b"XREAD", b"COUNT", count, b"BLOCK", slice_ms, b"STREAMS", self.key, last_id
            )
            if not entries:
                self.idle()
                continue
            self.emit(entries)
            last_id = entries[-1].id

    def follow_group(self, group: bytes, consumer: bytes) -> None:
        """Group mode: this consumer's pending history first, then new entries (``>``)."""
        head = [b"XREADGROUP", b"GROUP", group, consumer, b"COUNT"]
        after = b"0"
        while not self.done():
            entries = self.read(*head, str(self.batch_size()).encode(), b"STREAMS", self.key, after)
            if not entries:
                break
            self.emit(entries)
            after = entries[-1].id
        slice_ms = str(BLOCK_SLICE_MS).encode()
        while not self.done():
            count = str(self.batch_size()).encode()
            entries = self.read(*head, count, b"BLOCK", slice_ms, b"STREAMS", self.key, b">")
            if entries:
                self.emit(entries)
            else:
                self.idle()


def _before(start: bytes) -> bytes:
    """The ID an XREAD must read after to get the entries from ``start`` (``ms-seq``) on."""
    ms, seq = (int(part) for part in start.split(b"-"))
    if seq:
        return b"%d-%d" % (ms, seq - 1)
    return b"%d-%d" % (ms - 1, 18446744073709551615) if ms else b"0-0"  # 0-0 is never an ID


def _last_id(store: rstore.Store, key: bytes) -> bytes:
    """What ``$`` means now: the stream's last entry ID (``0-0`` when it is empty or missing).
    Entries added later all have higher IDs, so reading after it misses none of them."""
    last = store.execute(b"XREVRANGE", key, b"+", b"-", b"COUNT", b"1")
    return last[0][0] if last else b"0-0"


@click.command("tail", short_help="Follow a stream, printing entries as they arrive.")
@click.argument("stream")
@click.option(
    "--from",
    "from_id",
    metavar="ID|TIME|$",
    help="Print the entries from ID on (inclusive, as `range` reads START: - or 0 is the "
    "whole stream, (ID starts after ID, a time such as 1h or 2026-11-01T10:00 stands for its "
    "ID), then follow.  Default $: only entries added from now on.  Not with --group.",
)
@click.option("--since", metavar="TIME|ID", help="The same as --from: e.g. --since 1h.")
@click.option(
    "--count",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    metavar="N",
    help="Read at most N entries per read (COUNT).  It does not limit the total: see --max.",
)
@click.option("--group", metavar="GROUP", help="Follow as a consumer of GROUP (needs --consumer).")
@click.option("--consumer", metavar="NAME", help="With --group: the consumer's name.")
@click.option(
    "--no-ack",
    "no_ack",
    is_flag=True,
    help="With --group: leave the printed entries pending instead of acknowledging them.",
)
@click.option(
    "--max", "max_entries", type=click.IntRange(min=1), metavar="N", help="Stop after N entries."
)
@json_option
@unescape_option
@pass_opener
def tail_command(
    opener: StoreOpener,
    stream: str,
    from_id: str | None,
    since: str | None,
    count: int,
    group: str | None,
    consumer: str | None,
    no_ack: bool,
    max_entries: int | None,
    as_json: bool,
    unescape: bool,
) -> None:
    """Follow STREAM like `tail -f`: print its entries as they are added, by this or any
    other process, until Ctrl-C (exit 130), SIGTERM (exit 143) or --max entries (exit 0).

    Entries print like `range` lines; --json prints one JSON object per line (JSON lines),
    flushed at once.  Waiting uses blocking reads that the writes themselves wake (tail also
    wakes once a second to check that stdout is still open, and stops when it is not).

    With --group and --consumer, tail reads as that consumer (XREADGROUP): first its own
    pending entries (delivered earlier and never acknowledged; entries deleted from the stream
    since print as "ID  (deleted)"), then the entries new to the group.  Each entry is
    acknowledged (XACK) once printed, unless --no-ack.  The group must exist (`rstore group
    create`).  Beware `| head -N` in this mode: lines written to the pipe count as printed,
    so prefer --max N.

    \b
    Examples:
      rstore tail events
      rstore tail events --from 0 --json | jq -c .fields
      rstore tail events --since 10m
      rstore tail orders --group billing --consumer worker-1
      rstore tail orders --group billing --consumer audit --no-ack --max 10
    """
    if group is None and (consumer is not None or no_ack):
        raise click.UsageError("--consumer and --no-ack need --group")
    if group is not None and consumer is None:
        raise click.UsageError("--group needs --consumer NAME")
    if from_id is not None and since is not None:
        raise click.UsageError("give --from or --since, not both")
    from_id = from_id if since is None else since
    if group is not None and from_id is not None:
        raise click.UsageError("--from is for plain mode; --group reads what the group has not")
    key = to_bytes(stream, unescape, "STREAM")
    param = "--from" if since is None else "--since"
    start = None if from_id in (None, "$") else range_bound(from_id, is_end=False, param=param)

    writer = EntryWriter(flush_each=True)

    def print_entry(entry: Entry) -> None:
        if as_json:
            echo_utf8(dumps(entry))  # click.echo() flushes
        else:
            writer.entry(entry.id, entry.flat())  # flushed

    stopper = Stopper()
    try:
        with stopper, opener.open(create=False) as store:
            follower = _Follower(store, key, stopper, print_entry, count, max_entries)
            if group is None:
                follower.follow(_last_id(store, key) if start is None else _before(start))
            else:
                group_b = to_bytes(group, unescape, "--group")
                follower.ack_group = None if no_ack else group_b
                follower.follow_group(group_b, to_bytes(consumer or "", unescape, "--consumer"))
    except _Stop:  # the handlers are restored by now
        raise click.exceptions.Exit(stopper.exit_code) from None


COMMANDS: list[click.Command] = [tail_command]
