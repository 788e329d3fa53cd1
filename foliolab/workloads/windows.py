"""The counting windows: every registered workload's, gathered here.

Under the counter plugin (``--count``) the kernel work between a
window's begin and end marks is counted exactly (FL_MARK_BEGIN/END in
common/common.h; ``flmark begin|end TAG`` from a guest script). Each
workload folder declares the window its workloads mark (a model.Window
in its workload.py, their ``window``); RUN, foliolab run's and test's,
is declared here. No two windows may claim one tag.

The C programs and the guest scripts read the same numbers from files
generated here: the workloads' Makefile writes ``fl_windows.h`` with
``python3 -m foliolab.workloads.windows c`` (run from the checkout), and
the image builder puts ``shell()`` into the guest as /foliolab/windows.sh,
which lib.sh sources.

A window is the machine's, not a task's: its begin and end markers take
the plugin's counters summed over every vCPU, so whatever ran between
them is in it, in any task, kernel thread or interrupt. A workload of N
tasks (processes or threads) therefore marks its measured phase once,
from the task that starts and stops the others, and the window holds
the kernel work of all N, on whichever vCPU each ran. A begin while the
window is open starts it over (the plugin takes a new snapshot), so the
tasks themselves must not each mark it: there is no per-task window to
add up. Setup before the begin and teardown after the end are left out
by where the marks stand, which each workload's program says.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from foliolab.workloads import WORKLOADS
from foliolab.workloads.model import Window, Workload

# foliolab run --count, test --count: the command
RUN = Window(0, "RUN", "the command of foliolab run or test --count")

# flmark has one marker instruction per tag, for tags 0-15 (common/flmark.c).
FLMARK_TAGS = 16


def gather(workloads: Iterable[Workload]) -> list[Window]:
    """RUN and the workloads' windows, each once, by tag; ValueError for
    two windows of one tag or of one name, or a tag flmark cannot mark."""
    by_tag: dict[int, Window] = {int(RUN): RUN}
    for w in workloads:
        if not isinstance(w.window, Window):
            continue  # the workload counts no window
        mine = by_tag.setdefault(int(w.window), w.window)
        if mine.name != w.window.name:
            raise ValueError(
                f"windows {mine.name} and {w.window.name} "
                f"both claim tag {int(mine)} ({w.name})"
            )
    names = [win.name for win in by_tag.values()]
    if len(set(names)) != len(names):
        raise ValueError(f"two windows of one name: {sorted(names)}")
    for win in by_tag.values():
        if not 0 <= win < FLMARK_TAGS:
            raise ValueError(
                f"window {win.name}: tag {int(win)} is not 0-{FLMARK_TAGS - 1}"
            )
    return sorted(by_tag.values())


# Every window, by tag.
WINDOWS = gather(WORKLOADS.values())


def c_header() -> str:
    """fl_windows.h: a #define per window."""
    lines = [
        "/* Generated from foliolab/workloads/windows.py: edit that. */",
        "#ifndef FL_WINDOWS_H",
        "#define FL_WINDOWS_H",
    ]
    lines += [f"#define FL_WIN_{w.name}\t{int(w)}" for w in WINDOWS]
    return "\n".join(lines + ["#endif", ""])


def shell() -> str:
    """windows.sh: a variable per window."""
    lines = ["# Generated from foliolab/workloads/windows.py: edit that."]
    lines += [f"FL_WIN_{w.name}={int(w)}" for w in WINDOWS]
    return "\n".join(lines + [""])


if __name__ == "__main__":
    if sys.argv[1:] not in (["c"], ["sh"]):
        sys.exit("usage: python3 -m foliolab.workloads.windows c|sh")
    sys.stdout.write(c_header() if sys.argv[1] == "c" else shell())
