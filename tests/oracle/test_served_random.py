"""``rstore serve`` against valkey-server: the seeded random command sequences of
``test_random.py`` and ``test_random_groups.py``, sent over the network to both servers, every
reply compared byte for byte (RESP2) -- the server adds nothing and loses nothing on the way
from the store's commands to the socket.  The group sequences run beside Redis 8.2.3, whose
lag rules rstore follows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from newer_fields import as_older_server
from served import ServedStore

from .harness import Oracle
from .randgen import CommandGenerator
from .randgen_groups import GroupCommandGenerator
from .random_runner import Generator, run_sequence
from .resp import ErrorReply, RespClient
from .timed import timed_difference

pytestmark = pytest.mark.oracle


class ServedOracle(Oracle):
    """valkey and an rstore Store served by ``rstore serve``: commands reach rstore through a
    RESP connection to the server, as any client's would."""

    def __init__(self, valkey: RespClient, store_dir: Path, **options: Any) -> None:
        self.served: ServedStore | None = None
        self.client: RespClient | None = None
        super().__init__(valkey, store_dir, **options)

    def set_node_limits(self, entries: int | None, max_bytes: int | None) -> None:
        super().set_node_limits(entries, max_bytes)
        self._serve()

    def reopen(self) -> None:
        super().reopen()
        self._serve()

    def _serve(self) -> None:
        self._stop()
        assert self.store is not None
        self.served = ServedStore(self.store).start()
        self.client = RespClient("127.0.0.1", self.served.port)

    def _stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.served is not None:
            self.served.stop()
            self.served = None

    def close(self) -> None:
        self._stop()
        super().close()

    def on_rstore(self, *argv: Any) -> Any:
        assert self.client is not None
        return as_older_server(argv, self.client.execute(*argv))


def _run(valkey: RespClient, tmp_path: Path, generator: Generator, limits: tuple[int, int],
         steps: int, **kwargs: Any) -> None:  # fmt: skip
    oracle = ServedOracle(
        valkey, tmp_path / "store", sync=False, node_max_entries=limits[0],
        node_max_bytes=limits[1],
    )  # fmt: skip
    try:
        run_sequence(oracle, generator, steps, where=f"served, limits {limits}", **kwargs)
    finally:
        oracle.close()


@pytest.mark.parametrize(("seed", "limits"), [(11, (2, 4096)), (12, (100, 300))])
def test_served_random_sequences(
    valkey: RespClient, tmp_path: Path, seed: int, limits: tuple[int, int]
) -> None:
    _run(valkey, tmp_path, CommandGenerator(seed), limits, 800)


@pytest.mark.parametrize("seed", [21, 22])
def test_served_random_group_sequences(redis8: RespClient, tmp_path: Path, seed: int) -> None:
    _run(redis8, tmp_path, GroupCommandGenerator(seed), (10, 4096), 800,
         difference=timed_difference)  # fmt: skip


def test_errors_come_back_as_valkey_writes_them(valkey: RespClient, tmp_path: Path) -> None:
    oracle = ServedOracle(valkey, tmp_path / "store", sync=False)
    try:
        for argv in (
            ("NOSUCH", "a", "b"),
            ("XADD", "s"),
            ("XADD", "s", "0-0", "f", "v"),
            ("XGROUP", "CREATE", "missing", "g", "$"),
            ("XINFO", "NOPE"),
            ("XREAD", "STREAMS", "a"),
        ):
            expected, actual = oracle.pair(*argv)
            assert isinstance(expected, ErrorReply) and actual == expected
    finally:
        oracle.close()
