"""Glob-style matching exactly as Redis's ``stringmatchlen`` does it (KEYS, SCAN MATCH, CONFIG GET).

Binary safe.  ``*`` any run, ``?`` one byte, ``[abc]`` / ``[^abc]`` / ``[a-z]`` classes (a
reversed range is swapped; bytes compare as C ``char``, i.e. signed), ``\\x`` a literal byte.
An unterminated ``[`` class ends at the end of the pattern.  Patterns nesting more than 1000
``*`` levels match nothing, as in Redis.
"""

from __future__ import annotations

__all__ = ["key_matches", "match"]

_MAX_NESTING = 1000


def _signed(c: int) -> int:
    return c - 256 if c >= 128 else c


class _NoMatchFurther(Exception):
    """Raised to stop trying longer matches for earlier ``*`` (Redis's skipLongerMatches)."""


def match(pattern: bytes, string: bytes) -> bool:
    """Whether ``string`` matches the glob ``pattern``."""
    try:
        return _match(pattern, 0, string, 0, 0)
    except (_NoMatchFurther, RecursionError):
        return False


def _match(pat: bytes, p: int, s: bytes, i: int, nesting: int) -> bool:
    if nesting > _MAX_NESTING:
        return False
    plen = len(pat)
    slen = len(s)

    def pc(k: int) -> int:  # the pattern is NUL-terminated in C
        return pat[k] if k < plen else 0

    while p < plen and i < slen:
        c = pat[p]
        if c == 0x2A:  # '*'
            while p + 1 < plen and pat[p + 1] == 0x2A:
                p += 1
            if p == plen - 1:
                return True
            while i < slen:
                if _match(pat, p + 1, s, i, nesting + 1):
                    return True
                i += 1
            raise _NoMatchFurther
        if c == 0x3F:  # '?'
            i += 1
        elif c == 0x5B:  # '['
            p += 1
            negate = pc(p) == 0x5E  # '^'
            if negate:
                p += 1
            matched = False
            ch = s[i]
            while True:
                cur = pc(p)
                if cur == 0x5C and plen - p >= 2:  # '\\'
                    p += 1
                    if pc(p) == ch:
                        matched = True
                elif cur == 0x5D:  # ']'
                    break
                elif p >= plen:
                    p -= 1
                    break
                elif plen - p >= 3 and pc(p + 1) == 0x2D:  # 'a-z'
                    lo, hi = _signed(cur), _signed(pc(p + 2))
                    if lo > hi:
                        lo, hi = hi, lo
                    p += 2
                    if lo <= _signed(ch) <= hi:
                        matched = True
                elif cur == ch:
                    matched = True
                p += 1
            if negate:
                matched = not matched
            if not matched:
                return False
            i += 1
        else:
            if c == 0x5C and plen - p >= 2:  # escaped literal
                p += 1
                c = pat[p]
            if c != s[i]:
                return False
            i += 1
        p += 1
        if i == slen:
            while pc(p) == 0x2A:
                p += 1
            break
    return p >= plen and i == slen


def key_matches(pattern: bytes, key: bytes) -> bool:
    """Whether ``key`` matches the KEYS-style glob ``pattern`` (public as
    ``rstore.key_matches``)."""
    return match(pattern, key)
