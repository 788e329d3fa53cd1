"""The workloads foliolab runs, as data: parameters, metrics, guest script,
and how to turn a guest sample into metric values and validity verdicts.

Metric keys are part of the results format (SPEC §7): add, don't rename.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from foliolab import parse
from foliolab.counting import MAX_ROOTS, CountUnit
from foliolab.errors import UsageError
from foliolab.parse import GuestSample


# The better direction of a metric that has none: an amount the workload
# sets or a tally of outcomes, reported as a change, never as better or
# worse (results.json's `better` is "lower" or "higher" for the others).
NO_DIRECTION = "none"


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    better: str          # "lower" | "higher" | NO_DIRECTION
    label: str
    primary: bool = True  # primary metrics lead the report
    counted: bool = False  # from the counting pass (compare --count) only

    @property
    def is_rate(self) -> bool:
        """Rates are averaged harmonically, everything else arithmetically."""
        return self.unit.endswith("/s")


@dataclass(frozen=True)
class Param:
    """A workload parameter, passed to the guest as FL_NAME. Its type is
    checked before anything is built: ``choices`` (the only values
    allowed), else an integer in ``[lo, hi]`` when ``lo`` is set, else a
    word (letters, digits, one dot or dash)."""

    default: str
    help: str
    choices: tuple[str, ...] = ()
    lo: int | None = None
    hi: int | None = None

    def check(self, value: str) -> str | None:
        """None if ``value`` is allowed, else what is wrong with it."""
        if self.choices:
            return (None if value in self.choices else
                    "one of: " + ", ".join(self.choices))
        if self.lo is not None:
            bounds = f"an integer from {self.lo} to {self.hi}"
            # digits only: int() would also take "1_000" or " 12"
            if not value.isdigit() or not value.isascii():
                return bounds
            return None if self.lo <= int(value) <= self.hi else bounds
        ok = value.replace(".", "", 1).replace("-", "", 1).isalnum()
        return None if ok else "letters, digits and at most one . or -"

    @property
    def kind(self) -> str:
        """What values it takes, as check() decides: for a listing."""
        if self.choices:
            return "one of " + ",".join(self.choices)
        if self.lo is not None:
            return f"integer {self.lo}..{self.hi}"
        return "word"

    @classmethod
    def integer(cls, default: str, help: str, lo: int, hi: int) -> Param:
        """An integer parameter with its bounds."""
        return cls(default, help, lo=lo, hi=hi)

    @classmethod
    def flag(cls, default: str, help: str) -> Param:
        """A 0/1 switch."""
        return cls(default, help, choices=("0", "1"))


@dataclass
class Derived:
    values: dict[str, float] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    script: str                          # guest/workloads/<script>.sh
    params: dict[str, Param]
    metrics: tuple[Metric, ...]
    derive: Callable[[GuestSample, dict[str, str]], Derived]
    memory_mb: int = 3072
    numa_nodes: int = 1
    timeout: float = 300.0
    cmdline: tuple[str, ...] = ()        # extra kernel arguments
    not_measurable: str = ""             # stated in the report
    # The counting pass (--count): the tag of the guest's window
    # (FL_WIN_* in workloads/common.h), the functions counted inclusively,
    # and the unit per-unit counts are given in.
    window: int = -1
    count_roots: tuple[str, ...] = ()
    count_unit: CountUnit | None = None
    # Expected guest time of one boot of one sample under TCG, timed and
    # counting (--count): the ETA's and the dry run's figure on a host
    # that has not measured this workload yet (timings.py). Each entry
    # below says where its figures come from.
    tcg_boot_s: float = 45.0
    tcg_count_boot_s: float = 56.0

    def metric(self, key: str) -> Metric:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    def nodes(self, requested: int) -> int:
        """NUMA nodes to boot with: what it needs, or more if asked."""
        return max(self.numa_nodes, requested)

    def resolve(self, overrides: dict[str, str]) -> dict[str, str]:
        """Defaults overlaid with ``overrides``; unknown names are errors."""
        out = {k: p.default for k, p in self.params.items()}
        for k, v in overrides.items():
            if k not in self.params:
                raise UsageError(
                    f"workload {self.name} has no parameter {k!r}",
                    hint=f"known: {', '.join(self.params)}")
            wrong = self.params[k].check(v)
            if wrong:
                raise UsageError(f"bad value {v!r} for {self.name}.{k}",
                                 hint=f"give {wrong}")
            out[k] = v
        return out

    def job(self, params: dict[str, str], samples: int, fault: str = "",
            count: bool = False, monitors: bool = False) -> str:
        lines = [f"export FL_{k.upper()}={v}" for k, v in params.items()]
        lines += [f"export FL_FAULT={fault}",
                  f"export FL_COUNT={1 if count else 0}",
                  # lib.sh never starts them in a counting boot
                  f"export FL_MONITORS={1 if monitors else 0}",
                  ". /foliolab/lib.sh",
                  f". /foliolab/workloads/{self.script}.sh",
                  f"fl_samples {samples}"]
        return "\n".join(lines) + "\n"


# Set in the parameters a counting boot's sample is derived with, so a
# derive function knows that the tracers and profilers were left off.
COUNTING = "_counting"


def counter_deltas(s: GuestSample, prefix: str,
                   parser=parse.parse_vmstat) -> dict[str, int]:
    """after - before for the file pair ``prefix.before``/``prefix.after``."""
    b, a = s.files.get(f"{prefix}.before"), s.files.get(f"{prefix}.after")
    if b is None or a is None:
        return {}
    return parse.delta(parser(b), parser(a))


def common_checks(s: GuestSample, d: Derived, need_swap: bool) -> dict:
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
        mem = parse.parse_vmstat(s.files.get("meminfo.before", "")
                                 .replace(":", "").replace(" kB", ""))
        if not mem.get("SwapTotal"):
            d.invalid.append("no swap")
    return vm


def copy_metrics(s: GuestSample, d: Derived, keys) -> None:
    """Take the guest-reported metrics named in ``keys`` as they are."""
    for key in keys:
        if key in s.metrics:
            d.values[key] = s.metrics[key]


def derive_pageout(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=True)
    lazyfree = params.get("lazyfree") == "1"
    copy_metrics(s, d, ("pageout_ms", "swapped_pct", "dropped_pct",
                        "verify_errors"))
    if "pageout_ms" not in d.values:
        d.invalid.append("no pageout_ms reported")
    if s.metrics.get("verify_errors"):
        d.invalid.append(f"{s.metrics['verify_errors']:.0f} pages read back "
                         "wrong")
    # A lazy-free run must drop its pages, the others must swap them out.
    done_key, done_what = (("dropped_pct", "dropped") if lazyfree
                           else ("swapped_pct", "swapped out"))
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
            d.invalid.append(f"mTHP not in effect: {got} of {want} "
                             f"{folio_kb}K folios allocated")
        d.values["mthp_swpout"] = mthp.get(f"{key}.swpout", 0)
        d.values["mthp_swpout_fallback"] = mthp.get(
            f"{key}.swpout_fallback", 0)
        d.values["mthp_split_deferred"] = mthp.get(f"{key}.split_deferred", 0)
    elif mthp and sum(large.values()):
        d.invalid.append(f"large folios allocated in a 4K run: {large}")
    folios = size_kb // max(folio_kb, 4)
    for function in ("try_to_unmap_one", "page_vma_mapped_walk"):
        profile_calls(s, d, function)
        if f"{function}_calls" in d.values:
            d.values[f"{function}_per_folio"] = (
                d.values[f"{function}_calls"] / folios)
    stage_times(s, d)
    return d


# Profiled time (ms, callees included) of reclaim's stages (the guest's
# FL_RECLAIM_STAGES): metric key -> the functions whose time it sums.
_RECLAIM_STAGES = {
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
    for key, functions in _RECLAIM_STAGES.items():
        d.values[key] = sum(prof.get(f, {}).get("time_us", 0)
                            for f in functions) / 1000
    d.values["contpte_unfolds"] = prof.get(
        "__contpte_try_unfold", {}).get("hits", 0)


def profile_calls(s: GuestSample, d: Derived, function: str) -> None:
    """Calls of ``function`` counted by the profiled pass, if there was one."""
    if "ftrace_profile" in s.files:
        prof = parse.parse_function_profile(s.files["ftrace_profile"])
        d.values[f"{function}_calls"] = prof.get(function, {}).get("hits", 0)


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
        d.invalid.append(f"no large folios: only {large:.0f}% of the mapped "
                         "file in folios larger than 4K")
    if s.metrics.get("mapped_pct", 0) < 99:
        d.invalid.append(f"file only {s.metrics.get('mapped_pct', 0):.0f}% "
                         "mapped")
    want = int(params["size_mb"]) * int(params["reclaim_pct"]) / 100
    if s.metrics.get("reclaimed_mb", 0) < 0.5 * want:
        d.invalid.append(f"reclaimed {s.metrics.get('reclaimed_mb', 0):.0f} "
                         f"of {want:.0f} MB asked")
    for key in ("pgscan_file", "pgsteal_file"):
        if vm:
            d.values[key] = vm.get(key, 0)
    profile_calls(s, d, "try_to_unmap_one")
    stage_times(s, d)
    return d


def derive_dirty_tlb(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=True)
    sng = parse.parse_stress_ng_yaml(s.files.get("stress-ng.yaml", ""))
    vmr = sng.get("vm", {})
    if "bogo-ops-per-second-real-time" in vmr:
        d.values["bogo_ops_per_s"] = vmr["bogo-ops-per-second-real-time"]
    else:
        d.invalid.append("stress-ng reported no vm metrics")
    irq = counter_deltas(s, "interrupts", parse.parse_interrupts)
    if irq:
        d.values["tlb_shootdowns"] = irq.get("TLB", 0)
        d.values["call_ipis"] = irq.get("CAL", 0)
    for key in ("pgscan_anon", "pgsteal_anon", "pswpout",
                "nr_tlb_remote_flush", "nr_tlb_remote_flush_received",
                "pgactivate", "workingset_refault_anon"):
        if key in vm:
            d.values[key] = vm[key]
    # Folios reclaim hands back unwritten are activated; under MGLRU that
    # moves them to the youngest generation (issue 18, item 2).
    if vm.get("pgsteal_anon"):
        d.values["pgactivate_per_steal"] = (vm.get("pgactivate", 0) /
                                            vm["pgsteal_anon"])
    events = counter_deltas(s, "memcg_events", parse.parse_memcg)
    if events.get("oom_kill"):
        d.invalid.append(f"{events['oom_kill']} memcg OOM kill(s)")
    # A zero-filled page goes to swap as a bit in the swap device's zero map,
    # with no write (swpout_zero; 6.12 and later): pswpout alone counts a
    # fraction of what reclaim swapped out, and a different one per kernel
    # (on 7.3.4 about 1 page in 80 for stress-ng's write64).
    if "pswpout" in vm:
        d.values["swapped_out"] = vm["pswpout"] + vm.get("swpout_zero", 0)
    if vm and not d.values.get("swapped_out"):
        d.invalid.append("nothing was swapped out: no memory pressure")
    return d


def derive_ksm_rmap(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    common_checks(s, d, need_swap=False)
    copy_metrics(s, d, ("move_ms", "lock_wait_max_ms", "lock_wait_avg_ms",
                        "ksm_merge_s", "vmas", "ksm_pages_shared",
                        "verify_errors"))
    want = int(params["vmas"])
    if s.metrics.get("vmas", 0) < 0.95 * want:
        d.invalid.append(f"only {s.metrics.get('vmas', 0):.0f} of {want} "
                         "VMAs")
    if s.metrics.get("moved_pct", 0) < 100:
        d.invalid.append(f"only {s.metrics.get('moved_pct', 0):.0f}% of the "
                         "pages migrated")
    walks = parse.parse_graph_durations(s.files.get("ftrace_graph", ""),
                                        "rmap_walk_ksm")
    if params.get(COUNTING) == "1":
        pass        # no tracer in a counting boot: the plugin counts walks
    elif walks:
        d.values["rmap_walk_max_ms"] = max(walks)
        d.values["rmap_walk_avg_ms"] = sum(walks) / len(walks)
        d.values["rmap_walk_calls"] = len(walks)
    else:
        d.invalid.append("no rmap_walk_ksm call was traced")
    if "overrun" in s.files.get("ftrace_graph", "").lower():
        d.invalid.append("ftrace buffer overrun: walks were lost")
    return d


def derive_khugepaged(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    common_checks(s, d, need_swap=False)
    copy_metrics(s, d, ("hot2_access_s", "hot2_maccess_per_s",
                        "hot2_collapse_s", "cold_thp_mb", "hot1_thp_mb",
                        "khugepaged_cpu_s"))
    rows = [line.split() for line in s.files.get("khugepaged", "").splitlines()]
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
    statuses = (KHUGEPAGED_SCAN_STATUS if "ftrace_events" in s.files else
                ("succeeded", "page_lazyfree", "lack_referenced_page"))
    for status in statuses:
        d.values[f"scan_{status}"] = 0
    for status, n in parse.parse_trace_field(
            trace, "mm_khugepaged_scan_pmd", "status").items():
        d.values[f"scan_{status}"] = n
    # The tasks registered with khugepaged as hot1, cold, hot2; only mms
    # with PMD-sized ranges show up, which here are just those three.
    mms = [m for m in parse.khugepaged_scans_by_mm(trace) if m.count >= 8]
    if len(mms) >= 2:
        cold = mms[1]
        d.values["cold_scans"] = cold.count
    if len(mms) >= 3:
        d.values["cold_scans_before_hot2"] = parse.scans_before(
            trace, cold.mm, mms[2].first_s)
    return d


# 6.12's SCAN_STATUS strings (include/trace/events/huge_memory.h), plus the
# page_lazyfree status the S3 patch adds.
KHUGEPAGED_SCAN_STATUS = (
    "succeeded", "page_lazyfree", "lack_referenced_page", "page_pmd_mapped",
    "exceed_none_pte", "exceed_swap_pte", "exceed_shared_pte",
    "pte_non_present", "pte_uffd_wp", "pte_mapped_hugepage",
    "no_writable_page", "page_null", "scan_aborted", "not_suitable_page_count",
    "page_not_in_lru", "page_locked", "page_not_anon", "page_compound",
    "no_process_for_page", "vma_null", "vma_check_failed",
    "not_suitable_address_range", "could_not_delete_page_from_lru",
    "alloc_huge_page_failed", "ccgroup_charge_failed", "truncated",
    "page_has_private", "store_failed", "copy_poisoned_page", "page_filled",
    "failed", "pmd_null", "pmd_none")

def count_metrics(unit: CountUnit | None, roots: tuple[str, ...] = (),
                  extra: tuple[Metric, ...] = ()) -> tuple[Metric, ...]:
    """The counting pass's metrics (SPEC §7 keys), exact instruction counts
    of the guest kernel in the workload's window."""
    out = [
        Metric("kernel_insns_deterministic", "insns", "lower",
               "counted: kernel instructions, deterministic functions"),
        Metric("kernel_insns", "insns", "lower",
               "counted: kernel instructions in the window", primary=False),
        Metric("nondeterministic_pct", "%", "lower",
               "counted: share of the window in functions whose count "
               "varies between repeats", primary=False),
        Metric("tlb_flush_insns", "insns", "lower",
               "counted: TLB invalidation instructions", primary=False),
        Metric("ipis_sent", "IPIs", "lower", "counted: IPIs sent",
               primary=False),
        Metric("dsb_ish_insns", "insns", "lower",
               "counted: dsb ish (arm64)", primary=False),
    ]
    if unit and unit.whole_window:
        u = unit.name
        out += [Metric(f"kernel_insns_per_{u}", "insns", "lower",
                       f"counted: kernel instructions per {u}"),
                Metric(f"{unit.root}_insns_per_{u}", "insns", "lower",
                       f"counted: {unit.root} (callees included) per {u}"),
                Metric(f"tlb_flush_insns_per_{u}", "insns", "lower",
                       f"counted: TLB invalidations per {u}", primary=False),
                Metric(f"ipis_sent_per_{u}", "IPIs", "lower",
                       f"counted: IPIs sent per {u}", primary=False)]
    elif unit:
        out.append(Metric(f"kernel_insns_per_{unit.name}", "insns", "lower",
                          f"counted: kernel instructions in {unit.root} "
                          f"per {unit.name}"))
    if unit:
        out.append(Metric(f"{unit.name}s_counted", unit.name + "s",
                          NO_DIRECTION,
                          f"counted: {unit.root} calls", primary=False))
    out += root_metrics(roots)
    return tuple(replace(m, counted=True) for m in (*out, *extra))


