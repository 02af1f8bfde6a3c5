"""Random command sequences for the differential fuzz test (seeded, reproducible).

The generator keeps a light model of each key (its last ID and the IDs handed out) so most
XADDs use explicit, increasing IDs and most XDEL / range bounds hit real entries, while a steady
share of commands is malformed or refused on purpose.  It never uses a time-based ``*`` unless
the key's last ID lies in the future (then ``*`` is deterministic).
"""

from __future__ import annotations

import random
from typing import Any

from .resp import ErrorReply

__all__ = ["Argv", "CommandGenerator"]

Argv = tuple[str | bytes, ...]

U64_MAX = (1 << 64) - 1
FUTURE_MS = 50_000_000_000_000  # far beyond any real clock: `*` after it is deterministic

FIELD_NAMES: list[str | bytes] = ["f", "g", "name", "007", "-0", "12", "", b"\x00k\xff", "h" * 70]
VALUE_POOL: list[str | bytes] = [
    "0",
    "1",
    "-1",
    "007",
    "-0",
    "127",
    "128",
    "-4096",
    "4095",
    "32767",
    "-32769",
    "8388607",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "",
    " 1",
    "1.5",
    b"\x00",
    b"bin\x00ary\xff",
    "value",
]


def _parse_id(raw: bytes) -> tuple[int, int]:
    ms, seq = raw.split(b"-")
    return int(ms), int(seq)


