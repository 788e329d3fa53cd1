"""W1 dirty-tlb (S1): stress-ng's vm stressor in a memcg, dirty anonymous
memory reclaimed to zram (dirty-tlb.sh)."""

from __future__ import annotations

from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks, counter_deltas
from foliolab.workloads.model import (
    MACHINE_VCPUS,
    NO_DIRECTION,
    Derived,
    Growth,
    Metric,
    Param,
    Window,
    Workload,
    count_metrics,
)

# The counting window this folder's workloads mark: FL_WIN_STRESS
# in their C and shell (windows.py gathers every workload's window).
WINDOW = Window(3, "STRESS", "the stress-ng run (flmark)")


def derive_dirty_tlb(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=True)
    if params.get("writer") == "threads":
        for key in ("pages_written_per_s", "writer_cpus"):
            if key in s.metrics:
                d.values[key] = s.metrics[key]
            else:
                d.invalid.append(f"dirtythreads reported no {key}")
    else:
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
    for key in (
        "pgscan_anon",
        "pgsteal_anon",
        "pswpout",
        "nr_tlb_remote_flush",
        "nr_tlb_remote_flush_received",
        "pgactivate",
        "workingset_refault_anon",
    ):
        if key in vm:
            d.values[key] = vm[key]
    # Folios reclaim hands back unwritten are activated; under MGLRU that
    # moves them to the youngest generation (issue 18, item 2).
    if vm.get("pgsteal_anon"):
        d.values["pgactivate_per_steal"] = (
            vm.get("pgactivate", 0) / vm["pgsteal_anon"]
        )
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


def per_swapout(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The counted IPIs and TLB invalidations per page swapped out, every
    page reclaim swapped out, zero-filled ones included."""
    swapped = derived.get("swapped_out", derived.get("pswpout"))
    if not swapped:
        return {}
    out = {
        "ipis_sent_per_swapout": counted["ipis_sent"] / swapped,
        "tlb_flush_insns_per_swapout": counted["tlb_flush_insns"] / swapped,
    }
    # what reclaim itself sent, without the workload's own IPIs
    for root in roots:
        out[f"{root}_ipis_per_swapout"] = (
            counted[f"{root}_ipis_sent"] / swapped
        )
    return out


_ROOTS = ("try_to_unmap", "shrink_folio_list")

DIRTY_TLB = Workload(
    name="dirty-tlb",
    title="W1 dirty-tlb: stress-ng vm in a memcg, dirty anon reclaim",
    script="dirty-tlb",
    params={
        "workers": Param.integer(
            "4", "stress-ng vm workers (more than vCPUs)", 1, 64
        ),
        "total_mb": Param.integer(
            "512", "--vm-bytes: the TOTAL over all workers, MiB", 16, 2048
        ),
        "memcg_pct": Param.integer(
            "25", "memory.max as percent of the total", 1, 100
        ),
        "seconds": Param.integer("15", "stress-ng --timeout", 1, 3600),
        "method": Param("write64", "--vm-method"),
        # stress-ng's vm workers are processes: on a kernel that drops a
        # CPU from an mm's cpumask at each switch (x86 6.12), a flush
        # reaches only the one or two CPUs a worker last ran on. Threads
        # share one mm, whose mask keeps every CPU they run on.
        "writer": Param(
            "processes",
            "processes: stress-ng's vm workers, a process each; threads: "
            "dirtythreads, the workers as threads of one process (one mm), "
            "writing one word a page (method does not apply)",
            choices=("processes", "threads"),
        ),
        "lru_gen": Param(
            "y",
            "MGLRU on (y) or off (n); with "
            "classic LRU the workers get "
            "OOM-killed here",
            choices=("y", "n"),
        ),
    },
    metrics=(
        Metric("bogo_ops_per_s", "ops/s", "higher", "bogo ops/s"),
        # not primary: only the threads' boots have it (a primary metric
        # is one every boot of the workload reports)
        Metric(
            "pages_written_per_s",
            "pages/s",
            "higher",
            "writer=threads: pages written per second, all threads",
            primary=False,
        ),
        Metric(
            "writer_cpus",
            "CPUs",
            NO_DIRECTION,
            "writer=threads: CPUs the threads were seen on",
            primary=False,
        ),
        Metric("tlb_shootdowns", "irqs", "lower", "TLB shootdowns"),
        Metric("call_ipis", "irqs", "lower", "Function call IPIs"),
        Metric("pgscan_anon", "pages", "higher", "pgscan_anon"),
        Metric("pgsteal_anon", "pages", "higher", "pgsteal_anon"),
        Metric("pswpout", "pages", "higher", "pswpout", primary=False),
        Metric(
            "swapped_out",
            "pages",
            "higher",
            "pages swapped out, written or zero-filled (pswpout + "
            "swpout_zero)",
            primary=False,
        ),
        Metric(
            "nr_tlb_remote_flush",
            "flushes",
            "lower",
            "nr_tlb_remote_flush (sender)",
            primary=False,
        ),
        Metric(
            "nr_tlb_remote_flush_received",
            "flushes",
            "lower",
            "nr_tlb_remote_flush_received",
            primary=False,
        ),
        Metric("pgactivate", "pages", "lower", "pgactivate", primary=False),
        Metric(
            "pgactivate_per_steal",
            "ratio",
            "lower",
            "pgactivate per pgsteal_anon",
            primary=False,
        ),
        Metric(
            "workingset_refault_anon",
            "pages",
            "lower",
            "workingset_refault_anon",
            primary=False,
        ),
        *count_metrics(
            None,
            _ROOTS,
            (
                Metric(
                    "ipis_sent_per_swapout",
                    "IPIs",
                    "lower",
                    "counted: IPIs sent per page swapped out",
                ),
                Metric(
                    "tlb_flush_insns_per_swapout",
                    "insns",
                    "lower",
                    "counted: TLB invalidations per page swapped out",
                ),
                Metric(
                    "shrink_folio_list_ipis_per_swapout",
                    "IPIs",
                    "lower",
                    "counted: IPIs sent inside shrink_folio_list per page "
                    "swapped out",
                ),
            ),
        ),
    ),
    derive=derive_dirty_tlb,
    timeout=240,
    window=WINDOW,
    count_roots=_ROOTS,
    count_extra=per_swapout,
    # 383 s / 20 boots in the trial of 2026-11-26 (TCG,
    # 1 sample a boot); its fixture: 21.4 s. Counting: x1.26, the
    # pageout fixture's counting boots against its timed ones.
    tcg_boot_s=19.2,
    tcg_count_boot_s=24.2,
    # S1's claim: a flush per batch instead of per folio saves more the
    # more CPUs an IPI reaches; its workers follow the vCPUs (two each,
    # as the default's 4 on 2), so every CPU has reclaim to do.
    growth=(
        Growth(
            MACHINE_VCPUS,
            "ipis_sent_per_swapout",
            "IPIs sent per page swapped out",
        ),
        Growth(
            MACHINE_VCPUS,
            "tlb_flush_insns_per_swapout",
            "TLB invalidations per page swapped out",
        ),
        Growth(MACHINE_VCPUS, "bogo_ops_per_s", "stress-ng's work rate"),
        Growth(
            MACHINE_VCPUS, "pages_written_per_s", "dirtythreads' work rate"
        ),
    ),
    follow_vcpus=lambda n: {"workers": str(2 * n)},
)

WORKLOADS = (DIRTY_TLB,)
