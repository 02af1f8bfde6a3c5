"""The populated store the campaign damages, built through the public API from a seed.

Streams of several sizes and node shapes (the node limits are store settings, so the store is
reopened with other limits before each shaped stream is written), binary and integer-like
values, tombstones (XDEL), exact and approximate trims, consumer groups with consumers, pending
entries, acks, a claim and a NOACK read, a key name longer than 480 bytes and group and consumer
names longer than 400 bytes (both take the long-name path of the keyspace and groups).

Every entry ID is explicit, so the page layout and every live record depend only on the seed,
except the clock readings consumer groups record (delivery and seen times, which change no
record's size).  Unused bytes of pages hold whatever memory LMDB did not initialise (rstore opens
LMDB with ``meminit=False``) and differ from build to build; damage there is harmless in any
build, so a case replays with the same outcome.

A few values are *planted*: distinctive numbers and bytes that appear once in the user's view
and let the named tests (``test_named_damage``) find the record that holds them on disk.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rstore

#: The one value of the ``marked`` stream's first entry (a node's value).
VALUE_MARK = b"\x00damage-mark:node-value\xff\xfe-0123456789"
#: A value inside a node of ``big`` that is large enough for LMDB's overflow pages.
BIG_MARK = b"\x01damage-mark:big-node\xfd" + bytes(range(32, 96))
#: ``entries-added`` of ``marked`` (stream metadata), set by XSETID.
STREAM_MARK = 0x00DA_3A6E_5EED_0202
#: ``entries-read`` of ``marked``'s group (group record), set by XGROUP CREATE.
GROUP_MARK = 0x00DA_3A6E_5EED_0101
#: Delivery count of ``marked``'s one pending entry (PEL record), set by XCLAIM RETRYCOUNT.
PEL_MARK = 0x00DA_3A6E_5EED_0303
PEL_TIME_MS = 1_600_000_000_123

BASE_MS = 1_700_000_000_000
MARK_MS = 1_650_000_000_000


@dataclass
class Population:
    """What was built: the keys and their groups, and the targets of the battery's writes."""

    seed: int
    keys: list[bytes] = field(default_factory=list)
    groups: dict[bytes, list[bytes]] = field(default_factory=dict)
    #: An existing stream the battery appends to, and a name that does not exist yet.
    append_key: bytes = b"tiny-nodes"
    new_key: bytes = b"damage:new"
    #: (key, group) whose first pending entry the battery acknowledges.
    ack_target: tuple[bytes, bytes] = (b"big", b"g1")


def _ids(rng: random.Random, count: int, start_ms: int) -> list[str]:
    """Increasing explicit IDs, sometimes several in one millisecond."""
    out: list[str] = []
    ms, seq = start_ms, 0
    for _ in range(count):
        step = rng.choice((0, 0, 1, 1, 1, 2, 7))
        if step == 0 and out:
            seq += 1
        else:
            ms, seq = ms + max(step, 1), 0
        out.append(f"{ms}-{seq}")
    return out


def _word(rng: random.Random, length: int) -> bytes:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=length)).encode()


def _add_all(store: rstore.Store, key: bytes, rows: list[tuple[str, dict[Any, Any]]]) -> None:
    """Append in pipelines of 200 (one transaction each)."""
    for start in range(0, len(rows), 200):
        with store.pipeline() as pipe:
            for entry_id, fields in rows[start : start + 200]:
                pipe.xadd(key, fields, id=entry_id)
            pipe.execute()


def _build_big(store: rstore.Store, rng: random.Random, pop: Population) -> None:
    """4000 entries in nodes of about 4 KB (LMDB overflow pages), tombstones, two trims and a
    group with three consumers, acks, a claim and a NOACK read."""
    key = b"big"
    ids = _ids(rng, 4000, BASE_MS)
    rows: list[tuple[str, dict[Any, Any]]] = []
    for i, entry_id in enumerate(ids):
        fields: dict[Any, Any] = {
            "user": str(rng.randrange(10**6)),
            "action": rng.choice(("view", "click", "buy")),
            "payload": rng.randbytes(rng.randint(8, 40)),
        }
        if i % 97 == 0:
            fields["note"] = _word(rng, rng.randint(1, 30))  # breaks the shared field list
        if i == 2000:
            fields["payload"] = BIG_MARK
        rows.append((entry_id, fields))
    _add_all(store, key, rows)
    store.xdel(key, *rng.sample(ids[400:3900], 200))
    store.xtrim(key, minid=ids[300], approximate=True)
    store.xtrim(key, maxlen=3600, approximate=False)
    store.xgroup_create(key, "g1", id="0")
    store.xgroup_create(key, "g2", id="$")
    store.xgroup_create(key, "g3", id=ids[1000])
    for _ in range(3):
        for consumer in ("c1", "c2", "c3"):
            store.xreadgroup("g1", consumer, {key: ">"}, count=rng.randint(60, 140))
    c1 = [p["message_id"] for p in store.xpending_range(key, "g1", "-", "+", 1000, "c1")]
    store.xack(key, "g1", *rng.sample(c1, len(c1) // 2))
    c2 = [p["message_id"] for p in store.xpending_range(key, "g1", "-", "+", 1000, "c2")]
    store.xclaim(key, "g1", "c3", 0, rng.sample(c2, 10))
    store.xreadgroup("g1", "c3", {key: ">"}, count=50, noack=True)
    store.xreadgroup("g3", "solo", {key: ">"}, count=30)
    pop.groups[key] = [b"g1", b"g2", b"g3"]


def _build_mixed(store: rstore.Store, rng: random.Random, pop: Population) -> None:
    """Entries with varying field lists, integer-like, empty and binary values; a group and a
    consumer with names longer than 400 bytes."""
    key = b"mixed"
    ids = _ids(rng, 300, BASE_MS + 50_000_000)
    specials = [b"", b"0", b"-7", b"9223372036854775807", b"-9223372036854775808", b"00", b"1e3"]
    rows: list[tuple[str, dict[Any, Any]]] = []
    for entry_id in ids:
        names = rng.sample([b"a", b"b", b"c", b"d", b"\x00\xff"], rng.randint(1, 4))
        values = [
            rng.choice(specials) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 64))
            for _ in names
        ]
        rows.append((entry_id, dict(zip(names, values))))
    _add_all(store, key, rows)
    store.xdel(key, *rng.sample(ids, 30))
    store.xtrim(key, maxlen=250, approximate=False)
    group = b"long-group:" + _word(rng, 440)
    consumer = b"long-consumer:" + _word(rng, 410)
    store.xgroup_create(key, group, id="0")
    store.xreadgroup(group, consumer, {key: ">"}, count=40)
    store.xreadgroup(group, "short", {key: ">"}, count=20)
    pending = [p["message_id"] for p in store.xpending_range(key, group, "-", "+", 100)]
    store.xack(key, group, *pending[:10])
    pop.groups[key] = [group]


