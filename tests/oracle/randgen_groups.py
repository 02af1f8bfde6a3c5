"""Random command sequences with consumer groups mixed into the stream commands of
:mod:`.randgen` (seeded, reproducible).

The model adds, per key, the groups valkey accepted and an estimate of each group's pending IDs
(from XREADGROUP replies, minus acks), so acks and claims mostly hit real pending entries.
Idle-time filters stay deterministic: delivery times are either recent (the run lasts seconds)
or pushed far back (``IDLE 1000000``, ``TIME 1``), and every idle threshold is ``0``, negative,
or ``500000`` -- far from both.  A ``("REOPEN",)`` step asks the runner to close and reopen the
store.
"""

from __future__ import annotations

from typing import Any

from .randgen import U64_MAX, Argv, CommandGenerator
from .resp import ErrorReply

__all__ = ["REOPEN", "GroupCommandGenerator"]

REOPEN: Argv = ("REOPEN",)
GROUPS = ("g1", "g2", "G")
CONSUMERS = ("alice", "bob", "B", "a0", "")
IDLE_THRESHOLDS = ("0", "0", "-1", "500000")


class GroupCommandGenerator(CommandGenerator):
    """:class:`CommandGenerator` plus XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and
    XINFO GROUPS / CONSUMERS, and a reopen step."""

    def __init__(
        self, seed: int, keys: tuple[str, ...] = ("s1", "s2", "s3"), group_share: float = 0.5
    ) -> None:
        super().__init__(seed, keys)
        self.group_share = group_share
        self.groups: dict[str, set[str]] = {k: set() for k in keys}
        self.pending: dict[tuple[str, str], set[str]] = {}

    # ------------------------------------------------------------------ model feedback

    def observe(self, argv: Argv, reply: Any) -> None:
        super().observe(argv, reply)
        if isinstance(reply, ErrorReply) or argv == REOPEN:
            return
        name = str(argv[0]).upper()
        if name in ("DEL", "UNLINK"):
            for key in argv[1:]:
                self.groups.get(str(key), set()).clear()
            return
        if name == "XGROUP":
            self._observe_xgroup(argv, reply)
        elif name == "XREADGROUP" and isinstance(reply, list):
            group = str(argv[2])
            noack = any(str(a).upper() == "NOACK" for a in argv)
            for key, entries in reply:
                if noack or not isinstance(entries, list):
                    continue
                pel = self.pending.setdefault((key.decode(), group), set())
                pel.update(entry[0].decode() for entry in entries)
        elif name == "XACK" and isinstance(reply, int):
            pel = self.pending.get((str(argv[1]), str(argv[2])), set())
            pel.difference_update(str(a) for a in argv[3:])

    def _observe_xgroup(self, argv: Argv, reply: Any) -> None:
        sub = str(argv[1]).upper()
        key, group = str(argv[2]), str(argv[3])
        if sub == "CREATE" and reply == "OK":
            self.groups.setdefault(key, set()).add(group)
        elif sub == "DESTROY" and reply == 1:
            self.groups.get(key, set()).discard(group)
            self.pending.pop((key, group), None)

    # ------------------------------------------------------------------ pieces

    def group(self, key: str) -> str:
        known = sorted(self.groups.get(key, ()))
        if known and self.rng.random() < 0.9:
            return self.rng.choice(known)
        return self.rng.choice((*GROUPS, "nogroup"))

    def consumer(self) -> str:
        return self.rng.choice(CONSUMERS)

    def pending_ids(self, key: str, group: str, most: int) -> list[str]:
        pel = sorted(self.pending.get((key, group), ()))
        out = []
        for _ in range(self.rng.randint(1, most)):
            if pel and self.rng.random() < 0.7:
                out.append(self.rng.choice(pel))
            else:
                out.append(self.some_id(key))
        return out

    def history_id(self, key: str) -> str:
        """A history-read start ID.  Never the largest ID: valkey reads that one as `>`
        (test_groups_read.test_the_largest_id_reads_new_entries covers it)."""
        sid = self.some_id(key)
        return "0" if sid == f"{U64_MAX}-{U64_MAX}" else sid

    def group_start_id(self, key: str, setid: bool) -> str:
        choices = ["$", "0", "0", self.some_id(key)]
        if setid:
            choices += ["-", "+"]
        return self.rng.choice(choices)

    def entries_read(self) -> list[str]:
        if self.rng.random() < 0.7:
            return []
        return ["ENTRIESREAD", str(self.rng.choice((-1, 0, 1, 3, 10, 99999, -2)))]

    # ------------------------------------------------------------------ commands

    def command(self) -> Argv:
        rng = self.rng
        if rng.random() < 0.01:
            return REOPEN
        if rng.random() >= self.group_share:
            return super().command()
        key = self.key()
        group = self.group(key)
        r = rng.random()
        if r < 0.08 or not self.groups.get(key):
            mk = ["MKSTREAM"] if rng.random() < 0.3 else []
            start = self.group_start_id(key, setid=False)
            return ("XGROUP", "CREATE", key, group, start, *mk, *self.entries_read())
        if r < 0.12:
            start = self.group_start_id(key, setid=True)
            return ("XGROUP", "SETID", key, group, start, *self.entries_read())
        if r < 0.13:
            return ("XGROUP", "DESTROY", key, group)
        if r < 0.16:
            sub = rng.choice(("CREATECONSUMER", "DELCONSUMER"))
            return ("XGROUP", sub, key, group, self.consumer())
        if r < 0.40:
            return self.xreadgroup(key, group)
        if r < 0.50:
            return ("XACK", key, group, *self.pending_ids(key, group, 4))
        if r < 0.60:
            return self.xpending(key, group)
        if r < 0.75:
            return self.xclaim(key, group)
        if r < 0.85:
            return self.xautoclaim(key, group)
        if r < 0.90:
            return ("XINFO", "GROUPS", key)
        if r < 0.95:
            return ("XINFO", "CONSUMERS", key, group)
        return ("XINFO", "STREAM", key, "FULL", *rng.choice(([], ["COUNT", "0"], ["COUNT", "2"])))

    def xreadgroup(self, key: str, group: str) -> Argv:
        rng = self.rng
        head: list[str] = ["GROUP", group, self.consumer()]
        if rng.random() < 0.6:
            head += ["COUNT", str(rng.choice((0, 1, 2, 3, 5, 100)))]
        if rng.random() < 0.15:
            head.append("NOACK")
        keys = [key] + ([self.key()] if rng.random() < 0.2 else [])
        ids = []
        for k in keys:
            if rng.random() < 0.7:
                ids.append(">")
            else:
                ids.append(rng.choice(("0", "0-0", self.history_id(k))))
        return ("XREADGROUP", *head, "STREAMS", *keys, *ids)

    def xpending(self, key: str, group: str) -> Argv:
        rng = self.rng
        if rng.random() < 0.3:
            return ("XPENDING", key, group)
        argv: list[str] = ["XPENDING", key, group]
        if rng.random() < 0.4:
            argv += ["IDLE", rng.choice(IDLE_THRESHOLDS)]
        argv += [self.bound(key, True), self.bound(key, False)]
        argv.append(str(rng.choice((-1, 0, 1, 2, 5, 100))))
        if rng.random() < 0.4:
            argv.append(self.consumer())
        return tuple(argv)

    def xclaim(self, key: str, group: str) -> Argv:
        rng = self.rng
        min_idle = rng.choice(IDLE_THRESHOLDS)
        argv = ["XCLAIM", key, group, self.consumer(), min_idle, *self.pending_ids(key, group, 3)]
        if rng.random() < 0.3:
            argv += rng.choice((["IDLE", "1000000"], ["TIME", "1"], ["IDLE", "0"]))
        if rng.random() < 0.3:
            argv += ["RETRYCOUNT", str(rng.choice((0, 1, 5)))]
        if rng.random() < 0.3:
            argv.append("FORCE")
        if rng.random() < 0.4:
            argv.append("JUSTID")
        if rng.random() < 0.1:
            argv += ["LASTID", self.some_id(key)]
        return tuple(argv)

    def xautoclaim(self, key: str, group: str) -> Argv:
        rng = self.rng
        start = rng.choice(("0", "-", self.some_id(key)))
        argv = ["XAUTOCLAIM", key, group, self.consumer(), rng.choice(IDLE_THRESHOLDS), start]
        if rng.random() < 0.6:
            argv += ["COUNT", str(rng.choice((1, 2, 3, 10, 0)))]
        if rng.random() < 0.4:
            argv.append("JUSTID")
        return tuple(argv)
