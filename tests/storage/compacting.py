"""What the compaction tests share: a populated store (the fixtures ``population`` and
``populated``, imported by the test modules), and its records read back for comparison
(``tests/storage/test_compact.py``, ``tests/processes/test_compact_*``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import rstore
from rstore.storage.records import layout
from tests.damage.population import build

Records = dict[bytes, list[tuple[bytes, bytes]]]


def records(store: rstore.Store) -> Records:
    """Every record of every sub-database as LMDB holds it, but the log's position (which a
    compaction moves on to a new generation) and a bulk write's barrier (which it clears)."""

    def read(txn: object) -> Records:
        raw, dbs = txn._raw, txn._dbs  # type: ignore[attr-defined]
        out = {}
        for name, db in dbs.items():
            rows = [(bytes(k), bytes(v)) for k, v in raw.cursor(db=db)]
            if name == layout.DB_META:
                rows = [row for row in rows if row[0] not in (b"wal", b"walbar")]
            out[name] = rows
        return out

    return store._live_env().read(read)  # type: ignore[arg-type]


def state(path: Path) -> dict[int, Records]:
    """Every database's records, the store checked sound first."""
    with rstore.Store(path, create=False) as store:
        assert store.check() == []
        return {n: records(store.database(n)) for n in store.databases()}


def uncounted(states: dict[int, Records]) -> dict[int, Records]:
    """``states`` with the stream records as a store of an older format holds them, until
    each is counted (no byte count: ``StreamMeta.node_bytes`` None)."""
    out = {}
    for n, records_of in states.items():
        rows = []
        for key, value in records_of[layout.DB_STREAMS]:
            payload = layout.unseal(key, value)
            assert payload is not None
            meta = layout.StreamMeta.unpack(payload)
            meta.node_bytes = None
            rows.append((key, layout.seal(key, meta.pack())))
        out[n] = {**records_of, layout.DB_STREAMS: rows}
    return out


def populate(path: Path, *, deleted: int = 60_000) -> None:
    """The damage campaign's store (groups, consumers, pending entries, tombstones, trims, long
    names) in ``path``, a second database (3), a batch record and a stream of ``deleted``
    entries written and deleted."""
    build(path, seed=7)
    with rstore.Store(path, sync=False) as store:
        store.append_entries(("gone", None, [b"f", b"%d" % i]) for i in range(deleted))
        store.database(3).xadd("other", {"in": "db3"})
        store.append_entries([("kept", None, [b"f", b"v"])], batch=("loader", 5))
        store.delete("gone")


@pytest.fixture(scope="module")
def population(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`populate` once, for a module's tests."""
    built = tmp_path_factory.mktemp("population") / "store"
    populate(built)
    return built


@pytest.fixture
def populated(population: Path, tmp_path: Path) -> Path:
    """A copy of the population, for one test."""
    return Path(shutil.copytree(population, tmp_path / "store"))
