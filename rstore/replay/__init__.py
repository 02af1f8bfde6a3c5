"""Replay building blocks: the JSONL envelope (:mod:`.envelope`), the pacing schedule
(:mod:`.pacing`) and the sources of entries (:mod:`.sources`).

An outer layer of the library: it stands on ``rstore``'s public names only.  Its own public
names are exported lazily from ``rstore`` itself (``rstore.encode_entry``,
``rstore.Pacer``, ``rstore.entries_from_store``, ...); ``docs/replay.md`` describes them.
"""