def root_metrics(roots: tuple[str, ...]) -> list[Metric]:
    """What the counting pass reports of each root: its instructions with
    everything it calls, its calls, how often its task was switched out
    inside it, and the TLB invalidations and IPIs made inside it."""
    out = []
    for r in roots:
        out += [Metric(f"{r}_insns", "insns", "lower",
                       f"counted: {r} (callees included)", primary=False),
                Metric(f"{r}_calls", "calls", "lower",
                       f"counted: {r} calls", primary=False),
                Metric(f"{r}_switches", "switches", "lower",
                       f"counted: times {r}'s task was switched out inside "
                       "it (its count spans them)", primary=False),
                Metric(f"{r}_tlb_flush_insns", "insns", "lower",
                       f"counted: TLB invalidations inside {r}",
                       primary=False),
                Metric(f"{r}_ipis_sent", "IPIs", "lower",
                       f"counted: IPIs sent inside {r}", primary=False)]
    return [replace(m, counted=True) for m in out]


def with_roots(w: Workload, roots: tuple[str, ...]) -> Workload:
    """``w`` also counting ``roots`` (compare's --root), each reported as
    its own roots are; more than the counter follows is a usage error."""
    new = tuple(r for r in dict.fromkeys(roots) if r not in w.count_roots)
    if not new:
        return w
    followed = set(w.count_roots + new) | (
        {w.count_unit.root} if w.count_unit else set())
    if len(followed) > MAX_ROOTS:
        raise UsageError(f"{w.name} would count {len(followed)} roots with "
                         f"--root; the counter follows at most {MAX_ROOTS}",
                         hint=f"{w.name} counts {', '.join(w.count_roots)} "
                              "already: drop some --root options")
    return replace(w, count_roots=w.count_roots + new,
                   metrics=w.metrics + tuple(root_metrics(new)))


