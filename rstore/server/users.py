"""Users of ``rstore serve``: the ``default`` user (``requirepass``) and users declared with
redis.conf's ``user`` directive, in the subset of ACL rules that covers read-only and
read-write access:

    user alice on >s3cret ~* +@all        # reads and writes
    user bob on >pw ~* +@read             # reads only: a write answers NOPERM
    user default on nopass ~* +@all       # the default: no password

Rules: ``on`` / ``off``, ``>password`` (several allowed), ``nopass``, ``~*`` or ``allkeys``
(every key: the only key pattern), ``+@all`` or ``allcommands``, ``+@read``.  Any other rule is
refused with a one-line error when the settings are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["User", "parse_user", "users_of"]


@dataclass
class User:
    name: str
    enabled: bool = False
    passwords: set[str] = field(default_factory=set)
    nopass: bool = False
    readonly: bool = True  # until +@all

    def accepts(self, password: str) -> bool:
        return self.enabled and (self.nopass or password in self.passwords)


def parse_user(words: list[str]) -> User:
    """A ``user NAME rule ...`` directive (without ``user``); ValueError for what rstore does
    not know."""
    if not words:
        raise ValueError("user needs a name")
    user = User(words[0])
    keys = False
    for rule in words[1:]:
        low = rule.lower()
        if low in ("on", "off"):
            user.enabled = low == "on"
        elif rule.startswith(">"):
            user.passwords.add(rule[1:])
        elif low == "nopass":
            user.nopass = True
        elif low in ("~*", "allkeys"):
            keys = True
        elif low in ("+@all", "allcommands"):
            user.readonly = False
        elif low == "+@read":
            user.readonly = True
        else:
            raise ValueError(
                f"unsupported ACL rule '{rule}' (rstore knows on, off, >password, nopass, ~*, "
                "+@all, +@read)"
            )
    if not keys:
        raise ValueError(f"user {words[0]} needs ~* (rstore users see every key)")
    return user


def users_of(requirepass: str | None, declared: list[list[str]]) -> dict[str, User]:
    """Every user: ``default`` from ``requirepass`` unless declared, then the declared ones."""
    users = {"default": User("default", True, set(), True, False)}
    if requirepass is not None:
        users["default"] = User("default", True, {requirepass}, False, False)
    for words in declared:
        user = parse_user(words)
        users[user.name] = user
    return users
