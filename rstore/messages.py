"""Every Redis/Valkey error line rstore can answer with, in one table.

Texts are exactly what Valkey 8.0 sends (without the leading ``-``).  Templates take their
arguments with ``str.format``; :func:`error` builds the :class:`~rstore.errors.ResponseError`.
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
