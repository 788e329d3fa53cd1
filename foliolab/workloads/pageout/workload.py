"""W0 pageout (S0) and its variants: MADV_PAGEOUT of anonymous folios to
zram (pageout.c, run by pageout.sh), with 4K pages, and made lazy-free
first."""

from __future__ import annotations

from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    STAGE_METRICS,
    UNMAP_UNIT,
    common_checks,
    copy_metrics,
    counter_deltas,
    profile_calls,
    stage_times,
)
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    Growth,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window this folder's workloads mark: FL_WIN_PAGEOUT
# in their C and shell (windows.py gathers every workload's window).
WINDOW = Window(1, "PAGEOUT", "madvise(MADV_PAGEOUT)")


def derive_pageout(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=True)
    lazyfree = params.get("lazyfree") == "1"
    copy_metrics(
        s, d, ("pageout_ms", "swapped_pct", "dropped_pct", "verify_errors")
    )
    if "pageout_ms" not in d.values:
        d.invalid.append("no pageout_ms reported")
    if s.metrics.get("verify_errors"):
        d.invalid.append(
            f"{s.metrics['verify_errors']:.0f} pages read back wrong"
        )
    # A lazy-free run must drop its pages, the others must swap them out.
    done_key, done_what = (
        ("dropped_pct", "dropped")
        if lazyfree
        else ("swapped_pct", "swapped out")
    )
    if d.values.get(done_key, 100) < 90:
        d.invalid.append(f"only {d.values[done_key]:.0f}% {done_what}")
    if vm:
        d.values["pswpout"] = vm.get("pswpout", 0)
        d.values["pglazyfreed"] = vm.get("pglazyfreed", 0)
    mthp = counter_deltas(s, "mthp")
    folio_kb = int(params["folio_kb"])
    size_kb = int(params["size_mb"]) * 1024
    large = {k: v for k, v in mthp.items() if k.endswith(".anon_fault_alloc")}
    if folio_kb > 4:
        key = f"hugepages-{folio_kb}kB"
        want = size_kb // folio_kb
        got = mthp.get(f"{key}.anon_fault_alloc", 0)
        if got < 0.9 * want:
            d.invalid.append(
                f"mTHP not in effect: {got} of {want} "
                f"{folio_kb}K folios allocated"
            )
        d.values["mthp_swpout"] = mthp.get(f"{key}.swpout", 0)
        d.values["mthp_swpout_fallback"] = mthp.get(
            f"{key}.swpout_fallback", 0
        )
        d.values["mthp_split_deferred"] = mthp.get(f"{key}.split_deferred", 0)
    elif mthp and sum(large.values()):
        d.invalid.append(f"large folios allocated in a 4K run: {large}")
    folios = size_kb // max(folio_kb, 4)
    for function in ("try_to_unmap_one", "page_vma_mapped_walk"):
        profile_calls(s, d, function)
        if f"{function}_calls" in d.values:
            d.values[f"{function}_per_folio"] = (
                d.values[f"{function}_calls"] / folios
            )
    stage_times(s, d)
    return d


_PAGEOUT_ROOTS = ("try_to_unmap", "shrink_folio_list")

# mTHP sizes x86_64 and arm64 (4K pages) offer, 4 for base pages
_FOLIO_KB = ("4",) + tuple(str(16 << i) for i in range(8))
_PAGEOUT_PARAMS = {
    "size_mb": Param.integer(
        "256", "anonymous memory paged out, MiB", 1, 2048
    ),
    "folio_kb": Param(
        "64", "anonymous folio size in KiB (4 = base pages)", choices=_FOLIO_KB
    ),
    "profile": Param.flag(
        "1",
        "1: count try_to_unmap_one and page_vma_mapped_walk "
        "calls, then time reclaim's stages, in untimed "
        "passes",
    ),
    "lazyfree": Param.flag(
        "0",
        "1: MADV_FREE the memory first, so reclaim drops "
        "it instead of swapping it",
    ),
    "fill": Param(
        "pattern",
        "pattern: eight distinct words per page, which "
        "zram compresses; same: one repeated word per page, which "
        "zram stores without compressing (like the seed's memset)",
        choices=("pattern", "same"),
    ),
}

_PAGEOUT_METRICS = (
    Metric("pageout_ms", "ms", "lower", "MADV_PAGEOUT time"),
    Metric(
        "try_to_unmap_one_calls",
        "calls",
        "lower",
        "try_to_unmap_one calls",
        primary=False,
    ),
    Metric(
        "try_to_unmap_one_per_folio",
        "calls",
        "lower",
        "try_to_unmap_one calls per folio",
        primary=False,
    ),
    # One call per PTE the rmap walk stops at (and one to end it): what a
    # batched unmap saves, while try_to_unmap_one stays one call per VMA.
    Metric(
        "page_vma_mapped_walk_per_folio",
        "calls",
        "lower",
        "page_vma_mapped_walk calls per folio",
        primary=False,
    ),
    *STAGE_METRICS,
    Metric("pswpout", "pages", NO_DIRECTION, "pswpout", primary=False),
    Metric("mthp_swpout", "folios", "higher", "mTHP swpout", primary=False),
    Metric(
        "mthp_swpout_fallback",
        "folios",
        "lower",
        "mTHP swpout_fallback",
        primary=False,
    ),
    Metric(
        "mthp_split_deferred",
        "folios",
        "lower",
        "mTHP split_deferred",
        primary=False,
    ),
    Metric("swapped_pct", "%", "higher", "pages swapped out", primary=False),
)

