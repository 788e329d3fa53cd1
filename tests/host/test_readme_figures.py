"""README, the cover letters and the patch messages quote figures of
runs; for each run whose record is kept under tests/host/data/runs/RUN,
this test derives every figure they give of it again from that record,
with the code that reported it, writes it as the text does and finds it
there (the manual's figures of the same mm CI run too). A figure typed
by hand, or left stale when the run's record or foliolab's statistics
change, fails here. (test_cover_tables holds the tables the covers
quote whole.)

- A compare run (environment.json and samples.jsonl, no raw/): analysed
  as `foliolab report RUN` analyses it (analyse() on its samples), the
  means, ratios and intervals of its rows, formatted as the report
  formats them, and its samples' values.
- A `foliolab test --mm-ci` run (rundir.json, outcomes.json and the
  mmci-summary.txt it printed; dropped: its per-kernel directory of
  kernel, modules, initramfs and per-wrapper logs, 75 MB, and
  mmci-summary.json, 428 KB, which the same function writes from the
  same rows): the rows of outcomes.json compared and summed by
  suite.mmci.compare, the functions that wrote mmci-summary. Its boot
  times are outcomes.json's, in tenths of a second, rounded a half up.

Every run README names is either kept there or listed in NOT_KEPT, the
runs whose record is not in the repository (README says so): a figure
of a new run cannot come in without its record or a decision."""

import functools
import json
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest

from foliolab.analysis.analyse import analyse
from foliolab.boot.derive import load_samples
from foliolab.manifest import RunManifest
from foliolab.paths import PROJECT_ROOT
from foliolab.render import fmt, fmt_ratio
from foliolab.rundir import Marker, RunKind
from foliolab.suite.mmci import compare, mmci
from foliolab.testrecord import Outcomes, TestStatus

RUNS = PROJECT_ROOT / "tests" / "host" / "data" / "runs"
README = PROJECT_ROOT / "README.md"
MANUAL = PROJECT_ROOT / "docs" / "manual.md"

COW3_612 = "mmci612-cow3"  # 6.12.117's cow, three boots of each kernel
SUDO_73 = "mmci-sudo-73"  # mlock with the guest's sudo
MGLRU_THP_73 = "mmci-mglru-thp-73"  # thp with MGLRU on
MGLRU3_73 = "mmci-mglru-last3-73"  # the last three x86_64 wrappers, MGLRU on
MGLRU2_612 = "mmci612-mglru2"  # twelve more 6.12 categories, MGLRU on
ARM64_MGLRU3 = "mmci-arm64-mglru-b"  # arm64's other wrappers, MGLRU on
ARM64_MGLRU4 = "mmci-arm64-mglru-c"  # and fourteen more
NUMA6_ARM64 = "mmci-arm64-numa6"  # ksm_numa, six boots, and its search
NUMA6_73 = "mmci-numa6-73"  # the same on x86_64
KSM12_73 = "mmci-ksm12-73"  # ksm twelve boots more, MGLRU on
THP2_73 = "mmci-thp2-73"  # thp on both kernels, MGLRU off, XFS mounting
MGLRU_612 = "mmci612-mglru"  # 6.12.117's seven categories, MGLRU on
MGLRU2_73 = "mmci-mglru2-73"  # 7.3.4's other wrappers, MGLRU on
KSM3_73 = "mmci-mglru-ksm3-73"  # ksm and ksm_numa, MGLRU on, 3 boots
ARM64_MGLRU = "mmci-arm64-mglru2"  # arm64's seven wrappers, MGLRU on
KSM4_73 = "mmci-ksm4-73"  # ksm, MGLRU on, 4 boots
KSM4_ARM64 = "mmci-arm64-ksm4"  # the same on arm64
COW_MGLRU_73 = "mmci-mglru-cow-73"  # cow, MGLRU on
ARM64_MGLRU5 = "mmci-arm64-mglru-d"  # arm64's last five wrappers, MGLRU on
MGLRU3_612 = "mmci612-mglru-last4"  # 6.12.117's last four categories, MGLRU on
NUMA12_ARM64 = "mmci-arm64-numa12"  # ksm_numa, twelve boots side by side
ARM64_612 = "mmci612-arm64-1"  # 6.12.117 on arm64: the 18 categories
ARM64_SLOW_612 = "mmci612-arm64-slow"  # and the five slow ones
ARM64_MGLRU_612 = "mmci612-arm64-mglru"  # the 18 again, MGLRU on
ARM64_MGLRU_SLOW_612 = "mmci612-arm64-mglru-slow"  # the five, MGLRU on
NUMA12_ARM64_612 = "mmci612-arm64-numa12"  # ksm_numa twelve times, MGLRU on
WALK_ARM64_612 = "mmci612-arm64-walk"  # eight categories, the walk on
WALK_ARM64_73 = (
    "mmci-arm64-walk73"  # 7.3.4's seven of mmci-arm64-mglru2, the walk on
)
# 7.3.4's 32 wrappers on the kernel the config audit made the mm CI's
AUDIT_X86_73 = "mmci-audit-x86-73"
AUDIT_ARM64_73 = "mmci-audit-arm64-73"  # the same on arm64
# the seven of mmci-arm64-walk73 on the audited kernel, MGLRU on
AUDIT_MGLRU_X86_73 = "mmci-audit-mglru-x86-73"
AUDIT_MGLRU_ARM64_73 = "mmci-audit-mglru-arm64-73"
# arm64's pagemap on 7.3.4 with NUMA balancing off (three boots), and on
# with the hardware access flag hidden (one boot)
PAGEMAP_NONUMA_73 = tuple(f"mmci-pagemap-nonuma{i}-73" for i in (1, 2, 3))
PAGEMAP_NOHAFDBS_73 = "mmci-pagemap-nohafdbs-73"
# 6.12.117's 23 categories on the audited kernel, and its six reclaim
# categories with MGLRU on
AUDIT_X86_612 = "mmci-audit-x86-612"
AUDIT_ARM64_612 = "mmci-audit-arm64-612"
AUDIT_MGLRU_612 = ("mmci-audit-mglru-x86-612", "mmci-audit-mglru-arm64-612")
# runs whose summary lists the allowed failures (38ce4ed on)
LISTS_ALLOWED = {
    AUDIT_MGLRU_ARM64_73,
    AUDIT_X86_73,
    AUDIT_MGLRU_X86_73,
    AUDIT_ARM64_73,
    COW3_612,
    SUDO_73,
    MGLRU_THP_73,
    MGLRU_612,
    MGLRU2_73,
    KSM3_73,
    ARM64_MGLRU,
    KSM4_73,
    KSM4_ARM64,
    COW_MGLRU_73,
    THP2_73,
    MGLRU3_73,
    KSM12_73,
    MGLRU2_612,
    ARM64_MGLRU3,
    ARM64_MGLRU4,
    ARM64_MGLRU5,
    MGLRU3_612,
    NUMA12_ARM64,
    ARM64_612,
    ARM64_SLOW_612,
    ARM64_MGLRU_612,
    ARM64_MGLRU_SLOW_612,
    NUMA12_ARM64_612,
    WALK_ARM64_612,
    WALK_ARM64_73,
}

# Runs README names whose record is not in the repository (not on the
# machine this test was written on, 2026-11-29, or, for mmci-fix1,
# stopped before it wrote its outcomes): their figures are not derived
# again by anything.
NOT_KEPT = {
    "suite-612-ci-s7",
    "results-pv-count-x86",
    "results-issue7-1",
    "results-pv-count-x86-dirty-tlb-idle",
    "results-issue18-dirty-tlb",
    "results-issue9-x86-fr-26",
    "results-issue6-2",
    "results-pv-count-x86-khugepaged",
    "results-issue5-khugepaged-reread-2",
    "results-pv-count-x86-ksm",
    "results-issue5-ksm-2",
    "results-r4-f1",
    "results-r6n-coverage",
    "73-r2-coverage-fi",
    "results-73-coverage2",
    "results-73-r2-check",
    "robot-73-r2",
    "robot-612-r7b",
    "results-73-r2-putback-up",
    "results-73-r2-putback-next",
    "results-73-four-count",
    "results-73-four-count-b",
    "results-73-time",
    "results-73-time-same",
    "results-73-ksm-count4",
    "results-73-arm64-count",
    "results-73-kasan-next",
    "73-r3-suite-{x86_64,arm64}-{up,next}",
    "73-vm5-*",
    "73-vm9-*",
    "73-r2-suite-arm64-*",
    "kh-arm64",
    "mmci-fix1",
    "sweep-612",
    "sweep-73",
    "sweep-73-arm64",
    "sweep-612-threads-d",
    "sweep-612-file",
}
# how README writes a run's folder: in backquotes, a lab run's prefix
RUN_NAME = re.compile(
    r"`((?:results|sweep|mmci|mmci612|robot|kh|suite|suite73)-[^`\s]+|"
    r"7\d-[^`\s]+|61\d-[^`\s]+)`"
)


def words(text):
    """``text`` with its line breaks and runs of spaces as one space:
    README wraps its sentences anywhere."""
    return " ".join(text.split())


def gives(figure, text):
    """Whether ``text`` gives ``figure`` whole: not as the start or end of
    a longer number ("10 pass of 10" is not in "10 pass of 100")."""
    at = text.find(figure)
    while at >= 0:
        end = at + len(figure)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not (figure[0].isdigit() and before.isdigit()) and not (
            figure[-1].isdigit() and after.isdigit()
        ):
            return True
        at = text.find(figure, at + 1)
    return False


@functools.cache
def readme():
    return words(README.read_text())


def half_up(x, places=0):
    """``x`` rounded as a reader rounds, a half up (Python's round() and
    format() round a half to even: 6.5 to 6)."""
    q = Decimal(1).scaleb(-places)
    return Decimal(repr(x)).quantize(q, rounding=ROUND_HALF_UP)


NUMBER = {1: "one", 2: "two", 3: "three", 4: "four"}


def whole(x):
    return f"{half_up(x):,}"


# ---- compare runs -----------------------------------------------------


@functools.cache
def analysed(run):
    """The run's analysis, as `foliolab report` derives it from a record
    without raw boots (once a run)."""
    record = RUNS / run
    return analyse(record, RunManifest.read(record), load_samples(record))


def row(run, workload, metric):
    """The run's row of ``metric`` in ``workload``, its second kernel
    against the first."""
    a = analysed(run)
    (r,) = [
        r
        for wa in a.workloads
        if wa.workload.name == workload
        for r in wa.rows
        if r.metric == metric and r.kernel == a.names[1]
    ]
    return r


def counted(r):
    """base -> other (ratio), as README quotes an exact count."""
    return (
        f"{fmt(r.base.mean)} -> {fmt(r.other.mean)} "
        f"({fmt_ratio(r.comparison.ratio)})"
    )


def values(run, workload, metric):
    """Each kernel's samples of ``metric``: {kernel: [value, ...]}."""
    out = {}
    for s in analysed(run).samples:
        if s.workload == workload and metric in s.values:
            out.setdefault(s.variant, []).append(s.values[metric])
    return out


