"""The process's open stores: one :class:`~rstore.storage.env.Env` per directory, shared.

LMDB forbids two handles on one environment in a process (their locks would clash), so every
:class:`rstore.Store` opened on the same directory -- by any path to it -- shares one Env,
reference-counted: the first :func:`acquire` opens it, the last :func:`release` closes it
(after the transactions in flight).  Stores on one directory in one process must agree on
``sync`` and ``readonly``.

A compaction (:mod:`rstore.storage.compaction.compact`) needs its directories closed in this
process and kept closed while it runs (its LMDB lock is the process's, which another handle of
the process would share): :func:`reserve` checks and marks them, :func:`acquire` refuses a
marked one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from rstore.errors import StorageError
from rstore.storage.env import DEFAULT_MAP_SIZE, Env

__all__ = ["acquire", "open_mode", "release", "reserve", "unreserve"]


class _Registry:
    """The process's open environments by real path, and the lock guarding them."""

    def __init__(self) -> None:
        self.envs: dict[str, Env] = {}
        self.refs: dict[str, int] = {}  # Stores holding each Env
        self.reserved: set[str] = set()  # directories a compaction of this process holds
        self.lock = threading.Lock()


_REGISTRY = _Registry()


def _after_fork_in_child() -> None:
    """A fresh lock: one held by another parent thread would never be released in the child
    (the Envs themselves are marked stale by :mod:`rstore.storage.env`); no compaction."""
    _REGISTRY.lock = threading.Lock()
    _REGISTRY.reserved = set()  # a compaction runs in the parent's thread, not here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def open_mode(path: str) -> bool | None:
    """How this process has ``path`` open: ``True`` read-only, ``False`` writable, ``None``
    not open."""
    with _REGISTRY.lock:
        env = _REGISTRY.envs.get(os.path.realpath(path))
        return None if env is None else env.readonly


def acquire(
    path: str,
    *,
    sync: bool,
    map_size: int | None,
    create: bool,
    readonly: bool = False,
    on_upgrade: Callable[[int, int], None] | None = None,
) -> Env:
    """The process's Env for ``path``, opened on first use and reference-counted
    (``on_upgrade``: see :class:`Env`)."""
    real = os.path.realpath(path)
    with _REGISTRY.lock:
        if real in _REGISTRY.reserved:
            raise StorageError(
                f"{path} is being compacted by this process",
                hint="open it once the compaction has returned",
            )
        env = _REGISTRY.envs.get(real)
        if env is not None and env.closed:  # its last release was interrupted: finish it
            env.close()
            del _REGISTRY.envs[real], _REGISTRY.refs[real]
            env = None
        if env is None:
            env = Env(real, sync=sync, map_size=map_size or DEFAULT_MAP_SIZE, create=create,
                      readonly=readonly, on_upgrade=on_upgrade)  # fmt: skip
            _REGISTRY.envs[real] = env
        elif env.sync_mode != sync:
            raise StorageError(
                f"{path} is already open in this process with sync={env.sync_mode}; LMDB allows "
                "one handle per process, so every Store on one path must use the same sync setting"
            )
        elif env.readonly != readonly:
            raise StorageError(
                f"{path} is already open in this process with readonly={env.readonly}; LMDB "
                "allows one handle per process, so every Store on one path must agree"
            )
        _REGISTRY.refs[real] = _REGISTRY.refs.get(real, 0) + 1
        return env


def release(env: Env) -> None:
    """Drop one reference; the last one closes the environment (after the transactions in
    flight finish)."""
    with _REGISTRY.lock:  # held while closing: no second handle may open the path meanwhile
        if _REGISTRY.envs.get(env.path) is not env:
            return  # already released to the end
        left = _REGISTRY.refs[env.path] - 1
        if left > 0:
            _REGISTRY.refs[env.path] = left
            return
        _REGISTRY.refs[env.path] = 0
        env.close()  # interrupted, the Env stays here, closed: a release or acquire finishes
        del _REGISTRY.envs[env.path], _REGISTRY.refs[env.path]


def reserve(paths: list[str]) -> list[str]:
    """Mark the store directories ``paths`` as held by a compaction of this process (their real
    paths, returned for :func:`unreserve`); refused when one is open in this process."""
    reals = [os.path.realpath(p) for p in paths]
    with _REGISTRY.lock:
        for path, real in zip(paths, reals, strict=True):
            if real in _REGISTRY.reserved:
                raise StorageError(f"{path} is being compacted by another thread of this process")
            if real in _REGISTRY.envs:
                raise StorageError(
                    f"{path} is open in this process; compacting needs the store to itself",
                    hint="close every Store on it first (and its databases' stores)",
                )
        _REGISTRY.reserved.update(reals)
    return reals


def unreserve(reals: list[str]) -> None:
    """The compaction holding ``reals`` (from :func:`reserve`) is over."""
    with _REGISTRY.lock:
        _REGISTRY.reserved.difference_update(reals)
