"""The rstore version, and the Redis version whose stream commands it implements."""

__version__ = "0.1.0"

#: The newest Redis whose stream commands rstore implements in full (its replies, errors and
#: lag rules; docs/semantics.md): what ``rstore serve`` reports as ``redis_version`` (INFO) and
#: ``version`` (HELLO), so that clients enable what works.
REDIS_VERSION = "8.10.0"
