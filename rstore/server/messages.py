"""Every reply text of the server's own (connection and protocol) commands, as Valkey 8.0
writes it; the stream commands' texts are in ``rstore/messages.py``."""

from __future__ import annotations

# protocol errors (the connection is closed after them)
PROTO_INLINE_TOO_BIG = "ERR Protocol error: too big inline request"
PROTO_UNBALANCED = "ERR Protocol error: unbalanced quotes in request"
PROTO_MBULK_TOO_BIG = "ERR Protocol error: too big mbulk count string"
PROTO_MBULK_INVALID = "ERR Protocol error: invalid multibulk length"
PROTO_MBULK_UNAUTH = "ERR Protocol error: unauthenticated multibulk length"
PROTO_BULK_COUNT_TOO_BIG = "ERR Protocol error: too big bulk count string"
PROTO_EXPECTED_DOLLAR = "ERR Protocol error: expected '$', got '{got}'"
PROTO_BULK_INVALID = "ERR Protocol error: invalid bulk length"
PROTO_BULK_UNAUTH = "ERR Protocol error: unauthenticated bulk length"

# connections
MAX_CLIENTS = "ERR max number of clients reached"
NOAUTH = "NOAUTH Authentication required."
NOAUTH_HELLO = (
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
    "RESP protocol version at the same time"
)
NO_PASSWORD = (
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?"
)
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOPERM = "NOPERM User {user} has no permissions to run the '{command}' command"
BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."
BAD_LIB_INFO = "ERR {attr} cannot contain spaces, newlines or special characters."
NOPROTO = "NOPROTO unsupported protocol version"
PROTO_VERSION_NOT_INT = "ERR Protocol version is not an integer or out of range"
HELLO_SYNTAX = "ERR Syntax error in HELLO option '{option}'"
NOT_INTEGER = "ERR value is not an integer or out of range"
DB_OUT_OF_RANGE = "ERR DB index is out of range"
SYNTAX = "ERR syntax error"
# SAVE / BGSAVE: a failed save is a bare "-ERR" (Valkey's shared.err)
SAVE_FAILED = "ERR"
BGSAVE_IN_PROGRESS = "ERR Background save already in progress"
WRONG_ARITY = "ERR wrong number of arguments for '{name}' command"
UNKNOWN_SUBCOMMAND = "ERR unknown subcommand '{sub}'. Try {cmd} HELP."
INTERNAL = "ERR internal error: {what}"
CONFIG_SET_FAILED = "ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"
MAXCLIENTS_UNFIT = (
    "The operating system is not able to handle the specified number of clients, try with {clients}"
)

# MULTI / EXEC / WATCH
MULTI_NESTED = "ERR Command not allowed inside a transaction"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
EXECABORT_BECAUSE = "EXECABORT Transaction discarded because of: {reason}"

# CLIENT
NO_SUCH_CLIENT = "ERR No such client"
CLIENT_ID_POSITIVE = "ERR client-id should be greater than 0"
INVALID_CLIENT_ID = "ERR Invalid client ID"
UNKNOWN_CLIENT_TYPE = "ERR Unknown client type '{kind}'"
UNRECOGNIZED_OPTION = "ERR Unrecognized option '{option}'"
UNBLOCK_REASON = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
UNBLOCKED = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

# how INFO commandstats tells a refused call from a failed one (by the start of the line)
REJECTED_PREFIXES = ("ERR wrong number of arguments", "ERR unknown subcommand")
UNKNOWN_COMMAND_PREFIX = "ERR unknown command"
