"""madvise: madvise() throughput, one advice at a time (madvthroughput.c,
run by madvise.sh): DONTNEED, FREE, COLD or PAGEOUT over anonymous base
pages, MiB advised a second.

What it stands for: the per-call cost mmtests' workload-stressng-madvise
and LKP's stress-ng madvise stressor fold into bogo-ops with random
advice (``stress-ng-madvise`` runs that one); here one advice, a fixed
amount of memory, every call timed alone, and what the advice left
checked with pagemap. Its samples are not held to a captured boot yet:
it was written after the day's boots were spent (its folder has no
fixture; the contract test names it as missing)."""

from __future__ import annotations

from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks, copy_metrics
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    Metric,
    Param,
    Workload,
)

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
    asked = int(params["size_mb"]) * 256 * int(params["iterations"])
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
    ),
    derive=derive_madvise,
    timeout=240,
)

WORKLOADS = (MADVISE,)
