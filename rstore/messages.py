"""Every reply text rstore sends, in one table: the error lines of the stream commands and
their HELP replies, then (in their own section) those of ``rstore serve``'s connection and
protocol commands.

Texts are exactly what Valkey 8.0 sends (without the leading ``-``), or Redis 8.2 for the
commands Valkey 8.0 does not have (XDELEX, XACKDEL), except the few marked as rstore's own.
Templates take their arguments with ``str.format``; :func:`error` builds the
:class:`~rstore.errors.ResponseError`.  tests/test_quality.py checks that no other module of
rstore or its CLI writes a reply text.
"""

from __future__ import annotations

from rstore.errors import ResponseError

# Generic
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
WRONG_ARITY = "ERR wrong number of arguments for '{name}' command"
UNKNOWN_COMMAND = "ERR unknown command '{name}', with args beginning with: {args}"
UNKNOWN_SUBCOMMAND = "ERR unknown subcommand '{sub}'. Try {cmd} HELP."
SUBCOMMAND_SYNTAX = (
    "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {cmd} HELP."
)
NO_SUCH_KEY = "ERR no such key"
INVALID_CURSOR = "ERR invalid cursor"

# Stream IDs
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
INVALID_START_INTERVAL = "ERR invalid start ID for the interval"
INVALID_END_INTERVAL = "ERR invalid end ID for the interval"

# XADD / XTRIM
XADD_ID_ZERO = "ERR The ID specified in XADD must be greater than 0-0"
XADD_ID_SMALL = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
XADD_TOO_LARGE = "ERR Elements are too large to be stored"
XADD_EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
TRIM_BOTH = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
MAXLEN_NEGATIVE = "ERR The MAXLEN argument must be >= 0."
LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
LIMIT_NO_STRATEGY = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
LIMIT_NO_APPROX = "ERR syntax error, LIMIT cannot be used without the special ~ option"
XTRIM_NO_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"

# Idempotent production: XADD IDMP / IDMPAUTO, XCFGSET (Redis 8.6)
IDMP_TWICE = "ERR syntax error, IDMP/IDMPAUTO specified multiple times"
IDMP_NO_PID = "ERR syntax error, IDMP requires a non-empty producer ID"
IDMP_NO_IID = "ERR syntax error, IDMP requires a non-empty idempotent ID"
IDMPAUTO_NO_PID = "ERR syntax error, IDMPAUTO requires a non-empty producer ID"
IDMP_EXPLICIT_ID = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"
XCFGSET_NOTHING = "ERR At least one parameter must be specified"
XIDMPRECORD_NO_PID = "ERR producer ID must be non-empty"
XIDMPRECORD_NO_IID = "ERR idempotent ID must be non-empty"
XIDMPRECORD_NO_ENTRY = "ERR No such message in stream"
XIDMPRECORD_OTHER_ID = "ERR IID already exists for this producer with a different stream ID"
XCFGSET_TWICE = "ERR {name} specified multiple times"
IDMP_DURATION_RANGE = "ERR IDMP-DURATION must be between 1 and 86400 seconds"
IDMP_MAXSIZE_RANGE = "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"

# XNACK (Redis 8.8)
XNACK_MODE = "ERR mode must be SILENT, FAIL, or FATAL"
XNACK_NO_IDS = "ERR syntax error, expected IDS keyword"
XNACK_NUMIDS = "ERR numids must be a positive integer"
XNACK_NUMIDS_MISMATCH = "ERR number of IDs doesn't match numids"
XNACK_RETRYCOUNT = "ERR Invalid RETRYCOUNT value, must be >= 0"
XNACK_OPTION = "ERR Unrecognized XNACK option '{token}'"

# XDELEX / XACKDEL (Redis 8.2)
NUMIDS_NOT_POSITIVE = "ERR Number of IDs must be a positive integer"
NUMIDS_MISMATCH = "ERR The `numids` parameter must match the number of arguments"

# XREAD / XREADGROUP
TIMEOUT_NOT_INTEGER = "ERR timeout is not an integer or out of range"
TIMEOUT_NEGATIVE = "ERR timeout is negative"
XREAD_UNBALANCED = (
    "ERR Unbalanced '{cmd}' list of streams: "
    "for each stream key an ID or '{tok}' must be specified."
)
XREAD_GROUP_OPTION = (
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
)
XREAD_NOACK_OPTION = (
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
)
XREAD_CLAIM_OPTION = (
    "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
)
CLAIM_NOT_INTEGER = "ERR min-idle-time is not an integer"
CLAIM_NEGATIVE = "ERR min-idle-time must be a positive integer"
MAXCOUNT_NOT_POSITIVE = "ERR MAXCOUNT must be a positive integer"
MAXSIZE_NOT_POSITIVE = "ERR MAXSIZE must be a positive integer"
MAXCOUNT_BELOW_COUNT = "ERR MAXCOUNT must be greater than or equal to COUNT"
XREAD_GT_ID = (
    "ERR The > ID can be specified only when calling XREADGROUP using the "
    "GROUP <group> <consumer> option."
)

# XSETID
XSETID_ENTRIES_ADDED_NEGATIVE = "ERR entries_added must be positive"
XSETID_SMALLER_THAN_MAXDEL_ARG = (
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
)
XSETID_SMALLER_THAN_MAXDEL = (
    "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
)
XSETID_SMALLER_THAN_TOP = (
    "ERR The ID specified in XSETID is smaller than the target stream top item"
)
XSETID_ENTRIES_ADDED_SMALL = (
    "ERR The entries_added specified in XSETID is smaller than the target stream length"
)