def _build_small(store: rstore.Store, rng: random.Random, pop: Population) -> None:
    """A stream emptied by a trim (its group's pending entries outlive the entries), a key name
    longer than 480 bytes, and ``marked`` with the planted values."""
    key = b"trimmed-empty"
    ids = _ids(rng, 50, BASE_MS + 90_000_000)
    _add_all(store, key, [(i, {"k": _word(rng, 5)}) for i in ids])
    store.xgroup_create(key, "idle", id="0")
    store.xreadgroup("idle", "w", {key: ">"}, count=10)
    store.xgroup_createconsumer(key, "idle", "lazy")
    store.xtrim(key, maxlen=0, approximate=False)
    pop.groups[key] = [b"idle"]

    long_key = b"long-key:" + _word(rng, 600)
    ids = _ids(rng, 40, BASE_MS + 95_000_000)
    _add_all(store, long_key, [(i, {"f": rng.randbytes(12)}) for i in ids])
    store.xgroup_create(long_key, "lk", id="0")
    store.xreadgroup("lk", "lkc", {long_key: ">"}, count=15)
    pop.groups[long_key] = [b"lk"]

    key = b"marked"
    store.xadd(key, {"v": VALUE_MARK}, id=f"{MARK_MS}-1")
    for seq in range(2, 6):
        store.xadd(key, {"v": str(seq)}, id=f"{MARK_MS}-{seq}")
    store.execute("XSETID", key, f"{MARK_MS}-9", "ENTRIESADDED", STREAM_MARK, "MAXDELETEDID", "0-0")
    store.execute("XGROUP", "CREATE", key, "marked-group", "0", "ENTRIESREAD", GROUP_MARK)
    store.execute(
        "XCLAIM", key, "marked-group", "marked-consumer", 0, f"{MARK_MS}-3", "FORCE",
        "TIME", PEL_TIME_MS, "RETRYCOUNT", PEL_MARK,
    )  # fmt: skip
    pop.groups[key] = [b"marked-group"]


def _build_tiny(store: rstore.Store, rng: random.Random, pop: Population) -> None:
    """600 integer entries, four per node (about 150 small nodes inline in LMDB leaf pages, so
    the nodes tree has branch pages), a group whose consumer read some."""
    key = b"tiny-nodes"
    ids = _ids(rng, 600, BASE_MS + 70_000_000)
    _add_all(store, key, [(i, {"n": n, "sq": n * n}) for n, i in enumerate(ids)])
    store.xdel(key, *rng.sample(ids, 25))
    store.xgroup_create(key, "t", id="0")
    store.xreadgroup("t", "reader", {key: ">"}, count=33)
    pop.groups[key] = [b"t"]


def _build_byte_nodes(store: rstore.Store, rng: random.Random, pop: Population) -> None:
    """Nodes cut at 512 bytes, values of 1 byte to 9 KB (a value alone spans overflow pages)."""
    key = b"byte-nodes"
    ids = _ids(rng, 80, BASE_MS + 80_000_000)
    sizes = (1, 50, 300, 700, 3000, 9000)
    _add_all(store, key, [(i, {"blob": rng.randbytes(rng.choice(sizes))}) for i in ids])
    store.xtrim(key, maxlen=70, approximate=False)
    pop.groups[key] = []


def build(path: Path, seed: int) -> Population:
    """Build the store in ``path`` (which must not hold one) and say what is in it."""
    rng = random.Random(seed)
    pop = Population(seed)
    with rstore.Store(path, sync=False, node_max_entries=100, node_max_bytes=4096) as store:
        _build_big(store, rng, pop)
        _build_mixed(store, rng, pop)
        _build_small(store, rng, pop)
    with rstore.Store(path, sync=False, node_max_entries=4) as store:
        _build_tiny(store, rng, pop)
    with rstore.Store(path, sync=False, node_max_entries=0, node_max_bytes=512) as store:
        _build_byte_nodes(store, rng, pop)
    with rstore.Store(path, sync=False, node_max_entries=100, node_max_bytes=4096) as store:
        store.sync()
    pop.keys = list(pop.groups)
    return pop
