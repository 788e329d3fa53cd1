"""thpchallenge: THP fault latency under fragmentation (thpfault.c, run
by thpchallenge.sh), huge and base, with the compaction it takes: what
mmtests' workload-thpchallenge-{fio,kernel-build,none} report as
fault-huge and fault-base latencies.

Where it differs from mmtests (whose program is not used): there fio or
a kernel build fragments memory in the background while a number of
threads fault THPs; here a filler does it first and deterministically
(most of the guest's available memory populated in base pages, then all
but one page of every ``keep_every`` given back), and one thread then
faults ``thp_mb`` of MADV_HUGEPAGE memory a PMD at a time. fault-huge
and fault-base are, as in mmtests, the faults that got a THP and those
that fell back to a base page. The guest is 1 GiB, so filling it takes
seconds under TCG. Its samples are not held to a captured boot yet (no
fixture; the contract test names it as missing).

Counted (``--count``): the window is the faulting phase alone
(thpfault.c marks it; the filler is outside it), with the probes that
say whether a block got a THP between the faults, so what a fault costs
is handle_mm_fault's own count, entered once a fault of a PMD-sized
block: its kernel instructions (callees included: the THP's allocation,
direct compaction and reclaim, or the fallback to a base page), the IPIs
it sends and its TLB invalidations per fault, and direct compaction's
share of it (try_to_compact_pages) per fault. kcompactd's work, which
``defrag=defer`` wakes, is in the window's whole counts, which are
secondary. Compaction migrates the filler's pages, mapped by this same
process: where another vCPU still holds its mm, the migration's TLB
shootdown waits for that vCPU to acknowledge it, and the wait (as long
as TCG takes, not the kernel's path) is in the fault's count too;
ipis_sent_per_fault says how often that happened, and a change in
kernel_insns_per_fault that comes with a change in it is to be read
with that in mind."""

from __future__ import annotations

