"""What the workloads' derive functions share: the checks every sample
passes, counter differences, reclaim's profiled stages, and the counted
figures per call of a root or per unit of a window's work."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from foliolab.guestdata import parse
from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.model import CountedExtra, Derived, Metric


def counter_deltas(
    s: GuestSample,
    prefix: str,
    parser: Callable[[str], dict[str, int]] = parse.parse_vmstat,
) -> dict[str, int]:
    """after - before for the file pair ``prefix.before``/``prefix.after``."""
    b, a = s.files.get(f"{prefix}.before"), s.files.get(f"{prefix}.after")
    if b is None or a is None:
        return {}
    return parse.delta(parser(b), parser(a))


def common_checks(
    s: GuestSample, d: Derived, need_swap: bool
) -> dict[str, int]:
    """Checks every workload shares; returns the vmstat delta."""
    d.invalid += s.invalid
    d.invalid += [f"data corruption: {c}" for c in s.corrupt]
    vm = counter_deltas(s, "vmstat")
    if not vm:
        d.invalid.append("counters missing (sample did not finish)")
        return vm
    if vm.get("oom_kill", 0):
        d.invalid.append(f"{vm['oom_kill']} OOM kill(s)")
    if need_swap:
        mem = parse.parse_vmstat(
            s.files.get("meminfo.before", "")
            .replace(":", "")
            .replace(" kB", "")
        )
        if not mem.get("SwapTotal"):
            d.invalid.append("no swap")
    return vm


def copy_metrics(s: GuestSample, d: Derived, keys: Iterable[str]) -> None:
    """Take the guest-reported metrics named in ``keys`` as they are."""
    for key in keys:
        if key in s.metrics:
            d.values[key] = s.metrics[key]


# Profiled time (ms, callees included) of reclaim's stages (the guest's
# FLRECLAIM_STAGES): metric key -> the functions whose time it sums.
RECLAIM_STAGES = {
    "reclaim_ms": ("shrink_folio_list",),
    "referenced_ms": ("folio_referenced",),
    "unmap_ms": ("try_to_unmap",),
    "swap_alloc_ms": ("add_to_swap",),
    "writeout_ms": ("pageout",),
    "tlb_flush_ms": ("try_to_unmap_flush", "try_to_unmap_flush_dirty"),
    "remove_mapping_ms": ("__remove_mapping",),
    "free_ms": ("free_unref_folios",),
}


def stage_times(s: GuestSample, d: Derived) -> None:
    """Reclaim's stage times and contpte unfolds, from the profiled pass."""
    if "ftrace_time" not in s.files:
        return
    prof = parse.parse_function_profile(s.files["ftrace_time"])
    for key, functions in RECLAIM_STAGES.items():
        d.values[key] = (
            sum(prof.get(f, {}).get("time_us", 0) for f in functions) / 1000
        )
    d.values["contpte_unfolds"] = prof.get("__contpte_try_unfold", {}).get(
        "hits", 0
    )


def profile_calls(s: GuestSample, d: Derived, function: str) -> None:
    """Calls of ``function`` counted by the profiled pass, if there was one."""
    if "ftrace_profile" in s.files:
        prof = parse.parse_function_profile(s.files["ftrace_profile"])
        d.values[f"{function}_calls"] = prof.get(function, {}).get("hits", 0)


# The stages of reclaim, from a profiled pass of their own (time under the
# profiler, so compare them with each other, not with the timed metric).
STAGE_METRICS = (
    Metric(
        "reclaim_ms",
        "ms",
        "lower",
        "profiled: shrink_folio_list",
        primary=False,
    ),
    Metric(
        "referenced_ms",
        "ms",
        "lower",
        "profiled: folio_referenced",
        primary=False,
    ),
    Metric("unmap_ms", "ms", "lower", "profiled: try_to_unmap", primary=False),
    Metric(
        "swap_alloc_ms", "ms", "lower", "profiled: add_to_swap", primary=False
    ),
    Metric(
        "writeout_ms",
        "ms",
        "lower",
        "profiled: pageout (zram write)",
        primary=False,
    ),
    Metric(
        "tlb_flush_ms",
        "ms",
        "lower",
        "profiled: try_to_unmap_flush*",
        primary=False,
    ),
    Metric(
        "remove_mapping_ms",
        "ms",
        "lower",
        "profiled: __remove_mapping",
        primary=False,
    ),
    Metric(
        "free_ms", "ms", "lower", "profiled: free_unref_folios", primary=False
    ),
    Metric(
        "contpte_unfolds",
        "calls",
        "lower",
        "contpte unfolds (arm64 __contpte_try_unfold)",
        primary=False,
    ),
)

