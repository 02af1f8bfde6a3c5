"""Enumerations of a command's keywords (XADD's reference policies, XNACK's modes): each
member's value is its keyword in lower case."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

__all__ = ["KeywordEnum"]

K = TypeVar("K", bound="KeywordEnum")


class KeywordEnum(Enum):
    """Members whose values are lower-case keywords (``bytes``)."""

    @classmethod
    def parse(cls: type[K], keyword: bytes) -> K | None:
        """The member a lower-cased keyword names, or ``None``."""
        for member in cls:
            if member.value == keyword:
                return member
        return None
