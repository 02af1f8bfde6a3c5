"""Compacting a store: its files rewritten with only the pages in use (``rstore compact``).

:mod:`~rstore.storage.compaction.compact` runs it (``rstore.compact_store``);
:mod:`~rstore.storage.engine.exclusive` (which the upgrade of an older store uses too) holds
the store for it alone;
:mod:`~rstore.storage.compaction.compact_copy` writes and checks the copy;
:mod:`~rstore.storage.compaction.compact_intent` swaps it in, and finishes a compaction that
was interrupted (every writable opener looks).  docs/durability.md, "Compaction".
"""
