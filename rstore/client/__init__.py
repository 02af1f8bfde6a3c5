"""redis-py-compatible methods, shared by :class:`rstore.Store` and its pipelines.

Each method builds the command's argv exactly as redis-py 8.1's ``Redis`` does (same names,
same argument names and defaults, same client-side ``DataError`` checks) and shapes the reply as
redis-py's default client does (or a ``protocol=2`` one, :data:`rstore.client.shapes.PROTOCOLS`),
with or without ``decode_responses``: ``xrange`` gives ``[(id, {field: value}), ...]``,
``xread`` gives ``[[key, [(id, {...}), ...]], ...]``, ``xinfo_stream`` a dict with ``str``
keys, and so on (:mod:`rstore.client.shapes`).  The commands themselves run
through the same dispatcher as :meth:`rstore.Store.execute`, so replies and errors are identical
on every front.

The methods live by command family, at the same name as the command's parsing
(:mod:`rstore.commands`) and its semantics (:mod:`rstore.streams`): ``xclaim`` is in
:mod:`rstore.client.claim`, XCLAIM's parsing in :mod:`rstore.commands.claim`, its semantics in
:mod:`rstore.streams.claim`.
"""

from __future__ import annotations

from rstore.client.append import AppendCommands
from rstore.client.base import Callback, ClientBase
from rstore.client.claim import ClaimCommands
from rstore.client.delete import DeleteCommands
from rstore.client.dump import DumpCommands
from rstore.client.groups import GroupsCommands
from rstore.client.info import InfoCommands
from rstore.client.keyspace import KeyspaceCommands
from rstore.client.pending import PendingCommands
from rstore.client.read import ReadCommands
from rstore.client.readgroup import ReadgroupCommands
from rstore.client.server import ServerCommands
from rstore.client.setid import SetidCommands
from rstore.client.trim import TrimCommands

__all__ = ["Callback", "ClientBase", "RedisCommands"]


class RedisCommands(
    AppendCommands,
    ReadCommands,
    DeleteCommands,
    TrimCommands,
    SetidCommands,
    InfoCommands,
    GroupsCommands,
    ReadgroupCommands,
    PendingCommands,
    ClaimCommands,
    DumpCommands,
    KeyspaceCommands,
    ServerCommands,
):
    """The whole redis-py method surface; subclasses provide ``_command``."""
