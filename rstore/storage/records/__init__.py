"""The store's records in LMDB: the key layout and the packed records (:mod:`.layout`), the
checksummed transaction (:mod:`.txn`, the errors it names in :mod:`.txn_errors`, what it
carries to the next one in :mod:`.carry`), the group and PEL records (:mod:`.group_records`),
batch numbers and bookmarks (:mod:`.batch_marks`), a node cursor (:mod:`.cursors`), runs of
records sealed at once (:mod:`.sealed`, ``_sealed.c``) and read as stored (:mod:`.bulk_read`)."""
