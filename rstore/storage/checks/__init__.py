"""Checking and repairing what is on disk: LMDB's trees verified from the file
(:mod:`.pagecheck`, ``_pagecheck.c``), damage named in the user's terms (:mod:`.diagnose`), the
log checked (:mod:`.wal_check`), trees read past damage (:mod:`.btree_file`) for a salvage
(:mod:`.salvage`)."""
