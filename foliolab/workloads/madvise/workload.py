"""madvise: madvise() throughput, one advice at a time (madvthroughput.c,
run by madvise.sh): DONTNEED, FREE, COLD or PAGEOUT over anonymous base
pages, MiB advised a second.

What it stands for: the per-call cost mmtests' workload-stressng-madvise
and LKP's stress-ng madvise stressor fold into bogo-ops with random
advice (``stress-ng-madvise`` runs that one); here one advice, a fixed
amount of memory, every call timed alone, and what the advice left
checked with pagemap. Its samples are not held to a captured boot yet:
it was written after the day's boots were spent (its folder has no
fixture; the contract test names it as missing).

Counted (``--count``): the window is the sample's iterations
(madvthroughput.c marks it), the writing between the calls included, so
what a call costs is do_madvise's own count, entered once a call: its
kernel instructions (callees included: under pageout the reclaim and
zram's compression) per call and per MiB advised, the IPIs it sends and
its TLB invalidations per call. The window's whole counts are
secondary."""

from __future__ import annotations

from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    common_checks,
    copy_metrics,
    per_root_call_and_mib,
    root_call_metrics,
    window_secondary,
)
from foliolab.workloads.model import (
    COUNTING,
    NO_DIRECTION,
    Derived,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window madvthroughput.c marks: FL_WIN_MADVISE (windows.py
# gathers every workload's window).
WINDOW = Window(9, "MADVISE", "the iterations, writing and madvise()")
# A call is an entry of do_madvise, which madvise() calls once: a global
# function of mm/madvise.c (io_uring calls it too), which the x86_64
# 6.12 and 7.3 builds here call out of line from __x64_sys_madvise
# (objdump); arm64's not checked. Per call is its own count, not the
# window's.
CALL_UNIT = CountUnit("call", "do_madvise", whole_window=False)
_ROOTS = ("do_madvise",)
# The MiB advised in the window, all calls: what the per-MiB figure is
# per. A counting sample's derive puts it among its values for
# per_call (a counting sample keeps only what is counted, so a timed
# sample never reports it).
ADVISED_MIB = "mib_advised"
# Pages of the guest's base size (madvthroughput.c's PAGE_SIZE) in a MiB.
PAGES_PER_MIB = 256

LEAD = "madvise.mb_per_s"
# What each advice leaves, as the check's message says it.
LEAVES = {
    "dontneed": "no page present",
    "free": "every page still present",
    "cold": "every page still present",
    "pageout": "every page swapped out",
}


def derive_madvise(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    advice = params["advice"]
    vm = common_checks(s, d, need_swap=advice == "pageout")
    copy_metrics(s, d, ("ms_mean",))
    if "mb_per_s" not in s.metrics:
        d.invalid.append("madvthroughput reported no throughput")
        return d
    d.values[LEAD] = s.metrics["mb_per_s"]
    pages = s.metrics.get("pages", 0)
    if params.get(COUNTING) == "1" and pages:
        d.values[ADVISED_MIB] = pages / PAGES_PER_MIB
    asked = int(params["size_mb"]) * PAGES_PER_MIB * int(params["iterations"])
    done = s.metrics.get("pages_as_advised", 0)
    d.values["pages_as_advised_pct"] = 100.0 * done / pages if pages else 0
    if pages < asked or done < 0.9 * asked:
        d.invalid.append(
            f"{done:.0f} of {asked} pages as MADV_{advice.upper()} "
            f"leaves them ({LEAVES[advice]})"
        )
    if vm:
        for key in ("pglazyfree", "pgdeactivate", "pswpout"):
            d.values[key] = vm.get(key, 0)
        if advice == "free" and vm.get("pglazyfree", 0) < 0.9 * asked:
            d.invalid.append(
                f"pglazyfree {vm.get('pglazyfree', 0)} for {asked} pages "
                "advised MADV_FREE"
            )
    return d


# the IPIs and TLB invalidations inside each madvise(), and the root's
# instructions per MiB, with the MiB they are per
per_call = per_root_call_and_mib(CALL_UNIT, ADVISED_MIB)


MADVISE = Workload(
    name="madvise",
    title=f"madvise(DONTNEED|FREE|COLD|PAGEOUT) throughput ({LEAD})",
    script="madvise",
    params={
        "advice": Param(
            "dontneed",
            "the advice: MADV_DONTNEED, MADV_FREE, MADV_COLD or "
            "MADV_PAGEOUT (to zram)",
            choices=tuple(LEAVES),
        ),
        "size_mb": Param.integer(
            "32", "MiB faulted in and advised each call", 1, 1024
        ),
        "iterations": Param.integer(
            "5", "calls a sample, each over memory written anew", 1, 1000
        ),
    },
    metrics=(
        Metric(
            LEAD,
            "MiB/s",
            "higher",
            "MiB advised a second, the calls alone",
        ),
        Metric(
            "ms_mean",
            "ms",
            "lower",
            "one madvise() call, mean of the sample's",
            primary=False,
        ),
        Metric(
            "pages_as_advised_pct",
            "%",
            NO_DIRECTION,
            "pages in the state the advice leaves (pagemap)",
            primary=False,
        ),
        Metric(
            "pglazyfree",
            "pages",
            NO_DIRECTION,
            "pglazyfree (vmstat)",
            primary=False,
        ),
        Metric(
            "pgdeactivate",
            "pages",
            NO_DIRECTION,
            "pgdeactivate (vmstat)",
            primary=False,
        ),
        Metric(
            "pswpout", "pages", NO_DIRECTION, "pswpout (vmstat)", primary=False
        ),
        *window_secondary(
            count_metrics(
                CALL_UNIT,
                _ROOTS,
                (
                    Metric(
                        "do_madvise_insns_per_mib",
                        "insns",
                        "lower",
                        "counted: kernel instructions in do_madvise per "
                        "MiB advised",
                    ),
                    *root_call_metrics(CALL_UNIT),
                    Metric(
                        ADVISED_MIB,
                        "MiB",
                        NO_DIRECTION,
                        "counted: MiB advised in the window, all calls "
                        "(what do_madvise_insns_per_mib divides by)",
                        primary=False,
                    ),
                ),
            )
        ),
    ),
    derive=derive_madvise,
    timeout=240,
    window=WINDOW,
    count_roots=_ROOTS,
    count_unit=CALL_UNIT,
    count_extra=per_call,
    # its fixture's boots under TCG (defaults, beside a kernel build):
    # 11.3 s, counting 15.7 s
    tcg_boot_s=11.3,
    tcg_count_boot_s=15.7,
)

WORKLOADS = (MADVISE,)
