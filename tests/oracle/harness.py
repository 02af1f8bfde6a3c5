"""The differential harness: one argv, run on valkey and on rstore, replies compared exactly.

Nothing here is specific to a command: consumer-group commands (XGROUP, XREADGROUP, XACK, ...)
are tested with the same :meth:`Oracle.both`, and :meth:`Oracle.assert_same_state` already
compares ``XINFO STREAM FULL`` (groups, PELs).  Replies that hold times (delivery times,
``seen-time``, idle) go through :meth:`Oracle.both_timed`, which compares them within a tolerance
(:mod:`.timed`) and everything else exactly.  Blocking calls are driven by :mod:`.blocking`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from newer_fields import as_older_server

from rstore import ResponseError, Store

from .resp import Arg, ErrorReply, RespClient
from .timed import TIME_TOLERANCE_MS, timed_difference

__all__ = [
    "DEFAULT_NODE_MAX_BYTES",
    "DEFAULT_NODE_MAX_ENTRIES",
    "ID_RE",
    "Oracle",
    "is_error",
    "pairs_to_dict",
    "reset_valkey",
    "scan_all",
    "short",
]

DEFAULT_NODE_MAX_ENTRIES = 100
DEFAULT_NODE_MAX_BYTES = 4096
ID_RE = re.compile(rb"^(\d+)-(\d+)$")


def short(value: Any, limit: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def is_error(reply: Any, message: str | None = None) -> bool:
    """True when ``reply`` is a refusal (with exactly ``message`` if given)."""
    return isinstance(reply, ErrorReply) and (message is None or reply.message == message)


def reset_valkey(client: RespClient) -> None:
    """Empty valkey and put the settings rstore shares (node limits, rdbcompression) back to
    their defaults."""
    for argv in (
        ("FLUSHALL",),
        ("CONFIG", "SET", "stream-node-max-entries", DEFAULT_NODE_MAX_ENTRIES),
        ("CONFIG", "SET", "stream-node-max-bytes", DEFAULT_NODE_MAX_BYTES),
        ("CONFIG", "SET", "rdbcompression", "yes"),
    ):
        reply = client.execute(*argv)
        if reply != "OK":
            raise RuntimeError(f"valkey reset {argv} failed: {reply!r}")


class Oracle:
    """valkey (the oracle) and one rstore Store, driven with the same commands."""

    def __init__(
        self,
        valkey: RespClient,
        store_dir: Path,
        *,
        sync: bool = True,
        node_max_entries: int | None = None,
        node_max_bytes: int | None = None,
    ) -> None:
        self.valkey = valkey
        self.store_dir = store_dir
        self.sync = sync
        self.store: Store | None = None
        self.set_node_limits(node_max_entries, node_max_bytes)

    # ------------------------------------------------------------------ lifecycle

    def set_node_limits(self, entries: int | None, max_bytes: int | None) -> None:
        """CONFIG SET on valkey, and (re)open the Store with the same limits."""
        for name, value in (
            ("stream-node-max-entries", entries),
            ("stream-node-max-bytes", max_bytes),
        ):
            if value is not None:
                assert self.valkey.execute("CONFIG", "SET", name, value) == "OK"
        self.close()
        self.store = Store(
            self.store_dir,
            sync=self.sync,
            node_max_entries=entries,
            node_max_bytes=max_bytes,
        )

    def reopen(self) -> None:
        """Close the Store and open a new one on the same directory (valkey keeps its state)."""
        self.close()
        self.store = Store(self.store_dir, sync=self.sync)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    # ------------------------------------------------------------------ running commands

    def on_valkey(self, *argv: Arg) -> Any:
        return self.valkey.execute(*argv)

    def on_rstore(self, *argv: Arg) -> Any:
        """rstore's reply, as a server before Redis 8.6 gives it (:mod:`newer_fields`)."""
        assert self.store is not None, "store is closed"
        try:
            return as_older_server(argv, self.store.execute_raw(*argv))
        except ResponseError as err:
            return ErrorReply(err.line)

    def pair(self, *argv: Arg) -> tuple[Any, Any]:
        """(valkey reply, rstore reply) for the same argv; valkey runs first."""
        return self.on_valkey(*argv), self.on_rstore(*argv)

    def both(self, *argv: Arg) -> Any:
        """Run ``argv`` on both; assert identical replies (or error texts); return the reply."""
        expected, actual = self.pair(*argv)
        assert actual == expected, (
            f"rstore differs from valkey\n  argv:   {short(argv)}\n"
            f"  valkey: {short(expected)}\n  rstore: {short(actual)}"
        )
        return expected

    def both_normalized(self, normalize: Callable[[Any], Any], *argv: Arg) -> Any:
        """Like :meth:`both`, but compare ``normalize(reply)`` (errors are compared as they are)."""
        expected, actual = self.pair(*argv)
        if not is_error(expected):
            expected = normalize(expected)
        if not is_error(actual):
            actual = normalize(actual)
        assert actual == expected, (
            f"rstore differs from valkey (normalized)\n  argv:   {short(argv)}\n"
            f"  valkey: {short(expected)}\n  rstore: {short(actual)}"
        )
        return expected

    def both_timed(
        self,
        *argv: Arg,
        tolerance_ms: int = TIME_TOLERANCE_MS,
        normalize: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Like :meth:`both` for replies holding clock readings: the time fields (see
        :mod:`.timed`) within ``tolerance_ms`` of each other, the rest identical (after
        ``normalize``, when given, on both replies)."""
        expected, actual = self.pair(*argv)
        if normalize is None:
            problem = timed_difference(argv, expected, actual, tolerance_ms)
        else:
            problem = timed_difference(argv, normalize(expected), normalize(actual), tolerance_ms)
        assert problem is None, (
            f"rstore differs from valkey ({problem})\n  argv:   {short(argv)}\n"
            f"  valkey: {short(expected)}\n  rstore: {short(actual)}"
        )
        return expected

    def check(self) -> None:
        """rstore's own integrity check finds nothing (every stored counter agrees)."""
        assert self.store is not None, "store is closed"
        problems = self.store.check()
        assert problems == [], f"Store.check() found problems: {problems}"

    def both_auto_id(self, *argv: Arg) -> tuple[Any, Any]:
        """A time-dependent XADD: both must answer an ID (or the same error); IDs may differ."""
        expected, actual = self.pair(*argv)
        if is_error(expected) or expected is None:
            assert actual == expected, f"argv {short(argv)}: valkey {expected!r}, rstore {actual!r}"
        else:
            assert isinstance(actual, bytes), f"argv {short(argv)}: rstore {actual!r}"
            assert ID_RE.match(expected) and ID_RE.match(actual), (expected, actual)
        return expected, actual

    # ------------------------------------------------------------------ order-free commands

    def both_scan_all(self, *options: Arg, max_calls: int = 10_000) -> set[bytes] | ErrorReply:
        """Iterate SCAN to the end on each side; compare the key sets (or the first error)."""
        expected = scan_all(self.on_valkey, options, max_calls)
        actual = scan_all(self.on_rstore, options, max_calls)
        assert actual == expected, (
            f"SCAN {short(options)} differs\n  valkey: {short(expected)}\n  rstore: {short(actual)}"
        )
        return expected

    def both_keys(self, pattern: Arg) -> Any:
        return self.both_normalized(sorted, "KEYS", pattern)

    def both_config_get(self, *patterns: Arg) -> Any:
        return self.both_normalized(pairs_to_dict, "CONFIG", "GET", *patterns)

    # ------------------------------------------------------------------ whole-state comparison

    def assert_same_state(
        self,
        keys: Iterable[Arg] | None = None,
        *,
        normalize: Callable[[Any], Any] | None = None,
    ) -> None:
        """Same key set, and for every key the same type, XINFO STREAM FULL and XRANGE; for
        every consumer group also XINFO GROUPS / CONSUMERS and XPENDING (times within the
        tolerance of :meth:`both_timed`).  ``normalize`` applies to the XINFO STREAM FULL and
        XINFO GROUPS replies before they are compared."""
        all_keys = self.both_keys("*")
        check = list(all_keys) if keys is None else list(keys)
        self.both("DBSIZE")
        for key in check:
            self.both("TYPE", key)
            self.both("EXISTS", key)
            full = self.both_timed(
                "XINFO", "STREAM", key, "FULL", "COUNT", "0", normalize=normalize
            )
            self.both("XRANGE", key, "-", "+")
            groups = pairs_to_dict(full).get(b"groups") if isinstance(full, list) else None
            if groups:
                self.both_timed("XINFO", "GROUPS", key, normalize=normalize)
            for group in groups or ():
                name = pairs_to_dict(group)[b"name"]
                self.both_timed("XINFO", "CONSUMERS", key, name)
                self.both("XPENDING", key, name)
                self.both_timed("XPENDING", key, name, "-", "+", 1 << 40)


def pairs_to_dict(flat: list[Any]) -> dict[Any, Any]:
    it = iter(flat)
    return dict(zip(it, it))


def scan_all(
    run: Callable[..., Any], options: tuple[Arg, ...], max_calls: int
) -> set[bytes] | ErrorReply:
    found: set[bytes] = set()
    cursor: Arg = "0"
    for _ in range(max_calls):
        reply = run("SCAN", cursor, *options)
        if isinstance(reply, ErrorReply):
            return reply
        cursor, keys = reply
        assert isinstance(cursor, bytes) and isinstance(keys, list), reply
        found.update(keys)
        if cursor == b"0":
            return found
    raise AssertionError(f"SCAN {options!r} did not finish in {max_calls} calls")
