"""Locks on the cache's shared places, for two foliolab commands at once.

The cache has single places that every command uses the same way: the
base's unpack, the build checkout, the scratch worktree a series is tried
in, a Debian package's unpack. Two commands using one of them at once
corrupt it without an error (a base with files missing, one kernel image
built for two series); with these locks the second command waits.

The machine's guests are such a place too (``guests_here``): two guests
at once share its cores.

A run directory is held another way (``held_for_the_command``): for
the whole command that writes it, by a lock on the directory itself,
and a second command that would write it at the same time is refused
rather than made to wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
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


# the directories this process holds until its command ends: resolved
# path -> the open directory's descriptor the lock is on
_FOR_THE_COMMAND: dict[str, int] = {}


def held_for_the_command(directory: Path, keep: bool = True) -> str | None:
    """Hold ``directory`` (it exists) until ``let_go()`` (the command's
    end) or the process's; None once held (or already held by this
    process), else who holds it ("pid N", as /proc/locks names it).
    ``keep`` False: only asked (a dry run's), let go at once.

    Not waited for, unlike ``held``: what holds a run directory is a run
    writing it, for hours; the second command is told at once. The lock
    is on the directory itself (flock on its descriptor), so holding it
    creates no file anywhere: a command refused later leaves the cache as
    it was. The descriptor is not inherited by the command's children (a
    guest's QEMU), so the lock ends with the command."""
    where = str(directory.resolve())
    if where in _FOR_THE_COMMAND:
        return None
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _flock_holder(fd)
        os.close(fd)
        return holder
    except OSError as e:
        # a file system that locks no directory (NFS: flock needs a file
        # open for writing): the command goes on, unguarded, and says so
        os.close(fd)
        log.warning(
            "%s cannot be locked (%s): a second command could write it "
            "at the same time",
            directory,
            e.strerror or e,
        )
        return None
    if not keep:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        return None
    _FOR_THE_COMMAND[where] = fd
    return None


def holds(directory: Path) -> bool:
    """Whether this command holds ``directory`` (held_for_the_command)."""
    return str(directory.resolve()) in _FOR_THE_COMMAND


def _flock_holder(fd: int) -> str:
    """Who holds the flock on ``fd``'s file, from /proc/locks ("1: FLOCK
    ADVISORY WRITE 9965 fd:01:1234 0 EOF": pid, then device and inode)."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        f = line.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == f"{dev}:{st.st_ino}":
            return f"pid {f[4]}"
    return "a process /proc/locks does not name"


def let_go_of(directory: Path) -> None:
    """``directory`` let go, if this command holds it."""
    fd = _FOR_THE_COMMAND.pop(str(directory.resolve()), None)
    if fd is not None:
        os.close(fd)


def let_go() -> None:
    """Every directory held for the command, let go."""
    for fd in _FOR_THE_COMMAND.values():
        os.close(fd)
    _FOR_THE_COMMAND.clear()
