"""mremap: mremap() throughput (mremapmove.c, run by mremap.sh), a
populated anonymous region moved back and forth, moves a second and MiB
moved a second.

What it stands for: the kernel work under stress-ng's mremap stressor
(mmtests' and LKP's stress-ng jobs), whose bogo-op folds shrinking,
growing, moving and touching random sizes into one count
(``stress-ng-mremap`` runs that one); will-it-scale has no mremap case.
Here one move of a fixed region is the operation, each call timed alone,
the pages checked present and intact afterwards, in base pages or THPs,
with the kernel moving whole page tables (``move=pmd``), every PTE on
its own (``pte``) or to where it chooses (``maymove``).

Why its lead is ``mremap.ops_per_sec`` and not stress-ng's name: that
name, ``stress-ng.mremap.ops_per_sec``, is the stressor's bogo-ops,
another operation, and ``stress-ng-mremap`` already reports under it;
two numbers of different things under one name would mislead a report's
reader. It keeps stress-ng's ``ops_per_sec`` suffix, so it reads as the
same kind of figure. Its samples are not held to a captured boot yet (no
fixture; the contract test names it as missing).

Counted (``--count``): the window is the moves (mremapmove.c marks it),
with what lies between the calls (the clock's reads; under maymove the
untimed shrink and guard), so what a move costs is move_vma's own count,
entered once a move: its kernel instructions (callees included: the VMA
copied, the page tables moved and the TLB flushed, the source unmapped)
per move and per MiB moved, the IPIs it sends and its TLB invalidations
per move. The window's whole counts are secondary."""

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

# The counting window mremapmove.c marks: FL_WIN_MREMAP (windows.py
# gathers every workload's window).
WINDOW = Window(10, "MREMAP", "the moves, and what lies between them")
# A move is an entry of move_vma (mm/mremap.c), which moves one VMA: it
# copies it, moves its page tables (move_page_tables, the TLB flush
# inside) and unmaps the source. The x86_64 6.12 and 7.3 builds here
# call it out of line (objdump of mm/mremap.o): 6.12 from
# __do_sys_mremap, mremap_to's call and the grow path's; 7.3 from
# do_mremap's grow path, and from mremap_to by a tail jump, which the
# counter follows to move_vma's own return. The region is one VMA, so
# one entry a move (7.3's remap_move calls mremap_to once a VMA); the
# MREMAP_FIXED target's unmap and maymove's untimed shrink are outside
# it. arm64's build not checked. Per move is its own count.
MOVE_UNIT = CountUnit("move", "move_vma", whole_window=False)
_ROOTS = ("move_vma",)
# The MiB moved in the window, all moves: what the per-MiB figure is
# per. A counting sample's derive puts it among its values for per_move
# (a counting sample keeps only what is counted, so a timed sample
# never reports it).
MOVED_MIB = "mib_moved"

LEAD = "mremap.ops_per_sec"
# A THP run's region in THPs before the moves, at least: less, and THP
# was not in effect (none to be had, or khugepaged's job left undone).
MIN_THP_SHARE = 0.9