def figures_612_r7_count():
    """Results so far, round 7 (and the 6.12 cover letter's quote of the
    same run, which test_cover_tables holds)."""
    run = "results-612-r7-count"
    tlb = row(run, "dirty-tlb", "ipis_sent_per_swapout").comparison
    ksm = row(run, "ksm-rmap", "kernel_insns_per_walk")
    unmap = "try_to_unmap_insns_per_folio"
    return [
        f"(`{run}`, `--count --runs {analysed(run).m.runs}`, "
        f"{analysed(run).m.started[:10]};",
        "`try_to_unmap()` instructions per 64K folio "
        + counted(row(run, "pageout", unmap))
        + ", per 4K page "
        + counted(row(run, "pageout-4k", unmap))
        + ", per lazy-free 64K folio "
        + counted(row(run, "pageout-lazyfree", unmap))
        + ", per order-5 file folio "
        + counted(row(run, "file-reclaim", unmap))
        + ";",
        "`dirty-tlb`'s IPIs per page swapped out, zero-filled pages counted, "
        f"{fmt_ratio(tlb.ratio)} [{fmt_ratio(tlb.ci_low)}, "
        f"{fmt_ratio(tlb.ci_high)}];",
        f"per `rmap_walk_ksm()` {ksm.base.mean / 1e6:.1f} M -> "
        f"{ksm.other.mean / 1e3:.0f} K.",
    ]


def figures_73_r2_count():
    """The five seeds on 7.3, round 2 counted."""
    run = "results-73-r2-count"
    unmap = "try_to_unmap_insns_per_folio"
    pageout = row(run, "pageout", unmap)
    small = row(run, "pageout-4k", unmap)
    ipis = row(run, "dirty-tlb", "ipis_sent_per_swapout")
    return [
        f"Round 2 counted (`{run}`, `--count --runs "
        f"{analysed(run).m.runs}`, up against next):",
        f"`pageout`'s `try_to_unmap()` {fmt(pageout.base.mean)} -> "
        f"{fmt(pageout.other.mean)} instructions per 64K folio "
        f"({fmt_ratio(pageout.comparison.ratio)}),",
        f"`pageout-4k`'s {fmt(small.base.mean)} -> {fmt(small.other.mean)} "
        f"per page ({fmt_ratio(small.comparison.ratio)}),",
        f"`dirty-tlb`'s IPIs per page swapped out {ipis.base.mean:.3g} -> "
        f"{ipis.other.mean:.3g} ({fmt_ratio(ipis.comparison.ratio)}):",
    ]


def figures_73_r2_count_b():
    """The other four workloads of round 2, their spread."""
    run = "results-73-r2-count-b"
    unmap = "try_to_unmap_insns_per_folio"
    lazy = row(run, "pageout-lazyfree", unmap).comparison.ratio
    file = row(run, "file-reclaim", unmap).comparison.ratio
    walk = row(run, "ksm-rmap", "kernel_insns_per_walk").comparison.ratio
    collapsed = values(run, "khugepaged", "pages_collapsed")
    (pmds,) = {v for vs in collapsed.values() for v in vs}
    # every cold scan khugepaged reported, on both kernels, was the
    # lazy-free result
    scans = values(run, "khugepaged", "cold_scans")
    lazyfree = values(run, "khugepaged", "scan_page_lazyfree")
    assert set(scans) == set(lazyfree) == set(analysed(run).names)
    assert scans == lazyfree and all(v > 0 for v in sum(scans.values(), []))
    spread = values(run, "ksm-rmap", "kernel_insns_per_walk")
    up, nxt = (spread[k] for k in analysed(run).names)
    return [
        f"the other four (`{run}`, the same options):",
        f"`try_to_unmap()` per folio {fmt_ratio(lazy)}x in "
        f"`pageout-lazyfree` and {fmt_ratio(file)}x in `file-reclaim`, "
        f"khugepaged's {pmds:.0f} hot PMDs collapsed and the cold scans "
        "reported as `page_lazyfree` on both, `ksm-rmap`'s instructions "
        f"per walk {walk:.3g}x, inside the spread of each kernel's "
        f"{NUMBER[analysed(run).m.runs]} samples ({fmt(min(up))}-"
        f"{fmt(max(up))} on up, {fmt(min(nxt))}-{fmt(max(nxt))} on next;",
    ]


def ratio_x(run, workload, metric):
    """A ratio as the covers write it: three significant digits (a
    trailing zero kept), then x."""
    return f"{row(run, workload, metric).comparison.ratio:#.3g}x"


def kernel_values(run, workload, metric):
    """``metric``'s samples, the baseline's then the other kernel's."""
    by_kernel = values(run, workload, metric)
    return [sorted(by_kernel[k]) for k in analysed(run).names]


def cover_612_figures():
    """patches/6.12's cover letter, "By change", of the run it quotes."""
    run = "results-612-r7-count"
    ksm = row(run, "ksm-rmap", "kernel_insns_per_walk")
    vanilla_scans, patched_scans = kernel_values(
        run, "khugepaged", "cold_scans"
    )
    assert kernel_values(run, "khugepaged", "scan_lack_referenced_page") == [
        vanilla_scans,
        [0] * len(patched_scans),
    ]
    assert kernel_values(run, "khugepaged", "scan_page_lazyfree") == [
        [0] * len(vanilla_scans),
        patched_scans,
    ]
    (pmds,) = {
        v
        for vs in kernel_values(run, "khugepaged", "pages_collapsed")
        for v in vs
    }
    collapse = row(run, "khugepaged", "hot2_collapse_s")
    first, *others = kernel_values(run, "khugepaged", "hot2_collapse_s")[0]
    assert first < others[0] / 2  # the one sample the letter singles out
    split = row(run, "pageout-lazyfree", "mthp_split_deferred")
    walk = row(run, "pageout", "page_vma_mapped_walk_per_folio")
    small = row(run, "pageout-4k", "try_to_unmap_insns_per_folio")
    small_walk = row(run, "pageout-4k", "page_vma_mapped_walk_per_folio")
    unmap = "try_to_unmap_insns_per_folio"
    return [
        f"the instructions per rmap_walk_ksm() go from {fmt(ksm.base.mean)} "
        f"to {fmt(ksm.other.mean)}.",
        f"lack_referenced_page on vanilla ({fmt(vanilla_scans[0])}-"
        f"{fmt(vanilla_scans[-1])} per sample), page_lazyfree with the "
        f"series ({fmt(patched_scans[0])}-{fmt(patched_scans[-1])}), "
        f"{pmds:.0f} hot PMDs collapsed on both.",
        f"reads {collapse.comparison.ratio:.3g}x "
        f'"{collapse.verdict}" above, on {NUMBER[analysed(run).m.runs]} '
        f"samples, one of vanilla's at {first:.2f} s against "
        f"{others[0]:.1f}-{others[-1]:.1f} s.",
        "IPIs per page swapped out "
        + ratio_x(run, "dirty-tlb", "ipis_sent_per_swapout")
        + ", TLB shootdowns "
        + ratio_x(run, "dirty-tlb", "tlb_shootdowns"),
        "try_to_unmap() instructions per folio "
        + ratio_x(run, "file-reclaim", unmap)
        + ".",
        ratio_x(run, "pageout-lazyfree", unmap)
        + " per 64K folio, and no deferred split of the folios "
        f"({fmt(split.base.mean)} -> {fmt(split.other.mean)}).",
        "try_to_unmap() instructions per folio "
        + ratio_x(run, "pageout", unmap)
        + f", page_vma_mapped_walk() {fmt(walk.base.mean)} calls per folio "
        f"-> {fmt(walk.other.mean)}.",
        f"{fmt(small.base.mean)} -> {fmt(small.other.mean)} instructions "
        f"({small.comparison.ratio:.3f}x), and "
        f"{NUMBER[int(small_walk.other.mean)]} walk call instead of "
        f"{NUMBER[int(small_walk.base.mean)]}",
    ]


def two_boots_spread(run, workload, metric):
    """The larger of the two kernels' (max - min) / min of ``metric``."""
    return max(
        (vs[-1] - vs[0]) / vs[0] for vs in kernel_values(run, workload, metric)
    )


def cover_s0_figures():
    """patches/7.3's S0 posting: what its own table does not show."""
    run = "results-73-r2-count"
    walk = row(run, "pageout", "page_vma_mapped_walk_per_folio")
    unmap = "try_to_unmap_insns_per_folio"
    assert (
        max(two_boots_spread(run, w, unmap) for w in ("pageout", "pageout-4k"))
        < 0.003
    )
    return [
        "page_vma_mapped_walk() steps once per 64K folio instead of "
        f"{fmt(walk.base.mean)} times, and try_to_unmap() executes "
        f"{fmt_ratio(row(run, 'pageout', unmap).comparison.ratio)}x",
        "the counts of a kernel's two boots differ by less than 0.3% in "
        "try_to_unmap() instructions.",
    ]


def cover_s1_figures():
    """patches/7.3's S1 posting: the prose beside its first table."""
    run = "results-73-r2-count"
    up, nxt = kernel_values(run, "dirty-tlb", "ipis_sent_per_swapout")
    return [
        "This posting is what changes dirty-tlb: "
        + ratio_x(run, "dirty-tlb", "ipis_sent_per_swapout")
        + " the IPIs per page swapped out, and "
        + ratio_x(run, "dirty-tlb", "tlb_shootdowns")
        + " the TLB shootdowns, while reclaim scanned "
        + ratio_x(run, "dirty-tlb", "pgscan_anon")
        + " the pages in the same 15 s.",
        f"dirty-tlb's IPIs per page swapped out were {up[0]:.3g} and "
        f"{up[1]:.3g} in the two boots of 7.3.4, {nxt[0]:.3g} and "
        f"{nxt[1]:.3g} with the series.",
        order0_cost(
            run,
            "an order-0 page in pageout-4k costs {pct} more "
            "kernel instructions ({next} against {up}).",
        ),
    ]


def order0_cost(run, template):
    r = row(run, "pageout-4k", "kernel_insns_per_folio")
    pct = (r.other.mean / r.base.mean - 1) * 100
    return template.format(
        pct=f"{pct:.2f}%", next=fmt(r.other.mean), up=fmt(r.base.mean)
    )


def cover_s1_b_figures():
    """patches/7.3's S1 posting: the prose beside its second table."""
    run = "results-73-r2-count-b"
    (pmds,) = {
        v
        for vs in kernel_values(run, "khugepaged", "pages_collapsed")
        for v in vs
    }
    walk = row(run, "ksm-rmap", "kernel_insns_per_walk").comparison.ratio
    up, nxt = kernel_values(run, "ksm-rmap", "kernel_insns_per_walk")
    return [
        f"Both kernels collapse the {pmds:.0f} hot PMDs.",
        f"ksm-rmap's instructions per walk differ by {(walk - 1) * 100:.0f}% "
        "here, about as much as each kernel's two boots differ from each "
        f"other ({fmt(up[0])} and {fmt(up[1])} on 7.3.4, {fmt(nxt[0])} and "
        f"{fmt(nxt[1])} with the series);",
    ]


def message(number):
    """patches/7.3's patch NNNN, by its number (a name that says so when
    there is none, for the test that reads it to fail on)."""
    series = PROJECT_ROOT / "patches" / "7.3"
    found = sorted(series.glob(f"{number}-*.patch"))
    return found[0] if len(found) == 1 else series / f"{number}-(none).patch"


