"""Replay: the JSONL envelope (:mod:`.envelope`), the pacing schedule (:mod:`.pacing`), the
sources of entries (:mod:`.sources`, :mod:`.remote`, :mod:`.follow`), the engine
(:mod:`.engine`: ``run_replay`` / ``plan_replay``), its sinks (:mod:`.sinks`) and the copy of
consumer groups (:mod:`.groups`).

An outer layer of the library: it stands on ``rstore``'s public names only.  Its own public
names are exported lazily from ``rstore`` itself (``rstore.run_replay``, ``rstore.StoreSink``,
``rstore.Pacer``, ``rstore.entries_from_store``, ...); ``docs/replay.md`` describes them.
"""
