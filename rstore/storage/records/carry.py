"""What one write transaction of a process hands to the next: the records it read and wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rstore.storage.records.layout import KeyRecord, StoreConfig, StreamMeta

__all__ = ["Carry"]


class Carry:
    """What a committed write transaction knew, for the next one to start from.

    Valid only for the write transaction whose id is ``txnid + 1``: then no other writer (in
    any process) committed in between, so every record is still exactly what LMDB holds.
    """

    __slots__ = ("config", "keys", "meta", "names", "nodes", "txnid")

    def __init__(
        self,
        txnid: int,
        keys: dict[bytes, KeyRecord | None],
        meta: dict[int, StreamMeta],
        config: StoreConfig | None,
        nodes: dict[bytes, bytes],
        names: dict[int, bytes],
    ) -> None:
        self.txnid = txnid
        self.keys = keys
        self.meta = meta
        self.config = config
        self.nodes = nodes
        self.names = names