def message_0008_figures():
    """The batched anonymous unmap's message: its table."""
    run = "results-73-r2-count"
    unmap = "try_to_unmap_insns_per_folio"
    pageout = row(run, "pageout", unmap)
    walk = row(run, "pageout", "page_vma_mapped_walk_per_folio")
    small = row(run, "pageout-4k", unmap)
    assert (
        max(two_boots_spread(run, w, unmap) for w in ("pageout", "pageout-4k"))
        < 0.003
    )
    return [
        f"try_to_unmap() insns per folio {fmt(pageout.base.mean)} "
        f"{fmt(pageout.other.mean)} {fmt_ratio(pageout.comparison.ratio)}",
        f"page_vma_mapped_walk() calls/folio {fmt(walk.base.mean)} "
        f"{fmt(walk.other.mean)}",
        f"try_to_unmap() insns per page {fmt(small.base.mean)} "
        f"{fmt(small.other.mean)} {fmt_ratio(small.comparison.ratio)}",
        "(the two samples of each kernel within 0.3% of each other)",
    ]


def message_0015_figures():
    """The batched TLB flush's message: its table and the order-0 cost."""
    run = "results-73-r2-count"
    ipis = row(run, "dirty-tlb", "ipis_sent_per_swapout")
    up, nxt = kernel_values(run, "dirty-tlb", "ipis_sent_per_swapout")
    calls = row(run, "dirty-tlb", "try_to_unmap_calls")
    sent = row(run, "dirty-tlb", "ipis_sent")
    small = row(run, "pageout-4k", "try_to_unmap_insns_per_folio")
    fewer = small.base.mean - small.other.mean
    return [
        f"IPIs sent per page swapped out {ipis.base.mean:.3g} "
        f"{ipis.other.mean:.3g} {fmt_ratio(ipis.comparison.ratio)} "
        f"(its two samples) {up[0]:.3g} {nxt[0]:.3g} {up[1]:.3g} "
        f"{nxt[1]:.3g} try_to_unmap() calls in the window "
        f"{fmt(calls.base.mean)} {fmt(calls.other.mean)} IPIs sent in the "
        f"window {fmt(sent.base.mean)} {fmt(sent.other.mean)}",
        f"reclaim unmapped {calls.comparison.ratio:.1f} times the folios",
        order0_cost(
            run,
            "{next} kernel instructions per page against {up} on 7.3.4 "
            "(+{pct}), although try_to_unmap() took "
            + f"{fewer:.0f}"
            + " fewer.",
        ),
    ]


def secondary(run):
    """The run's secondary rows (every metric but its workload's lead)
    of its second kernel against the first."""
    a = analysed(run)
    return [
        r
        for wa in a.workloads
        for r in wa.rows
        if r.kernel == a.names[1] and not r.primary
    ]


def manual_rereported_figures():
    """The manual's "The recorded runs, re-reported": what each kept
    compare run's secondary metrics give under the false discovery rate
    (what they gave before it, with older code, is not derived here)."""
    r7 = "results-612-r7-count"
    rows = secondary(r7)
    tested = [r for r in rows if r.q_value is not None]
    verdicts = [r for r in rows if r.significant]
    assert all(r.exact for r in verdicts)
    min_p = min(r.min_p for r in tested)
    out = [
        f"`{r7}` ({analysed(r7).m.runs} runs)",
        f"and has {len(verdicts)} (the exact ones): {len(tested)} tested, "
        f"{sum(r.raw_significant for r in tested)} at p < 0.05 alone, "
        f"{sum(r.significant for r in tested)} hold, since at "
        f"{analysed(r7).m.runs} vs {analysed(r7).m.runs} no p is below "
        f"{min_p:.2g} and 0.05/{len(tested)} is {0.05 / len(tested):.2g}.",
    ]
    small = ["results-73-r2-count", "results-73-r2-count-b"]
    (exact,) = {
        sum(r.significant and r.exact for r in secondary(run)) for run in small
    }
    assert not any(
        r.q_value is not None for run in small for r in secondary(run)
    )
    (runs,) = {analysed(run).m.runs for run in small}
    out.append(
        f"`{small[0]}` and `{small[1]}` ({runs} runs: no CI, nothing "
        f"tested) keep their {exact} exact secondary verdict each."
    )
    rows = [
        r
        for run in [r7, *small]
        for wa in analysed(run).workloads
        for r in wa.rows
    ]
    assert not any(r.two_modes for r in rows)
    most = max(max(r.base.n, r.other.n) for r in rows)
    out.append(
        "No metric is in two modes in any of them (at most "
        f"{most} samples a kernel)."
    )
    return out


GENERAL_612 = "results-612-general"


GENERAL_73 = "results-73-general"


def figures_612_general():
    """The general workloads on 6.12.117, patches/6.12 against it."""
    return general_figures(GENERAL_612)


def figures_73_general():
    """The general workloads on 7.3.4, patches/7.3 against it."""
    return general_figures(GENERAL_73)


def general_figures(run):
    """A series against its base on the general set: each workload's
    lead metric, both means, the ratio with its 95% CI and the
    Mann-Whitney p, as the report's headline gives them."""
    a = analysed(run)
    out = [
        f"run folder `{run}`",
        f"--workloads general --runs {a.m.runs}`",
    ]
    for wa in a.workloads:
        lead = wa.workload.metrics[0].key
        (r,) = [r for r in wa.rows if r.metric == lead]
        c = r.comparison
        out.append(
            f"| `{wa.workload.name}` | `{lead}` | {fmt(r.base.mean)} "
            f"| {fmt(r.other.mean)} | {fmt_ratio(c.ratio)} "
            f"[{c.ci_low:.3f}, {c.ci_high:.3f}] | {c.p_value:.2g} "
            f"| {'yes' if c.significant else 'no'} |"
        )
    return out


USEMEM_612 = "results-612-usemem"


def figures_612_usemem():
    """usemem again, 8 runs and counted: its lead and its exact counts
    a MiB written."""
    a = analysed(USEMEM_612)
    out = [f"run folder `{USEMEM_612}`, `--runs {a.m.runs} --count`"]
    for metric, unit in (
        ("vm-scalability.throughput", "KB/s"),
        ("kernel_insns_per_mib", "kernel instructions a MiB"),
        ("handle_mm_fault_insns_per_mib", "in `handle_mm_fault`"),
    ):
        r = row(USEMEM_612, "usemem", metric)
        out.append(
            f"{fmt(r.base.mean)} against {fmt(r.other.mean)} {unit} "
            f"(p {r.comparison.p_value:.2g})"
        )
    return out


PF_73 = "results-73-page-fault"
SNG_73 = "results-73-stress-ng-mmap"


def figures_73_again():
    """page-fault and stress-ng-mmap on 7.3 again, 8 runs and counted:
    the lead metric and the exact count per operation of each."""
    out = []
    for run, workload, lead, count, per in (
        (
            PF_73,
            "page-fault",
            "will-it-scale.per_process_ops",
            "kernel_insns_per_fault",
            "a fault",
        ),
        (
            SNG_73,
            "stress-ng-mmap",
            "stress-ng.mmap.ops_per_sec",
            "kernel_insns_per_bogo_op",
            "a bogo-op",
        ),
    ):
        a = analysed(run)
        out.append(f"run folder `{run}`, `--runs {a.m.runs} --count`")
        r, c = row(run, workload, lead), row(run, workload, count)
        out.append(
            f"{fmt(r.base.mean)} against {fmt(r.other.mean)} "
            f"(p {r.comparison.p_value:.2g}); {fmt(c.base.mean)} against "
            f"{fmt(c.other.mean)} kernel instructions {per} "
            f"(p {c.comparison.p_value:.2g})"
        )
    return out


RELEASES = "results-612-73-general"

# each general workload's exact count per operation, and its operation
COUNT_PER_OP = {
    "page-fault": ("kernel_insns_per_fault", "a fault"),
    "page-fault-threads": ("kernel_insns_per_fault", "a fault"),
    "usemem": ("kernel_insns_per_mib", "a MiB"),
    "lru-file-readonce": ("kernel_insns_per_mib", "a MiB"),
    "time-unmap": ("kernel_insns_per_munmap", "a munmap"),
    "mremap": ("kernel_insns_per_move", "a move"),
    "madvise": ("kernel_insns_per_call", "a call"),
    "thpchallenge": ("kernel_insns_per_fault", "a THP fault"),
    "stress-ng-mmap": ("kernel_insns_per_bogo_op", "a bogo-op"),
}


def ratio_cells(r):
    c = r.comparison
    return (
        f"{fmt(r.base.mean)} | {fmt(r.other.mean)} | {fmt_ratio(c.ratio)} "
        f"[{c.ci_low:.3f}, {c.ci_high:.3f}] | {c.p_value:.2g}"
    )


def figures_612_73():
    """6.12.117 against 7.3.4 on the general set, counted: each
    workload's lead metric and its exact count per operation, a row
    each; and the figures the text gives of the rows."""
    a = analysed(RELEASES)
    out = [
        f"run folder `{RELEASES}`",
        f"--workloads general --runs {a.m.runs} --count`",
    ]
    for wa in a.workloads:
        name = wa.workload.name
        lead = wa.workload.metrics[0].key
        rows = {r.metric: r for r in wa.rows}
        counted = "| - | | | | |"
        if name in COUNT_PER_OP:
            key, per = COUNT_PER_OP[name]
            counted = f"| {per} | {ratio_cells(rows[key])} |"
        out.append(
            f"| `{name}` | `{lead}` | {ratio_cells(rows[lead])} {counted}"
        )
    return out


# ---- mm CI runs -------------------------------------------------------

MMCI = "mmci-all1"


@functools.cache
def mmci_rows():
    """The run's rows, every kernel's and run's in one (mmci-all1 booted
    one kernel once: no ``run`` in any row's misc)."""
    o = Outcomes.read(RUNS / MMCI)
    assert [k.name for k in o.kernels] == ["up"]
    rows = [t for t in o.tests if not t.path.startswith("compare.")]
    assert {t.misc.get("run") for t in rows} == {None}
    return rows


@functools.cache
def mmci_cases():
    return compare.compare([mmci_rows()], [])


def wrappers():
    """Each wrapper's own row, in the order they ran."""
    return [t for t in mmci_rows() if t.path.count(".") == 2]


def name_of(wrapper):
    return wrapper.path.rsplit(".", 1)[1]


def cases_of(wrapper):
    """The wrapper's programs and cases, as the summary counts them (the
    wrapper's own row, which README gives as its boot, left out)."""
    under = [c for c in mmci_cases() if c.path.startswith(wrapper.path + ".")]
    (s,) = compare.summary(under, "up", None)
    return s


def boot_s(wrapper):
    return whole(wrapper.duration_s)


def mmci_figures():
    """The mm CI's tests on 7.3.4, first run: the totals, one table row
    per wrapper that failed, the wrappers skipped whole, the longest
    boots."""
    (total,) = compare.summary(mmci_cases(), "up", None)
    ws = wrappers()
    passed = [w for w in ws if w.status == TestStatus.PASS]
    minutes = sum(w.duration_s for w in ws) / 60
    out = [
        f"run folder `{MMCI}`",
        f"its {len(ws)} `ksft_*.sh` wrappers each on its own boot",
        f"{half_up(minutes, 1)} min of boots. {total.passed:,} rows pass, "
        f"{total.failed:,} fail, {total.skipped:,} skip; {len(passed)} "
        "wrappers pass whole.",
    ]
    for w in ws:
        if w.status != TestStatus.FAIL:
            continue
        s = cases_of(w)
        if s.passed + s.failed + s.skipped:
            cases = f"{s.passed} / {s.failed} / {s.skipped}"
        else:  # nothing ran under it: its exit status is the figure
            (code,) = re.findall(r"^exit status (\d+)$", w.misc["detail"])
            cases = f"exit {code}"
        out.append(f"| {name_of(w)} | {boot_s(w)} | {cases} |")
    longest = sorted(ws, key=lambda w: w.duration_s, reverse=True)
    top, rest = longest[:5], longest[5:]
    most = max(top, key=lambda w: cases_of(w).passed)
    named = ", ".join(
        f"`{name_of(w)}` {boot_s(w)} s"
        + (f" ({cases_of(w).passed} cases)" if w is most else "")
        for w in top
    )
    out.append(
        f"The longest boots: {named}; the other {len(rest)} took "
        f"{boot_s(rest[-1])} to {boot_s(rest[0])} s."
    )
    return out


