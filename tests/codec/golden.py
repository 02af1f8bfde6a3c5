"""Replays a golden recipe (fixtures/golden/*.json) using only rstore's node codec.

The node rules are Redis's, as written in docs/listpack.md#when-a-new-node-starts and
docs/listpack.md#deleting-and-trimming: a new node when
``node bytes + raw field/value bytes >= stream-node-max-bytes`` or when ``count + deleted >=
stream-node-max-entries``; XDEL tombstones (and drops a node whose last live entry goes); XTRIM
drops whole nodes from the head, then (exact only) tombstones inside the first node it cannot drop.
Alongside the bytes, each node keeps a naive list of its entries to compare decoded data with.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rstore.codec import stream_node as sn

from .model import ID, ModelEntry

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
ONE_GIB = 1 << 30


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def from_json(v: Any) -> bytes:
    """Recipe arguments are ASCII strings or ``{"hex": ...}``."""
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else str(v).encode("ascii")


def parse_id_text(s: bytes) -> ID:
    """A plain ``ms[-seq]`` (recipes use canonical IDs; a missing seq is 0)."""
    ms, _, seq = s.partition(b"-")
    return int(ms), int(seq or b"0")


@dataclass
class Node:
    master_id: ID
    data: bytearray
    entries: list[ModelEntry]

    @property
    def live(self) -> int:
        return sum(not e.deleted for e in self.entries)

    def tombstone(self, indices: list[int]) -> None:
        wanted = set(indices)
        positions = [
            pos
            for i, (_, _, pos) in enumerate(sn.iter_ids(self.data, self.master_id))
            if i in wanted
        ]
        for i in indices:
            self.entries[i].deleted = True
        sn.mark_deleted(self.data, positions)


@dataclass
class Stream:
    nodes: list[Node] = field(default_factory=list)
    length: int = 0
    last_id: ID = (0, 0)


class Replay:
    """Executes recipe commands against in-memory streams built with rstore's codec."""

    def __init__(self, config: dict[str, int]) -> None:
        self.max_bytes = config["stream-node-max-bytes"]
        self.max_entries = config["stream-node-max-entries"]
        self.streams: dict[bytes, Stream] = {}

    def run(self, args: list[bytes]) -> int | bytes:
        name = args[0].upper()
        if name == b"CONFIG":
            return self._config(args)
        if name == b"XADD":
            return self._xadd(args)
        if name == b"XDEL":
            return self._xdel(args)
        if name == b"XTRIM":
            key, trim = args[1], self._trim_args(args, 2)
            return self._trim(self.streams[key], *trim[:4]) if key in self.streams else 0
        raise ValueError(f"the replay does not know {args[0]!r}")

    def _config(self, args: list[bytes]) -> bytes:
        assert args[1].upper() == b"SET"
        for param, value in zip(args[2::2], args[3::2]):
            if param == b"stream-node-max-bytes":
                self.max_bytes = int(value)
            elif param == b"stream-node-max-entries":
                self.max_entries = int(value)
            else:
                raise ValueError(f"unexpected config {param!r}")
        return b"OK"

    @staticmethod
    def _trim_args(args: list[bytes], i: int) -> tuple[bytes, bytes, bool, int | None, int]:
        """``MAXLEN|MINID [=|~] threshold [LIMIT n]`` at ``args[i]``; returns the parsed parts
        and the index after them."""
        strategy = args[i].upper()
        i += 1
        approx = False
        if args[i] in (b"=", b"~"):
            approx = args[i] == b"~"
            i += 1
        threshold = args[i]
        i += 1
        limit = None
        if i < len(args) and args[i].upper() == b"LIMIT":
            limit = int(args[i + 1])
            i += 2
        return strategy, threshold, approx, limit, i

    def _xadd(self, args: list[bytes]) -> bytes:
        key, i = args[1], 2
        trim = None
        if args[i].upper() in (b"MAXLEN", b"MINID"):
            trim = self._trim_args(args, i)
            i = trim[4]
        ms_text, _, seq_text = args[i].partition(b"-")
        fv = args[i + 1 :]
        s = self.streams.setdefault(key, Stream())
        ms = int(ms_text)
        if seq_text == b"*":
            seq = s.last_id[1] + 1 if ms == s.last_id[0] else 0
        else:
            seq = int(seq_text)
        sid = (ms, seq)
        assert sid > s.last_id, "recipes only hold valid XADDs"
        self._append(s, sid, fv)
        s.length += 1
        s.last_id = sid
        if trim is not None:
            self._trim(s, *trim[:4])
        return b"%d-%d" % sid

    def _append(self, s: Stream, sid: ID, fv: list[bytes]) -> None:
        max_bytes = ONE_GIB if self.max_bytes <= 0 or self.max_bytes > ONE_GIB else self.max_bytes
        tail = s.nodes[-1] if s.nodes else None
        if tail is not None:
            if len(tail.data) + sum(map(len, fv)) >= max_bytes:
                tail = None
            elif self.max_entries and len(tail.entries) >= self.max_entries:
                tail = None  # count + deleted, i.e. every physical entry
        if tail is None:
            s.nodes.append(Node(sid, sn.new_node(fv), [ModelEntry(sid, list(fv))]))
        else:
            sn.append_entry(tail.data, tail.master_id, sid, fv)
            tail.entries.append(ModelEntry(sid, list(fv)))

    def _xdel(self, args: list[bytes]) -> int:
        s = self.streams.get(args[1])
        deleted = 0
        for arg in args[2:]:
            if s is None:
                break
            sid = parse_id_text(arg)
            k = bisect.bisect_right([n.master_id for n in s.nodes], sid) - 1
            if k < 0:
                continue
            node = s.nodes[k]
            hits = [i for i, e in enumerate(node.entries) if e.id == sid and not e.deleted]
            if not hits:
                continue
            if node.live == 1:
                del s.nodes[k]  # Redis drops the node rather than leave it without live entries
            else:
                node.tombstone(hits)
            s.length -= 1
            deleted += 1
        return deleted

    def _trim(
        self, s: Stream, strategy: bytes, threshold: bytes, approx: bool, limit: int | None
    ) -> int:
        if not approx:
            limit = 0
        elif limit is None:
            limit = 100 * self.max_entries
            limit = 10000 if limit <= 0 else min(limit, 1000000)
        maxlen = int(threshold) if strategy == b"MAXLEN" else 0
        minid = parse_id_text(threshold) if strategy == b"MINID" else (0, 0)
        removed = 0
        while s.nodes:
            node = s.nodes[0]
            if strategy == b"MAXLEN" and s.length <= maxlen:
                break
            if limit and removed + node.live > limit:
                break
            if strategy == b"MAXLEN":
                whole = s.length - node.live >= maxlen
            else:
                whole = node.entries[-1].id < minid
            if whole:
                del s.nodes[0]
                s.length -= node.live
                removed += node.live
                continue
            if approx:
                break
            hits = []
            for i, e in enumerate(node.entries):
                if strategy == b"MAXLEN" and s.length <= maxlen:
                    break
                if strategy == b"MINID" and e.id >= minid:
                    break
                if not e.deleted:
                    hits.append(i)
                    s.length -= 1
            node.tombstone(hits)
            removed += len(hits)
            break
        return removed


def replay(data: dict[str, Any]) -> tuple[Replay, list[tuple[Any, Any]]]:
    """Run every recorded command; return the replay and (recorded, replayed) reply pairs."""
    r = Replay(data["config"])
    replies = []
    for cmd in data["commands"]:
        args = [from_json(a) for a in cmd["args"]]
        reply: int | bytes = b""
        for _ in range(cmd.get("repeat", 1)):
            reply = r.run(args)
        recorded = cmd["last_reply"] if "repeat" in cmd else cmd["reply"]
        replies.append((recorded, reply if isinstance(reply, int) else reply.decode()))
    return r, replies


def server_nodes(stream: dict[str, Any]) -> list[tuple[ID, bytes]]:
    """The (master ID, listpack) pairs the server dumped."""
    out = []
    for n in stream["nodes"]:
        key = bytes.fromhex(n["master_id"])
        master = (int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big"))
        out.append((master, bytes.fromhex(n["listpack"])))
    return out


def first_difference(a: bytes, b: bytes) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    ours, theirs = a[n:][:16].hex(), b[n:][:16].hex()
    return f"sizes {len(a)}/{len(b)}, first difference at byte {n}: {ours} vs {theirs}"
