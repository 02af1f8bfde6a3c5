"""Layer 4: argv -> stream semantics -> RESP2-shaped replies.

Importing this package registers every command in :data:`~rstore.commands.registry.COMMANDS`.
"""

from rstore.commands import (
    dump_restore,
    keyspace,
    stream_read,
    stream_write,
    xclaim,
    xgroup,
    xinfo,
    xpending,
    xreadgroup,
)
from rstore.commands.executor import run_batch, run_one
from rstore.commands.registry import COMMANDS, Context, lookup
from rstore.commands.reply import NIL_ARRAY, to_public

__all__ = [
    "COMMANDS",
    "NIL_ARRAY",
    "Context",
    "dump_restore",
    "keyspace",
    "lookup",
    "run_batch",
    "run_one",
    "stream_read",
    "stream_write",
    "to_public",
    "xclaim",
    "xgroup",
    "xinfo",
    "xpending",
    "xreadgroup",
]