def skipped_whole():
    return [name_of(w) for w in wrappers() if w.status == TestStatus.SKIP]


def failed_whole():
    return [name_of(w) for w in wrappers() if w.status == TestStatus.FAIL]


def mmci_section():
    """README's section of the run, up to the next heading."""
    text = README.read_text()
    start = text.index("## The mm CI's tests on 7.3.4, first run")
    return text[start : text.index("\n## ", start + 1)]


def manual_mmci_figures():
    """The manual's list of every wrapper's boot (``the other N wrappers
    A to B s each``: those below 10 s) and their sum."""
    ws = sorted(wrappers(), key=lambda w: w.duration_s, reverse=True)
    named, rest = [], []
    for w in ws:
        (rest if half_up(w.duration_s) < 10 else named).append(w)
    parts, i = [], 0
    while i < len(named):  # wrappers of the same whole second together
        same = [w for w in named[i:] if boot_s(w) == boot_s(named[i])]
        parts.append(
            " and ".join(sorted(f"`{name_of(w)}`" for w in same))
            + f" {boot_s(named[i])} s"
        )
        i += len(same)
    total = sum(w.duration_s for w in ws)
    return [
        f"run folder `{MMCI}`",
        ", ".join(parts) + f", the other {len(rest)} wrappers "
        f"{boot_s(rest[-1])} to {boot_s(rest[0])} s each: "
        f"{whole(total)} s in all.",
        f"{len(ws) - len(failed_whole()) - len(skipped_whole())} wrappers "
        "passed whole",
    ]


# ---- the tests --------------------------------------------------------

# Each document that quotes a kept run's figures, and for each such run
# the function that writes them as the document does.
# ---- mm CI runs of two kernels: a comparison and its search -----------

BROKEN = "mmci-broken1"


def runs_of(run, kernel):
    """The kept run's wrapper and case rows of one kernel, one list a
    boot round (misc's ``run``; a run of one round has none), in order."""
    rounds: dict[int, list] = {}
    for t in Outcomes.read(RUNS / run).tests:
        if t.kernel == kernel and t.path.startswith("kselftest."):
            rounds.setdefault(t.misc.get("run", 1), []).append(t)
    return [rounds[i] for i in sorted(rounds)]


def mask_figure(run, ref="up", other="next"):
    """lru_gen's enabled mask as each boot read it (kept with the
    wrapper's row since 48fc4d7): one mask in every boot of the run."""
    masks = [
        t.misc.get("lru_gen_enabled")
        for k in (ref, other)
        for rows in runs_of(run, k)
        for t in rows
        if t.path.count(".") == 2
    ]
    (mask,) = set(masks)
    assert mask is not None, f"{run}: a boot without its mask"
    boots = "both" if len(masks) == 2 else f"all {len(masks)} boots"
    return [f"lru_gen's mask {mask} in {boots}"]


KSM_U = "kselftest.mm.ksm.ksm_tests_-U.KSM_unmerging"


def figures_ksm_u_pooled():
    """ksm_tests -U over every x86_64 run with MGLRU on that booted
    ksm: its k of n on each kernel, and Fisher's one-sided p."""
    runs = (MGLRU2_73, KSM3_73, KSM4_73, KSM12_73)
    up, nxt = (
        compare.tally(
            KSM_U,
            [r for run in runs for r in compare.by_path(runs_of(run, k))],
        )
        for k in ("up", "next")
    )
    p = compare.fisher_greater(up, nxt)
    return [
        f"{up.k} of {up.n} boots on `up` and {nxt.k} of {nxt.n} on `next`, "
        f"p {p:.2f}"
    ]


def ksm_numa_case(run, ref="up", other="next"):
    """-N -m 1's comparison in ``run``, ``ref`` against ``other``."""
    cases = compare.compare(runs_of(run, ref), runs_of(run, other))
    (case,) = [c for c in cases if c.path == KSM_NUMA_CASE]
    return case


def figures_numa12_arm64_612():
    """6.12.117's ksm_numa on arm64, twelve boots a kernel side by side,
    MGLRU on: -N -m 1's k of n on each kernel and its p, no search."""
    case = ksm_numa_case(NUMA12_ARM64_612, "base", "next")
    assert case.verdict != compare.NEW
    assert not list((RUNS / NUMA12_ARM64_612).glob("mmci-first-bad-*"))
    return [
        f"run folder `{NUMA12_ARM64_612}`",
        *mask_figure(NUMA12_ARM64_612, "base", "next"),
        f"`-N -m 1` failed {case.up.k} of {case.up.n} on `base` and "
        f"{case.next.k} of {case.next.n} on `next`, Fisher's one-sided p "
        f"{case.p:.2f}",
    ]


def figures_numa6_arm64():
    """arm64's ksm_numa, six boots a kernel: -N -m 1's k of n on each,
    the p that made it new, and each prefix the search tried with its k
    of n, and the patch it named."""
    case = ksm_numa_case(NUMA6_ARM64)
    found = json.loads(
        (RUNS / NUMA6_ARM64 / "mmci-first-bad-next.json").read_text()
    )
    tried = sorted(
        (step["prefix"], *step["tallies"][KSM_NUMA_CASE].split("/"))
        for step in found["steps"]
    )
    return [
        f"run folder `{NUMA6_ARM64}`",
        f"failed {case.up.k} of {case.up.n} on `up` and {case.next.k} of "
        f"{case.next.n} on `next`, p {case.p:.3f}",
        ", ".join(f"prefix {n} {k} of {of}" for n, k, of in tried),
        f"it named `{found['patch']}`",
    ]


KSM_NUMA_CASE = "kselftest.mm.ksm_numa.ksm_tests_-N_-m_1.KSM_NUMA_merging"


def figures_numa12_arm64():
    """arm64's ksm_numa again, twelve boots a kernel side by side: the
    run's shape, -N -m 1's k of n on each kernel and its p, no search
    (no new failure), and both runs' failures pooled per run."""
    case = ksm_numa_case(NUMA12_ARM64)
    assert case.verdict != compare.NEW
    assert not list((RUNS / NUMA12_ARM64).glob("mmci-first-bad-*"))
    before = ksm_numa_case(NUMA6_ARM64)
    shape = [
        f
        for f in figures_k_of_n(NUMA12_ARM64)
        if f.startswith(("run folder", "boots of"))
    ]
    return (
        shape
        + mask_figure(NUMA12_ARM64)
        + [
            f"failed {case.up.k} of {case.up.n} on `up` and {case.next.k} "
            f"of {case.next.n} on `next`, Fisher's one-sided p {case.p:.2f}",
            f"({case.up.k + case.next.k} of {case.up.n + case.next.n} here, "
            f"{before.up.k + before.next.k} of "
            f"{before.up.n + before.next.n} in",
        ]
        + [
            f"{word} {t.k} {'failure' if t.k == 1 else 'failures'} in {t.n}"
            for word, first, last in (("had", 1, 4), ("minute,", 5, 12))
            # -N -m 1 over both kernels' rounds first..last
            for t in [
                compare.tally(
                    KSM_NUMA_CASE,
                    [
                        r
                        for k in ("up", "next")
                        for r in compare.by_path(
                            runs_of(NUMA12_ARM64, k)[first - 1 : last]
                        )
                    ],
                )
            ]
        ]
    )


def broken_run(run):
    """A broken-series run's soft_dirty comparison, the search's own
    record, and the figures both runs give alike: the run folder, the
    wrapper's k of n on each kernel, the new failures and their p."""
    cases = compare.compare(runs_of(run, "up"), runs_of(run, "broken"))
    new = [c for c in cases if c.verdict == compare.NEW]
    (wrapper,) = [c for c in cases if c.path == "kselftest.mm.soft_dirty"]
    (p,) = {f"{c.p:.2f}" for c in new}
    found = json.loads((RUNS / run / "mmci-first-bad-broken.json").read_text())
    assert sorted(found["cases"]) == sorted(c.path for c in new)
    return (
        wrapper,
        found,
        [
            f"run folder `{run}`",
            f"`soft_dirty` failed in {wrapper.next.k} of {wrapper.next.n} "
            f"boots on `broken`, {wrapper.up.k} of {wrapper.up.n} on `up`",
            f"{len(new)} new failures (the wrapper, its program and "
            f"{len(new) - 2} of its cases), each with Fisher's one-sided p "
            f"{p}",
        ],
    )


def prefix_figure(step, path, beside):
    """One step of a search as README gives it: the prefix, its patch,
    the verdict and ``path``'s k of n (``beside``: and the reference's,
    booted beside it)."""
    k, n = step["tallies"][path].split("/")
    verdict = "bad" if step["bad"] else "good"
    told = (
        f"prefix {step['prefix']} (`{step['patch']}`): {verdict}, {k} of {n}"
    )
    if beside:
        rk, rn = step["reference"][path].split("/")
        told += f" against `up`'s {rk} of {rn}"
    return told


def first_bad_figure(found):
    return f"first bad: patch {found['first_bad']}, `{found['patch']}`."


def mmci_broken_figures():
    """A broken series caught and bisected: the wrapper's k of n on each
    kernel, the new failures and their p, each prefix tried and the
    patch named, from the kept outcomes and the search's own record."""
    wrapper, found, head = broken_run(BROKEN)
    return [
        *head[:1],
        head[1] + ".",
        *head[2:],
        *(prefix_figure(s, wrapper.path, False) for s in found["steps"]),
        first_bad_figure(found),
    ]


BROKEN2 = "mmci-broken-r2"  # the same with the search of 1fe94e9


def search_order(found):
    """The prefixes in the order a search booted them, replayed from its
    kept verdicts as firstbad.locate() takes them: the whole series,
    then halves; it must end at the patch the search named."""
    bad = {s["prefix"]: s["bad"] for s in found["steps"]}
    n = max(bad)
    order, lo, hi = [n], 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        order.append(mid)
        lo, hi = (lo, mid) if bad[mid] else (mid, hi)
    assert sorted(order) == sorted(bad) and hi == found["first_bad"]
    return order


def test_the_broken_search_is_told_in_the_order_it_ran():
    _, found, _ = broken_run(BROKEN2)
    text = words(README.read_text())
    start = text.index(f"run folder `{BROKEN2}`")
    places = [text.index(f"prefix {p} (`", start) for p in search_order(found)]
    assert places == sorted(places)


def mmci_broken2_figures():
    """The broken series again, with the search that boots the whole
    series first and each prefix beside the reference: as
    mmci_broken_figures, each step with the reference's k of n booted
    beside it, in the order the search took them (the whole series,
    then halves)."""
    wrapper, found, head = broken_run(BROKEN2)
    steps = {s["prefix"]: s for s in found["steps"]}
    return [
        *head,
        *(
            prefix_figure(steps[prefix], wrapper.path, True)
            for prefix in search_order(found)
        ),
        first_bad_figure(found),
    ]