_UNMAP_UNIT = CountUnit("folio", "try_to_unmap")
_PAGEOUT_ROOTS = ("try_to_unmap", "shrink_folio_list")
_FILE_ROOTS = ("try_to_unmap", "folio_referenced", "shrink_folio_list")

# mTHP sizes x86_64 and arm64 (4K pages) offer, 4 for base pages
_FOLIO_KB = ("4",) + tuple(str(16 << i) for i in range(8))
_PAGEOUT_PARAMS = {
    "size_mb": Param.integer("256", "anonymous memory paged out, MiB", 1, 2048),
    "folio_kb": Param("64", "anonymous folio size in KiB (4 = base pages)",
                      choices=_FOLIO_KB),
    "profile": Param.flag("1", "1: count try_to_unmap_one and page_vma_mapped_walk "
                          "calls, then time reclaim's stages, in untimed "
                          "passes"),
    "lazyfree": Param.flag("0", "1: MADV_FREE the memory first, so reclaim drops "
                           "it instead of swapping it"),
    "fill": Param("pattern", "pattern: eight distinct words per page, which "
                  "zram compresses; same: one repeated word per page, which "
                  "zram stores without compressing (like the seed's memset)",
                  choices=("pattern", "same")),
}
# The stages of reclaim, from a profiled pass of their own (time under the
# profiler, so compare them with each other, not with the timed metric).
_STAGE_METRICS = (
    Metric("reclaim_ms", "ms", "lower", "profiled: shrink_folio_list",
           primary=False),
    Metric("referenced_ms", "ms", "lower", "profiled: folio_referenced",
           primary=False),
    Metric("unmap_ms", "ms", "lower", "profiled: try_to_unmap",
           primary=False),
    Metric("swap_alloc_ms", "ms", "lower", "profiled: add_to_swap",
           primary=False),
    Metric("writeout_ms", "ms", "lower", "profiled: pageout (zram write)",
           primary=False),
    Metric("tlb_flush_ms", "ms", "lower", "profiled: try_to_unmap_flush*",
           primary=False),
    Metric("remove_mapping_ms", "ms", "lower", "profiled: __remove_mapping",
           primary=False),
    Metric("free_ms", "ms", "lower", "profiled: free_unref_folios",
           primary=False),
    Metric("contpte_unfolds", "calls", "lower",
           "contpte unfolds (arm64 __contpte_try_unfold)", primary=False),
)

