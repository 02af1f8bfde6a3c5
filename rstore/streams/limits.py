"""MAXCOUNT and MAXSIZE of XREAD and XREADGROUP (Redis 8.10): limits on a whole reply.

COUNT limits each stream; these limit the reply across its streams, which are served in the
order the command names them.  MAXCOUNT caps the entries; MAXSIZE is a soft cap on the reply's
bytes: before each entry, if the reply holds one already and has reached the size, it stops --
so one entry always comes, however large.  A stream reached once a limit is met is left out
of the reply.  An entry's size is what it takes in a RESP2 reply (its ID and fields as bulk
strings in their arrays), the measure Redis documents as "including protocol overhead".
"""

from __future__ import annotations

from collections.abc import Sequence

from rstore.ids import ID

__all__ = ["ReplyLimits", "entry_size"]


def _bulk(n: int) -> int:
    return 1 + len(str(n)) + 2 + n + 2  # $<n>\r\n<bytes>\r\n


def entry_size(entry_id: ID, fields: Sequence[bytes] | None) -> int:
    """The RESP2 bytes of one entry of a reply (``fields`` ``None``: a deleted one, nil)."""
    size = 4 + _bulk(len(str(entry_id[0])) + 1 + len(str(entry_id[1])))  # *2\r\n, the ID
    if fields is None:
        return size + 5  # *-1\r\n
    return size + 1 + len(str(len(fields))) + 2 + sum(_bulk(len(x)) for x in fields)


class ReplyLimits:
    """What is left of a reply's MAXCOUNT and MAXSIZE (``0``: no limit)."""

    __slots__ = ("entries", "max_count", "max_size", "size")

    def __init__(self, max_count: int = 0, max_size: int = 0) -> None:
        self.max_count = max_count
        self.max_size = max_size
        self.entries = 0
        self.size = 0

    def __bool__(self) -> bool:
        """Whether there is any limit."""
        return bool(self.max_count or self.max_size)

    def full(self) -> bool:
        """Whether the reply may take no more entries."""
        if self.max_count and self.entries >= self.max_count:
            return True
        return bool(self.max_size and self.entries and self.size >= self.max_size)

    def count_for(self, count: int) -> int:
        """The COUNT to read one stream with (0 = all): ``count`` within what is left."""
        if not self.max_count:
            return count
        left = self.max_count - self.entries
        return left if not count else min(count, left)

    def take(self, sizes: Sequence[int]) -> int:
        """How many of the next entries, of these sizes, the reply takes (each counted)."""
        taken = 0
        for size in sizes:
            if self.full():
                break
            self.entries += 1
            self.size += size
            taken += 1
        return taken