NEXT = "mmci-next1"


def wrapper_rows(cases):
    """Each wrapper's own comparison, in the order the cases came."""
    return [c for c in cases if c.path.count(".") == 2]


THP = "mmci-thp1"


def thp_rows():
    """The kept run's rows: one kernel booted once, so no ``run`` in any
    row's misc (as mmci-all1's)."""
    return [
        t
        for t in Outcomes.read(RUNS / THP).tests
        if t.kernel == "up" and t.path.startswith("kselftest.")
    ]


def mmci_thp_figures():
    """thp on up again, with BLK_DEV_WRITE_MOUNTED: its totals, and the
    one boot's time."""
    cases = compare.compare([thp_rows()], [])
    (up,) = compare.summary(cases, "up", None)
    (boot,) = [t for t in thp_rows() if t.path.count(".") == 2]
    return [
        f"run `{THP}`",
        f"one boot of {whole(boot.duration_s)} s",
        f"{up.passed} pass, {up.failed} fail, {up.skipped} skip",
    ]


def test_the_thp_record_is_the_runs_own_summary():
    cases = compare.compare([thp_rows()], [])
    printed = (RUNS / THP / "mmci-summary.txt").read_text()
    assert compare.summary_text(cases, "up", None) == printed


def mmci_next_figures():
    """7.3.4 against 7.3.4 + patches/7.3: the totals of each kernel, a
    table row per wrapper (its boots failed k of n on each kernel, its
    programs' and cases' rows on each), and every case that failed
    anywhere with its k of n and verdict."""
    cases = compare.compare(runs_of(NEXT, "up"), runs_of(NEXT, "next"))
    return [f"run folder `{NEXT}`", *pair_figures(cases, "up", "next")]


def pair_figures(cases, ref, other):
    """Two kernels' comparison as README gives it: the totals, a table
    row per wrapper and every case that failed on either."""
    up, nxt = compare.summary(cases, ref, other)
    out = [
        f"| {ref} | {up.passed:,} | {up.failed:,} | {up.skipped:,} | - |",
        f"| {other} | {nxt.passed:,} | {nxt.failed:,} | {nxt.skipped:,} "
        f"| {nxt.new} |",
    ]
    for w in wrapper_rows(cases):
        under = [c for c in cases if c.path.startswith(w.path + ".")]
        u, n = compare.summary(under, ref, other)
        out.append(
            f"| {w.path.rsplit('.', 1)[1]} | {w.up.k} of {w.up.n} "
            f"| {w.next.k} of {w.next.n} "
            f"| {u.passed} / {u.failed} / {u.skipped} "
            f"| {n.passed} / {n.failed} / {n.skipped} |"
        )
    # the failing programs and cases, a program's cases in one line when
    # they all failed alike (collapse_full, collapse_full_2, ...: a line
    # each would differ only in a digit of the name)
    programs: dict[str, list] = {}
    for c in cases:
        if (c.up.k or c.next.k) and c.path.count(".") > 2:
            program = ".".join(c.path.split(".")[:4])
            programs.setdefault(program, []).append(c)
    for program, failing in programs.items():
        kids = [c for c in failing if c.path != program]
        alike = {(c.up.k, c.up.n, c.next.k, c.next.n) for c in failing}
        if len(kids) > 1 and len(alike) == 1:
            c = failing[0]
            # the program's own row may have passed (a harness that
            # exits 0 whatever its cases did): then only its cases
            which = (
                f"`{program}` and {len(kids)} of its cases"
                if len(kids) < len(failing)
                else f"{len(kids)} cases of `{program}`"
            )
            out.append(
                f"{which}: each {c.up.k} of {c.up.n} on `{ref}`, "
                f"{c.next.k} of {c.next.n} on `{other}`"
            )
            continue
        out += [
            f"`{c.path}`: {c.up.k} of {c.up.n} on `{ref}`, "
            f"{c.next.k} of {c.next.n} on `{other}`"
            for c in failing
        ]
    return out


MMCI_612 = "mmci612-1"


def one_round(run, kernel):
    """A kept run's rows of one kernel booted once a wrapper (no ``run``
    in any row's misc): one round."""
    rows = [
        t
        for t in Outcomes.read(RUNS / run).tests
        if t.kernel == kernel and t.path.startswith("kselftest.")
    ]
    assert rows and {t.misc.get("run") for t in rows} == {None}
    return [rows]


def figures_mmci_612():
    """6.12.117 against 6.12.117 + patches/6.12, a boot per category:
    the totals, the table, the failing cases, the boots' minutes."""
    base, nxt = one_round(MMCI_612, "base"), one_round(MMCI_612, "next")
    cases = compare.compare(base, nxt)
    minutes = (
        sum(t.duration_s for t in base[0] + nxt[0] if t.path.count(".") == 2)
        / 60
    )
    return [
        f"run folder `{MMCI_612}`",
        f"{half_up(minutes)} min of boots",
        *pair_figures(cases, "base", "next"),
    ]


# 6.12.117's categories booted again: thp and pkey with the two fixes
# the first run showed, on each kernel; hmm and migration on base in a
# guest changed on purpose (--append; these records predate the rows'
# kernel_args_added, README gives the arguments)
AGAIN_612 = {
    "mmci612-thp-base": "base",
    "mmci612-thp-next": "next",
    "mmci612-hmm-nothp": "base",
    "mmci612-mig-hp64": "base",
}


def figures_612_by_category(run):
    """6.12.117's categories (x86_64 or arm64), a boot each on each kernel: as
    figures_in_seconds, and the allowed failures, the steady ones said
    with the run's name and other words than other runs' (two runs'
    counts stand in one sentence, and a changed digit must not make
    another run's figure)."""
    *some, steady = allowed_figures(run, "base", "next")
    n = steady.split()[0]
    # the boots and the longest as one figure: the four runs' longest
    # boots differ in a digit (thp 249 and 259 s)
    folder, boots, longest, *rest = figures_in_seconds(run, "base", "next")
    return [
        folder,
        f"{boots}, {longest}",
        *rest,
        *some,
        f"in `{run}`, {n} in every run of both kernels",
    ]


def figures_612_audit(run):
    """6.12.117's 23 categories on the audited kernel: as
    figures_612_by_category, ksm_numa's cases named with the run (an
    earlier run's "0 of 1 on `base`, 1 of 1" is a digit away)."""
    return [
        f.replace("`: ", f"` in `{run}`: ", 1)
        if f.startswith("`kselftest.mm.ksm_numa.")
        else f
        for f in figures_612_by_category(run)
    ]


def figures_612_nonuma(run):
    """A category of the audited 6.12.117 base on arm64 (pagemap, thp),
    booted three times with NUMA balancing off: every boot passed its
    wrapper with no failing row, the same rows in each."""
    boots = runs_of(run, "base")
    rows = set()
    for boot in boots:
        (wrapper,) = [t for t in boot if t.path.count(".") == 2]
        assert wrapper.misc["kernel_args_added"] == "numa_balancing=disable"
        assert wrapper.status == "pass"
        assert not [t for t in boot if t.status == "fail"]
        rows.add(
            tuple(sum(t.status == s for t in boot) for s in ("pass", "skip"))
        )
    ((passed, skipped),) = rows
    return [
        f"`{run}`",
        f"passed {len(boots)} boots of {len(boots)}",
        f"{passed} pass and {skipped} skip in each",
    ]


# arm64's mm CI kernel with BTI and rodata full (1cca644): memfd_secret
# and mdwe on 6.12.117's base and on 7.3.4
CFG_ARM64 = {"mmci612-arm64-cfg": "base", "mmci-arm64-cfg73": "up"}


def figures_arm64_cfg(run):
    """The totals, each wrapper's status and seconds, and mdwe's BTI
    cases."""
    rows, totals = one_kernel_totals(run, CFG_ARM64[run])
    bti = [t for t in rows if t.path.endswith("_arm64_BTI")]
    (status,) = {t.status.value for t in bti}
    # the run's name in the figure: the two runs differ in a digit
    return [f"`{run}`: {totals}", f"its {len(bti)} BTI cases {status}"]


AFDBM_ARM64_612 = "mmci612-arm64-afdbm"  # base with ARM64_HW_AFDBM, MGLRU on


def figures_612_arm64_afdbm():
    """Three categories on 6.12.117's base, arm64, its mm CI kernel with
    the hardware access flag, MGLRU on: the totals, each category's
    status and seconds, and lru_gen's mask in every boot."""
    rows, totals = one_kernel_totals(AFDBM_ARM64_612, "base")
    masks = [
        w.misc.get("lru_gen_enabled") for w in rows if w.path.count(".") == 2
    ]
    (mask,) = set(masks)
    return [
        f"`{AFDBM_ARM64_612}`: {totals}",
        f"lru_gen's mask {mask} in all {len(masks)} boots",
    ]


# 6.12.117's base booted again, a category or a few, in a guest changed
# on purpose (arm64, and x86_64 on the audited kernel): each row keeps
# the arguments added (kernel_args_added)
AUDIT_AGAIN_612 = {
    "mmci612-hugevm-hp64": "hugepages=64",
    "mmci612-hugevm-no5lvl": "no5lvl",
    "mmci612-audit-hmm-nothp": "transparent_hugepage=never",
    "mmci612-audit-htlb-hp64": "hugepages=64",
    "mmci612-arm64-hugevm-nolva": "arm64.nolva",
    "mmci612-arm64-audit-hmm-nothp": "transparent_hugepage=never",
    "mmci612-arm64-audit-htlb-hp64": "hugepages=64",
}
# arm64's pagemap on the audited 6.12.117 base, NUMA balancing off
PAGEMAP_NONUMA_612 = "mmci612-arm64-pagemap-nonuma"
# arm64's thp on the audited 6.12.117, three boots more on each kernel
THP3_ARM64_612 = "mmci612-arm64-audit-thp3"
# and on base, NUMA balancing off, three boots
THP_NONUMA_612 = "mmci612-arm64-thp-nonuma"
CHANGED_AGAIN_612 = {
    **AUDIT_AGAIN_612,
    "mmci612-arm64-hmm-nothp": "transparent_hugepage=never",
    "mmci612-arm64-mig-hp64": "hugepages=64",
    "mmci612-arm64-secret-rodata": "rodata=full",
    "mmci612-arm64-htlb-hp64": "hugepages=64",
}


def figures_612_changed_again(run):
    """As figures_612_again, every boot with the arguments README gives;
    on the audited kernel the totals follow the run's name (they can be
    a digit from an earlier run's)."""
    (rows,) = one_round(run, "base")
    assert {
        t.misc.get("kernel_args_added") for t in rows if t.path.count(".") == 2
    } == {CHANGED_AGAIN_612[run]}
    named, totals = figures_612_again(run)
    return [
        f"`--append {CHANGED_AGAIN_612[run]}`: `{run}`",
        *(
            [f"{named}, {totals}"]
            if run in AUDIT_AGAIN_612
            else [named, totals]
        ),
    ]