_PAGEOUT_METRICS = (
    Metric("pageout_ms", "ms", "lower", "MADV_PAGEOUT time"),
    Metric("try_to_unmap_one_calls", "calls", "lower",
           "try_to_unmap_one calls", primary=False),
    Metric("try_to_unmap_one_per_folio", "calls", "lower",
           "try_to_unmap_one calls per folio", primary=False),
    # One call per PTE the rmap walk stops at (and one to end it): what a
    # batched unmap saves, while try_to_unmap_one stays one call per VMA.
    Metric("page_vma_mapped_walk_per_folio", "calls", "lower",
           "page_vma_mapped_walk calls per folio", primary=False),
    *_STAGE_METRICS,
    Metric("pswpout", "pages", "lower", "pswpout", primary=False),
    Metric("mthp_swpout", "folios", "higher", "mTHP swpout", primary=False),
    Metric("mthp_swpout_fallback", "folios", "lower", "mTHP swpout_fallback",
           primary=False),
    Metric("mthp_split_deferred", "folios", "lower", "mTHP split_deferred",
           primary=False),
    Metric("swapped_pct", "%", "higher", "pages swapped out", primary=False),
)

# The lazy-free variant: nothing goes to swap, so its metrics are about the
# unmap and the split queue, not swap-out.
_PAGEOUT_LAZYFREE_METRICS = (
    *(m for m in _PAGEOUT_METRICS if m.key in (
        "pageout_ms", "try_to_unmap_one_calls", "try_to_unmap_one_per_folio",
        "page_vma_mapped_walk_per_folio", "reclaim_ms", "unmap_ms",
        "tlb_flush_ms", "remove_mapping_ms", "free_ms", "contpte_unfolds")),
    Metric("mthp_split_deferred", "folios", "lower", "mTHP split_deferred"),
    Metric("pglazyfreed", "pages", "higher", "pglazyfreed", primary=False),
    Metric("dropped_pct", "%", "higher", "pages dropped", primary=False),
)