class CommandGenerator:
    """Produces argv tuples; :meth:`observe` feeds back valkey's reply to keep the model right."""

    def __init__(self, seed: int, keys: tuple[str, ...] = ("s1", "s2", "s3")) -> None:
        self.rng = random.Random(seed)
        self.keys = keys
        self.last: dict[str, tuple[int, int]] = {}
        self.ids: dict[str, list[tuple[int, int]]] = {k: [] for k in keys}
        self.live: dict[str, list[tuple[int, int]]] = {k: [] for k in keys}
        self.schemas: dict[str, list[list[str | bytes]]] = {k: [] for k in keys}

    # ------------------------------------------------------------------ model feedback

    def observe(self, argv: Argv, reply: Any) -> None:
        """Update the model from valkey's reply (the live-ID list is an estimate after `~`)."""
        if isinstance(reply, ErrorReply):
            return
        name = str(argv[0]).upper()
        key = str(argv[1]) if len(argv) > 1 else ""
        live = self.live.setdefault(key, [])
        if name == "XADD" and isinstance(reply, bytes):
            sid = _parse_id(reply)
            self.last[key] = sid
            ids = self.ids.setdefault(key, [])
            ids.append(sid)
            del ids[:-300]
            live.append(sid)
            self._estimate_trim(live, [str(a) for a in argv])
        elif name == "XTRIM" and isinstance(reply, int):
            del live[:reply]
        elif name == "XDEL":
            gone = {str(a) for a in argv[2:]}
            live[:] = [sid for sid in live if f"{sid[0]}-{sid[1]}" not in gone]
        elif name == "XSETID" and reply == "OK":
            self.last[key] = _parse_id(str(argv[2]).encode())
        elif name in ("DEL", "UNLINK"):
            for k in argv[1:]:
                self.last.pop(str(k), None)
                self.ids.get(str(k), []).clear()
                self.live.get(str(k), []).clear()

    @staticmethod
    def _estimate_trim(live: list[tuple[int, int]], argv: list[str]) -> None:
        for i, arg in enumerate(argv[:-1]):
            if arg.upper() not in ("MAXLEN", "MINID"):
                continue
            threshold = argv[i + 2] if argv[i + 1] in ("=", "~") else argv[i + 1]
            if arg.upper() == "MAXLEN" and threshold.isdigit():
                del live[: max(0, len(live) - int(threshold))]
            elif arg.upper() == "MINID" and threshold.replace("-", "").isdigit():
                ms, _, seq = threshold.partition("-")
                low = (int(ms), int(seq or 0))
                live[:] = [sid for sid in live if sid >= low]
            return

    # ------------------------------------------------------------------ pieces

    def key(self) -> str:
        return self.rng.choice(self.keys) if self.rng.random() < 0.97 else "nokey"

    def known_id(self, key: str) -> tuple[int, int]:
        ids = self.ids.get(key) or [(1, 0)]
        return self.rng.choice(ids)

    def some_id(self, key: str) -> str:
        r = self.rng.random()
        ms, seq = self.known_id(key)
        if r < 0.6:
            return f"{ms}-{seq}"
        if r < 0.75:
            return str(ms)
        if r < 0.9:
            return f"{ms}-{seq + self.rng.choice((-1, 1)) if seq else 1}"
        return self.rng.choice(["0", "0-1", f"{U64_MAX}-{U64_MAX}", "bad", "", "-1", "1-2-3"])

    def next_id(self, key: str) -> str:
        last = self.last.get(key)
        rng = self.rng
        if last is None:
            base = rng.choice((rng.randint(0, 5), rng.randint(1, 10**6), FUTURE_MS))
            return f"{base}-{rng.randint(1, 3)}" if rng.random() < 0.8 else f"{base}-*"
        ms, seq = last
        r = rng.random()
        if r < 0.05:
            return self.some_id(key)  # usually too small: refused
        if r < 0.15:
            return f"{ms + rng.randint(0, 2)}-*"
        if r < 0.2 and ms >= FUTURE_MS:
            return "*"
        if r < 0.5:
            return f"{ms}-{seq + rng.randint(1, 3)}"
        return f"{ms + rng.randint(1, 1000)}-{rng.randint(0, 2)}"

    def value(self) -> str | bytes:
        r = self.rng.random()
        if r < 0.55:
            return self.rng.choice(VALUE_POOL)
        if r < 0.75:
            return str(self.rng.randint(-(10**12), 10**12))
        if r < 0.95:
            return "v" * self.rng.randint(1, 120)
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(1000, 5000)))

    def fields(self, key: str) -> list[str | bytes]:
        schemas = self.schemas.setdefault(key, [])
        if schemas and self.rng.random() < 0.7:
            names = self.rng.choice(schemas)
        else:
            names = self.rng.sample(FIELD_NAMES, self.rng.randint(1, 4))
            schemas.append(names)
            del schemas[:-4]
        out: list[str | bytes] = []
        for name in names:
            out += [name, self.value()]
        return out

    def trim_options(self, key: str, for_xtrim: bool) -> list[str]:
        rng = self.rng
        strategy = rng.choice(("MAXLEN", "MINID"))
        op = rng.choice(("", "=", "~", "~"))
        live = self.live.get(key, [])
        if strategy == "MAXLEN":
            if rng.random() < 0.95:
                threshold = str(max(0, len(live) - rng.randint(-3, 5)))
            else:
                threshold = str(rng.choice((0, 1, 2, 5, rng.randint(0, 300))))
        elif live and rng.random() < 0.85:
            ms, seq = live[min(len(live) - 1, rng.randint(0, 5))]
            threshold = rng.choice((f"{ms}-{seq}", str(ms), f"{ms}-{seq + 1}"))
        else:
            threshold = self.some_id(key) if rng.random() < 0.9 else "0"
        out = [strategy] + ([op] if op else []) + [threshold]
        if op == "~" and rng.random() < 0.6:
            out += ["LIMIT", str(rng.choice((0, 1, 2, 5, 100, rng.randint(0, 300))))]
        if rng.random() < 0.03:
            out += rng.choice((["LIMIT", "3"], ["MAXLEN", "1"], ["LIMIT", "-1"], ["FOO"]))
        if for_xtrim and rng.random() < 0.02:
            out = rng.choice(([], ["LIMIT", "0"], ["MAXLEN", "-3"]))
        return out

    def count_option(self) -> list[str]:
        if self.rng.random() < 0.5:
            return []
        return ["COUNT", str(self.rng.choice((-1, 0, 1, 2, 3, 10, 1000)))]

    def bound(self, key: str, low: bool) -> str:
        r = self.rng.random()
        if r < 0.2:
            return "-" if low else "+"
        sid = self.some_id(key)
        return "(" + sid if r < 0.45 else sid

    # ------------------------------------------------------------------ commands

    def command(self) -> Argv:
        rng = self.rng
        key = self.key()
        r = rng.random()
        if (len(self.live.get(key, [])) < 40 or key == self.keys[-1]) and rng.random() < 0.3:
            r = 0.0  # grow streams (the last key most): several nodes exercise the layout
        if r < 0.40:
            argv: list[str | bytes] = ["XADD", key]
            if rng.random() < 0.05:
                argv.append("NOMKSTREAM")
            if rng.random() < 0.15:
                argv += self.trim_options(key, for_xtrim=False)
            return (*argv, self.next_id(key), *self.fields(key))
        if r < 0.50:
            count = rng.randint(1, 4)
            ids = [self.some_id(key) for _ in range(count)]
            return ("XDEL", key, *ids)
        if r < 0.55:
            return ("XTRIM", key, *self.trim_options(key, for_xtrim=True))
        if r < 0.60:
            return self.xsetid(key)
        if r < 0.72:
            name = rng.choice(("XRANGE", "XREVRANGE"))
            low, high = self.bound(key, True), self.bound(key, False)
            pair = (low, high) if name == "XRANGE" else (high, low)
            return (name, key, *pair, *self.count_option())
        if r < 0.79:
            keys = [self.key() for _ in range(rng.randint(1, 3))]
            ids = [rng.choice(("0", "$", self.some_id(k))) for k in keys]
            return ("XREAD", *self.count_option(), "STREAMS", *keys, *ids)
        if r < 0.83:
            return ("XLEN", key)
        if r < 0.88:
            return ("XINFO", "STREAM", key)
        if r < 0.93:
            full_count = rng.choice(([], ["COUNT", "0"], ["COUNT", str(rng.randint(-1, 5))]))
            return ("XINFO", "STREAM", key, "FULL", *full_count)
        if r < 0.935:
            return ("DEL", key)
        return ("EXISTS", *[self.key() for _ in range(rng.randint(1, 3))])

    def xsetid(self, key: str) -> Argv:
        rng = self.rng
        ms, seq = self.last.get(key, (0, 0))
        target = rng.choice(((ms, seq), (ms, seq + 1), (ms + 5, 0), self.known_id(key)))
        argv: list[str] = ["XSETID", key, f"{target[0]}-{target[1]}"]
        if rng.random() < 0.4:
            argv += ["ENTRIESADDED", str(rng.randint(-1, 3 * len(self.ids.get(key, [])) + 5))]
        if rng.random() < 0.3:
            mid = self.known_id(key)
            argv += ["MAXDELETEDID", f"{mid[0]}-{mid[1]}"]
        return tuple(argv)