def one_kernel_totals(run, kernel):
    """A run of one kernel, one boot a category: its rows, and the
    figure of its totals and each category's status and boot time."""
    (rows,) = one_round(run, kernel)
    (s,) = compare.summary(compare.compare([rows], []), kernel, None)
    boots = [
        f"`{w.path.rsplit('.', 1)[1]}` {w.status.value}, "
        f"{whole(w.duration_s)} s"
        for w in rows
        if w.path.count(".") == 2
    ]
    return rows, "; ".join(
        [f"{s.passed} pass, {s.failed} fail, {s.skipped} skip", *boots]
    )


def figures_612_again(run):
    """One kernel, one boot a category: the run's totals, each category's
    boot time, and each of its programs' status."""
    _, totals = one_kernel_totals(run, AGAIN_612.get(run, "base"))
    return [f"`{run}`", totals]


def test_the_612_again_records_are_their_runs_own_summaries():
    # each one-kernel run, its kernel, and the guest it changed (the
    # summary's heading says so; "" for the mm CI's own guest)
    kept = [
        *((run, kernel, ()) for run, kernel in AGAIN_612.items()),
        *((run, kernel, ()) for run, kernel in CFG_ARM64.items()),
        *(
            (run, "base", tuple(args.split()))
            for run, args in CHANGED_AGAIN_612.items()
        ),
    ]
    for run, kernel, args in kept + [(AFDBM_ARM64_612, "base", None)]:
        cases = compare.compare(one_round(run, kernel), [])
        printed = (RUNS / run / "mmci-summary.txt").read_text()
        heading = (
            mmci.changed_guest((), mglru=True)
            if args is None
            else mmci.changed_guest(args)
        )
        assert heading + compare.summary_text(cases, kernel, None) == printed


def wrapper_seconds(run, kernel):
    """Each wrapper's (category's) boot seconds on ``kernel`` in a kept
    run that booted each once."""
    return {
        t.path.rsplit(".", 1)[1]: t.duration_s
        for t in one_round(run, kernel)[0]
        if t.path.count(".") == 2
    }


def manual_612_times():
    """The manual's times of 6.12.117's categories on base: the longest
    each by name, the rest as a range, the sums on each kernel."""
    boots = wrapper_seconds(MMCI_612, "base")
    named = ["thp", "migration", "vmalloc", "compaction", "ksm", "hugevm"]
    also = ["pagemap", "soft_dirty", "hmm", "mremap"]
    rest = sorted(v for k, v in boots.items() if k not in named + also)
    count = "eight" if len(rest) == 8 else str(len(rest))
    total = sum(boots.values())
    total_next = sum(wrapper_seconds(MMCI_612, "next").values())
    return [
        f"run folder `{MMCI_612}`",
        *(f"`{n}` {whole(boots[n])} s" for n in named),
        f"`pagemap` and `soft_dirty` {whole(boots['pagemap'])} s",
        f"`hmm` {whole(boots['hmm'])} s, `mremap` {whole(boots['mremap'])} s",
        f"the other {count} {whole(rest[0])} to {whole(rest[-1])} s each",
        f"{whole(total)} s in all ({whole(total_next)} s on `next`)",
    ]


def test_the_612_record_is_the_runs_own_summary():
    cases = compare.compare(
        one_round(MMCI_612, "base"), one_round(MMCI_612, "next")
    )
    printed = (RUNS / MMCI_612 / "mmci-summary.txt").read_text()
    assert compare.summary_text(cases, "base", "next") == printed


ARM64_1 = "mmci-arm64-1"
ARM64_2 = "mmci-arm64-more"  # the other wrappers but the five longest
ARM64_THP = "mmci-arm64-thp"
REST_73 = "mmci-rest-73"  # the x86_64 wrappers mmci-next1 left out
SLOW_73 = "mmci-slow-73"  # and its three longest but userfaultfd
LAST3_73 = "mmci-last3-73"  # and the last three, k of 2
PFRAG_73 = "mmci-pfrag-73"  # page_frag with its module, k of 2
MGLRU_73 = "mmci-mglru-73"  # ten wrappers with MGLRU on
ARM64_SLOW = "mmci-arm64-slow2"  # arm64's four longest but thp, page_frag
ARM64_COW2 = "mmci-arm64-cow2"  # arm64's cow again, k of 2


def figures_up_next(run, ref="up", other="next"):
    """7.3.4 against 7.3.4 + patches/7.3 (6.12.117 against 6.12.117 +
    patches/6.12: ``ref``, ``other``), a boot per wrapper (an x86_64 or an
    arm64 guest): the totals, the table, the failing cases, each kernel's
    minutes of boots and the longest boot of either."""
    up, nxt = one_round(run, ref), one_round(run, other)
    cases = compare.compare(up, nxt)
    boots = {
        k: [t for t in rows[0] if t.path.count(".") == 2]
        for k, rows in ((ref, up), (other, nxt))
    }
    # The longest boot of either kernel, and whose it was.
    kernel, longest = max(
        ((k, t) for k, b in boots.items() for t in b),
        key=lambda kt: kt[1].duration_s,
    )
    return [
        f"run folder `{run}`",
        "boots: "
        + ", ".join(
            f"`{k}` {half_up(sum(t.duration_s for t in b) / 60)} min"
            for k, b in boots.items()
        ),
        f"the longest `{longest.path.rsplit('.', 1)[1]}` "
        f"{whole(longest.duration_s)} s on `{kernel}`",
        *pair_figures(cases, ref, other),
    ]


def figures_in_seconds(run, ref="up", other="next"):
    """Wrappers (categories) a boot each on each kernel: as
    figures_up_next, the boots' time in seconds."""
    up, nxt = one_round(run, ref), one_round(run, other)
    seconds = {
        k: sum(t.duration_s for t in rows[0] if t.path.count(".") == 2)
        for k, rows in ((ref, up), (other, nxt))
    }
    return [
        f"run folder `{run}`",
        f"boots: `{ref}` {whole(seconds[ref])} s in all, "
        f"`{other}` {whole(seconds[other])} s",
        *figures_up_next(run, ref, other)[2:],
    ]


def boot_seconds(run, kernel):
    """Each boot of ``kernel`` in ``run``: its wrapper row's seconds."""
    return [
        t.duration_s
        for rows in runs_of(run, kernel)
        for t in rows
        if t.path.count(".") == 2
    ]


def figures_k_of_n(run, ref="up", other="next"):
    """7.3.4 against 7.3.4 + patches/7.3 (6.12.117 against 6.12.117 +
    patches/6.12: ``ref``, ``other``), several boots of each wrapper:
    the totals, the table and the failing cases with their k of n, and
    the shortest and longest boot."""
    cases = compare.compare(runs_of(run, ref), runs_of(run, other))
    boots = sorted(boot_seconds(run, ref) + boot_seconds(run, other))
    return [
        f"run folder `{run}`",
        f"boots of {whole(boots[0])} to {whole(boots[-1])} s",
        *pair_figures(cases, ref, other),
    ]


def allowed_figures(run, ref="up", other="next"):
    """A run's allowed failures (# XFAIL) as README gives them: each
    that came in some boots and not others, k of n on each kernel and
    Fisher's p, and how many came in every boot of each."""
    ref_runs, other_runs = runs_of(run, ref), runs_of(run, other)
    allowed = compare.allowed_failures(ref_runs, other_runs)
    steady = [a for a in allowed if a.in_every_run(compared=True)]
    return [
        f"`{a.path}`: {a.up.k} of {a.up.n} on `{ref}`, {a.next.k} of "
        f"{a.next.n} on `{other}`, p {a.p:.2g}"
        for a in allowed
        if a not in steady
    ] + [f"{len(steady)} in every boot of each kernel"]


def figures_mglru2():
    """mmci-mglru2-73 without its thp, whose boot on up did not start
    (qemu-error: its initrd removed by another process; thp is
    mmci-mglru-thp-73): the totals, the table, the failing cases, and
    each kernel's boots in seconds."""
    (up,), (nxt,) = runs_of(MGLRU2_73, "up"), runs_of(MGLRU2_73, "next")
    (thp,) = [t for t in up if t.path == "kselftest.mm.thp"]
    # QEMU stopped at once (its boot.json: qemu-error, no initrd)
    assert thp.status == TestStatus.ERROR and thp.duration_s < 1

    def kept(rows):
        return [r for r in rows if not r.path.startswith("kselftest.mm.thp")]

    up, nxt = kept(up), kept(nxt)
    seconds = {
        k: sum(t.duration_s for t in rows if t.path.count(".") == 2)
        for k, rows in (("up", up), ("next", nxt))
    }
    return [
        f"run folder `{MGLRU2_73}`",
        f"`up` {whole(seconds['up'])} s, `next` {whole(seconds['next'])} s",
        *pair_figures(compare.compare([up], [nxt]), "up", "next"),
    ]


def figures_612_cow3():
    return figures_k_of_n(COW3_612, "base", "next") + allowed_figures(
        COW3_612, "base", "next"
    )


@pytest.mark.parametrize(
    "run",
    [
        ARM64_1,
        ARM64_2,
        ARM64_THP,
        REST_73,
        SLOW_73,
        LAST3_73,
        PFRAG_73,
        MGLRU_73,
        ARM64_SLOW,
        ARM64_COW2,
        *sorted(LISTS_ALLOWED),
    ],
)
def test_the_up_next_records_are_the_runs_own_summaries(run):
    # the reference is the run's first kernel (base for 6.12.117's)
    ref = Outcomes.read(RUNS / run).kernels[0].name
    up, nxt = runs_of(run, ref), runs_of(run, "next")
    cases = compare.compare(up, nxt)
    printed = (RUNS / run / "mmci-summary.txt").read_text()
    # a run with MGLRU on says so first, as its rows do
    mglru = any(t.misc.get("mglru") == "on" for r in up + nxt for t in r)
    heading = mmci.changed_guest((), mglru=mglru)
    # the allowed failures' list came with 38ce4ed; earlier runs' summaries
    # have none
    allowed = compare.allowed_failures(up, nxt) if run in LISTS_ALLOWED else ()
    assert (
        heading + compare.summary_text(cases, ref, "next", allowed) == printed
    )


def manual_arm64_times():
    """The manual's times of 7.3.4's wrappers on arm64's up: the six
    longest by name, the rest as a range, the sum."""
    boots = wrapper_seconds(ARM64_1, "up") | wrapper_seconds(ARM64_2, "up")
    named = ["migration", "hmm", "pagemap", "ksm", "compaction", "mremap"]
    rest = sorted(v for k, v in boots.items() if k not in named)
    return [
        ", ".join(f"`{n}` {whole(boots[n])} s" for n in named),
        f"the other {len(rest)} wrappers {whole(rest[0])} to "
        f"{whole(rest[-1])} s "
        f"each: {whole(sum(boots.values()))} s in all",
    ]


HOST_73 = "mmci-host-73"
HOST_612 = "mmci612-host"  # 6.12.117's host tests, vma's not building
HOST_612_STUB = "mmci612-host-vmastub"  # and with vma_close()'s stub


def host_rows(run, kernel):
    """One kernel's host-test rows of ``run``, a round (runs_of's
    shape)."""
    return [
        [
            t
            for t in Outcomes.read(RUNS / run).tests
            if t.kernel == kernel and t.path.startswith("hosttest.")
        ]
    ]


