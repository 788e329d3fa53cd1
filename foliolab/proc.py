"""The one way foliolab runs external commands.

Never ``shell=True``, never ``chdir``: commands get an argv list and a cwd.
Output can be teed to a log file; on failure the caller's error class is
raised with that log path so the user can read the details.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from pathlib import Path
from typing import Mapping, Sequence, Type

from foliolab.errors import FoliolabError

log = logging.getLogger("foliolab")


def run(argv: Sequence[str | os.PathLike], *, cwd: Path | None = None,
        env: Mapping[str, str] | None = None, log_path: Path | None = None,
        input: str | None = None, timeout: float | None = None,
        check: bool = True, error: Type[FoliolabError] = FoliolabError,
        what: str | None = None) -> subprocess.CompletedProcess:
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
                cp = subprocess.run(args, cwd=cwd, env=full_env, input=input,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    text=True, timeout=timeout)
        else:
            cp = subprocess.run(args, cwd=cwd, env=full_env, input=input,
                                capture_output=True, text=True,
                                timeout=timeout)
    except FileNotFoundError as e:
        raise error(f"command not found: {args[0]}",
                    hint="run `make setup` to install host packages") from e
    except subprocess.TimeoutExpired as e:
        raise error(f"{what or args[0]} timed out after {timeout:.0f} s",
                    log_path=log_path) from e
    if check and cp.returncode != 0:
        detail = ""
        if not log_path:
            tail = (cp.stderr or cp.stdout or "").strip().splitlines()
            detail = f": {tail[-1]}" if tail else ""
        raise error(f"{what or shlex.join(args)} failed "
                    f"(exit {cp.returncode}){detail}", log_path=log_path)
    return cp
