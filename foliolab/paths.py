"""Where things live: the project checkout and the cache outside git."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
GUEST_DIR = Path(__file__).resolve().parent / "guest"
CONFIGS_DIR = PROJECT_ROOT / "configs"
WORKLOADS_DIR = PROJECT_ROOT / "workloads"
GUEST_TESTS_DIR = PROJECT_ROOT / "tests" / "guest"
DEFAULT_PATCHES = PROJECT_ROOT / "patches" / "6.12"


def cache_root() -> Path:
    """Kernel trees, builds, images and ccache: large, rebuildable, not in git.

    ``FOLIOLAB_CACHE`` overrides; otherwise ``$XDG_CACHE_HOME/foliolab``.
    """
    if os.environ.get("FOLIOLAB_CACHE"):
        return Path(os.environ["FOLIOLAB_CACHE"]).resolve()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(xdg).resolve() / "foliolab"