from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    common_checks,
    copy_metrics,
    per_root_call,
    root_call_metrics,
    window_secondary,
)
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window thpfault.c marks: FL_WIN_THPFAULT (windows.py
# gathers every workload's window).
WINDOW = Window(12, "THPFAULT", "the faults of the THP blocks, and probes")
# A fault is an entry of handle_mm_fault, once a block (one write at its
# start; thpfault.c touches whatever else the loop needs before the
# window opens, so the blocks' are the window's only faults): a global
# function of mm/memory.c, called from the architecture's fault handler
# in another file, so never inlined. Per fault is its own count.
FAULT_UNIT = CountUnit("fault", "handle_mm_fault", whole_window=False)
# Direct compaction's share: try_to_compact_pages, a global function of
# mm/compaction.c called from mm/page_alloc.c (out of line in the x86_64
# 6.12 and 7.3 builds here, nm), entered by the THP allocation when no
# free block of its order is left.
COMPACTION = "try_to_compact_pages"
_ROOTS = ("handle_mm_fault", COMPACTION)

# mmtests' thpchallenge rows: fault latencies of the faults that got a
# THP (fault-huge) and of those that fell back (fault-base), microseconds.
LEAD = "thpchallenge.fault-huge"
BASE = "thpchallenge.fault-base"
STATS = ("p50", "p90", "p99", "max")
# Free memory in blocks of a THP's size or more, after fragmenting, as a
# share of what the faults ask, at most: more, and most faults could be
# served without compaction (the fragmentation was not achieved).
MAX_UNFRAGMENTED_SHARE = 0.25
# The vmstat counters reported as they are.
COUNTERS = (
    "thp_fault_alloc",
    "thp_fault_fallback",
    "compact_stall",
    "compact_success",
    "compact_fail",
    "compact_migrate_scanned",
    "compact_free_scanned",
)


def derive_thpchallenge(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    if "faults" not in s.metrics:
        d.invalid.append("thpfault reported no faults")
        return d
    for kind, key in (("huge", LEAD), ("base", BASE)):
        if f"fault_{kind}_us_mean" in s.metrics:
            d.values[key] = s.metrics[f"fault_{kind}_us_mean"]
        copy_metrics(s, d, (f"fault_{kind}_us_{st}" for st in STATS))
    copy_metrics(s, d, ("free_mb", "free_huge_mb"))
    faults, huge = s.metrics["faults"], s.metrics.get("huge_faults", 0)
    d.values["thp_success_pct"] = 100.0 * huge / faults if faults else 0.0
    asked_mb = int(params["thp_mb"]) // 2 * 2
    if faults < asked_mb // 2:
        d.invalid.append(f"{faults:.0f} faults of the {asked_mb // 2} asked")
    free, free_huge = s.metrics.get("free_mb"), s.metrics.get("free_huge_mb")
    if free is None or free_huge is None:
        d.invalid.append("thpfault reported no free memory after the fill")
    elif free_huge > MAX_UNFRAGMENTED_SHARE * asked_mb:
        d.invalid.append(
            f"fragmentation not achieved: {free_huge:.0f} MiB free in "
            f"blocks of a THP's size or more for the {asked_mb} MiB "
            "of THPs asked"
        )
    elif free < asked_mb:
        d.invalid.append(
            f"{free:.0f} MiB free after the fill, less than the "
            f"{asked_mb} MiB of THPs asked: fallbacks would be for want "
            "of memory, not of contiguity"
        )
    if vm:
        if "compact_stall" not in vm:
            d.invalid.append(
                "no compaction counters in /proc/vmstat: a kernel "
                "without CONFIG_COMPACTION has nothing to measure here"
            )
        for key in COUNTERS:
            d.values[key] = vm.get(key, 0)
        if vm.get("thp_fault_alloc", 0) < huge:
            d.invalid.append(
                f"thp_fault_alloc {vm.get('thp_fault_alloc', 0)} for "
                f"{huge:.0f} faults that got a THP"
            )
    return d


def per_fault(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The IPIs and TLB invalidations inside each fault, and direct
    compaction's instructions per fault."""
    out = per_root_call(FAULT_UNIT, counted)
    faults = counted.get(f"{FAULT_UNIT.root}_calls")
    if faults:
        out[f"{COMPACTION}_insns_per_fault"] = (
            counted[f"{COMPACTION}_insns"] / faults
        )
    return out


def _latency_metrics(
    key: str, kind: str, what: str, primary: bool
) -> tuple[Metric, ...]:
    """A kind of fault's mean (``key``) and its percentiles; primary: the
    mean and the 99th percentile."""
    return (
        Metric(key, "us", "lower", f"{what}: mean latency", primary),
        *(
            Metric(
                f"fault_{kind}_us_{st}",
                "us",
                "lower",
                f"{what}: {'the slowest' if st == 'max' else st}",
                primary=primary and st == "p99",
            )
            for st in STATS
        ),
    )


THPCHALLENGE = Workload(
    name="thpchallenge",
    title=f"mmtests thpchallenge: THP fault latency under fragmentation "
    f"({LEAD})",
    script="thpchallenge",
    params={
        "thp_mb": Param.integer(
            "512",
            "MiB of MADV_HUGEPAGE memory faulted a PMD at a time",
            4,
            512,
        ),
        "fill_pct": Param.integer(
            "95",
            "percent of MemFree the filler populates before it fragments "
            "it (MemAvailable, about 70 MiB below it in a 1 GiB guest, "
            "left 126-142 MiB free in THP-sized blocks; 98% was OOM-killed)",
            50,
            99,
        ),
        "keep_every": Param.integer(
            "32",
            "the filler keeps one page of every this many: more, "
            "fewer pages for compaction to move",
            2,
            512,
        ),
        "defrag": Param(
            "madvise",
            "transparent_hugepage/defrag: madvise (direct compaction in "
            "the fault, the default), defer (kcompactd woken, the fault "
            "falls back at once) or never",
            choices=("madvise", "defer", "never"),
        ),
    },
    metrics=(
        *_latency_metrics(LEAD, "huge", "faults that got a THP", True),
        Metric(
            "thp_success_pct",
            "%",
            "higher",
            "faults that got a THP, percent of the faults",
        ),
        *_latency_metrics(BASE, "base", "faults that fell back", False),
        *(
            Metric(key, "events", NO_DIRECTION, f"{key} (vmstat)", False)
            for key in COUNTERS
        ),
        Metric(
            "free_mb",
            "MiB",
            NO_DIRECTION,
            "free memory after the fill (buddyinfo)",
            primary=False,
        ),
        Metric(
            "free_huge_mb",
            "MiB",
            NO_DIRECTION,
            "of it, in blocks of a THP's size or more (buddyinfo)",
            primary=False,
        ),
        *window_secondary(
            count_metrics(
                FAULT_UNIT,
                _ROOTS,
                (
                    Metric(
                        f"{COMPACTION}_insns_per_fault",
                        "insns",
                        "lower",
                        f"counted: direct compaction's share, {COMPACTION} "
                        "(callees included), per fault",
                    ),
                    *root_call_metrics(FAULT_UNIT),
                ),
            )
        ),
    ),
    derive=derive_thpchallenge,
    # a small guest: the filler populates most of it, under TCG a few
    # seconds a hundred MiB
    memory_mb=1024,
    timeout=300,
    # its fixture's boots under TCG (defaults, beside host tests):
    # 18.9 s, counting 55.0 s
    tcg_boot_s=18.9,
    tcg_count_boot_s=55.0,
    window=WINDOW,
    count_roots=_ROOTS,
    count_unit=FAULT_UNIT,
    count_extra=per_fault,
)

WORKLOADS = (THPCHALLENGE,)
