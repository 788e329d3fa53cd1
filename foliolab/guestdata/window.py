"""What a sample's timed window cost, as mmtests' compare-kernels shows
it per kernel: the workload's User, System and Elapsed time and the vmstat
counters reclaim is judged by.

Read from the records every workload ships around its window (lib.sh's
fl_snap): ``vmstat.before``/``vmstat.after`` since the first run, and
``times.before``/``times.after`` (the shell's ``times`` and the uptime)
since they were added. A sample from before them has its counters and no
times: the report says "-" for those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample

# The counters of /proc/vmstat reclaim is judged by (mmtests' "Swap Ins",
# "Swap Outs", "Direct pages scanned", "Kswapd pages scanned", "Direct
# pages reclaimed", "Kswapd pages reclaimed"), and MADV_FREE's drops.
RECLAIM_COUNTERS = (
    "pswpin",
    "pswpout",
    "pgscan_direct",
    "pgscan_kswapd",
    "pgsteal_direct",
    "pgsteal_kswapd",
    "pglazyfreed",
)
# THP's counters all start so; only those that moved are kept (most are
# 0 outside the THP workloads, and there are two dozen).
THP_PREFIX = "thp_"

# One line of `times`: user and system time as "XmY.Zs" (dash and
# busybox ash print 6 and 3 decimals).
_TIMES = re.compile(r"^(\d+)m(\d+(?:\.\d+)?)s (\d+)m(\d+(?:\.\d+)?)s$")


@dataclass(frozen=True)
class ShellTimes:
    """One ``times.TAG`` record: the waited-for children's CPU times and
    the uptime, in seconds."""

    children_user_s: float
    children_sys_s: float
    uptime_s: float


def parse_times(text: str) -> ShellTimes | None:
    """A ``times.TAG`` record (`times`' two lines, the shell's then its
    children's, and ``uptime SECONDS``); None if it is not one."""
    lines = text.splitlines()
    if len(lines) < 3:
        return None
    children = _TIMES.match(lines[1].strip())
    name, _, up = lines[2].partition(" ")
    if children is None or name != "uptime":
        return None
    try:
        uptime = float(up)
    except ValueError:
        return None
    um, us, sm, ss = children.groups()
    return ShellTimes(
        60 * int(um) + float(us), 60 * int(sm) + float(ss), uptime
    )


@dataclass
class TimedWindow:
    """A sample's window: User, System and Elapsed time (None where the
    guest did not record them) and the reclaim counters' deltas."""

    user_s: float | None = None
    sys_s: float | None = None
    elapsed_s: float | None = None
    vmstat: dict[str, int] = field(default_factory=dict)


def timed_window(s: GuestSample) -> TimedWindow | None:
    """The window of ``s`` from its records; None if it has no vmstat
    pair (the sample did not finish)."""
    b, a = s.files.get("vmstat.before"), s.files.get("vmstat.after")
    if b is None or a is None:
        return None
    moved = parse.delta(parse.parse_vmstat(b), parse.parse_vmstat(a))
    kept = {
        k: v
        for k, v in moved.items()
        if k in RECLAIM_COUNTERS or (k.startswith(THP_PREFIX) and v)
    }
    w = TimedWindow(vmstat=kept)
    tb = parse_times(s.files.get("times.before", ""))
    ta = parse_times(s.files.get("times.after", ""))
    if tb is not None and ta is not None:
        w.user_s = round(ta.children_user_s - tb.children_user_s, 6)
        w.sys_s = round(ta.children_sys_s - tb.children_sys_s, 6)
        w.elapsed_s = round(ta.uptime_s - tb.uptime_s, 6)
    return w