# The lazy-free variant: nothing goes to swap, so its metrics are about the
# unmap and the split queue, not swap-out.
_PAGEOUT_LAZYFREE_METRICS = (
    *(
        m
        for m in _PAGEOUT_METRICS
        if m.key
        in (
            "pageout_ms",
            "try_to_unmap_one_calls",
            "try_to_unmap_one_per_folio",
            "page_vma_mapped_walk_per_folio",
            "reclaim_ms",
            "unmap_ms",
            "tlb_flush_ms",
            "remove_mapping_ms",
            "free_ms",
            "contpte_unfolds",
        )
    ),
    Metric("mthp_split_deferred", "folios", "lower", "mTHP split_deferred"),
    Metric("pglazyfreed", "pages", "higher", "pglazyfreed", primary=False),
    Metric("dropped_pct", "%", "higher", "pages dropped", primary=False),
)

# What a folio-size sweep is about (S0, S2): rmap work per page, which a
# batched unmap makes fall with the order; the walk's steps per folio
# (one per PTE unbatched, one per folio batched); TLB invalidations per
# page; and the time of the whole MADV_PAGEOUT (the same memory at every
# size), under TCG.
_FOLIO_GROWTH = (
    Growth(
        "folio_kb",
        "try_to_unmap_insns_per_folio",
        "try_to_unmap() instructions per page",
        4,
    ),
    Growth(
        "folio_kb",
        "page_vma_mapped_walk_per_folio",
        "page_vma_mapped_walk() calls per folio",
    ),
    Growth(
        "folio_kb",
        "tlb_flush_insns_per_folio",
        "TLB invalidations per page",
        4,
    ),
    Growth("folio_kb", "pageout_ms", "MADV_PAGEOUT of the whole size"),
)

PAGEOUT = Workload(
    name="pageout",
    title="W0 pageout: MADV_PAGEOUT of 64K anon folios",
    script="pageout",
    params=_PAGEOUT_PARAMS,
    metrics=(*_PAGEOUT_METRICS, *count_metrics(UNMAP_UNIT, _PAGEOUT_ROOTS)),
    derive=derive_pageout,
    timeout=240,
    window=WINDOW,
    count_roots=_PAGEOUT_ROOTS,
    count_unit=UNMAP_UNIT,
    # 201 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); tests/host/data/run-pageout-aa: timed 6.5-8.2 s,
    # counting 8.4-11.5 s (x1.26): the pageout fixture's counting boots
    # against its timed ones.
    tcg_boot_s=10.0,
    tcg_count_boot_s=12.6,
    growth=_FOLIO_GROWTH,
)
PAGEOUT_4K = Workload(
    name="pageout-4k",
    title="W0 pageout-4k: MADV_PAGEOUT of 4K pages",
    script="pageout",
    params={
        **_PAGEOUT_PARAMS,
        "folio_kb": Param(
            "4", "anonymous folio size in KiB", choices=_FOLIO_KB
        ),
    },
    metrics=(
        *(m for m in _PAGEOUT_METRICS if not m.key.startswith("mthp_")),
        *count_metrics(UNMAP_UNIT, _PAGEOUT_ROOTS),
    ),
    derive=derive_pageout,
    timeout=240,
    window=WINDOW,
    count_roots=_PAGEOUT_ROOTS,
    count_unit=UNMAP_UNIT,
    # 325 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); its fixture: 16.3 s. Counting: x1.26, the
    # pageout fixture's counting boots against its timed ones.
    tcg_boot_s=16.3,
    tcg_count_boot_s=20.5,
)

PAGEOUT_LAZYFREE = Workload(
    name="pageout-lazyfree",
    title="W0 pageout-lazyfree: MADV_FREE, then MADV_PAGEOUT of 64K "
    "anon folios",
    script="pageout",
    params={
        **_PAGEOUT_PARAMS,
        "lazyfree": Param.flag("1", "MADV_FREE the memory first"),
    },
    metrics=(
        *_PAGEOUT_LAZYFREE_METRICS,
        *count_metrics(UNMAP_UNIT, _PAGEOUT_ROOTS),
    ),
    derive=derive_pageout,
    timeout=240,
    window=WINDOW,
    count_roots=_PAGEOUT_ROOTS,
    count_unit=UNMAP_UNIT,
    # 182 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); its fixture: 9.6 s. Counting: x1.26, the
    # pageout fixture's counting boots against its timed ones.
    tcg_boot_s=9.1,
    tcg_count_boot_s=11.5,
    growth=_FOLIO_GROWTH,
)

WORKLOADS = (PAGEOUT, PAGEOUT_4K, PAGEOUT_LAZYFREE)
