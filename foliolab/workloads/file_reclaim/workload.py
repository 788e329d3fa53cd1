"""W2 file-reclaim (S2): memory.reclaim of a mapped XFS file in large
folios (filegen.c writes it, filereclaim.c maps and reclaims it, run by
file-reclaim.sh)."""

from __future__ import annotations

from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    STAGE_METRICS,
    UNMAP_UNIT,
    common_checks,
    copy_metrics,
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

# The counting window this folder's workloads mark: FL_WIN_RECLAIM
# in their C and shell (windows.py gathers every workload's window).
WINDOW = Window(2, "RECLAIM", "the write to memory.reclaim")


# The page cache folio orders file-reclaim counts (4K to 2M).
FOLIO_ORDERS = range(10)


def derive_file_reclaim(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    if "large_folio_pct" in s.metrics:
        # the guest lists the orders it found: the others had no folios
        for o in FOLIO_ORDERS:
            d.values[f"folios_order_{o}"] = 0
    copy_metrics(s, d, s.metrics)
    for key in ("reclaim_real_s", "reclaim_sys_s"):
        if key not in d.values:
            d.invalid.append(f"no {key} reported")
    large = s.metrics.get("large_folio_pct", 0)
    if large < 50:
        d.invalid.append(
            f"no large folios: only {large:.0f}% of the mapped "
            "file in folios larger than 4K"
        )
    if s.metrics.get("mapped_pct", 0) < 99:
        d.invalid.append(
            f"file only {s.metrics.get('mapped_pct', 0):.0f}% mapped"
        )
    want = int(params["size_mb"]) * int(params["reclaim_pct"]) / 100
    if s.metrics.get("reclaimed_mb", 0) < 0.5 * want:
        d.invalid.append(
            f"reclaimed {s.metrics.get('reclaimed_mb', 0):.0f} "
            f"of {want:.0f} MB asked"
        )
    for key in ("pgscan_file", "pgsteal_file"):
        if vm:
            d.values[key] = vm.get(key, 0)
    profile_calls(s, d, "try_to_unmap_one")
    stage_times(s, d)
    return d


_FILE_ROOTS = ("try_to_unmap", "folio_referenced", "shrink_folio_list")

# The guest's base page, KiB (configs ask for 4K pages on every arch).
PAGE_KB = 4


def per_page(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The counted unmap work per file page reclaimed, and the size of
    the folios reclaim unmapped, measured: pages reclaimed (pgsteal_file,
    the mapped file is all reclaim finds in the memcg) over the folios
    try_to_unmap() was called for. Readahead only steers the folio size
    (a folio-size sweep is fitted against this, not against the
    setting)."""
    pages = derived.get("pgsteal_file")
    folios = counted.get(f"{UNMAP_UNIT.name}s_counted")
    if not pages or not folios:
        return {}
    out = {
        "reclaimed_folio_kb": PAGE_KB * pages / folios,
        "try_to_unmap_insns_per_page": counted["try_to_unmap_insns"] / pages,
        "tlb_flush_insns_per_page": counted["try_to_unmap_tlb_flush_insns"]
        / pages,
    }
    return out


# What a sweep of readahead_kb (the page cache folio size) is about (S2):
# unmap work per page against the folio size measured at each point.
_FOLIO_GROWTH = (
    Growth(
        "readahead_kb",
        "try_to_unmap_insns_per_page",
        "try_to_unmap() instructions per page",
        against="reclaimed_folio_kb",
    ),
    Growth(
        "readahead_kb",
        "tlb_flush_insns_per_page",
        "TLB invalidations in try_to_unmap() per page",
        against="reclaimed_folio_kb",
    ),
    Growth(
        "readahead_kb",
        "reclaim_real_s",
        "memory.reclaim of 80% of the file",
        against="reclaimed_folio_kb",
    ),
)

FILE_RECLAIM = Workload(
    name="file-reclaim",
    title="W2 file-reclaim: memory.reclaim of mapped XFS large folios",
    script="file-reclaim",
    params={
        "size_mb": Param.integer(
            "512", "file size, MiB (XFS on brd)", 16, 2048
        ),
        "reclaim_pct": Param.integer(
            "80", "percent of the file reclaimed", 1, 100
        ),
        # Readahead sizes the page cache folios XFS allocates: with
        # the default 128 KiB most are order 5.
        "readahead_kb": Param.integer(
            "128",
            "read_ahead_kb of the ramdisk when the file is read in",
            4,
            16384,
        ),
        "profile": Param.flag(
            "1",
            "1: count try_to_unmap_one calls, "
            "then time reclaim's stages, in "
            "untimed passes",
        ),
    },
    metrics=(
        Metric("reclaim_real_s", "s", "lower", "reclaim wall time"),
        Metric("reclaim_sys_s", "s", "lower", "reclaim system time"),
        Metric(
            "reclaimed_mb",
            "MiB",
            NO_DIRECTION,
            "memory reclaimed",
            primary=False,
        ),
        Metric("pgscan_file", "pages", "lower", "pgscan_file", primary=False),
        Metric(
            "pgsteal_file",
            "pages",
            NO_DIRECTION,
            "pgsteal_file",
            primary=False,
        ),
        Metric(
            "try_to_unmap_one_calls",
            "calls",
            "lower",
            "try_to_unmap_one calls",
            primary=False,
        ),
        *(
            m
            for m in STAGE_METRICS
            if m.key not in ("swap_alloc_ms", "writeout_ms")
        ),
        Metric(
            "large_folio_pct",
            "%",
            "higher",
            "mapped pages in large folios before reclaim",
            primary=False,
        ),
        *(
            Metric(
                f"folios_order_{o}",
                "folios",
                NO_DIRECTION,
                f"order-{o} folios mapped before reclaim",
                primary=False,
            )
            for o in FOLIO_ORDERS
        ),
        *count_metrics(
            UNMAP_UNIT,
            _FILE_ROOTS,
            (
                Metric(
                    "reclaimed_folio_kb",
                    "KiB",
                    NO_DIRECTION,
                    "counted: KiB reclaimed (pgsteal_file) per "
                    "try_to_unmap() call: the folio size, where the file "
                    "is all mapped and every unmapped folio is freed",
                    primary=False,
                ),
                Metric(
                    "try_to_unmap_insns_per_page",
                    "insns",
                    "lower",
                    "counted: try_to_unmap (callees included) per file "
                    "page reclaimed",
                ),
                Metric(
                    "tlb_flush_insns_per_page",
                    "insns",
                    "lower",
                    "counted: TLB invalidations in try_to_unmap per file "
                    "page reclaimed",
                    primary=False,
                ),
            ),
        ),
    ),
    derive=derive_file_reclaim,
    timeout=300,
    window=WINDOW,
    count_roots=_FILE_ROOTS,
    count_unit=UNMAP_UNIT,
    count_extra=per_page,
    # brd allocates lazily: 2 GiB is a ceiling, not a reservation.
    cmdline=("brd.rd_nr=1", "brd.rd_size=2097152"),
    # 180 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); its fixture: 18.4 s. Counting: x1.26, the
    # pageout fixture's counting boots against its timed ones.
    tcg_boot_s=9.0,
    tcg_count_boot_s=11.3,
    growth=_FOLIO_GROWTH,
)

WORKLOADS = (FILE_RECLAIM,)