# pageout's and file-reclaim's counted unit: a folio reclaim unmapped.
UNMAP_UNIT = CountUnit("folio", "try_to_unmap")


def root_call_metrics(unit: CountUnit) -> tuple[Metric, ...]:
    """The counted metrics of per_root_call for ``unit``: what its root
    (one entry a call) invalidated in the TLB and the IPIs it sent, per
    call."""
    u, root = unit.name, unit.root
    return (
        Metric(
            f"ipis_sent_per_{u}",
            "IPIs",
            "lower",
            # any IPI: a TLB shootdown, a remote wake-up (madvise's on
            # 7.3.4 were wake-ups, not one a shootdown)
            f"counted: IPIs sent inside {root} per {u} (TLB shootdowns, "
            "remote wake-ups, any)",
        ),
        Metric(
            f"tlb_flush_insns_per_{u}",
            "insns",
            "lower",
            f"counted: TLB invalidations inside {root} per {u} (the "
            "calling CPU's; the other CPUs' are in tlb_flush_insns)",
            primary=False,
        ),
    )


def per_root_call(
    unit: CountUnit, counted: dict[str, float]
) -> dict[str, float]:
    """root_call_metrics' values from a window's counted metrics, where
    ``unit``'s root is also one of the workload's roots (its classes are
    counted): for a window that holds more than the calls (time-unmap's
    populating, madvise's writing), what the calls themselves did."""
    calls = counted.get(f"{unit.root}_calls")
    if not calls:
        return {}
    return {
        f"ipis_sent_per_{unit.name}": counted[f"{unit.root}_ipis_sent"]
        / calls,
        f"tlb_flush_insns_per_{unit.name}": counted[
            f"{unit.root}_tlb_flush_insns"
        ]
        / calls,
    }


def per_root_call_and_mib(unit: CountUnit, mib_key: str) -> CountedExtra:
    """A count_extra: per_root_call(unit), and the root's instructions
    per MiB of ``mib_key`` (a derived value the counting sample keeps),
    with the MiB they are per."""

    def extra(
        counted: dict[str, float],
        derived: dict[str, float],
        roots: tuple[str, ...],
    ) -> dict[str, float]:
        out = per_root_call(unit, counted)
        mib = derived.get(mib_key)
        if mib:
            out[mib_key] = mib
            out[f"{unit.root}_insns_per_mib"] = (
                counted[f"{unit.root}_insns"] / mib
            )
        return out

    return extra


def window_secondary(metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
    """count_metrics' with the window's whole count made secondary, for a
    workload whose window holds more than its measured calls: its lead
    counted figures are then its root's per call."""
    return tuple(
        replace(m, primary=False)
        if m.key == "kernel_insns_deterministic"
        else m
        for m in metrics
    )


# The counts every window has (countwindows.window_metrics').
WINDOW_COUNTS = ("kernel_insns", "tlb_flush_insns", "ipis_sent")


def window_per(
    unit: str,
    amount: float,
    counted: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The window's counts and ``roots``' instructions per ``unit``, of
    which the window holds ``amount``: for a window that holds only the
    measured work, whose amount the sample reports (usemem's MiB
    written, lru-file-readonce's MiB read)."""
    out = {f"{key}_per_{unit}": counted[key] / amount for key in WINDOW_COUNTS}
    for root in roots:
        out[f"{root}_insns_per_{unit}"] = counted[f"{root}_insns"] / amount
    return out
