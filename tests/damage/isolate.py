"""Run a battery in a forked child, so that a signal or a hang ends the child and not the run.

The parent has already imported rstore and built the truth, so a fork costs milliseconds.  The
child sends one JSON line per event through a pipe (``start`` before each step, ``record``
after it), so a crash or a hang is attributed to the step that was running.  Its stdout and
stderr go to a temporary file (LMDB's assertion text and faulthandler's Python traceback land
there); its core dumps are off and its address space is capped, so a damaged length asking for
gigabytes raises ``MemoryError`` rather than eating the shared machine.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import resource
import select
import signal
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from .battery import Recorder, StepRecord

#: Headroom of address space the child may add to what it inherited.
ADDRESS_SPACE_HEADROOM = 4 << 30


@dataclass
class ChildResult:
    """What the parent learnt about one child."""

    records: list[StepRecord] = field(default_factory=list)
    running: str | None = None  # the step started and never finished
    finished: bool = False  # the body returned and the child said so
    signal: str | None = None  # the signal that killed the child (not counting our own kill)
    exit_code: int | None = None
    hung: bool = False
    harness_error: str | None = None
    stderr: str = ""  # the start of what the child wrote to stdout and stderr
    seconds: float = 0.0


class _PipeRecorder:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def _send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data) :]

    def start(self, step: str) -> None:
        self._send({"start": step})

    def done(self, record: StepRecord) -> None:
        self._send({"record": record})

    def end(self) -> None:
        self._send({"end": True})


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with open("/proc/self/status") as f:
        vm = next((line for line in f if line.startswith("VmSize:")), "VmSize: 0 kB")
    now = int(vm.split()[1]) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = now + ADDRESS_SPACE_HEADROOM
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if soft == resource.RLIM_INFINITY or soft > wanted:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _child(body: Callable[[Recorder], None], write_fd: int, err: IO[bytes]) -> NoReturn:
    """In the child: never returns."""
    code = 0
    recorder = _PipeRecorder(write_fd)
    try:
        os.dup2(err.fileno(), 1)
        os.dup2(err.fileno(), 2)
        faulthandler.enable(file=err, all_threads=False)
        _limit_child()
        body(recorder)
        recorder.end()
    except BaseException:
        code = 3
        with contextlib.suppress(BaseException):
            recorder._send({"harness-error": traceback.format_exc()[-2000:]})
    os._exit(code)


def _fork() -> int:
    # Python 3.12 warns when a multi-threaded process forks; the child runs only this module's
    # code and rstore (whose locks are reset after a fork), and leaves with os._exit.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def run_in_child(body: Callable[[Recorder], None], timeout: float) -> ChildResult:
    """Run ``body(recorder)`` in a forked child; kill it after ``timeout`` seconds."""
    result = ChildResult()
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile() as err:
        pid = _fork()
        if pid == 0:
            os.close(read_fd)
            _child(body, write_fd, err)
        os.close(write_fd)
        data, result.hung = _collect(read_fd, started + timeout)
        os.close(read_fd)
        if result.hung:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        result.seconds = time.monotonic() - started
        if os.WIFSIGNALED(status) and not result.hung:
            result.signal = signal.Signals(os.WTERMSIG(status)).name
        elif os.WIFEXITED(status):
            result.exit_code = os.WEXITSTATUS(status)
        err.seek(0)
        result.stderr = err.read(8000).decode(errors="replace")  # the reason comes first
    _parse(data, result)
    return result


def _collect(fd: int, deadline: float) -> tuple[bytes, bool]:
    """What the child sent until it closed the pipe, or until the deadline (then ``True``)."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)


def _parse(data: bytes, result: ChildResult) -> None:
    for line in data.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue  # a line cut by the child's death
        if "start" in message:
            result.running = message["start"]
        elif "record" in message:
            result.records.append(message["record"])
            result.running = None
        elif "end" in message:
            result.finished = True
        elif "harness-error" in message:
            result.harness_error = message["harness-error"]


def crash_summary(stderr: str) -> str:
    """The lines of a dead child's stderr that say why: LMDB's assertion, Python's fatal error
    and the innermost Python frame faulthandler printed."""
    lines = stderr.splitlines()
    keep = [line.strip() for line in lines if "Assertion" in line or "Fatal Python" in line]
    for i, line in enumerate(lines):
        if "most recent call first" in line and i + 1 < len(lines):
            keep.append(lines[i + 1].strip())
            break
    return " | ".join(keep)[:400]
