"""Locks on the cache's shared places, for two foliolab commands at once.

The cache has single places that every command uses the same way: the
base's unpack, the build checkout, the scratch worktree a series is tried
in, a Debian package's unpack. Two commands using one of them at once
corrupt it without an error (a base with files missing, one kernel image
built for two series); with these locks the second command waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from collections.abc import Iterator
from pathlib import Path

from foliolab.paths import cache_root


@contextlib.contextmanager
def held(place: Path) -> Iterator[None]:
    """Exclusive use of ``place`` (any path) for the with-block; a second
    holder, in this process or another, waits."""
    key = hashlib.sha256(str(place.resolve()).encode()).hexdigest()[:16]
    path = cache_root() / "locks" / f"{place.name}-{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
