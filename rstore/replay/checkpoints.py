"""A replay's checkpoint: the position reached, per source stream the last source ID delivered
(or skipped as a conflict), as JSON ``{"stream": "ms-seq", ...}`` (stream names that are not
UTF-8 kept through ``\\udcXX`` escapes).  Into a store it is recorded in the same transaction
as the batch it covers (:meth:`rstore.Store.append_entries`); for other sinks it is a small file
rewritten atomically after each write (see :mod:`rstore.replay.engine`)."""

from __future__ import annotations

import json

from rstore import RStoreError, atomic_file

from .sinks import Sink

__all__ = [
    "decode_position",
    "encode_position",
    "load_checkpoint_file",
    "read_checkpoint",
    "save_checkpoint_file",
]

ID = tuple[int, int]


def encode_position(position: dict[bytes, ID]) -> bytes:
    items = {k.decode("utf-8", "surrogateescape"): f"{v[0]}-{v[1]}" for k, v in position.items()}
    return json.dumps(items, sort_keys=True).encode("ascii")


def decode_position(raw: bytes | None, where: str) -> dict[bytes, ID]:
    if not raw:
        return {}
    try:
        items = json.loads(raw)
        out = {}
        for k, v in items.items():
            ms, _, seq = v.partition("-")
            out[k.encode("utf-8", "surrogateescape")] = (int(ms), int(seq))
        return out
    except (ValueError, AttributeError) as exc:
        raise RStoreError(f"{where} is not a replay checkpoint ({exc})") from None


def load_checkpoint_file(path: str) -> dict[bytes, ID]:
    """The position a checkpoint file holds (``{}`` when the file does not exist)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    return decode_position(raw, f"checkpoint file {path}")


def read_checkpoint(sink: Sink, name: str) -> dict[bytes, ID]:
    """The position recorded under checkpoint ``name`` for ``sink``: in the sink's store when
    it is transactional, else in the file ``name`` (``{}`` when there is none yet)."""
    if sink.transactional:
        return decode_position(sink.load_checkpoint(name), f"checkpoint {name}")
    return load_checkpoint_file(name)


def save_checkpoint_file(path: str, value: bytes) -> None:
    """Write ``value`` to the file ``path`` atomically (:func:`rstore.atomic_file`)."""
    with atomic_file(path) as f:
        f.write(value)
