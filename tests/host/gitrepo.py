"""git for the tests' small repositories: one identity of its own given on
the command line, so a commit works on a machine where git has none
configured (CI's fresh one) and never takes the user's."""

import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(repo: Path, *args: str) -> str:
    """``git -C repo args``: its output, stripped; a failure raises."""
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
