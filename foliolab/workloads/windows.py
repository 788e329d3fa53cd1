"""The counting windows: the one list of their tags.

Under the counter plugin (``--count``) the kernel work between a
window's begin and end marks is counted exactly (FL_MARK_BEGIN/END in
common/common.h; ``flmark begin|end TAG`` from a guest script). A tag
names what a window holds; a workload's ``window`` is one of these.

The C programs and the guest scripts read the same numbers from files
generated here: the workloads' Makefile writes ``fl_windows.h`` with
``python3 windows.py c`` (so this module imports nothing of foliolab's),
and the image builder puts ``shell()`` into the guest as
/foliolab/windows.sh, which lib.sh sources.
"""

from __future__ import annotations

import sys
from enum import IntEnum


class Window(IntEnum):
    """FL_WIN_<NAME> in C and in the guest's shell."""

    RUN = 0          # foliolab run --count, test --count: the command
    PAGEOUT = 1      # madvise(MADV_PAGEOUT)
    RECLAIM = 2      # write to memory.reclaim
    STRESS = 3       # the stress-ng run (flmark)
    KHUGEPAGED = 4   # hot1, cold, hot2 (flmark)
    MOVE = 5         # move_pages() of the KSM pages


# flmark has one marker instruction per tag, for tags 0-15 (common/flmark.c).
FLMARK_TAGS = 16


def c_header() -> str:
    """fl_windows.h: a #define per window."""
    lines = ["/* Generated from foliolab/workloads/windows.py: edit that. */",
             "#ifndef FL_WINDOWS_H", "#define FL_WINDOWS_H"]
    lines += [f"#define FL_WIN_{w.name}\t{w.value}" for w in Window]
    return "\n".join(lines + ["#endif", ""])


def shell() -> str:
    """windows.sh: a variable per window."""
    lines = ["# Generated from foliolab/workloads/windows.py: edit that."]
    lines += [f"FL_WIN_{w.name}={w.value}" for w in Window]
    return "\n".join(lines + [""])


if __name__ == "__main__":
    if sys.argv[1:] not in (["c"], ["sh"]):
        sys.exit("usage: python3 windows.py c|sh")
    sys.stdout.write(c_header() if sys.argv[1] == "c" else shell())