WORKLOADS: dict[str, Workload] = {
    "pageout": Workload(
        name="pageout", title="W0 pageout: MADV_PAGEOUT of 64K anon folios",
        script="pageout", params=_PAGEOUT_PARAMS,
        metrics=(*_PAGEOUT_METRICS, *count_metrics(_UNMAP_UNIT,
                                                   _PAGEOUT_ROOTS)),
        derive=derive_pageout, timeout=240,
        window=1, count_roots=_PAGEOUT_ROOTS, count_unit=_UNMAP_UNIT,
        # 201 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-pageout-aa: timed 6.5-8.2 s, counting
        # 8.4-11.5 s (x1.26). Counting: x1.26, the pageout fixture's counting
        # boots against its timed ones.
        tcg_boot_s=10.0, tcg_count_boot_s=12.6),
    "pageout-4k": Workload(
        name="pageout-4k", title="W0 pageout-4k: MADV_PAGEOUT of 4K pages",
        script="pageout",
        params={**_PAGEOUT_PARAMS,
                "folio_kb": Param("4", "anonymous folio size in KiB",
                                  choices=_FOLIO_KB)},
        metrics=(*(m for m in _PAGEOUT_METRICS
                   if not m.key.startswith("mthp_")),
                 *count_metrics(_UNMAP_UNIT, _PAGEOUT_ROOTS)),
        derive=derive_pageout, timeout=240,
        window=1, count_roots=_PAGEOUT_ROOTS, count_unit=_UNMAP_UNIT,
        # 325 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-workloads: 16.3 s. Counting: x1.26, the
        # pageout fixture's counting boots against its timed ones.
        tcg_boot_s=16.3, tcg_count_boot_s=20.5),
    "pageout-lazyfree": Workload(
        name="pageout-lazyfree",
        title="W0 pageout-lazyfree: MADV_FREE, then MADV_PAGEOUT of 64K "
              "anon folios",
        script="pageout",
        params={**_PAGEOUT_PARAMS,
                "lazyfree": Param.flag("1", "MADV_FREE the memory first")},
        metrics=(*_PAGEOUT_LAZYFREE_METRICS,
                 *count_metrics(_UNMAP_UNIT, _PAGEOUT_ROOTS)),
        derive=derive_pageout, timeout=240,
        window=1, count_roots=_PAGEOUT_ROOTS, count_unit=_UNMAP_UNIT,
        # 182 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-workloads: 9.6 s. Counting: x1.26, the
        # pageout fixture's counting boots against its timed ones.
        tcg_boot_s=9.1, tcg_count_boot_s=11.5),
    "dirty-tlb": Workload(
        name="dirty-tlb",
        title="W1 dirty-tlb: stress-ng vm in a memcg, dirty anon reclaim",
        script="dirty-tlb",
        params={"workers": Param.integer("4", "stress-ng vm workers (more than "
                                    "vCPUs)", 1, 64),
                "total_mb": Param.integer("512", "--vm-bytes: the TOTAL over all "
                                       "workers, MiB", 16, 2048),
                "memcg_pct": Param.integer("25", "memory.max as percent of the "
                                       "total", 1, 100),
                "seconds": Param.integer("15", "stress-ng --timeout", 1, 3600),
                "method": Param("write64", "--vm-method"),
                "lru_gen": Param("y", "MGLRU on (y) or off (n); with "
                                      "classic LRU the workers get "
                                      "OOM-killed here",
                                 choices=("y", "n"))},
        metrics=(
            Metric("bogo_ops_per_s", "ops/s", "higher", "bogo ops/s"),
            Metric("tlb_shootdowns", "irqs", "lower", "TLB shootdowns"),
            Metric("call_ipis", "irqs", "lower", "Function call IPIs"),
            Metric("pgscan_anon", "pages", "higher", "pgscan_anon"),
            Metric("pgsteal_anon", "pages", "higher", "pgsteal_anon"),
            Metric("pswpout", "pages", "higher", "pswpout", primary=False),
            Metric("swapped_out", "pages", "higher",
                   "pages swapped out, written or zero-filled (pswpout + "
                   "swpout_zero)", primary=False),
            Metric("nr_tlb_remote_flush", "flushes", "lower",
                   "nr_tlb_remote_flush (sender)", primary=False),
            Metric("nr_tlb_remote_flush_received", "flushes", "lower",
                   "nr_tlb_remote_flush_received", primary=False),
            Metric("pgactivate", "pages", "lower", "pgactivate",
                   primary=False),
            Metric("pgactivate_per_steal", "ratio", "lower",
                   "pgactivate per pgsteal_anon", primary=False),
            Metric("workingset_refault_anon", "pages", "lower",
                   "workingset_refault_anon", primary=False),
            *count_metrics(None, ("try_to_unmap", "shrink_folio_list"), (
                Metric("ipis_sent_per_swapout", "IPIs", "lower",
                       "counted: IPIs sent per page swapped out"),
                Metric("tlb_flush_insns_per_swapout", "insns", "lower",
                       "counted: TLB invalidations per page swapped out"),
                Metric("shrink_folio_list_ipis_per_swapout", "IPIs", "lower",
                       "counted: IPIs sent inside shrink_folio_list per page "
                       "swapped out"),
            )),
        ),
        derive=derive_dirty_tlb, timeout=240,
        window=3, count_roots=("try_to_unmap", "shrink_folio_list"),
        # 383 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-workloads: 21.4 s. Counting: x1.26, the
        # pageout fixture's counting boots against its timed ones.
        tcg_boot_s=19.2, tcg_count_boot_s=24.2),
    "khugepaged": Workload(
        name="khugepaged",
        title="W3 khugepaged: hot1, cold (MADV_FREE), hot2",
        script="khugepaged",
        params={"size_mb": Param.integer("32", "memory per task, MiB (the seed: "
                                     "128; scaled down for TCG)", 1, 512),
                # hot2 must run until it is collapsed: under TCG it makes
                # ~14M accesses/s on base pages and ~50M/s once collapsed,
                # and 300M (6 s) was often too short.
                "accesses": Param.integer("1000000000", "random accesses hot2 makes",
                                1, 10**12),
                # On 6.12 MADV_FREE clears the young bits, so vanilla's
                # khugepaged already refuses an untouched cold range
                # (lack_referenced_page); a read after MADV_FREE makes it
                # young but leaves it clean and lazy-free, and vanilla
                # then collapses it.
                "cold_reread": Param.flag("0", "1: cold reads its memory once "
                                          "after MADV_FREE"),
                "pages_to_scan": Param.integer("8192", "khugepaged pages_to_scan", 1,
                                     10**7),
                "scan_sleep_ms": Param.integer("10", "khugepaged scan_sleep_millisecs",
                                     0, 60000)},
        metrics=(
            Metric("hot2_access_s", "s", "lower", "hot2 total access time"),
            Metric("hot2_maccess_per_s", "Maccess/s", "higher",
                   "hot2 throughput"),
            Metric("hot2_collapse_s", "s", "lower",
                   "time to full collapse of hot2"),
            Metric("cold_thp_mb", "MiB", "lower",
                   "cold's memory collapsed into THPs"),
            Metric("hot1_thp_mb", "MiB", "higher",
                   "hot1's memory collapsed into THPs", primary=False),
            Metric("cold_scans", "PMDs", "lower",
                   "khugepaged scans of cold's range", primary=False),
            Metric("cold_scans_before_hot2", "PMDs", "lower",
                   "scans of cold before khugepaged first reached hot2",
                   primary=False),
            Metric("pages_collapsed", "PMDs", "lower",
                   "khugepaged pages_collapsed", primary=False),
            Metric("full_scans", "scans", "higher", "khugepaged full_scans",
                   primary=False),
            Metric("khugepaged_cpu_s", "s", "lower",
                   "khugepaged CPU time (user+system) during the sample",
                   primary=False),
            *(Metric(f"scan_{st}", "PMDs", NO_DIRECTION,
                     f"khugepaged scans with status {st}", primary=False)
              for st in KHUGEPAGED_SCAN_STATUS),
            # collapse_huge_page() is inlined into it on every kernel
            # here (no symbol of its own): the scan root holds its work.
            *count_metrics(None, ("hpage_collapse_scan_pmd",)),
        ),
        derive=derive_khugepaged, timeout=400, window=4,
        count_roots=("hpage_collapse_scan_pmd",),
        not_measurable="dTLB-load-misses and cycles per access: these "
                       "machines have no PMU, so neither does the guest",
        # 1,731 s / 20 boots; hot2_access_s alone 80-83 s in the trial of
        # 2026-11-26 (newcomer-trial.md, TCG, 1 sample a boot); fixture run-
        # workloads: 110 s; 2026-11-24's machine: 18.5 min / 20 = 55 s.
        # Counting: x1.26, the pageout fixture's counting boots against its
        # timed ones.
        tcg_boot_s=86.6, tcg_count_boot_s=109.0),
    "ksm-rmap": Workload(
        name="ksm-rmap",
        title="W4 ksm-rmap: rmap_walk_ksm with many VMAs on one anon_vma",
        script="ksm-rmap",
        params={"vmas": Param.integer("20000", "VMAs (one page each) sharing one "
                                     "anon_vma", 1, 60000),
                "move": Param.integer("8", "KSM pages migrated (each walks the "
                                 "rmap twice)", 1, 1000),
                "pages_to_scan": Param.integer("20000", "ksm pages_to_scan", 1, 10**7),
                "merge_timeout": Param.integer("120", "seconds to wait for KSM", 1,
                                     3600)},
        metrics=(
            Metric("rmap_walk_max_ms", "ms", "lower",
                   "KSM rmap walk maximum duration"),
            Metric("rmap_walk_avg_ms", "ms", "lower",
                   "KSM rmap walk average duration"),
            Metric("lock_wait_max_ms", "ms", "lower",
                   "anon_vma lock wait of another thread (max mprotect)"),
            Metric("move_ms", "ms", "lower", "move_pages time",
                   primary=False),
            Metric("lock_wait_avg_ms", "ms", "lower",
                   "mprotect time of another thread (average)",
                   primary=False),
            Metric("rmap_walk_calls", "calls", "lower",
                   "rmap_walk_ksm calls traced", primary=False),
            Metric("ksm_merge_s", "s", "lower", "time for KSM to merge",
                   primary=False),
            Metric("vmas", "VMAs", NO_DIRECTION, "VMAs in the mapping",
                   primary=False),
            *count_metrics(CountUnit("walk", "rmap_walk_ksm", False),
                           ("rmap_walk_ksm",)),
        ),
        derive=derive_ksm_rmap, numa_nodes=2, timeout=600, window=5,
        count_roots=("rmap_walk_ksm",),
        count_unit=CountUnit("walk", "rmap_walk_ksm", False),
        # 192 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-workloads: 8.9 s. Counting: x1.26, the
        # pageout fixture's counting boots against its timed ones.
        tcg_boot_s=9.6, tcg_count_boot_s=12.1),
    "file-reclaim": Workload(
        name="file-reclaim",
        title="W2 file-reclaim: memory.reclaim of mapped XFS large folios",
        script="file-reclaim",
        params={"size_mb": Param.integer("512", "file size, MiB (XFS on brd)", 16,
                                   2048),
                "reclaim_pct": Param.integer("80", "percent of the file reclaimed", 1,
                                   100),
                # Readahead sizes the page cache folios XFS allocates: with
                # the default 128 KiB most are order 5.
                "readahead_kb": Param.integer("128", "read_ahead_kb of the ramdisk "
                                           "when the file is read in", 4,
                                    16384),
                "profile": Param.flag("1", "1: count try_to_unmap_one calls, "
                                      "then time reclaim's stages, in "
                                      "untimed passes")},
        metrics=(
            Metric("reclaim_real_s", "s", "lower", "reclaim wall time"),
            Metric("reclaim_sys_s", "s", "lower", "reclaim system time"),
            Metric("reclaimed_mb", "MiB", NO_DIRECTION, "memory reclaimed",
                   primary=False),
            Metric("pgscan_file", "pages", "lower", "pgscan_file",
                   primary=False),
            Metric("pgsteal_file", "pages", NO_DIRECTION, "pgsteal_file",
                   primary=False),
            Metric("try_to_unmap_one_calls", "calls", "lower",
                   "try_to_unmap_one calls", primary=False),
            *(m for m in _STAGE_METRICS if m.key not in (
                "swap_alloc_ms", "writeout_ms")),
            Metric("large_folio_pct", "%", "higher",
                   "mapped pages in large folios before reclaim",
                   primary=False),
            *(Metric(f"folios_order_{o}", "folios", NO_DIRECTION,
                     f"order-{o} folios mapped before reclaim", primary=False)
              for o in FOLIO_ORDERS),
            *count_metrics(_UNMAP_UNIT, _FILE_ROOTS),
        ),
        derive=derive_file_reclaim, timeout=300, window=2,
        count_roots=_FILE_ROOTS, count_unit=_UNMAP_UNIT,
        # brd allocates lazily: 2 GiB is a ceiling, not a reservation.
        cmdline=("brd.rd_nr=1", "brd.rd_size=2097152"),
        # 180 s / 20 boots in the trial of 2026-11-26 (newcomer-trial.md, TCG,
        # 1 sample a boot); fixture run-workloads: 18.4 s. Counting: x1.26, the
        # pageout fixture's counting boots against its timed ones.
        tcg_boot_s=9.0, tcg_count_boot_s=11.3),
}


