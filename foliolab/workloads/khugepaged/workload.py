"""W3 khugepaged (S3): tasks hot1, cold (lazy-free) and hot2 (thptask.c)
offered to khugepaged (khugepaged.sh)."""

from __future__ import annotations

from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks, copy_metrics
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window this folder's workloads mark: FL_WIN_KHUGEPAGED
# in their C and shell (windows.py gathers every workload's window).
WINDOW = Window(4, "KHUGEPAGED", "hot1, cold, hot2 (flmark)")


def derive_khugepaged(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    common_checks(s, d, need_swap=False)
    copy_metrics(
        s,
        d,
        (
            "hot2_access_s",
            "hot2_maccess_per_s",
            "hot2_collapsed_maccess_per_s",
            "hot2_collapse_s",
            "cold_thp_mb",
            "hot1_thp_mb",
            "khugepaged_cpu_s",
        ),
    )
    rows = [
        line.split() for line in s.files.get("khugepaged", "").splitlines()
    ]
    if len(rows) == 2 and all(len(r) == 2 for r in rows):
        d.values["pages_collapsed"] = int(rows[0][1]) - int(rows[0][0])
        d.values["full_scans"] = int(rows[1][1]) - int(rows[1][0])
        if not d.values["full_scans"] and not d.values["pages_collapsed"]:
            d.invalid.append("khugepaged did not run")
    else:
        d.invalid.append("khugepaged counters missing")
    trace = s.files.get("ftrace_events", "")
    # The trace holds every scan of the window: a status it does not show
    # was given zero times (and without a trace, those that tell the
    # kernels apart are still zero: khugepaged made no scans at all).
    statuses = (
        KHUGEPAGED_SCAN_STATUS
        if "ftrace_events" in s.files
        else ("succeeded", "page_lazyfree", "lack_referenced_page")
    )
    for status in statuses:
        d.values[f"scan_{status}"] = 0
    for status, n in parse.parse_trace_field(
        trace, "mm_khugepaged_scan_pmd", "status"
    ).items():
        d.values[f"scan_{status}"] = n
    # The tasks registered with khugepaged as hot1, cold, hot2; only mms
    # with PMD-sized ranges show up, which here are just those three.
    mms = [m for m in parse.khugepaged_scans_by_mm(trace) if m.count >= 8]
    if len(mms) >= 2:
        cold = mms[1]
        d.values["cold_scans"] = cold.count
    if len(mms) >= 3:
        d.values["cold_scans_before_hot2"] = parse.scans_before(
            trace, cold.mm, mms[2].first_s
        )
    return d


# 6.12's SCAN_STATUS strings (include/trace/events/huge_memory.h), plus the
# page_lazyfree status the S3 patch adds.
KHUGEPAGED_SCAN_STATUS = (
    "succeeded",
    "page_lazyfree",
    "lack_referenced_page",
    "page_pmd_mapped",
    "exceed_none_pte",
    "exceed_swap_pte",
    "exceed_shared_pte",
    "pte_non_present",
    "pte_uffd_wp",
    "pte_mapped_hugepage",
    "no_writable_page",
    "page_null",
    "scan_aborted",
    "not_suitable_page_count",
    "page_not_in_lru",
    "page_locked",
    "page_not_anon",
    "page_compound",
    "no_process_for_page",
    "vma_null",
    "vma_check_failed",
    "not_suitable_address_range",
    "could_not_delete_page_from_lru",
    "alloc_huge_page_failed",
    "ccgroup_charge_failed",
    "truncated",
    "page_has_private",
    "store_failed",
    "copy_poisoned_page",
    "page_filled",
    "failed",
    "pmd_null",
    "pmd_none",
)


KHUGEPAGED = Workload(
    name="khugepaged",
    title="W3 khugepaged: hot1, cold (MADV_FREE), hot2",
    script="khugepaged",
    params={
        "size_mb": Param.integer(
            "32",
            "memory per task, MiB (the seed: 128; scaled down for TCG)",
            1,
            512,
        ),
        # The seed's total access time is of a fixed number of
        # accesses, during which hot2 gets collapsed. hot2 now goes
        # on past that number until it is collapsed (and
        # after_collapse more), so the number need not outlast the
        # slowest collapse: 10^9 accesses took ~80 s a boot under
        # TCG (2026-11-26), hot2 was collapsed after 4 s on average,
        # 12 s at most, and makes 8-14M accesses/s before and after
        # (TCG's own TLB hides most of what a PMD mapping saves).
        "accesses": Param.integer(
            "150000000",
            "random accesses hot2 makes and times (hot2_access_s)",
            1,
            10**12,
        ),
        "after_collapse": Param.integer(
            "30000000",
            "accesses hot2 makes and times once it is "
            "collapsed (hot2_collapsed_maccess_per_s)",
            1,
            10**12,
        ),
        "collapse_wait_s": Param.integer(
            "120",
            "seconds hot2 waits to be collapsed before the sample is invalid",
            1,
            3600,
        ),
        # On 6.12 MADV_FREE clears the young bits, so vanilla's
        # khugepaged already refuses an untouched cold range
        # (lack_referenced_page); a read after MADV_FREE makes it
        # young but leaves it clean and lazy-free, and vanilla
        # then collapses it.
        "cold_reread": Param.flag(
            "0", "1: cold reads its memory once after MADV_FREE"
        ),
        "pages_to_scan": Param.integer(
            "8192", "khugepaged pages_to_scan", 1, 10**7
        ),
        "scan_sleep_ms": Param.integer(
            "10", "khugepaged scan_sleep_millisecs", 0, 60000
        ),
    },
    metrics=(
        Metric("hot2_access_s", "s", "lower", "hot2 total access time"),
        Metric("hot2_maccess_per_s", "Maccess/s", "higher", "hot2 throughput"),
        Metric(
            "hot2_collapse_s", "s", "lower", "time to full collapse of hot2"
        ),
        Metric(
            "hot2_collapsed_maccess_per_s",
            "Maccess/s",
            "higher",
            "hot2 throughput once collapsed",
            primary=False,
        ),
        Metric(
            "cold_thp_mb", "MiB", "lower", "cold's memory collapsed into THPs"
        ),
        Metric(
            "hot1_thp_mb",
            "MiB",
            "higher",
            "hot1's memory collapsed into THPs",
            primary=False,
        ),
        Metric(
            "cold_scans",
            "PMDs",
            "lower",
            "khugepaged scans of cold's range",
            primary=False,
        ),
        Metric(
            "cold_scans_before_hot2",
            "PMDs",
            "lower",
            "scans of cold before khugepaged first reached hot2",
            primary=False,
        ),
        Metric(
            "pages_collapsed",
            "PMDs",
            "lower",
            "khugepaged pages_collapsed",
            primary=False,
        ),
        Metric(
            "full_scans",
            "scans",
            "higher",
            "khugepaged full_scans",
            primary=False,
        ),
        Metric(
            "khugepaged_cpu_s",
            "s",
            "lower",
            "khugepaged CPU time (user+system) during the sample",
            primary=False,
        ),
        *(
            Metric(
                f"scan_{st}",
                "PMDs",
                NO_DIRECTION,
                f"khugepaged scans with status {st}",
                primary=False,
            )
            for st in KHUGEPAGED_SCAN_STATUS
        ),
        # collapse_huge_page() is inlined into it on every kernel
        # here (no symbol of its own): the scan root holds its work.
        *count_metrics(None, ("hpage_collapse_scan_pmd",)),
    ),
    derive=derive_khugepaged,
    timeout=400,
    window=WINDOW,
    count_roots=("hpage_collapse_scan_pmd",),
    not_measurable="dTLB-load-misses and cycles per access: these "
    "machines have no PMU, so neither does the guest",
    # 11.9-13.7 s a boot on a quiet machine with hot2 bounded by its
    # collapse (/work/results-khp-bounded-quiet, 2026-11-26, TCG, 4 boots;
    # 86.6 s with 10^9 accesses). Counting: x1.26, the pageout fixture's
    # counting boots against its timed ones (not measured for this one).
    tcg_boot_s=13.0,
    tcg_count_boot_s=16.4,
)

WORKLOADS = (KHUGEPAGED,)
