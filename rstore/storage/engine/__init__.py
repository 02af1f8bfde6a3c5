"""The durability engine: the write-ahead log (:mod:`.wal`; its bytes :mod:`.wal_log`, a
transaction's changes captured :mod:`.wal_capture` and ``_capture.c``, LMDB's meta pages
:mod:`.wal_meta`, where the next record goes :mod:`.wal_position`), group commit
(:mod:`.combine`), the steps around a commit (:mod:`.commit`; the commit itself is
``Env.commit_batch``), the log's flushes (:mod:`.log_flush`), checkpoints and pins
(:mod:`.wal_checkpoints`, the thread :mod:`.checkpointer`), recovery after a restart
(:mod:`.wal_recovery`), stores of an older format brought to the current one (:mod:`.upgrade`),
a store held by this process alone (:mod:`.exclusive`: a compaction, an upgrade) and the crash
points tests arm (:mod:`.faults`)."""