def get_workloads(names: str | None) -> list[Workload]:
    """Parse ``--workloads a,b``; None (the option not given) means all."""
    if names is None:
        return list(WORKLOADS.values())
    out = []
    for name in names.split(","):
        name = name.strip()
        if name not in WORKLOADS:
            raise UsageError(f"unknown workload {name!r}" if name else
                             f"--workloads {names!r} names an empty workload",
                             hint=f"choose from: {', '.join(WORKLOADS)}")
        if WORKLOADS[name] in out:
            raise UsageError(f"--workloads names {name} twice",
                             hint="give each workload once (--runs sets "
                                  "the repetitions)")
        out.append(WORKLOADS[name])
    return out


def parse_params(items: list[str], workloads: list[Workload]
                 ) -> dict[str, dict[str, str]]:
    """``--param WORKLOAD.NAME=VALUE`` (or ``NAME=VALUE`` for all that have it)."""
    out: dict[str, dict[str, str]] = {w.name: {} for w in workloads}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r} is not NAME=VALUE")
        wname, dot, pname = key.rpartition(".")
        targets = [w for w in workloads if not dot or w.name == wname]
        if dot and not targets:
            raise UsageError(f"--param {item!r}: workload {wname!r} is not "
                             "being run")
        if not dot:
            targets = [w for w in targets if pname in w.params]
            if not targets:
                raise UsageError(f"--param {item!r}: no selected workload has "
                                 f"a parameter {pname!r}")
        for w in targets:
            out[w.name][pname] = value
    for w in workloads:
        w.resolve(out[w.name])     # validate now, before any build
    return out


def listing(workloads: list[Workload]) -> str:
    """`foliolab workloads`: each workload's parameters (type or range,
    default) and metrics, from their definitions above."""
    out = []
    for w in workloads:
        out += [f"{w.name}: {w.title}", "  parameters (--param "
                f"{w.name}.NAME=VALUE):"]
        width = max((len(k) for k in w.params), default=0)
        out += [f"    {k:<{width}}  {p.kind}; default {p.default}: {p.help}"
                for k, p in w.params.items()]
        out.append("  metrics (unit, better; * primary; counted: with "
                   "--count):")
        width = max(len(m.key) for m in w.metrics)
        out += [f"    {'*' if m.primary else ' '} {m.key:<{width}}  {m.unit}, "
                f"{m.better}{', counted' if m.counted else ''}: {m.label}"
                for m in w.metrics]
        out.append("")
    return "\n".join(out)
