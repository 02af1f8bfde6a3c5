"""Blocked readers and their wake-ups: the shared waiter table (:mod:`.notify`), a blocked
call's waiter (:mod:`.waiters`) and an environment's wake-ups (:mod:`.wakeups`)."""
