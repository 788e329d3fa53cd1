"""Where things live: the project checkout and the cache outside git."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from foliolab.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
GUEST_DIR = Path(__file__).resolve().parent / "guest"
CONFIGS_DIR = PROJECT_ROOT / "configs"
# The workloads' folders and their Makefile (C, guest scripts, Python)
WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"
GUEST_TESTS_DIR = PROJECT_ROOT / "tests" / "guest"
DEFAULT_PATCHES = PROJECT_ROOT / "patches" / "6.12"


def user_path(text: str | Path, what: str) -> Path:
    """``text`` as a path, ``~`` and ``~user`` expanded; a user this
    machine does not have is ``what``'s UsageError (Python's expanduser
    raises RuntimeError for it), not a traceback."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        user = str(text).split("/", 1)[0]
        raise UsageError(
            f"{what} {text}: there is no user {user[1:]!r}",
            hint="give the path in full, or ~/ for your own home",
        ) from None


def cache_root() -> Path:
    """Kernel trees, builds, images and ccache: large, rebuildable, not in git.

    ``FOLIOLAB_CACHE`` overrides; otherwise ``$XDG_CACHE_HOME/foliolab``.
    """
    if os.environ.get("FOLIOLAB_CACHE"):
        return Path(os.environ["FOLIOLAB_CACHE"]).resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(xdg).resolve() / "foliolab"


def _missing_top(path: Path) -> Path | None:
    """The outermost directory of ``path`` that does not exist yet."""
    top = None
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            break
        top = p
    return top


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be made a directory to write in, or None.

    Tried for real (os.access says yes to root on /proc): the missing
    directories are made, a file is written in the last, and all of it is
    removed again, so nothing is left behind either way.
    """
    path = path.expanduser().absolute()
    top = _missing_top(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        return _why(path, e)
    finally:
        if top is not None:
            _remove_made(path, top)
    return None


def _why(path: Path, e: OSError) -> str:
    """What stopped ``path`` being a directory to write in, in words."""
    have = next(p for p in (path, *path.parents) if p.exists())
    if not have.is_dir():
        return f"{have} is a file, not a directory"
    if have == path:
        return f"{path} cannot be written ({e.strerror})"
    return f"no directory can be made in {have} ({e.strerror})"


def _remove_made(path: Path, top: Path) -> None:
    """rmdir ``path`` and its parents up to ``top`` (made by unwritable)."""
    for p in (path, *path.parents):
        try:
            if p.is_dir():
                p.rmdir()
        except OSError:
            return
        if p == top:
            return
