"""Start and stop a throw-away valkey-server on a free loopback port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from .resp import ErrorReply, RespClient

__all__ = ["ValkeyServer", "find_server_binary"]

HOST = "127.0.0.1"
DEFAULT_PORT = 6379


def find_server_binary() -> str | None:
    """The valkey-server to use: ``$RSTORE_ORACLE_SERVER`` if set, else the one on PATH."""
    override = os.environ.get("RSTORE_ORACLE_SERVER")
    if override:
        return shutil.which(override)
    return shutil.which("valkey-server")


def _free_port() -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port != DEFAULT_PORT:
            return port


class ValkeyServer:
    """A valkey-server child process without persistence, listening on loopback only."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Path = workdir / "valkey.log"

    def start(self, attempts: int = 5) -> None:
        last_error = "not started"
        for _ in range(attempts):
            self.port = _free_port()
            argv = [self.binary, "--port", str(self.port), "--bind", HOST]
            argv += ["--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
            with self._log.open("ab") as log:
                self._proc = subprocess.Popen(
                    argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            if self._wait_ready():
                return
            last_error = self._log.read_text(errors="replace")[-2000:]
            self.stop()
        raise RuntimeError(f"valkey-server did not start: {last_error}")

    def _wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                with RespClient(HOST, self.port, timeout=2.0) as client:
                    reply = client.execute("PING")
                if reply == "PONG":
                    return True
                if not isinstance(reply, ErrorReply):
                    return False
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def client(self) -> RespClient:
        return RespClient(HOST, self.port)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        else:
            proc.wait()
