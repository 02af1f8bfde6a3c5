"""Warnings (and notes) written to the ``logging`` module, which is imported by the first one:
it costs about 5 ms to import, which every CLI start would pay for warnings it almost never
writes (``bench/cli_startup.py``).  The logger names are the ones a user configures; the storage
layer writes to :data:`STORAGE`."""

from __future__ import annotations

__all__ = ["STORAGE", "info", "warn"]

#: The storage layer's logger: checkpoints, recovery, wake-ups, compaction, opening.
STORAGE = "rstore.storage"


def warn(logger: str, message: str, *args: object) -> None:
    """``logging.getLogger(logger).warning(message, *args)``."""
    import logging  # noqa: PLC0415 -- on the first warning, not at start-up

    logging.getLogger(logger).warning(message, *args)


def info(logger: str, message: str, *args: object) -> None:
    """``logging.getLogger(logger).info(message, *args)``."""
    import logging  # noqa: PLC0415 -- on the first note, not at start-up

    logging.getLogger(logger).info(message, *args)
