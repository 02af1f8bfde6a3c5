"""A minimal RESP2 client whose replies have exactly the shapes of ``Store.execute_raw``.

bulk -> ``bytes``, status -> ``str``, integer -> ``int``, nil bulk -> ``None``, nil array ->
:data:`rstore.NIL_ARRAY`, array -> ``list``.  An error reply is *returned* (not raised) as an
:class:`ErrorReply`, so a test can compare "valkey refused with X" with "rstore refused with X"
as plain values.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from rstore import NIL_ARRAY

__all__ = ["ErrorReply", "RespClient", "encode_command"]

Arg = str | bytes | int


@dataclass(frozen=True)
class ErrorReply:
    """A refused command: ``message`` is the error line without the leading ``-``."""

    message: str

    def __str__(self) -> str:
        return self.message


def _arg_bytes(arg: Arg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, int):
        return b"%d" % arg
    return arg.encode("utf-8", "surrogateescape")


def encode_command(argv: tuple[Arg, ...] | list[Arg]) -> bytes:
    """RESP2 multi-bulk request for ``argv``."""
    parts = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        raw = _arg_bytes(arg)
        parts.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(parts)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class RespClient:
    """One blocking connection to a RESP2 server."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._file = self._sock.makefile("rb")

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def fileno(self) -> int:
        """The socket's descriptor, for ``select`` on a reply still to come (valid while no
        reply has been read ahead of it)."""
        return self._sock.fileno()

    def __enter__(self) -> RespClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, *argv: Arg) -> Any:
        """Send one command and read its reply."""
        self.send(*argv)
        return self.receive()

    def send(self, *argv: Arg) -> None:
        """Send a command without waiting (a blocking XREAD's reply is read later)."""
        self._sock.sendall(encode_command(argv))

    def send_all(self, commands: list[tuple[Arg, ...]]) -> None:
        """Send several commands in ONE write, as a client that pipelines them does."""
        self._sock.sendall(b"".join(encode_command(argv) for argv in commands))

    def receive(self) -> Any:
        """Read the next reply."""
        return self._read()

    def _line(self) -> bytes:
        line = self._file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError(f"connection closed or bad reply line: {line!r}")
        return line[:-2]

    def _read(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return _text(rest)
        if kind == b"-":
            return ErrorReply(_text(rest))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._file.read(size + 2)
            if len(data) != size + 2 or not data.endswith(b"\r\n"):
                raise ConnectionError("short bulk reply")
            return data[:-2]
        if kind == b"*":
            count = int(rest)
            if count < 0:
                return NIL_ARRAY
            return [self._read() for _ in range(count)]
        raise ConnectionError(f"unexpected RESP2 reply line: {line!r}")
