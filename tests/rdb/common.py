"""Shared helpers of the RDB tests: the fixture files and replies in their JSON form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import rstore
from rstore import NIL_ARRAY

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rdb"
IDLE = "<idle>"  # what fixtures/make_rdb_fixtures.py records for now-relative idle times


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.rdb"))


def load_fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def rstore_reply(command: dict[str, Any]) -> Any:
    """What rstore must answer to a fixture's recorded command after restoring the file: Redis
    8.2.3's answer where it differs (a group's lag, whose rules rstore takes from Redis 8.2),
    else Valkey 8.0's after loading the file, else the writer's own."""
    return command.get("redis8_reply", command.get("valkey_reply", command["reply"]))


def arg_bytes(value: Any) -> bytes:
    """An argument or key as the fixture JSON writes it: text, or {"hex": ...}."""
    if isinstance(value, dict):
        return bytes.fromhex(value["hex"])
    return str(value).encode()


def as_json(reply: Any) -> Any:
    """A reply (``Store.execute_raw`` or a RESP client) in the fixtures' JSON form: bytes as
    text when printable ASCII, else {"hex": ...}; both nils as None."""
    if reply is NIL_ARRAY or reply is None:
        return None
    if isinstance(reply, bytes):
        if all(0x20 <= c < 0x7F for c in reply):
            return reply.decode("ascii")
        return {"hex": reply.hex()}
    if isinstance(reply, list):
        return [as_json(x) for x in reply]
    if isinstance(reply, Exception) or hasattr(reply, "message"):  # raised, or a RESP error
        return {"error": str(reply)}
    return reply


def normalise(argv: list[bytes], reply: Any) -> Any:
    """Replace the now-relative idle times as the fixture script does."""
    verb = [a.upper() for a in argv[:2]]
    if verb == [b"XINFO", b"CONSUMERS"] and isinstance(reply, list):
        out = []
        for consumer in reply:
            row = list(consumer)
            for i in range(0, len(row), 2):
                if row[i] in (b"idle", b"inactive"):
                    row[i + 1] = IDLE
            out.append(row)
        return out
    if verb[0] == b"XPENDING" and len(argv) > 3 and isinstance(reply, list):
        return [[row[0], row[1], IDLE, row[3]] for row in reply]
    return reply


def stream_questions(key: bytes, group_names: list[bytes]) -> list[list[bytes]]:
    """The questions the fixture script asks about a stream (same order)."""
    asked = [
        [b"XLEN", key],
        [b"XRANGE", key, b"-", b"+"],
        [b"XREVRANGE", key, b"+", b"-", b"COUNT", b"5"],
        [b"XINFO", b"STREAM", key],
        [b"XINFO", b"STREAM", key, b"FULL"],
        [b"XINFO", b"GROUPS", key],
    ]
    for name in group_names:
        asked += [
            [b"XINFO", b"CONSUMERS", key, name],
            [b"XPENDING", key, name],
            [b"XPENDING", key, name, b"-", b"+", b"1000000"],
        ]
    return asked


def plain_events_rdb(tmp_path: Path) -> Path:
    """An RDB file (``tmp_path/ev.rdb``, not compressed) of one stream ``ev``: entries 1-0 to
    3-0, each ``field`` = ``value-N``, in one node: small enough to damage byte by byte."""
    with rstore.Store(tmp_path / "src") as store:
        for i in range(1, 4):
            store.xadd("ev", {"field": f"value-{i}"}, id=f"{i}-0")
        path = tmp_path / "ev.rdb"
        store.save(str(path), compress=False)
    return path
