"""Health samples (``rstore.sample_health``): the same queue gives the same sample from an
embedded store, from ``rstore serve`` and from a real valkey-server 8.0 (the oracle); rates
between two samples; a store's files; a source that cannot be read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from serve_process import Served
from valkey_server import ValkeyServer, find_server_binary

import rstore
from rstore.monitor.health import GroupHealth, HealthSample, StreamHealth

needs_valkey = pytest.mark.skipif(find_server_binary() is None, reason="needs valkey-server")


def _queue(run: Any) -> None:
    """A queue in a known state, by commands any server takes: two streams, one with two
    groups (one behind, one with a pending entry acknowledged), a deleted entry."""
    for i in range(1, 11):
        run("XADD", "orders", f"{1000 + i}-0", "n", str(i))
    run("XADD", "audit", "5-1", "who", "me")
    run("XGROUP", "CREATE", "orders", "billing", "0")
    run("XGROUP", "CREATE", "orders", "shipping", "0")
    run("XREADGROUP", "GROUP", "billing", "b1", "COUNT", "6", "STREAMS", "orders", ">")
    run("XACK", "orders", "billing", "1001-0", "1002-0")
    run("XREADGROUP", "GROUP", "shipping", "s1", "COUNT", "2", "STREAMS", "orders", ">")
    run("XREADGROUP", "GROUP", "shipping", "s2", "COUNT", "1", "STREAMS", "orders", ">")
    run("XDEL", "orders", "1010-0")


def _comparable(sample: HealthSample) -> list[Any]:
    """What two servers must agree on (times left out: they differ by when each ran)."""
    return [
        (s.key, s.length, s.entries_added, s.last_id,
         [(g.name, g.lag, g.pending, g.entries_read, g.last_delivered_id, g.consumers,
           g.consumers_alive, g.oldest_pending_id) for g in s.groups])
        for s in sample.streams
    ]  # fmt: skip


EXPECTED = [
    (b"audit", 1, 1, b"5-1", []),
    (b"orders", 9, 10, b"1010-0", [
        # billing read 6 (1001..1006), acknowledged 2: 4 pending, 1010 deleted -> lag unknown
        (b"billing", None, 4, 6, b"1006-0", 1, 1, b"1003-0"),
        (b"shipping", None, 3, 3, b"1003-0", 2, 2, b"1001-0"),
    ]),
]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Iterator[rstore.Store]:
    with rstore.Store(tmp_path / "s") as s:
        yield s


def test_an_embedded_store_gives_the_queue_as_it_is(store: rstore.Store) -> None:
    _queue(store.execute)
    sample = rstore.sample_health(rstore.store_health_source(store))
    assert _comparable(sample) == EXPECTED
    billing = sample.streams[1].groups[0]
    assert billing.oldest_pending_idle_ms is not None and billing.oldest_pending_idle_ms < 60_000
    assert billing.oldest_pending_age_ms(sample.now_ms) == sample.now_ms - 1003
    assert sample.info == {}
    assert sample.usage is not None and sample.usage.data_bytes >= sample.usage.live_bytes > 0


def test_lag_is_known_without_deletions(store: rstore.Store) -> None:
    store.execute("XADD", "s", "1-0", "f", "v")
    store.execute("XADD", "s", "2-0", "f", "v")
    store.execute("XGROUP", "CREATE", "s", "g", "0")
    store.execute("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    (stream,) = rstore.sample_health(rstore.store_health_source(store)).streams
    assert stream.groups[0].lag == 1 and stream.age_ms(10_000) == 10_000 - 2


def test_match_selects_streams_by_glob(store: rstore.Store) -> None:
    _queue(store.execute)
    source = rstore.store_health_source(store)
    assert [s.key for s in rstore.sample_health(source, b"ord*").streams] == [b"orders"]
    assert rstore.sample_health(source, b"nothing*").streams == ()


@needs_valkey
def test_the_same_queue_samples_alike_on_valkey_and_rstore_serve(
    store: rstore.Store, tmp_path: Path
) -> None:
    _queue(store.execute)
    embedded = _comparable(rstore.sample_health(rstore.store_health_source(store)))
    with ValkeyServer() as valkey:
        _queue(redis.Redis(port=valkey.port).execute_command)
        source = rstore.server_health_source(f"redis://127.0.0.1:{valkey.port}")
        on_valkey = rstore.sample_health(source)
    with Served(tmp_path / "served") as served:
        _queue(served.client().execute_command)
        on_rstore = rstore.sample_health(
            rstore.server_health_source(f"redis://127.0.0.1:{served.port}")
        )
    assert embedded == _comparable(on_valkey) == _comparable(on_rstore) == EXPECTED
    assert on_valkey.info["server"]["valkey_version"].startswith("8.0")
    assert on_rstore.info["server"]["server_name"] == "rstore"
    assert int(on_rstore.info["persistence"]["rstore_live_bytes"]) > 0


def test_a_server_that_cannot_be_reached_is_one_clear_error(tmp_path: Path) -> None:
    source = rstore.server_health_source("redis://127.0.0.1:1")
    with pytest.raises(rstore.RStoreError, match=r"cannot read redis://127\.0\.0\.1:1: "):
        rstore.sample_health(source)


def _group(name: bytes, entries_read: int, pending: int) -> GroupHealth:
    return GroupHealth(name, 0, pending, entries_read, b"0-0", 1, 1, None, None)


def _sample(now_ms: int, added: int, *groups: GroupHealth) -> HealthSample:
    return HealthSample(now_ms, (StreamHealth(b"s", added, added, b"1-0", groups),))


def test_rates_are_the_counters_growth_per_second() -> None:
    before = _sample(1_000, 100, _group(b"g", 50, 10))
    after = _sample(3_000, 160, _group(b"g", 90, 14))  # 2 s: 60 in, 40 out, 36 acked
    rates = rstore.health_rates(before, after)[b"s"]
    assert rates.added == 30.0
    assert rates.groups[b"g"] == rstore.GroupRates(delivered=20.0, acknowledged=18.0)


def test_rates_of_a_stream_made_again_count_from_zero() -> None:
    before = _sample(0, 500, _group(b"g", 400, 0))
    after = _sample(1_000, 7, _group(b"g", 5, 1))
    rates = rstore.health_rates(before, after)[b"s"]
    assert rates.added == 7.0 and rates.groups[b"g"] == rstore.GroupRates(5.0, 4.0)


def test_no_rates_without_time_between_or_for_a_new_stream() -> None:
    sample = _sample(1_000, 1)
    assert rstore.health_rates(sample, sample) == {}
    empty = HealthSample(0, ())
    assert rstore.health_rates(empty, sample) == {}
