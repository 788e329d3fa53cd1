"""Typed errors. Library code raises these; only cli.py prints them.

Every error renders as one line that names what went wrong and what to do,
optionally followed by the path of a log that holds the details.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any


class FoliolabError(Exception):
    """Base class; ``exit_code`` tells the shell which stage failed."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        log_path: Path | str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.log_path = Path(log_path) if log_path else None

    def one_line(self) -> str:
        parts = [self.message]
        if self.log_path:
            parts.append(f"log: {self.log_path}")
        if self.hint:
            parts.append(self.hint)
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.one_line()


class UsageError(FoliolabError):
    """Bad command-line input (unknown workload, bad option value)."""

    exit_code = 2


class SetupError(FoliolabError):
    """Host setup failed (apt package, missing tool)."""

    exit_code = 3


class SourceError(FoliolabError):
    """Kernel tree preparation failed."""

    exit_code = 4


class PatchApplyError(SourceError):
    """A patch of the series does not apply to the base."""


class ConfigError(FoliolabError):
    """Kernel configuration could not be produced as requested."""

    exit_code = 12


class BuildError(FoliolabError):
    """Kernel or guest binaries failed to build."""

    exit_code = 5


class ImageError(FoliolabError):
    """The initramfs could not be assembled."""

    exit_code = 6


class BootError(FoliolabError):
    """QEMU could not be started, or the guest panicked or hung."""

    exit_code = 7


class BenchmarkError(FoliolabError):
    """A comparison ran but some of its samples failed."""

    exit_code = 8


class LavaError(FoliolabError):
    """A LAVA job could not be written, run, submitted or read."""

    exit_code = 9


class StoppedError(FoliolabError):
    """A run stopped by SIGTERM or SIGINT: the report of what finished is
    written, and ``compare --resume`` finishes the rest."""

    exit_code = 10


class DamagedRunError(FoliolabError):
    """A run directory whose files cannot be read as a foliolab run."""

    exit_code = 11


class HistoryError(FoliolabError):
    """A patch of the series brings back code that the base's stable
    history removed (``foliolab check --since``)."""

    exit_code = 13


class SystemRefusedError(FoliolabError):
    """The operating system refused a file operation the command needed
    (disk full, read-only file system, a name too long, no permission):
    cli.py turns any OSError that reaches it into this one line."""

    exit_code = 16


class Stop(BaseException):
    """Raised in the main thread by a stop signal while a run measures (a
    BaseException, like KeyboardInterrupt, so no handler of errors takes
    it for one)."""

    def __init__(self, signame: str) -> None:
        super().__init__(signame)
        self.signame = signame


# Set once a stop signal (or Ctrl-C) has been turned into an exception:
# what follows is the shutdown (the report of what finished, the record
# marked stopped), and a second signal, which a process-group kill or an
# impatient second Ctrl-C sends, must not cut it short half-written.
_stopping = False

# The signals that stop a command: SIGHUP too (the terminal went away),
# whose default would end the process without a word or a record.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping:
        return  # already stopping: let the shutdown finish
    _stopping = True
    raise Stop(signal.Signals(signum).name)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C outside a measuring run: KeyboardInterrupt, as Python's
    own, but once."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM and SIGHUP end any command as SIGINT does, in one line
    printed by cli.py (their default would end the process without a
    word); a second signal while the first is handled is ignored; the
    process's own handlers are back afterwards."""
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopping = False
    handlers = {
        signal.SIGTERM: _raise_stop,
        signal.SIGHUP: _raise_stop,
        signal.SIGINT: _interrupt,
    }
    old = _take(handlers)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _take(handlers: dict[signal.Signals, Any]) -> dict[signal.Signals, Any]:
    """Install ``handlers``, each but on a signal the process was started
    ignoring (`nohup` ignores SIGHUP; a script's background job, SIGINT):
    the user asked for the run to go on through it. The old handlers."""
    old = {}
    for s, h in handlers.items():
        if signal.getsignal(s) is not signal.SIG_IGN:
            old[s] = signal.signal(s, h)
    return old


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP stop the run: they raise Stop where the
    run is, so the boot under way is ended and what finished is
    reported. A new run's stop: a stop handled before (another run in
    this process) no longer makes a signal one to ignore."""
    global _stopping
    _stopping = False
    old = _take({s: _raise_stop for s in STOP_SIGNALS})
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


class DiagnosticsError(FoliolabError):
    """The robot's checks (``foliolab check --robot``) found diagnostics
    that a patch of the series adds."""

    exit_code = 14


class ExportError(FoliolabError):
    """A run's results cannot be written in another system's format: the
    document made from them is refused by that format's schema (``report
    --kcidb``), and nothing is written."""

    exit_code = 15