def host_totals(run, ref="up", other="next"):
    """A run's host tests, once each: the totals of each kernel."""
    cases = compare.compare(host_rows(run, ref), host_rows(run, other))
    up, nxt = compare.summary(cases, ref, other)
    return [
        f"run folder `{run}`",
        f"{up.passed} pass, {up.failed} fail, {up.skipped} skip on `{ref}`",
        f"{nxt.passed} pass, {nxt.failed} fail, {nxt.skipped} skip and "
        f"{nxt.new} new on `{other}`",
    ]


def figures_host_73():
    """7.3.4's host tests against 7.3.4 + patches/7.3's, once each: the
    totals and the two longest programs' wall and CPU seconds on up."""
    by = {
        t.path.removeprefix("hosttest."): t
        for t in host_rows(HOST_73, "up")[0]
    }
    main, maple = by["radix-tree.main"], by["radix-tree.maple"]
    return [
        *host_totals(HOST_73),
        f"radix-tree's `main` {whole(main.duration_s)} s",
        f"`maple` {whole(maple.duration_s)} s",
        f"({whole(main.misc['cpu_s'])} and {whole(maple.misc['cpu_s'])} s "
        "of CPU)",
    ]


def figures_host_612_stub():
    """6.12.117's host tests with the vma test's stub, one kernel."""
    rows = host_rows(HOST_612_STUB, "stub")[0]
    by = {t.path.removeprefix("hosttest."): t.status for t in rows}
    passed = sum(1 for st in by.values() if st is TestStatus.PASS)
    assert by["vma.vma"] is TestStatus.PASS, "README: `vma` pass"
    return [f"run folder `{HOST_612_STUB}`", f"{passed} pass of {len(rows)}"]


SUITE_73 = "suite73-up"  # 7.3.4's suite with ALWAYS_FORCE and libgcc_s


def figures_suite_73():
    """7.3.4's suite boot, MGLRU off: its totals, its kselftests (each
    passing, compared or not), its four failures (the suite's tests of
    the bugs 0002 and 0004 fix, named here) and its boot's time."""
    tests = Outcomes.read(RUNS / SUITE_73).tests
    count = {
        st: sum(1 for t in tests if t.status is st)
        for st in (TestStatus.PASS, TestStatus.FAIL, TestStatus.SKIP)
    }
    kself = [t for t in tests if ".kselftest." in t.path]
    apart = [t for t in kself if t.status is TestStatus.SKIP]
    assert all(
        t.misc["detail"].startswith("pass here; not compared") for t in apart
    )
    assert all(t.status is TestStatus.PASS for t in kself if t not in apart)
    failed = sorted(
        t.path.split(".", 2)[2] for t in tests if t.status is TestStatus.FAIL
    )
    assert failed == [
        "ksm.ksm_cow_unchanged_remerged_next_scan",
        "ksm.ksm_failed_merge_retried_every_scan",
        "ksm.ksm_stable_node_alloc_failure_breaks_cow",
        "lazyfree.redirtied_64k_put_back_not_soft_dirty",
    ]
    boot = json.loads((RUNS / SUITE_73 / "mglru-n" / "boot.json").read_text())
    assert boot["status"] == "ok" and boot["issues"] == []
    return [
        f"run folder `{SUITE_73}`",
        f"one boot of {whole(boot['elapsed'])} s under TCG",
        f"{count[TestStatus.PASS]} pass, {count[TestStatus.FAIL]} fail, "
        f"{count[TestStatus.SKIP]} skip",
        f"Every one of the {len(kself)} kselftests passed, "
        f"{len(kself) - len(apart)} compared and {len(apart)} passing",
    ]


HTLB_FIXED = "mmci-htlb-73"
HTLB_612 = "mmci612-htlb-hp64"  # 6.12.117's hugetlb, 2 MiB pages at boot
SLOW_612 = "mmci612-slow"  # 6.12.117's five categories left out before


def figures_htlb_fixed(run=HTLB_FIXED, kernel="up"):
    """One wrapper, one boot of one kernel (7.3.4's hugetlb with pgrep in
    the guest; 6.12.117's with huge pages reserved at boot): its totals
    and the boot's time."""
    (rows,) = one_round(run, kernel)
    (s,) = compare.summary(compare.compare([rows], []), kernel, None)
    (boot,) = [t for t in rows if t.path.count(".") == 2]
    return [
        f"run folder `{run}`",
        f"{s.passed} pass, {s.failed} fail, {s.skipped} skip, one boot of "
        f"{whole(boot.duration_s)} s",
    ]


def figures_612_cow_read_again():
    """mmci612-slow's two cow logs (kept under logs/) read by today's
    parser, which names a case by its [RUN] line: each kernel's totals,
    its paths, those on one kernel only, and the allowed failures that
    came on one kernel and not the other."""
    from foliolab.suite.mmci import discover, guest, results

    w = discover.Wrapper("cow", "./run_vmtests.sh -t cow", "cow", "", True)
    rows = {
        k: results.wrapper_outcomes(
            results.WrapperRun(
                w,
                guest.wrapper_output(
                    (RUNS / SLOW_612 / "logs" / f"{k}-cow.txt").read_text()
                ),
                0,
            ),
            k,
        )
        for k in ("base", "next")
    }
    cases = compare.compare([rows["base"]], [rows["next"]])
    base, nxt = compare.summary(cases, "base", "next")
    assert (base.passed, base.failed, base.skipped) == (
        nxt.passed,
        nxt.failed,
        nxt.skipped,
    )
    paths = {k: {r.path for r in rows[k]} for k in rows}
    assert len(paths["base"]) == len(paths["next"])
    flips = [
        a
        for a in compare.allowed_failures([rows["base"]], [rows["next"]])
        if a.up.k != a.next.k
    ]
    assert all((a.up.k, a.next.k) == (0, 1) for a in flips)
    return [
        f"{base.passed} pass, {base.failed} fail, {base.skipped} skip on "
        "each kernel",
        f"{len(paths['base'])} paths on each, "
        f"{len(paths['base'] ^ paths['next'])} on one only",
        f"{len(flips)} allowed failures on `next` alone",
    ]


def figures_612_slow():
    return (
        figures_in_seconds(SLOW_612, "base", "next")
        + figures_612_cow_read_again()
    )


def manual_612_more_times():
    """The manual's times of 6.12.117's five categories of mmci612-slow
    on base, and each kernel's sum."""
    base = wrapper_seconds(SLOW_612, "base")
    nxt = wrapper_seconds(SLOW_612, "next")
    named = ["userfaultfd", "hugetlb", "gup_test", "cow", "ksm_numa"]
    return [
        ", ".join(f"`{n}` {whole(base[n])} s" for n in named) + " on `base`",
        f"({whole(sum(base.values()))} s in all; "
        f"{whole(sum(nxt.values()))} s on `next`)",
    ]


def manual_arm64_slow_times():
    """The manual's times of arm64's four longest but thp and page_frag
    (mmci-arm64-slow2): each on up, page_frag on both."""
    up = wrapper_seconds(ARM64_SLOW, "up")
    nxt = wrapper_seconds(ARM64_SLOW, "next")
    named = ["hugetlb", "userfaultfd", "cow", "gup_test"]
    return [
        ", ".join(f"`{n}` {whole(up[n])} s" for n in named) + " on `up`",
        f"`page_frag` {whole(nxt['page_frag'])} s on `next` "
        f"({whole(up['page_frag'])} s on `up`",
    ]


def figures_audit(run):
    """7.3.4's 32 wrappers on the audited config, one boot each: the
    boots, the tables, the failing cases and the allowed failures."""
    return figures_in_seconds(run) + allowed_figures(run)


def figures_audit_mglru(run):
    """The reclaim wrappers on the audited config, MGLRU on: the boots,
    the tables and lru_gen's mask, named by the run ("mask 7 in all 24
    boots" is another run's)."""
    return figures_in_seconds(run) + [
        f"{m} of `{run}`" for m in mask_figure(run)
    ]


def figures_pagemap_numa():
    """arm64's pagemap warning on the audited 7.3.4 against NUMA
    balancing: every boot with balancing off passed every row and the
    wrapper; every boot with it on (the audit's two and the one with the
    hardware access flag hidden) failed the wrapper on pgtable.h:429."""

    def wrapper(run, kernel="up"):
        (rows,) = one_round(run, kernel)
        (row,) = [t for t in rows if t.path == "kselftest.mm.pagemap"]
        return rows, row

    passed = set()
    for run in PAGEMAP_NONUMA_73:
        rows, row = wrapper(run)
        assert row.misc["kernel_args_added"] == "numa_balancing=disable"
        assert row.status == "pass", run
        assert all(t.status == "pass" for t in rows), run
        passed.add(len(rows))
    warned = [
        wrapper(run, kernel)[1]
        for run, kernel in (
            (AUDIT_ARM64_73, "up"),
            (AUDIT_ARM64_73, "next"),
            (PAGEMAP_NOHAFDBS_73, "up"),
        )
    ]
    assert warned[-1].misc["kernel_args_added"] == "id_aa64mmfr1.hafdbs=0"
    assert all(
        t.status == "fail" and "pgtable.h:429" in t.misc["detail"]
        for t in warned
    )
    (rows,) = passed
    return [
        f"passed the wrapper {len(PAGEMAP_NONUMA_73)} times of "
        f"{len(PAGEMAP_NONUMA_73)}",
        f"`{PAGEMAP_NONUMA_73[0]}` to `-{PAGEMAP_NONUMA_73[-1].split('-', 2)[2]}`",
        f"{rows} rows passed in each",
        f"all {len(warned)} boots with balancing on warned",
        f"`up` again in `{PAGEMAP_NOHAFDBS_73}`",
    ]


