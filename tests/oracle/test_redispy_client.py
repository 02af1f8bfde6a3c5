"""rstore's redis-py-style methods against real redis-py talking to valkey-server.

The same calls run on ``redis.Redis()`` connected to valkey and on ``rstore.Store``, with and
without ``decode_responses``, and on ``redis.Redis(protocol=2)`` and ``rstore.Store(protocol=2)``;
the values returned must be equal at every depth -- the types of keys and values included --
(times masked), and an error must be of the class redis-py raised (``except
redis.exceptions.ResponseError`` catches both) with the same ``str()``.  Pipelines are compared
the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from newer_fields import without_idmp_fields
from valkey_server import HOST, ValkeyServer

import rstore

from .resp import RespClient

redis = pytest.importorskip("redis")

pytestmark = pytest.mark.oracle

Client = Any
Step = tuple[str, Callable[[Client], Any]]

TIME_KEYS = {"idle", "inactive", "time_since_delivered", "seen-time", "active-time"}


class Masked:
    def __repr__(self) -> str:
        return "<time>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Masked)

    def __hash__(self) -> int:
        return 0


def mask_times(value: Any) -> Any:
    """``value`` with clock readings replaced (they differ by the ms between the two calls)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = key.decode() if isinstance(key, bytes) else key
            if name in TIME_KEYS and isinstance(item, int) and item != -1:
                out[key] = Masked()
            elif name == "pending" and isinstance(item, list):  # XINFO STREAM FULL's PELs
                out[key] = [[*entry[:-2], Masked(), entry[-1]] for entry in item]
            else:
                out[key] = mask_times(item)
        return out
    if isinstance(value, list | tuple):
        return type(value)(mask_times(item) for item in value)
    return value


def outcome(step: Callable[[Client], Any], client: Client) -> Any:
    """The value returned (times masked), or ``(redis-py class name, str)`` of the error."""
    try:
        return mask_times(step(client))
    except redis.exceptions.RedisError as exc:
        return ("raised", redis_class(exc), str(exc))


