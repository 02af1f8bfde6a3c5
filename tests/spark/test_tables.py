"""The tables of consumer-group state (option ``table``) answer as XINFO / XPENDING do.

Expected rows are derived from the replies of real servers (the fixture dumps' recorded
answers: Redis 7.0 and Valkey 8.0) and from ``Store.execute("XINFO"/"XPENDING", ...)`` for a
store; they are compared with the library's rows (no Spark) and with Spark's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import rstore
from rstore.spark.options import read_options
from rstore.spark.tables import plan_table, table_rows
from tests.rdb.common import FIXTURES, arg_bytes, as_json, fixture_names, load_fixture

TABLES = ("streams", "groups", "consumers", "pending")


def _text(value: Any) -> Any:
    return None if value is None else arg_bytes(value).decode()


def _pairs(flat: list[Any]) -> dict[str, Any]:
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def expected_rows(key: Any, replies: dict[tuple[str, ...], Any]) -> dict[str, list[tuple]]:
    """The rows of each table for stream ``key``, from the replies (in the fixtures' JSON form)
    of XINFO STREAM, XINFO STREAM FULL, XINFO GROUPS and XPENDING key group - + COUNT.

    ``pending`` rows carry the delivery time only where XINFO STREAM FULL listed the entry
    (its first COUNT pending entries), else ``...``: checked where the server said it."""
    stream = _text(key)
    info = _pairs(replies[("XINFO", "STREAM")])
    first, last = info["first-entry"], info["last-entry"]
    rows: dict[str, list[tuple]] = {t: [] for t in TABLES}
    rows["streams"].append((
        stream, info["length"], info["radix-tree-keys"], info["last-generated-id"],
        info["max-deleted-entry-id"], info["entries-added"], info["recorded-first-entry-id"],
        info["groups"], first and first[0], last and last[0],
    ))  # fmt: skip
    full = {_text(g["name"]): g for g in map(_pairs, _pairs(replies[("XINFO", "FULL")])["groups"])}
    for g in map(_pairs, replies[("XINFO", "GROUPS")]):
        name = _text(g["name"])
        rows["groups"].append((
            stream, name, g["consumers"], g["pending"], g["last-delivered-id"],
            g["entries-read"], g["lag"],
        ))  # fmt: skip
        for c in map(_pairs, full[name]["consumers"]):
            rows["consumers"].append((
                stream, name, _text(c["name"]), c["pel-count"], c["seen-time"],
                c.get("active-time"),
            ))  # fmt: skip
        times = {p[0]: p[2] for p in full[name]["pending"]}
        for entry_id, consumer, _idle, count in replies[("XPENDING", name)]:
            rows["pending"].append(
                (stream, name, entry_id, _text(consumer), times.get(entry_id, ...), count)
            )
    return rows


def same(got: list[tuple], want: list[tuple]) -> bool:
    """Rows equal, where ``...`` in ``want`` stands for any value."""
    if len(got) != len(want):
        return False
    return all(
        len(g) == len(w) and all(y is ... or x == y for x, y in zip(g, w, strict=True))
        for g, w in zip(got, want, strict=True)
    )


def lag_reply(command: dict[str, Any]) -> Any:
    """A recorded XINFO GROUPS reply, Redis 8.2.3's where its lag differs: rstore computes a
    group's lag by Redis 8.2's rules (docs/semantics.md, "Consumer group lag")."""
    return command.get("redis8_reply", command["reply"])


def _fixture_expected(name: str, db: str) -> dict[str, list[tuple]]:
    rows: dict[str, list[tuple]] = {t: [] for t in TABLES}
    for key in load_fixture(name)["answers"][db]:
        if key["type"] != "stream":
            continue
        replies: dict[tuple[str, ...], Any] = {}
        for c in key["commands"]:
            args = c["args"]
            if args[:2] == ["XINFO", "STREAM"]:
                replies[("XINFO", "FULL" if len(args) > 3 else "STREAM")] = c["reply"]
            elif args[:2] == ["XINFO", "GROUPS"]:
                replies[("XINFO", "GROUPS")] = lag_reply(c)
            elif args[0] == "XPENDING" and len(args) > 3:
                replies[("XPENDING", _text(args[2]))] = c["reply"]
        for table, more in expected_rows(key["key"], replies).items():
            rows[table] += more
    return rows


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple(str(x) for x in r[:4]))


@pytest.mark.parametrize("name", fixture_names())
def test_tables_of_server_dumps_answer_as_the_server(name: str) -> None:
    for db in load_fixture(name)["answers"]:
        want = _fixture_expected(name, db)
        for table in TABLES:
            opts = read_options({"path": str(FIXTURES / f"{name}.rdb"), "table": table, "db": db})
            (part,) = plan_table(opts)
            got = table_rows(part, opts)
            assert same(_sorted(got), _sorted(want[table])), (name, db, table)


def make_queue(path: Path) -> rstore.Store:
    """A store in use: two groups, claims, acks, a deleted entry, a consumer with nothing."""
    s = rstore.Store(path)
    for i in range(30):
        s.xadd("jobs", {"n": str(i)}, id=f"{1000 + i}-1")
    s.xadd("other", {"x": "1"}, id="5-5")
    s.xgroup_create("jobs", "workers", id="0")
    s.xgroup_create("jobs", "audit", id="$")
    s.xreadgroup("workers", "alice", {"jobs": ">"}, count=12)
    s.xreadgroup("workers", "bob", {"jobs": ">"}, count=5)
    s.xack("jobs", "workers", "1000-1", "1003-1")
    s.xclaim("jobs", "workers", "carol", 0, ["1001-1", "1013-1"])
    s.xgroup_createconsumer("jobs", "audit", "idle-one")
    s.xdel("jobs", "1029-1")
    return s


def store_expected(s: rstore.Store) -> dict[str, list[tuple]]:
    rows: dict[str, list[tuple]] = {t: [] for t in TABLES}
    for key in (b"jobs", b"other"):
        groups = as_json(s.execute("XINFO", "GROUPS", key))
        replies = {
            ("XINFO", "STREAM"): as_json(s.execute("XINFO", "STREAM", key)),
            ("XINFO", "FULL"): as_json(s.execute("XINFO", "STREAM", key, "FULL", "COUNT", "0")),
            ("XINFO", "GROUPS"): groups,
        }
        for g in map(_pairs, groups):
            reply = as_json(s.execute("XPENDING", key, g["name"], "-", "+", "1000000"))
            replies[("XPENDING", g["name"])] = reply
        for table, more in expected_rows(key.decode(), replies).items():
            rows[table] += more
    return rows


def test_tables_of_a_store_answer_as_xinfo_and_xpending(tmp_path: Path) -> None:
    with make_queue(tmp_path / "q") as s:
        want = store_expected(s)
        assert len(want["pending"]) == 15 and len(want["consumers"]) == 4
        assert all(r[4] is not ... for r in want["pending"])  # FULL COUNT 0 listed every one
        for table in TABLES:
            opts = read_options({"path": s.path, "table": table})
            (part,) = plan_table(opts)
            assert same(_sorted(table_rows(part, opts)), _sorted(want[table])), table
        opts = read_options({"path": s.path, "table": "groups", "streams": "oth*"})
        assert table_rows(plan_table(opts)[0], opts) == []


def test_inspect_pending_lists_every_pel_entry_with_its_owner(tmp_path: Path) -> None:
    with make_queue(tmp_path / "q") as s:
        dump = str(tmp_path / "q.rdb")
        s.save(dump)
        for infos in (s.inspect(pending=True), rstore.inspect_rdb(dump, pending=True).streams):
            (jobs,) = [i for i in infos if i.key == b"jobs"]
            for g in jobs.groups:
                reply = s.execute("XPENDING", "jobs", g.state.name, "-", "+", "100")
                got = [(f"{p.id[0]}-{p.id[1]}".encode(), p.consumer, p.delivery_count)
                       for p in g.pending]  # fmt: skip
                assert got == [(r[0], r[1], r[3]) for r in reply]
                for c in g.consumers:
                    assert [p.id for p in c.pending] == [
                        p.id for p in g.pending if p.consumer == c.state.name
                    ]
        # without pending=True nothing changes: no PEL is kept
        assert all(not g.pending for i in s.inspect() for g in i.groups)


@pytest.mark.spark
def test_tables_in_spark(spark: Any, tmp_path: Path) -> None:
    with make_queue(tmp_path / "q") as s:
        want = store_expected(s)
        path = s.path
    for table in TABLES:
        df = spark.read.format("rstore").option("table", table).load(path)
        from rstore.spark.options import TABLE_SCHEMAS

        assert (
            df.schema.simpleString()
            == spark.createDataFrame([], TABLE_SCHEMAS[table]).schema.simpleString()
        )
        got = [tuple(r) for r in df.collect()]
        assert same(_sorted(got), _sorted(want[table])), table
    # a server's dump, through Spark
    name = "queue-valkey-plain"
    df = spark.read.format("rstore").option("table", "pending").load(str(FIXTURES / f"{name}.rdb"))
    assert same(
        _sorted([tuple(r) for r in df.collect()]), _sorted(_fixture_expected(name, "0")["pending"])
    )
