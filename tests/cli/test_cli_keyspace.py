"""The keyspace commands: keys, del."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from click.testing import Result

import rstore

Run = Callable[..., Result]


def test_keys(run: Run, store: rstore.Store) -> None:
    for name in ("orders:1", "orders:2", "users"):
        store.execute("XADD", name, "*", "a", "1")
    result = run("keys")
    assert result.exit_code == 0
    assert sorted(result.stdout.splitlines()) == ["orders:1", "orders:2", "users"]
    assert sorted(run("keys", "orders:*").stdout.splitlines()) == ["orders:1", "orders:2"]
    assert run("keys", "nothing*").stdout == ""
    assert sorted(json.loads(run("keys", "--json").stdout)) == ["orders:1", "orders:2", "users"]
    assert run("keys", "x*", "--json").stdout == "[]\n"


def test_keys_with_unsafe_names(run: Run, store: rstore.Store) -> None:
    store.execute("XADD", b"bin\xff", "*", "a", "1")
    store.execute("XADD", "two words", "*", "a", "1")
    store.execute("XADD", "line\nbreak", "*", "a", "1")
    lines = sorted(run("keys").stdout.splitlines())
    assert lines == ['"bin\\xff"', '"line\\nbreak"', '"two words"']
    names = json.loads(run("keys", "--json").stdout)
    assert {"base64": base64.b64encode(b"bin\xff").decode()} in names
    assert "line\nbreak" in names and "two words" in names
    assert run("keys", "-e", "bin\\xff").stdout == '"bin\\xff"\n'


def test_del(run: Run, store: rstore.Store) -> None:
    for name in ("a", "b", "c"):
        store.execute("XADD", name, "*", "f", "v")
    result = run("del", "a", "b", "missing")
    assert (result.exit_code, result.stdout) == (0, "2\n")
    assert run("del", "c", "--json").stdout == "1\n"
    assert run("del", "c").stdout == "0\n"
    assert store.dbsize() == 0


def test_del_needs_a_key(run: Run) -> None:
    result = run("del")
    assert result.exit_code == 2
    assert "Missing argument 'KEY...'" in result.stderr
