"""Commands as Valkey names them in its statistics and errors: a container command (one whose
first argument picks a subcommand) with that subcommand, ``xinfo|stream``, ``client|kill``;
any other by its own name, in lower case."""

from __future__ import annotations

__all__ = ["CONTAINERS", "full_name"]

#: the container commands rstore answers (Valkey's others are unknown commands here)
CONTAINERS = frozenset({"client", "config", "command", "xgroup", "xinfo", "function"})

#: names as clients spelled them -> their full name (bounded: a client sending made-up names
#: must not grow it without end)
_KNOWN: dict[tuple[bytes, bytes], str] = {}
_KEPT = 1024


def full_name(argv: list[bytes]) -> str:
    """``argv``'s command as INFO commandstats and NOPERM name it."""
    key = (argv[0], argv[1] if len(argv) > 1 else b"")
    name = _KNOWN.get(key)
    if name is None:
        name = argv[0].lower().decode("utf-8", "replace")
        if name in CONTAINERS and len(argv) > 1:
            name += "|" + argv[1].lower().decode("utf-8", "replace")
        if len(_KNOWN) < _KEPT:
            _KNOWN[key] = name
    return name