# Consumer groups
NOGROUP_XREADGROUP = (
    "NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option"
)
XREADGROUP_DOLLAR = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set."
)
NOGROUP_FOR_KEY = "NOGROUP No such consumer group '{group}' for key name '{key}'"  # XGROUP, XINFO

NOGROUP_PENDING = "NOGROUP No such key '{key}' or consumer group '{group}'"  # XPENDING, XCLAIM
XGROUP_NO_KEY = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically."
)
BUSYGROUP = "BUSYGROUP Consumer Group name already exists"
XGROUP_ENTRIESREAD = "ERR value for ENTRIESREAD must be positive or -1"
XREADGROUP_NO_GROUP = "ERR Missing GROUP option for XREADGROUP"
XREAD_TIMEOUT_RANGE = "ERR timeout is out of range"
XREAD_LAST_ID_ZERO = "ERR the stream last element ID is 0-0"

# XCLAIM / XAUTOCLAIM
XCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XCLAIM"
XAUTOCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
XCLAIM_IDLE = "ERR Invalid IDLE option argument for XCLAIM"
XCLAIM_TIME = "ERR Invalid TIME option argument for XCLAIM"
XCLAIM_RETRYCOUNT = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
XCLAIM_UNKNOWN_OPTION = "ERR Unrecognized XCLAIM option '{opt}'"
COUNT_POSITIVE = "ERR COUNT must be > 0"
XAUTOCLAIM_COUNT_TOO_HIGH = (
    "ERR Insufficient memory, failed allocating transient memory, COUNT too high."
)

# DUMP / RESTORE
BUSYKEY = "BUSYKEY Target key name already exists."
BAD_PAYLOAD = "ERR DUMP payload version or checksum are wrong"
BAD_FORMAT = "ERR Bad data format"
RESTORE_BAD_TTL = "ERR Invalid TTL value, must be >= 0"
RESTORE_BAD_IDLETIME = "ERR Invalid IDLETIME value, must be >= 0"
RESTORE_BAD_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"
RESTORE_NOT_A_STREAM = (
    "ERR rstore stores streams only; this payload holds a {type_name}"  # rstore's
)
RESTORE_TTL = "ERR rstore keys do not expire: RESTORE needs a TTL of 0"  # rstore's

# Keyspace, commands
SCAN_UNKNOWN_TYPE = "ERR unknown type name '{name}'"
SCAN_NOVALUES = "ERR NOVALUES option can only be used in HSCAN"
EMPTY_COMMAND = "ERR empty command"

# HELP replies
XGROUP_HELP = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Print this help.",
]

XINFO_HELP = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",
]

CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "HELP",
    "    Print this help.",
]

# CONFIG
CONFIG_UNKNOWN_OPTION = "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
CONFIG_SET_FAILED = "ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"


# -- rstore serve: the connection and the protocol ---------------------------------------------
# The texts of the server's own commands (HELLO, AUTH, CLIENT, MULTI/EXEC, SELECT, SAVE, ...)
# and of its protocol errors; they also use the generic ones above (SYNTAX, NOT_INTEGER,
# WRONG_ARITY, UNKNOWN_SUBCOMMAND, CONFIG_SET_FAILED).

# Protocol errors (the connection is closed after them)
PROTO_INLINE_TOO_BIG = "ERR Protocol error: too big inline request"
PROTO_UNBALANCED = "ERR Protocol error: unbalanced quotes in request"
PROTO_MBULK_TOO_BIG = "ERR Protocol error: too big mbulk count string"
PROTO_MBULK_INVALID = "ERR Protocol error: invalid multibulk length"
PROTO_MBULK_UNAUTH = "ERR Protocol error: unauthenticated multibulk length"
PROTO_BULK_COUNT_TOO_BIG = "ERR Protocol error: too big bulk count string"
PROTO_EXPECTED_DOLLAR = "ERR Protocol error: expected '$', got '{got}'"
PROTO_BULK_INVALID = "ERR Protocol error: invalid bulk length"
PROTO_BULK_UNAUTH = "ERR Protocol error: unauthenticated bulk length"

# Connections, authentication, HELLO, SELECT, SAVE
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
DB_OUT_OF_RANGE = "ERR DB index is out of range"
SAVE_FAILED = "ERR"  # a failed SAVE / BGSAVE is a bare "-ERR" (Valkey's shared.err)
BGSAVE_IN_PROGRESS = "ERR Background save already in progress"
INTERNAL = "ERR internal error: {what}"  # rstore's: an unexpected exception (logged)
MAXCLIENTS_UNFIT = (  # CONFIG SET maxclients: the reason in CONFIG_SET_FAILED
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

# How INFO commandstats tells a refused call from a failed one (by the start of the line)
REJECTED_PREFIXES = ("ERR wrong number of arguments", "ERR unknown subcommand")
UNKNOWN_COMMAND_PREFIX = "ERR unknown command"


def error(template: str, **kwargs: object) -> ResponseError:
    """Build the ResponseError for ``template`` filled with ``kwargs``."""
    return ResponseError(template.format(**kwargs) if kwargs else template)


def sanitize(text: bytes | str, limit: int | None = None) -> str:
    """Render client bytes inside an error line the way Redis does.

    Redis copies the raw bytes, stops at a NUL byte, and turns CR and LF into spaces (an error
    reply must stay on one line).  Bytes that are not UTF-8 are kept losslessly as surrogates.
    """
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    nul = raw.find(b"\0")
    if nul >= 0:
        raw = raw[:nul]
    if limit is not None:
        raw = raw[:limit]
    return raw.replace(b"\r", b" ").replace(b"\n", b" ").decode("utf-8", "surrogateescape")
