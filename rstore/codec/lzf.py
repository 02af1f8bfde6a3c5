"""LZF compression as Redis uses it for RDB strings (libLZF 3.x, HLOG 16, VERY_FAST, no
ULTRA_FAST), pure functions.

Compressed data is a sequence of tokens, each starting with a control byte ``c``::

    000LLLLL <L+1 bytes>                literal run of 1..32 bytes
    LLLooooo oooooooo                   back-reference: copy L+2 bytes (L 1..6)
    111ooooo LLLLLLLL oooooooo          back-reference: copy L+9 bytes (up to 264)

where the 13-bit ``o`` is the distance minus one (1..8192) to the start of the copy in the
output produced so far; copies may overlap (they repeat the last bytes).

When the optional ``python-lzf`` package is installed (``pip install rstore[fast]``), its C
implementation -- liblzf built with the same settings Redis uses -- does the work; otherwise
the pure-Python port below does, with the same results.
"""

from __future__ import annotations

from rstore.errors import CorruptDataError

__all__ = ["ACCELERATED", "compress", "decompress", "py_compress", "py_decompress"]

try:  # the C implementation, when installed
    import lzf as _lzf
except ImportError:  # pragma: no cover - depends on the environment
    _lzf = None

ACCELERATED = _lzf is not None

_HLOG = 16
_HSIZE = 1 << _HLOG
_MAX_LIT = 32
_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)  # 264


def _hash(v: int) -> int:
    # Redis's liblzf with VERY_FAST: ((v >> 8) - 5 * v) masked to HLOG bits (32-bit math).
    return (((v >> 8) - v * 5) & 0xFFFFFFFF) & (_HSIZE - 1)


def _match_length(data: bytes, ref: int, ip: int) -> int:
    """How many bytes the back-reference at ``ip`` to ``ref`` copies (their first three bytes
    are equal), measured as liblzf measures it: at most ``_MAX_REF``."""
    length = 2
    maxlen = min(len(data) - ip - length, _MAX_REF)
    if maxlen > 16:
        # liblzf compares positions 3..18 unrolled, without the maxlen check
        for k in range(3, 19):
            if data[ref + k] != data[ip + k]:
                return k
        length = 18
    while True:
        length += 1
        if length >= maxlen or data[ref + length] != data[ip + length]:
            return length


def py_compress(data: bytes, max_len: int) -> bytes | None:
    """Compress ``data`` into at most ``max_len`` bytes; ``None`` when it does not fit.

    Reproduces liblzf's choices (and its "does not fit" decision) token for token.
    """
    n = len(data)
    if n == 0 or max_len <= 0:
        return None  # liblzf reports failure (0) for these
    table: dict[int, int] = {}
    out = bytearray(b"\x00")  # reserved header of the current literal run
    lit = 0
    ip = 0
    while ip < n - 2:
        v = (data[ip] << 16) | (data[ip + 1] << 8) | data[ip + 2]
        h = _hash(v)
        ref = table.get(h)
        table[h] = ip
        if ref is not None and ref > 0:
            off = ip - ref - 1
            if off < _MAX_OFF and data[ref : ref + 3] == data[ip : ip + 3]:
                length = _match_length(data, ref, ip)
                # budget check before emitting a back-reference
                if len(out) - (1 if lit == 0 else 0) + 4 >= max_len:
                    return None
                if lit:
                    out[len(out) - lit - 1] = lit - 1
                else:
                    del out[-1]
                k = length - 2
                if k < 7:
                    out.append((off >> 8) + (k << 5))
                else:
                    out.append((off >> 8) + 0xE0)
                    out.append(k - 7)
                out.append(off & 0xFF)
                out.append(0)  # header of the next literal run
                lit = 0
                ip += length
                if ip >= n - 2:
                    break
                for q in (ip - 2, ip - 1):
                    table[_hash((data[q] << 16) | (data[q + 1] << 8) | data[q + 2])] = q
                continue
        if len(out) >= max_len:
            return None
        out.append(data[ip])
        ip += 1
        lit += 1
        if lit == _MAX_LIT:
            out[len(out) - lit - 1] = _MAX_LIT - 1
            out.append(0)
            lit = 0
    if len(out) + 3 > max_len:
        return None
    while ip < n:
        out.append(data[ip])
        ip += 1
        lit += 1
        if lit == _MAX_LIT:
            out[len(out) - lit - 1] = _MAX_LIT - 1
            out.append(0)
            lit = 0
    if lit:
        out[len(out) - lit - 1] = lit - 1
    else:
        del out[-1]
    return bytes(out)


def py_decompress(data: bytes, ulen: int) -> bytes:
    """Decompress ``data``, which must expand to exactly ``ulen`` bytes."""
    out = bytearray()
    ip = 0
    n = len(data)
    while ip < n:
        c = data[ip]
        ip += 1
        if c < 0x20:
            run = c + 1
            if ip + run > n:
                raise CorruptDataError("corrupt LZF data: literal run past the end", ip - 1)
            if len(out) + run > ulen:
                raise CorruptDataError("corrupt LZF data: output longer than declared", ip - 1)
            out += data[ip : ip + run]
            ip += run
            continue
        length = c >> 5
        if length == 7:
            if ip >= n:
                raise CorruptDataError("corrupt LZF data: missing length byte", ip)
            length += data[ip]
            ip += 1
        if ip >= n:
            raise CorruptDataError("corrupt LZF data: missing offset byte", ip)
        start = len(out) - (((c & 0x1F) << 8) | data[ip]) - 1
        ip += 1
        length += 2
        if start < 0:
            raise CorruptDataError("corrupt LZF data: reference before the start", ip - 2)
        if len(out) + length > ulen:
            raise CorruptDataError("corrupt LZF data: output longer than declared", ip - 2)
        if start + length <= len(out):
            out += out[start : start + length]
        else:  # overlapping copy: repeats the last bytes
            for i in range(length):
                out.append(out[start + i])
    if len(out) != ulen:
        raise CorruptDataError(f"corrupt LZF data: {len(out)} bytes, declared {ulen}", n)
    return bytes(out)


def compress(data: bytes, max_len: int) -> bytes | None:
    """Compress into at most ``max_len`` bytes, or ``None`` (Redis then stores ``data`` raw)."""
    if _lzf is None or max_len <= 1:
        return py_compress(data, max_len)
    # python-lzf gives liblzf a budget one byte larger than asked; Redis gives it exactly
    # max_len, and that decides between compressed and raw, so ask for one byte less.
    result: bytes | None = _lzf.compress(data, max_len - 1)
    return result


def decompress(data: bytes, ulen: int) -> bytes:
    """Decompress to exactly ``ulen`` bytes or raise :class:`CorruptDataError`."""
    if _lzf is None:
        return py_decompress(data, ulen)
    try:
        result = _lzf.decompress(data, ulen) if ulen > 0 else b""
    except ValueError as exc:
        raise CorruptDataError("corrupt LZF data") from exc
    if result is None or len(result) != ulen:
        raise CorruptDataError(f"corrupt LZF data: does not expand to the declared {ulen} bytes")
    return bytes(result)