def redis_class(exc: BaseException) -> str:
    """The most derived ``redis.exceptions`` class of ``exc``."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "redis.exceptions")


def sorted_scan(cursor: int, names: list[Any]) -> tuple[int, list[Any]]:
    return cursor, sorted(names)  # the order of the names is the hash table's


STEPS: list[Step] = [
    ("xadd", lambda r: r.xadd("s", {"f": "v", "name": "é"}, id="1-1")),
    ("xadd 2", lambda r: r.xadd("s", {"f": "w"}, id="2-0", maxlen=10, approximate=False)),
    ("xadd 3", lambda r: r.xadd("s", {b"k": b"x", 7: 1.5}, id="3-0")),
    ("xadd other", lambda r: r.xadd("t", {"a": "b"}, id="5-0")),
    ("xadd nomkstream", lambda r: r.xadd("none", {"a": "b"}, nomkstream=True)),
    ("xlen", lambda r: r.xlen("s")),
    ("xrange", lambda r: r.xrange("s")),
    ("xrange count", lambda r: r.xrange("s", "2", "+", count=1)),
    ("xrevrange", lambda r: r.xrevrange("s", count=2)),
    ("xrange missing", lambda r: r.xrange("missing")),
    ("xread", lambda r: r.xread({"s": 0, "t": "0-0"})),
    ("xread count", lambda r: r.xread({"s": "1-1"}, count=1)),
    ("xread nothing", lambda r: r.xread({"s": "3-0"})),
    ("xread block", lambda r: r.xread({"s": "3-0"}, block=1)),
    ("xgroup_create", lambda r: r.xgroup_create("s", "g", 0)),
    ("xgroup_create $", lambda r: r.xgroup_create("t", "g2", "$")),
    ("xgroup_create mkstream", lambda r: r.xgroup_create("m", "g", "$", mkstream=True)),
    ("xgroup_createconsumer", lambda r: r.xgroup_createconsumer("s", "g", "idle-one")),
    ("xreadgroup", lambda r: r.xreadgroup("g", "c1", {"s": ">"}, count=2)),
    ("xreadgroup c2", lambda r: r.xreadgroup("g", "c2", {"s": ">"})),
    ("xreadgroup empty", lambda r: r.xreadgroup("g", "c2", {"s": ">"})),
    ("xreadgroup history", lambda r: r.xreadgroup("g", "c1", {"s": "0"})),
    ("xreadgroup noack", lambda r: r.xreadgroup("g2", "c", {"t": ">"}, noack=True)),
    ("xpending", lambda r: r.xpending("s", "g")),
    ("xpending empty", lambda r: r.xpending("t", "g2")),
    ("xpending_range", lambda r: r.xpending_range("s", "g", "-", "+", 10)),
    ("xpending_range c1", lambda r: r.xpending_range("s", "g", "-", "+", 10, "c1")),
    ("xpending_range idle", lambda r: r.xpending_range("s", "g", "-", "+", 10, idle=60000)),
    ("xclaim", lambda r: r.xclaim("s", "g", "c3", 0, ["1-1"])),
    ("xclaim justid", lambda r: r.xclaim("s", "g", "c3", 0, ["2-0"], justid=True)),
    ("xclaim none", lambda r: r.xclaim("s", "g", "c3", 0, ["9-9"])),
    ("xautoclaim", lambda r: r.xautoclaim("s", "g", "c4", 0, count=1)),
    ("xautoclaim justid", lambda r: r.xautoclaim("s", "g", "c4", 0, "0-0", justid=True)),
    ("xinfo_stream", lambda r: r.xinfo_stream("s")),
    ("xinfo_stream full", lambda r: r.xinfo_stream("s", full=True)),
    ("xinfo_groups", lambda r: r.xinfo_groups("s")),
    ("xinfo_consumers", lambda r: r.xinfo_consumers("s", "g")),
    ("xdel", lambda r: r.xdel("s", "1-1", "8-8")),
    ("xreadgroup deleted", lambda r: r.xreadgroup("g", "c3", {"s": "0"})),
    ("xack", lambda r: r.xack("s", "g", "2-0", "3-0")),
    ("xgroup_setid", lambda r: r.xgroup_setid("s", "g", "2-0", entries_read=2)),
    ("xgroup_delconsumer", lambda r: r.xgroup_delconsumer("s", "g", "c4")),
    ("xgroup_destroy", lambda r: r.xgroup_destroy("t", "g2")),
    ("xgroup_destroy missing", lambda r: r.xgroup_destroy("t", "g2")),
    ("xtrim", lambda r: r.xtrim("s", maxlen=1, approximate=False)),
    ("xtrim minid", lambda r: r.xtrim("s", minid="9-0", approximate=False)),
    ("xinfo_stream empty", lambda r: r.xinfo_stream("s")),
    ("type", lambda r: r.type("t")),
    ("type none", lambda r: r.type("missing")),
    ("exists", lambda r: r.exists("s", "t", "missing")),
    ("keys", lambda r: sorted(r.keys("*"))),
    ("keys pattern", lambda r: sorted(r.keys("[st]"))),
    ("scan", lambda r: sorted_scan(*r.scan(0, count=100))),
    ("scan_iter", lambda r: sorted(r.scan_iter(match="*"))),
    ("dbsize", lambda r: r.dbsize()),
    ("echo", lambda r: r.echo("héllo")),
    ("ping", lambda r: r.ping()),
    ("config_set", lambda r: r.config_set("stream-node-max-entries", 50)),
    ("config_get", lambda r: r.config_get("stream-node-max-*")),
    ("config_set back", lambda r: r.config_set("stream-node-max-entries", 100)),
    ("dump", lambda r: r.dump("t")),
    ("dump missing", lambda r: r.dump("missing")),
    ("restore", lambda r: r.restore("copy", 0, r.dump("t"))),
    ("xrange copy", lambda r: r.xrange("copy")),
    ("delete", lambda r: r.delete("copy", "missing")),
    ("unlink", lambda r: r.unlink("m")),
    # refused by the server: the same class and message as redis-py gives
    ("xadd 0-0", lambda r: r.xadd("s", {"f": "v"}, id="0-0")),
    ("xadd small id", lambda r: r.xadd("t", {"f": "v"}, id="1-0")),
    ("xadd limit exact", lambda r: r.xadd("s", {"f": "v"}, maxlen=3, approximate=False, limit=2)),
    ("xrange bad id", lambda r: r.xrange("s", "bad")),
    ("xgroup_create no key", lambda r: r.xgroup_create("missing", "g", 0)),
    ("xgroup_create busy", lambda r: r.xgroup_create("s", "g", 0)),
    ("xreadgroup nogroup", lambda r: r.xreadgroup("nope", "c", {"s": ">"})),
    ("xautoclaim nogroup", lambda r: r.xautoclaim("s", "nope", "c", 0)),
    ("xpending idle float", lambda r: r.xpending_range("s", "g", "-", "+", 5, idle=1.5)),
    ("restore busy", lambda r: r.restore("t", 0, r.dump("t"))),
    ("restore bad payload", lambda r: r.restore("u", 0, b"\x00junk")),
    ("config_set unknown", lambda r: r.config_set("no-such-option", 1)),
    ("unknown command", lambda r: r.execute_command("XNOPE", "s")),
    ("wrong arity", lambda r: r.execute_command("XLEN")),
    # refused by the client, before anything is sent
    ("xadd empty", lambda r: r.xadd("s", {})),
    ("xadd maxlen and minid", lambda r: r.xadd("s", {"a": 1}, maxlen=1, minid="1")),
    ("xread max_count < count", lambda r: r.xread({"s": 0}, count=5, max_count=3)),
    ("xread max_size", lambda r: r.xread({"s": 0}, max_size=0)),
    ("xreadgroup max_count", lambda r: r.xreadgroup("g", "c", {"s": ">"}, max_count=0)),
    (
        "xreadgroup claim negative",
        lambda r: r.xreadgroup("g", "c", {"s": 0}, None, None, False, -1),
    ),
    ("xautoclaim negative", lambda r: r.xautoclaim("s", "g", "c", -1)),
    ("xpending_range partial", lambda r: r.xpending_range("s", "g", "-", "+", None)),
    ("xtrim neither", lambda r: r.xtrim("s")),
    ("flushall", lambda r: r.flushall()),
    ("dbsize after", lambda r: r.dbsize()),
]


@pytest.fixture
def redis_py(valkey_server: ValkeyServer, valkey: RespClient) -> Iterator[Callable[..., Any]]:
    """``redis_py(**options)``: a redis-py client on the (flushed) valkey: redis-py's default
    (RESP3 on the wire, its RESP2 reply shapes) unless ``protocol=2`` is given."""
    clients: list[Any] = []

    def connect(**options: Any) -> Any:
        if options.get("protocol") is None:
            options.pop("protocol", None)
        client = redis.Redis(HOST, valkey_server.port, **options)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


PROTOCOLS = pytest.mark.parametrize("protocol", [None, 2], ids=["default", "resp2"])


@PROTOCOLS
@pytest.mark.parametrize("decode", [False, True], ids=["bytes", "decoded"])
def test_methods_give_what_redis_py_gives(
    redis_py: Callable[..., Any], tmp_path: Path, decode: bool, protocol: int | None
) -> None:
    client = redis_py(decode_responses=decode, protocol=protocol)
    options = {"decode_responses": decode, "protocol": protocol}
    with rstore.Store(tmp_path / "store", sync=False, **options) as store:
        for name, step in STEPS:
            expected = outcome(step, client)
            actual = outcome(step, store)
            if name.startswith("xinfo_stream") and isinstance(actual, dict):
                actual = without_idmp_fields(actual)  # Redis 8.6's, which valkey has not
            assert actual == expected, f"{name}: redis-py gives {expected!r}, rstore {actual!r}"


def test_the_error_raised_is_redis_pys_and_keeps_valkeys_line(
    valkey: RespClient, tmp_path: Path
) -> None:
    with rstore.Store(tmp_path / "store", sync=False) as store:
        store.xadd("s", {"f": "v"}, id="5-0")
        for argv in (
            ("XADD", "s", "1-0", "f", "v"),
            ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
        ):
            valkey.execute("XADD", "s", "5-0", "f", "v")
            line = valkey.execute(*argv).message
            with pytest.raises(redis.exceptions.ResponseError) as caught:
                store.execute(*argv)
            assert isinstance(caught.value, rstore.ResponseError)
            assert caught.value.line == line
            assert caught.value.prefix == line.split()[0]


def queue_commands(pipe: Any) -> None:
    pipe.xadd("s", {"f": "v"}, id="1-0")
    pipe.xadd("s", {"f": "again"}, id="1-0")  # refused while running: the others still apply
    pipe.xrange("s")
    pipe.type("s")
    pipe.xgroup_create("s", "g", 0)
    pipe.xreadgroup("g", "c", {"s": ">"})
    pipe.xinfo_groups("s")
    pipe.xinfo_stream("s", full=True)
    pipe.xpending("s", "g")
    pipe.config_get("stream-node-max-bytes")
    pipe.xgroup_create("s", "g", 0)


def pipeline_outcome(client: Client, raise_on_error: bool, extra: str | None = None) -> Any:
    pipe = client.pipeline()
    queue_commands(pipe)
    if extra is not None:
        pipe.execute_command(extra)
    try:
        results = pipe.execute(raise_on_error=raise_on_error)
    except redis.exceptions.RedisError as exc:
        return ("raised", redis_class(exc), str(exc))
    xinfo_stream = 7  # its place in queue_commands: Redis 8.6's fields taken out of rstore's
    return [
        ("error", redis_class(r), str(r)) if isinstance(r, Exception)
        else mask_times(without_idmp_fields(r) if i == xinfo_stream and isinstance(r, dict)
                        and isinstance(client, rstore.Store) else r)
        for i, r in enumerate(results)
    ]  # fmt: skip


@PROTOCOLS
@pytest.mark.parametrize("decode", [False, True], ids=["bytes", "decoded"])
@pytest.mark.parametrize("raise_on_error", [False, True], ids=["returned", "raised"])
@pytest.mark.parametrize("extra", [None, "XLEN"], ids=["ran", "refused-before-running"])
def test_pipelines_give_what_redis_py_gives(
    redis_py: Callable[..., Any],
    valkey: RespClient,
    tmp_path: Path,
    decode: bool,
    raise_on_error: bool,
    extra: str | None,
    protocol: int | None,
) -> None:
    """A refused command's error is in the results, or raised with redis-py's "Command # N
    (...) of pipeline caused error: ..." text; a command refused before anything runs (Valkey:
    while queueing, then EXECABORT) raises that text whatever ``raise_on_error`` says."""
    client = redis_py(decode_responses=decode, protocol=protocol)
    expected = pipeline_outcome(client, raise_on_error, extra)
    options = {"decode_responses": decode, "protocol": protocol}
    with rstore.Store(tmp_path / "store", sync=False, **options) as store:
        actual = pipeline_outcome(store, raise_on_error, extra)
        assert actual == expected
        assert store.xlen("s") == valkey.execute("XLEN", "s")


@pytest.mark.parametrize(
    ("encoding", "errors"),
    [("latin-1", "strict"), ("utf-8", "replace"), ("utf-8", "strict")],
)
def test_encoding_and_encoding_errors_as_redis_py(
    redis_py: Callable[..., Any], tmp_path: Path, encoding: str, errors: str
) -> None:
    options = {"decode_responses": True, "encoding": encoding, "encoding_errors": errors}
    client = redis_py(**options)
    steps: list[Step] = [
        ("xadd", lambda r: r.xadd(b"k\xe9", {b"\xff": b"caf\xc3\xa9 \xe9"}, id="1-0")),
        ("xrange", lambda r: r.xrange(b"k\xe9")),
        ("keys", lambda r: r.keys()),
        ("dump", lambda r: r.dump(b"k\xe9")),
    ]
    with rstore.Store(tmp_path / "store", sync=False, **options) as store:
        for name, step in steps:
            try:
                expected = step(client)
            except UnicodeDecodeError as exc:
                with pytest.raises(UnicodeDecodeError) as caught:
                    step(store)
                assert str(caught.value) == str(exc), name
            else:
                assert step(store) == expected, name


def test_dump_in_a_decoding_pipeline_stays_bytes(
    redis_py: Callable[..., Any], tmp_path: Path
) -> None:
    """redis-py's non-transactional pipeline gives DUMP's payload as bytes (its MULTI/EXEC one
    tries to decode it and fails); rstore's pipelines give the bytes."""
    client = redis_py(decode_responses=True)
    with rstore.Store(tmp_path / "store", sync=False, decode_responses=True) as store:
        results = []
        for r, pipe in ((client, client.pipeline(transaction=False)), (store, store.pipeline())):
            r.xadd("s", {"f": "v"}, id="1-0")
            results.append(pipe.dump("s").xlen("s").execute())
        assert isinstance(results[0][0], bytes)
        assert results[1] == results[0]
