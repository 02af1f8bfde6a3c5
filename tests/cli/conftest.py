"""Fixtures for the CLI tests: a click runner bound to a store in a temporary directory."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rstore_cli.main import cli

import rstore

Run = Callable[..., Result]


def make_runner() -> CliRunner:
    """A runner that captures stderr apart from stdout (the default from click 8.2 on)."""
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:  # click 8.1
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    return CliRunner()


@pytest.fixture
def runner() -> CliRunner:
    return make_runner()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where the test's store lives (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def run(store_path: Path) -> Run:
    """``run(*args)``: ``rstore --store <store_path> *args`` in-process (``input=`` feeds
    stdin); returns click's Result.

    Exceptions other than SystemExit are not swallowed, so a traceback fails the test loudly.
    """
    runner = make_runner()

    def invoke(
        *args: str, env: dict[str, str] | None = None, input: str | bytes | None = None
    ) -> Result:
        return runner.invoke(
            cli, ["--store", str(store_path), *args], env=env, input=input, catch_exceptions=False
        )

    return invoke


@pytest.fixture
def store(store_path: Path) -> Iterator[rstore.Store]:
    """The test's store opened through the public façade (to seed it and check results)."""
    with rstore.Store(store_path) as s:
        yield s


@pytest.fixture
def events(store: rstore.Store) -> rstore.Store:
    """A stream ``events`` with three entries at IDs 1-0, 2-0, 3-0."""
    store.execute("XADD", "events", "1-0", "user", "42", "action", "login")
    store.execute("XADD", "events", "2-0", "user", "7", "msg", "hello world")
    store.execute("XADD", "events", "3-0", "blob", b"\x00\xff", "empty", b"")
    return store


@pytest.fixture
def billing(events: rstore.Store) -> rstore.Store:
    """``events`` with a group ``billing`` at 0: alice has 1-0 and 2-0 pending, bob 3-0."""
    events.execute("XGROUP", "CREATE", "events", "billing", "0")
    events.execute(
        "XREADGROUP", "GROUP", "billing", "alice", "COUNT", "2", "STREAMS", "events", ">"
    )
    events.execute("XREADGROUP", "GROUP", "billing", "bob", "STREAMS", "events", ">")
    return events
