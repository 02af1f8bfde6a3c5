"""Records popped in one call (``Txn.pop_many``, XACK's group PEL records): the C run
(``_sealed.c`` ``pop_sealed``) gives the payloads, leaves the records and writes the log that
``Txn.pop`` one key at a time gives, and a damaged record stops the write with the error
``Txn.pop`` raises, nothing of it committed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rstore
from rstore.storage.env import Env
from rstore.storage.records import group_records, layout

from .helpers import find, flip_bit, stored_value

needs_c = pytest.mark.skipif(
    layout.pop_sealed is None, reason="the C accelerator is not built (or is turned off)"
)

KEYS = st.binary(min_size=1, max_size=24)


def _env(store: rstore.Store) -> Env:
    env: Env = store._live_env()
    return env


def _contents(env: Env) -> dict[bytes, bytes]:
    return env.read(lambda t: dict(t.items(layout.DB_META, b"k")))


def _pop_run(path: str, stored: dict[bytes, bytes], keys: list[bytes]) -> tuple[Any, Any]:
    """Store ``stored`` (under keys starting ``k``), pop ``keys`` in one write; the payloads,
    and what is left after the store is closed and opened again (its log recovered)."""
    with rstore.Store(path) as s:
        env = _env(s)
        env.write(lambda t: [t.put(layout.DB_META, k, v) for k, v in stored.items()])
        popped = env.write(lambda t: t.pop_many(layout.DB_META, keys))
    with rstore.Store(path) as s:
        return popped, _contents(_env(s))


@needs_c
@given(
    st.dictionaries(KEYS.map(lambda k: b"k" + k), st.binary(max_size=300), max_size=30),
    st.data(),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_c_run_is_pop_one_key_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: dict[bytes, bytes], data: Any
) -> None:
    known = sorted(stored)
    keys = data.draw(
        st.lists(st.one_of(st.sampled_from(known), KEYS.map(lambda k: b"k" + k)), max_size=40)
        if known
        else st.lists(KEYS.map(lambda k: b"k" + k), max_size=5)
    )
    base = tmp_path / os.urandom(6).hex()
    with_c = _pop_run(str(base / "c"), stored, keys)
    monkeypatch.setattr(layout, "pop_sealed", None)
    reference = _pop_run(str(base / "py"), stored, keys)
    assert with_c == reference
    popped, left = with_c
    expected_left = {k: v for k, v in stored.items() if k not in keys}
    assert left == expected_left  # repeated keys: popped once, then None
    seen: set[bytes] = set()
    for key, payload in zip(keys, popped):
        assert payload == (None if key in seen or key not in stored else stored[key])
        seen.add(key)


@pytest.mark.parametrize("c_run", [True, False], ids=["c", "python"])
def test_a_damaged_pending_entry_fails_xack_and_acks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_run: bool
) -> None:
    if c_run and layout.pop_sealed is None:
        pytest.skip("the C accelerator is not built (or is turned off)")
    if not c_run:
        monkeypatch.setattr(layout, "pop_sealed", None)
    path = str(tmp_path / "store")
    with rstore.Store(path) as s:
        ids = [s.xadd("q", {"f": str(i)}) for i in range(5)]
        s.xgroup_create("q", "g", id="0")
        s.xreadgroup("g", "c", {"q": ">"})
        handle = _env(s).read(lambda t: t.key_get(b"q").handle)
        group = _env(s).read(lambda t: group_records.group_get(t, handle, b"g"))
        ms, seq = (int(x) for x in ids[3].split(b"-"))
        key = layout.pel_key(group.handle, (ms, seq))
        value = stored_value(s, layout.DB_PEL, key)
    flip_bit(path, find(path, key + value), len(key) + 2)
    with rstore.Store(path) as s:
        with pytest.raises(rstore.CorruptStoreError) as info:
            s.xack("q", "g", *ids)
        assert info.value.db == "pel" and info.value.key == b"q"  # named by its stream
        assert s.xinfo_groups("q")[0]["pending"] == 5  # the records before it stayed
        assert s.xack("q", "g", ids[0], ids[1]) == 2  # the sound ones can be acknowledged
