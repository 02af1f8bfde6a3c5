"""The store's commands as COMMAND / COMMAND INFO describe them (for ``rstore serve``)."""

from __future__ import annotations

from typing import Any

from rstore.commands.registry import COMMANDS, CommandSpec, load_all

__all__ = ["command_table"]

#: commands that take no key, and those whose keys follow a STREAMS word
_NO_KEYS = {b"ping", b"echo", b"config", b"dbsize", b"flushall", b"keys", b"scan"}
_MOVABLE = {b"xread", b"xreadgroup"}


def _info(name: bytes, spec: CommandSpec) -> list[Any]:
    flags = ["write" if spec.write else "readonly"]
    if name in _MOVABLE:
        flags.append("movablekeys")
        keys = [0, 0, 0]
    elif name in _NO_KEYS or (b"|" in name and spec.arity == 2):
        keys = [0, 0, 0]
    else:
        keys = [1, 1, 1]
    return [name, spec.arity, flags, *keys, [], [], [], []]


def command_table() -> dict[bytes, list[Any]]:
    """``{name: COMMAND INFO entry}`` for every command of the store: name, arity, flags
    (``write`` / ``readonly``, ``movablekeys``), first key, last key, key step, ACL
    categories, tips, key specs (empty) and subcommands."""
    load_all()
    out = {}
    for name, spec in COMMANDS.items():
        entry = _info(name, spec)
        entry[9] = [_info(name + b"|" + sub, s) for sub, s in sorted(spec.subcommands.items())]
        out[name] = entry
    return out
