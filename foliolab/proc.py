"""The one way foliolab runs external commands.

Never ``shell=True``, never ``chdir``: commands get an argv list and a cwd.
Output can be teed to a log file; on failure the caller's error class is
raised with that log path so the user can read the details.
"""

from __future__ import annotations

import logging
import os
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Sequence, Type

from foliolab.errors import FoliolabError

log = logging.getLogger("foliolab")


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    input: str | None = None,
    timeout: float | None = None,
    check: bool = True,
    error: Type[FoliolabError] = FoliolabError,
    what: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; return the CompletedProcess (stdout as text).

    With ``log_path`` stdout and stderr go to that file instead of being
    captured. With ``check`` a non-zero exit raises ``error`` whose message
    names ``what`` (default: the command).
    """
    args = [str(a) for a in argv]
    log.debug("$ %s", shlex.join(args))
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    try:
        if log_path:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "w") as out:
                out.write(f"$ {shlex.join(args)}\n")
                out.flush()
                cp = subprocess.run(
                    args,
                    cwd=cwd,
                    env=full_env,
                    input=input,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout,
                )
        else:
            cp = subprocess.run(
                args,
                cwd=cwd,
                env=full_env,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
    except FileNotFoundError as e:
        raise error(
            f"command not found: {args[0]}",
            hint="run `make setup` to install host packages",
        ) from e
    except subprocess.TimeoutExpired as e:
        raise error(
            f"{what or args[0]} timed out after {timeout:.0f} s",
            log_path=log_path,
        ) from e
    if check and cp.returncode != 0:
        detail = ""
        if not log_path:
            tail = (cp.stderr or cp.stdout or "").strip().splitlines()
            detail = f": {tail[-1]}" if tail else ""
        raise error(
            f"{what or shlex.join(args)} failed "
            f"(exit {cp.returncode}){detail}",
            log_path=log_path,
        )
    return cp


@dataclass(frozen=True)
class Finished:
    """How a long-running command ended (see ``run_until``)."""

    returncode: int
    timed_out: bool
    elapsed: float  # wall seconds
    cpu_s: float  # its user + system CPU time


def children_cpu_s() -> float:
    """The user + system CPU seconds of every child this process has
    waited for so far: a command's own, as the difference before and
    after it (one command at a time)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_until(
    argv: Sequence[str | os.PathLike[str]],
    *,
    output: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    grace: float = 0.0,
    error: Type[FoliolabError] = FoliolabError,
) -> Finished:
    """Run ``argv`` with stdout and stderr to ``output`` until it exits or
    ``timeout`` seconds pass. Out of time, it is ended (``grace`` > 0:
    SIGTERM first, for a command that cleans up after itself, then
    SIGKILL). If the caller is interrupted (Ctrl-C, a stop signal), the
    command is ended the same way and the interruption goes on. One such
    command at a time, so the children's CPU time is its own."""
    args = [str(a) for a in argv]
    log.debug("$ %s", shlex.join(args))
    cpu0 = children_cpu_s()
    t0 = time.monotonic()
    with open(output, "w") as out:
        p = _popen(args, out, env, error)
        timed_out = False
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc, timed_out = _end(p, grace), True
        except BaseException:
            _end(p, grace)
            raise
    cpu = children_cpu_s() - cpu0
    return Finished(rc, timed_out, time.monotonic() - t0, round(cpu, 2))


def run_lines(
    argv: Sequence[str | os.PathLike[str]],
    *,
    log_path: Path,
    on_line: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    error: Type[FoliolabError] = FoliolabError,
) -> int:
    """Run ``argv`` with its output (stdout and stderr) written to
    ``log_path`` and handed to ``on_line`` a line at a time, for progress;
    return its exit code. An interruption of the caller ends it."""
    args = [str(a) for a in argv]
    log.debug("$ %s", shlex.join(args))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as logf:
        logf.write(f"$ {shlex.join(args)}\n")
        p = _popen(args, subprocess.PIPE, env, error, text=True)
        assert p.stdout is not None  # stdout=PIPE
        try:
            for line in p.stdout:
                logf.write(line)
                on_line(line)
            return p.wait()
        except BaseException:
            _end(p, 0.0)
            raise


def _popen(
    args: list[str],
    stdout: IO[str] | int,
    env: Mapping[str, str] | None,
    error: Type[FoliolabError],
    *,
    text: bool = False,
) -> subprocess.Popen[Any]:
    """Start ``args`` in the background, with no input and its stderr
    joined to ``stdout``, in our environment plus ``env``; a command that
    is not installed raises ``error``."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            text=text,
            env=full_env,
        )
    except FileNotFoundError as e:
        raise error(
            f"command not found: {args[0]}",
            hint="run `make setup` to install host packages",
        ) from e


def _end(p: subprocess.Popen[Any], grace: float) -> int:
    if grace > 0:
        p.terminate()
        try:
            return p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    p.kill()
    return p.wait()
