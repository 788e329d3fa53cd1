"""W4 ksm-rmap (S4): KSM pages of many VMAs on one anon_vma migrated
(ksmrmap.c, run by ksm-rmap.sh), each rmap walk timed."""

from __future__ import annotations

from foliolab.guestdata import parse
from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks, copy_metrics
from foliolab.workloads.model import (
    COUNTING,
    NO_DIRECTION,
    Derived,
    Growth,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window this folder's workloads mark: FL_WIN_MOVE
# in their C and shell (windows.py gathers every workload's window).
WINDOW = Window(5, "MOVE", "move_pages() of the KSM pages")


def derive_ksm_rmap(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    common_checks(s, d, need_swap=False)
    copy_metrics(
        s,
        d,
        (
            "move_ms",
            "lock_wait_max_ms",
            "lock_wait_avg_ms",
            "ksm_merge_s",
            "vmas",
            "ksm_pages_shared",
            "verify_errors",
        ),
    )
    want = int(params["vmas"])
    if s.metrics.get("vmas", 0) < 0.95 * want:
        d.invalid.append(f"only {s.metrics.get('vmas', 0):.0f} of {want} VMAs")
    if s.metrics.get("moved_pct", 0) < 100:
        d.invalid.append(
            f"only {s.metrics.get('moved_pct', 0):.0f}% of the pages migrated"
        )
    walks = parse.parse_graph_durations(
        s.files.get("ftrace_graph", ""), "rmap_walk_ksm"
    )
    if params.get(COUNTING) == "1":
        pass  # no tracer in a counting boot: the plugin counts walks
    elif walks:
        d.values["rmap_walk_max_ms"] = max(walks)
        d.values["rmap_walk_avg_ms"] = sum(walks) / len(walks)
        d.values["rmap_walk_calls"] = len(walks)
    else:
        d.invalid.append("no rmap_walk_ksm call was traced")
    if "overrun" in s.files.get("ftrace_graph", "").lower():
        d.invalid.append("ftrace buffer overrun: walks were lost")
    return d


KSM_RMAP = Workload(
    name="ksm-rmap",
    title="W4 ksm-rmap: rmap_walk_ksm with many VMAs on one anon_vma",
    script="ksm-rmap",
    params={
        "vmas": Param.integer(
            "20000", "VMAs (one page each) sharing one anon_vma", 1, 60000
        ),
        "move": Param.integer(
            "8", "KSM pages migrated (each walks the rmap twice)", 1, 1000
        ),
        "pages_to_scan": Param.integer("20000", "ksm pages_to_scan", 1, 10**7),
        "merge_timeout": Param.integer(
            "120", "seconds to wait for KSM", 1, 3600
        ),
    },
    metrics=(
        Metric(
            "rmap_walk_max_ms", "ms", "lower", "KSM rmap walk maximum duration"
        ),
        Metric(
            "rmap_walk_avg_ms", "ms", "lower", "KSM rmap walk average duration"
        ),
        Metric(
            "lock_wait_max_ms",
            "ms",
            "lower",
            "anon_vma lock wait of another thread (max mprotect)",
        ),
        Metric("move_ms", "ms", "lower", "move_pages time", primary=False),
        Metric(
            "lock_wait_avg_ms",
            "ms",
            "lower",
            "mprotect time of another thread (average)",
            primary=False,
        ),
        Metric(
            "rmap_walk_calls",
            "calls",
            "lower",
            "rmap_walk_ksm calls traced",
            primary=False,
        ),
        Metric(
            "ksm_merge_s", "s", "lower", "time for KSM to merge", primary=False
        ),
        Metric(
            "vmas", "VMAs", NO_DIRECTION, "VMAs in the mapping", primary=False
        ),
        *count_metrics(
            CountUnit("walk", "rmap_walk_ksm", False), ("rmap_walk_ksm",)
        ),
    ),
    derive=derive_ksm_rmap,
    numa_nodes=2,
    timeout=600,
    window=WINDOW,
    count_roots=("rmap_walk_ksm",),
    count_unit=CountUnit("walk", "rmap_walk_ksm", False),
    # 192 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); its fixture: 8.9 s. Counting: x1.26, the
    # pageout fixture's counting boots against its timed ones.
    tcg_boot_s=9.6,
    tcg_count_boot_s=12.1,
    # S4's claim: a walk visits the VMA at the page's index instead of
    # every VMA on the anon_vma, O(n) -> O(1) in the VMAs.
    growth=(
        Growth(
            "vmas",
            "kernel_insns_per_walk",
            "instructions per rmap_walk_ksm()",
        ),
        Growth("vmas", "rmap_walk_avg_ms", "rmap_walk_ksm() average"),
    ),
)

WORKLOADS = (KSM_RMAP,)