def derive_mremap(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    copy_metrics(s, d, ("us_mean", "us_min", "us_max"))
    if "ops_per_sec" not in s.metrics:
        d.invalid.append("mremapmove reported no moves")
        return d
    d.values[LEAD] = s.metrics["ops_per_sec"]
    d.values["mremap.mb_per_s"] = s.metrics.get("mb_per_s", 0.0)
    asked = 2 * int(params["iterations"])
    if params.get(COUNTING) == "1" and s.metrics.get("ops"):
        d.values[MOVED_MIB] = s.metrics["ops"] * int(params["size_mb"])
    if s.metrics.get("ops", 0) < asked:
        d.invalid.append(
            f"{s.metrics.get('ops', 0):.0f} moves of the {asked} asked"
        )
    pages = int(params["size_mb"]) * 256
    present = s.metrics.get("pages_present", 0)
    if present < pages:
        d.invalid.append(
            f"{present:.0f} of {pages} pages present after the moves"
        )
    blocks, huge = s.metrics.get("blocks", 0), s.metrics.get("thp_blocks", 0)
    d.values["thp_pct"] = 100.0 * huge / blocks if blocks else 0.0
    if params["thp"] == "always" and huge < MIN_THP_SHARE * blocks:
        d.invalid.append(
            f"THP asked (thp=always): {huge:.0f} of {blocks:.0f} "
            "PMD-sized blocks of the region in THPs"
        )
    if params["thp"] == "never" and huge:
        d.invalid.append(f"{huge:.0f} THPs in the region with thp=never")
    if vm:
        d.values["thp_split_pmd"] = vm.get("thp_split_pmd", 0)
    return d


# the IPIs and TLB invalidations inside each move, and the root's
# instructions per MiB, with the MiB they are per
per_move = per_root_call_and_mib(MOVE_UNIT, MOVED_MIB)


MREMAP = Workload(
    name="mremap",
    title=f"mremap() moves of a populated anonymous region ({LEAD})",
    script="mremap",
    params={
        "move": Param(
            "pte",
            "pte: MREMAP_MAYMOVE|MREMAP_FIXED to a slot a page off PMD "
            "alignment, every PTE moved on its own; pmd: the same between "
            "PMD-aligned slots, whole page tables or huge PMDs moved; "
            "maymove: MREMAP_MAYMOVE only, grown by a page against a "
            "guard, so the kernel moves it where it chooses",
            choices=("pte", "pmd", "maymove"),
        ),
        "size_mb": Param.integer(
            "16",
            "MiB in the region, written whole before the moves",
            2,
            1024,
        ),
        "thp": Param(
            "never",
            "PMD THP for the region (transparent_hugepage/enabled); "
            "with move=pte the first move splits every huge PMD",
            choices=("never", "always"),
        ),
        "iterations": Param.integer(
            "500", "round trips a sample (two moves each)", 1, 100000
        ),
    },
    metrics=(
        Metric(
            LEAD,
            "ops/s",
            "higher",
            "mremap() moves a second, the calls alone",
        ),
        Metric(
            "mremap.mb_per_s",
            "MiB/s",
            "higher",
            "MiB moved a second, the calls alone",
            primary=False,
        ),
        # the lead's inverse: not a second test of the same numbers
        Metric(
            "us_mean",
            "us",
            "lower",
            "one move, mean of the sample's",
            primary=False,
        ),
        Metric("us_min", "us", "lower", "fastest move", primary=False),
        Metric("us_max", "us", "lower", "slowest move", primary=False),
        Metric(
            "thp_pct",
            "%",
            NO_DIRECTION,
            "PMD-sized blocks of the region in THPs before the moves "
            "(kpageflags)",
            primary=False,
        ),
        Metric(
            "thp_split_pmd",
            "PMDs",
            NO_DIRECTION,
            "thp_split_pmd (vmstat): huge PMDs the moves split",
            primary=False,
        ),
        *window_secondary(
            count_metrics(
                MOVE_UNIT,
                _ROOTS,
                (
                    Metric(
                        "move_vma_insns_per_mib",
                        "insns",
                        "lower",
                        "counted: kernel instructions in move_vma per MiB "
                        "moved",
                    ),
                    *root_call_metrics(MOVE_UNIT),
                    Metric(
                        MOVED_MIB,
                        "MiB",
                        NO_DIRECTION,
                        "counted: MiB moved in the window, all moves (what "
                        "move_vma_insns_per_mib divides by)",
                        primary=False,
                    ),
                ),
            )
        ),
    ),
    derive=derive_mremap,
    timeout=240,
    # its fixture's boots under TCG (defaults, beside a kernel build):
    # 10.7 s, counting 15.8 s
    tcg_boot_s=10.7,
    tcg_count_boot_s=15.8,
    window=WINDOW,
    count_roots=_ROOTS,
    count_unit=MOVE_UNIT,
    count_extra=per_move,
)

WORKLOADS = (MREMAP,)
