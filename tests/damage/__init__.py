"""The damaged-store campaign: a populated store, damaged on disk, must never crash its reader,
raise anything but an ``rstore.RStoreError``, or answer wrongly while ``check()`` says clean.

* ``population`` builds the store through the public API, deterministically from a seed;
* ``truth`` records every answer a user can read from it before damage;
* ``mutations`` damages a copy of ``data.mdb`` (truncations, bit flips, zeroed or random pages,
  overwritten bytes), each mutation replayable from ``(seed, case)``;
* ``battery`` opens the damaged copy, reads everything, runs ``check()``, writes and reads back;
* ``isolate`` runs the battery in a forked child with a time limit; ``outcome`` classifies it;
* ``salvaging`` checks a salvage of a damaged copy against the intact store
  (``test_salvage``, ``test_salvage_campaign``);
* ``campaign`` ties them together and is the command line for people:
  ``python -m tests.damage.campaign --mutations 280 --seed 1``.

Everything goes through ``rstore.Store``; nothing here knows the storage format except
``locate``, which finds the bytes of values the population planted (the named tests' targets).
"""
