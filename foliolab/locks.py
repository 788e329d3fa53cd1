"""Locks on the cache's shared places, for two foliolab commands at once.

The cache has single places that every command uses the same way: the
base's unpack, the build checkout, the scratch worktree a series is tried
in, a Debian package's unpack. Two commands using one of them at once
corrupt it without an error (a base with files missing, one kernel image
built for two series); with these locks the second command waits.

The machine's guests are such a place too (``guests_here``): two guests
at once share its cores.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path

from foliolab.paths import cache_root

log = logging.getLogger("foliolab")


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


# The machine's guests: one at a time, whichever command boots them.
GUESTS_HERE = "guests-here.lock"


@contextlib.contextmanager
def guests_here() -> Iterator[float]:
    """This machine's turn to run a guest, for the with-block; yields the
    seconds waited for it.

    Two commands' guests side by side on the machine's cores slow each
    other: a time-limited selftest then fails, and every time a compare
    measures is skewed. So every boot QEMU runs here takes this one
    lock; a second boot, of this process or another, waits without a
    limit (a boot's own timeout starts once QEMU does).

    flock: the kernel lets go of the lock when the file closes, so a
    command that dies (killed, out of memory) never leaves a stale lock
    behind, and there is nothing to clean up. Who holds it, flock does
    not say.
    """
    path = cache_root() / "locks" / GUESTS_HERE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        t0 = time.monotonic()
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning(
                "waiting for another foliolab guest on this machine to end"
            )
            fcntl.flock(f, fcntl.LOCK_EX)
        yield round(time.monotonic() - t0, 2)