FIGURES = {
    README: {
        **{
            run: functools.partial(figures_612_audit, run)
            for run in (AUDIT_X86_612, AUDIT_ARM64_612)
        },
        **{
            run: functools.partial(figures_612_nonuma, run)
            for run in (PAGEMAP_NONUMA_612, THP_NONUMA_612)
        },
        THP3_ARM64_612: functools.partial(
            figures_k_of_n, THP3_ARM64_612, "base", "next"
        ),
        # one set of figures, which README names by each of its runs
        **{
            run: figures_pagemap_numa
            for run in (PAGEMAP_NOHAFDBS_73, *PAGEMAP_NONUMA_73)
        },
        AUDIT_X86_73: functools.partial(figures_audit, AUDIT_X86_73),
        AUDIT_ARM64_73: functools.partial(figures_audit, AUDIT_ARM64_73),
        AUDIT_MGLRU_X86_73: functools.partial(
            figures_audit_mglru, AUDIT_MGLRU_X86_73
        ),
        AUDIT_MGLRU_ARM64_73: functools.partial(
            figures_audit_mglru, AUDIT_MGLRU_ARM64_73
        ),
        HTLB_FIXED: figures_htlb_fixed,
        HTLB_612: functools.partial(figures_htlb_fixed, HTLB_612, "base"),
        SLOW_612: figures_612_slow,
        COW3_612: figures_612_cow3,
        SUDO_73: lambda: [
            f
            for f in figures_in_seconds(SUDO_73)
            if not f.startswith("the longest")
        ],
        MGLRU_THP_73: functools.partial(figures_in_seconds, MGLRU_THP_73),
        THP2_73: lambda: figures_in_seconds(THP2_73) + mask_figure(THP2_73),
        MGLRU3_73: functools.partial(figures_in_seconds, MGLRU3_73),
        NUMA6_ARM64: figures_numa6_arm64,
        NUMA6_73: lambda: (
            [
                f
                for f in figures_k_of_n(NUMA6_73)
                if f.startswith(("run folder", "boots of"))
            ]
            + [
                f"gave {c.up.k} of {c.up.n} on `up` and {c.next.k} of "
                f"{c.next.n} on `next`"
                for c in [ksm_numa_case(NUMA6_73)]
            ]
        ),
        ARM64_MGLRU3: lambda: (
            figures_in_seconds(ARM64_MGLRU3) + mask_figure(ARM64_MGLRU3)
        ),
        ARM64_MGLRU4: lambda: (
            figures_in_seconds(ARM64_MGLRU4)
            + mask_figure(ARM64_MGLRU4)
            + allowed_figures(ARM64_MGLRU4)
        ),
        ARM64_MGLRU5: lambda: (
            figures_in_seconds(ARM64_MGLRU5)
            + mask_figure(ARM64_MGLRU5)
            + allowed_figures(ARM64_MGLRU5)
        ),
        MGLRU3_612: lambda: (
            figures_in_seconds(MGLRU3_612, "base", "next")
            + [f"({whole(max(boot_seconds(MGLRU3_612, 'base')))} s on `base`)"]
            + mask_figure(MGLRU3_612, "base", "next")
            + allowed_figures(MGLRU3_612, "base", "next")
        ),
        NUMA12_ARM64: figures_numa12_arm64,
        NUMA12_ARM64_612: figures_numa12_arm64_612,
        MGLRU2_612: lambda: (
            figures_in_seconds(MGLRU2_612, "base", "next")
            + mask_figure(MGLRU2_612, "base", "next")
            + allowed_figures(MGLRU2_612, "base", "next")
        ),
        KSM12_73: lambda: (
            figures_k_of_n(KSM12_73)
            + mask_figure(KSM12_73)
            + figures_ksm_u_pooled()
        ),
        MGLRU_612: functools.partial(
            figures_in_seconds, MGLRU_612, "base", "next"
        ),
        MGLRU2_73: figures_mglru2,
        KSM3_73: functools.partial(figures_k_of_n, KSM3_73),
        KSM4_73: functools.partial(figures_k_of_n, KSM4_73),
        KSM4_ARM64: functools.partial(figures_k_of_n, KSM4_ARM64),
        COW_MGLRU_73: lambda: (
            figures_k_of_n(COW_MGLRU_73) + allowed_figures(COW_MGLRU_73)
        ),
        # "the longest `migration` N s" words another run's figure too
        ARM64_MGLRU: lambda: [
            re.sub(
                r"the longest (`\w+`) (\d+) s", r"\1 the longest at \2 s", f
            )
            for f in figures_in_seconds(ARM64_MGLRU)
        ],
        "results-612-r7-count": figures_612_r7_count,
        "results-73-r2-count": figures_73_r2_count,
        "results-73-r2-count-b": figures_73_r2_count_b,
        MMCI: mmci_figures,
        BROKEN: mmci_broken_figures,
        BROKEN2: mmci_broken2_figures,
        NEXT: mmci_next_figures,
        THP: mmci_thp_figures,
        MMCI_612: figures_mmci_612,
        HOST_73: figures_host_73,
        SUITE_73: figures_suite_73,
        HOST_612: functools.partial(host_totals, HOST_612, "base", "next"),
        HOST_612_STUB: figures_host_612_stub,
        ARM64_1: functools.partial(figures_up_next, ARM64_1),
        ARM64_2: functools.partial(figures_up_next, ARM64_2),
        ARM64_THP: functools.partial(figures_up_next, ARM64_THP),
        REST_73: functools.partial(figures_in_seconds, REST_73),
        SLOW_73: functools.partial(figures_in_seconds, SLOW_73),
        LAST3_73: functools.partial(figures_k_of_n, LAST3_73),
        PFRAG_73: functools.partial(figures_k_of_n, PFRAG_73),
        MGLRU_73: functools.partial(figures_in_seconds, MGLRU_73),
        ARM64_SLOW: functools.partial(figures_in_seconds, ARM64_SLOW),
        ARM64_COW2: functools.partial(figures_k_of_n, ARM64_COW2),
        **{
            run: functools.partial(figures_612_again, run) for run in AGAIN_612
        },
        **{
            run: functools.partial(figures_612_by_category, run)
            for run in (ARM64_612, ARM64_SLOW_612)
        },
        **{
            run: lambda run=run: (
                figures_612_by_category(run) + mask_figure(run, "base", "next")
            )
            for run in (
                ARM64_MGLRU_612,
                ARM64_MGLRU_SLOW_612,
                *AUDIT_MGLRU_612,
            )
        },
        **{
            run: functools.partial(figures_612_changed_again, run)
            for run in CHANGED_AGAIN_612
        },
        **{
            run: functools.partial(figures_arm64_cfg, run) for run in CFG_ARM64
        },
        AFDBM_ARM64_612: figures_612_arm64_afdbm,
        WALK_ARM64_73: lambda: (
            figures_in_seconds(WALK_ARM64_73)
            + mask_figure(WALK_ARM64_73)
            + [f"in `{WALK_ARM64_73}`: {allowed_figures(WALK_ARM64_73)[-1]}"]
        ),
        WALK_ARM64_612: lambda: (
            figures_612_by_category(WALK_ARM64_612)
            + mask_figure(WALK_ARM64_612, "base", "next")
        ),
        GENERAL_612: figures_612_general,
        USEMEM_612: figures_612_usemem,
        RELEASES: figures_612_73,
        GENERAL_73: figures_73_general,
        PF_73: figures_73_again,
        SNG_73: figures_73_again,
    },
    PROJECT_ROOT / "patches" / "6.12" / "0000-cover-letter.patch": {
        "results-612-r7-count": cover_612_figures,
    },
    PROJECT_ROOT / "patches" / "7.3" / "cover-s0.txt": {
        "results-73-r2-count": cover_s0_figures,
    },
    PROJECT_ROOT / "patches" / "7.3" / "cover-s1.txt": {
        "results-73-r2-count": cover_s1_figures,
        "results-73-r2-count-b": cover_s1_b_figures,
    },
    MANUAL: {
        MMCI: manual_mmci_figures,
        MMCI_612: manual_612_times,
        SLOW_612: manual_612_more_times,
        ARM64_SLOW: manual_arm64_slow_times,
        ARM64_1: manual_arm64_times,
        # and the two of round 2
        "results-612-r7-count": manual_rereported_figures,
    },
    message("0008"): {"results-73-r2-count": message_0008_figures},
    message("0015"): {"results-73-r2-count": message_0015_figures},
}
QUOTES = [(doc, run) for doc, runs in FIGURES.items() for run in sorted(runs)]


@pytest.mark.parametrize(
    ("doc", "run"),
    QUOTES,
    ids=[f"{d.relative_to(PROJECT_ROOT)}:{r}" for d, r in QUOTES],
)
def test_each_figure_a_document_gives_of_a_kept_run_is_what_its_record_gives(
    doc, run
):
    assert (RUNS / run).is_dir(), f"{run}: its record is not in {RUNS}"
    text = words(doc.read_text())
    missing = [f for f in FIGURES[doc][run]() if not gives(words(f), text)]
    assert not missing, (
        f"{doc.name} does not say what the record of {run} gives; write:\n"
        + "\n".join(missing)
    )


def test_every_run_readme_names_is_kept_or_said_not_to_be():
    named = set(RUN_NAME.findall(README.read_text()))
    kept = {p.name for p in RUNS.iterdir() if p.is_dir()}
    unknown = sorted(named - kept - NOT_KEPT)
    assert not unknown, (
        f"README names runs whose record is neither in {RUNS} nor listed "
        f"as not kept: {', '.join(unknown)}"
    )
    # and every figure-bearing kept run is read by this test
    assert named & kept <= set(FIGURES[README])
    assert not NOT_KEPT & kept, "a kept run is listed as not kept"
    assert not NOT_KEPT - named, "NOT_KEPT lists a run README no longer names"


def test_the_mmci_record_is_the_runs_own_summary():
    """The kept outcomes give the summary the run printed, byte for
    byte, through the function that printed it."""
    assert Marker.read(RUNS / MMCI) == Marker(RunKind.MMCI, finished=True)
    printed = (RUNS / MMCI / "mmci-summary.txt").read_text()
    assert compare.summary_text(mmci_cases(), "up", None) == printed


@pytest.mark.parametrize(
    ("run", "kernel"),
    [(NEXT, "next"), (BROKEN, "broken"), (BROKEN2, "broken")],
)
def test_an_mmci_comparison_quoted_is_the_runs_own_summary(run, kernel):
    """README's figures of a two-kernel run are computed again from the
    kept rows (runs_of, compare.compare); they must give the summary the
    run printed, byte for byte, or README quotes a comparison the run
    never made (compare's rules changed since, or rows lost)."""
    cases = compare.compare(runs_of(run, "up"), runs_of(run, kernel))
    printed = (RUNS / run / "mmci-summary.txt").read_text()
    assert compare.summary_text(cases, "up", kernel) == printed


def test_the_mmci_table_has_a_row_for_each_wrapper_that_failed_and_no_other():
    section = mmci_section()
    table = re.findall(r"^\| (\w+) \| \d+ \|", section, re.M)
    assert sorted(table) == sorted(failed_whole())
    skipped = section[section.index("Skipped whole:") :]
    skipped = skipped[: skipped.index("Run again")]
    assert sorted(re.findall(r"`(\w+)` \(", skipped)) == sorted(
        skipped_whole()
    )


def test_a_changed_figure_is_caught():
    """Any one digit of a figure changed in its document: not found
    (unless the change makes another figure of the same run: two cases
    named ..._214 and ..._215 are both figures)."""
    for doc, runs in FIGURES.items():
        text = words(doc.read_text())
        for run, figures in runs.items():
            given = list(map(words, figures()))
            for f in given:
                assert gives(f, text)
                digits = [m.start() for m in re.finditer(r"\d", f)]
                assert digits, f"{run}: a figure without a number: {f}"
                for i in digits:
                    changed = f[:i] + str((int(f[i]) + 1) % 10) + f[i + 1 :]
                    if any(changed in g for g in given if g != f):
                        continue
                    assert not gives(changed, text), changed


def test_half_up_rounds_a_half_up():
    assert [str(half_up(x)) for x in (6.5, 413.5, 346.5, 10.4)] == [
        "7",
        "414",
        "347",
        "10",
    ]
    assert str(half_up(48.53, 1)) == "48.5"


def told_612(run):
    """base against next in ``run`` as README gives it (pair_figures)."""
    cases = compare.compare(runs_of(run, "base"), runs_of(run, "next"))
    return pair_figures(cases, "base", "next")


def test_arm64_612_categories_with_mglru_on_are_as_with_it_off():
    """README says each category's row, and each failure, of 6.12.117's
    18 categories on arm64 with MGLRU on is what it was with MGLRU off."""
    assert told_612(ARM64_MGLRU_612) == told_612(ARM64_612)


def test_arm64_612_categories_with_the_walk_are_as_without_it():
    """README says each category's row of 6.12.117 on arm64 with MGLRU's
    page-table walk on (ARM64_HW_AFDBM) is its row with the walk off."""

    def rows(run):
        return {
            f
            for f in told_612(run)
            if f.startswith("| ") and not f.startswith(("| base", "| next"))
        }

    assert rows(WALK_ARM64_612) <= rows(ARM64_MGLRU_612)
