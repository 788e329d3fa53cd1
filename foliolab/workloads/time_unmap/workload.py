"""time-unmap: mmtests' time_unmap (timeunmap.c, run by time-unmap.sh),
munmap of a large anonymous mapping populated by a number of threads,
one a CPU: how long the unmap takes with the TLB shootdowns it sends.

Where it differs from mmtests (whose program is not used): mmtests maps
80% of the machine's memory with one thread a CPU over 60 iterations;
here ``size_mb`` (default 64 of the guest's 3 GiB: a fault costs about
150 us under TCG) over ``iterations``; the threads other than the one
that unmaps spin while it does, so their CPUs are running the mm (a
sleeping thread's CPU would be idle in lazy TLB mode, which x86 skips).

Counted (``--count``): the window is the sample's iterations (timeunmap.c
marks it), the populating between the munmaps included, so what a munmap
costs is do_vmi_munmap's own count, entered once a munmap: the IPIs it
sends (the shootdowns, the lead) and the TLB invalidations on the
unmapping CPU per munmap, and its kernel instructions (callees included:
the page tables zapped, the pages freed, the TLB flushed), secondary:
with threads > 1 they hold the unmapping CPU's spin waiting for the
others to acknowledge each shootdown, as long as TCG takes to run them,
not a property of the kernel's path. The window's whole counts (the
other CPUs' flushes among them) are secondary."""

from __future__ import annotations

from dataclasses import replace

from foliolab.guestdata import parse
from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    common_checks,
    copy_metrics,
    counter_deltas,
    per_root_call,
    root_call_metrics,
    window_secondary,
)
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

# The counting window timeunmap.c marks: FL_WIN_UNMAP (windows.py gathers
# every workload's window).
WINDOW = Window(8, "UNMAP", "the iterations, populating and munmap")
# A munmap is an entry of do_vmi_munmap: munmap() calls it once with the
# mmap lock held, and it does the whole unmap, TLB flush and IPIs
# included. It is defined in mm/vma.c; munmap's caller, __vm_munmap, is
# in mm/mmap.c on 6.12 but beside it in mm/vma.c on 7.3, where the
# compiler may inline it: the x86_64 builds here call it out of line on
# both (objdump of 6.12.117's perf and 7.3.4's mm-ci vmlinux), arm64's
# are not checked, and a kernel that inlined it leaves every sample
# invalid ("never entered"), not miscounted. Per munmap is its own count
# (whole_window False), not the window's.
UNMAP_UNIT = CountUnit("munmap", "do_vmi_munmap", whole_window=False)
_ROOTS = ("do_vmi_munmap",)

# mmtests' time_unmap reports "Time", microseconds a munmap.
LEAD = "time_unmap.Time"


def derive_time_unmap(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    copy_metrics(s, d, ("time_us_min", "time_us_max"))
    if "time_us_mean" not in s.metrics:
        d.invalid.append("timeunmap reported no times")
        return d
    d.values[LEAD] = s.metrics["time_us_mean"]
    pages = s.metrics.get("pages", 0)
    touched = s.metrics.get("pages_touched", 0)
    iterations = int(params["iterations"])
    if touched < pages or pages < iterations * int(params["size_mb"]) * 256:
        d.invalid.append(
            f"{touched:.0f} pages touched of the {pages:.0f} asked"
        )
    if vm:
        d.values["pgfault"] = vm.get("pgfault", 0)
        if vm.get("pgfault", 0) < 0.95 * touched:
            d.invalid.append(
                f"{vm.get('pgfault', 0)} page faults for {touched:.0f} "
                "pages touched: the mapping was not in base pages"
            )
        if "nr_tlb_remote_flush" in vm:
            d.values["nr_tlb_remote_flush"] = vm["nr_tlb_remote_flush"]
    irq = counter_deltas(s, "interrupts", parse.parse_interrupts)
    if "TLB" in irq:
        d.values["tlb_shootdowns"] = irq["TLB"]
        d.values["tlb_shootdowns_per_unmap"] = irq["TLB"] / iterations
        d.values["call_ipis"] = irq.get("CAL", 0)
        # threads on other CPUs running the mm: every munmap must reach
        # them, or the setup (a CPU a thread) did not hold
        if int(params["threads"]) > 1 and irq["TLB"] < iterations:
            d.invalid.append(
                f"{irq['TLB']} TLB shootdowns in {iterations} munmaps: "
                "the other threads' CPUs were not running the mm"
            )
    return d


def _ipis_lead(metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
    """``metrics`` with the instructions per munmap made secondary and
    said to hold the wait for the other CPUs: under TCG that spin (in
    smp_call_function_many_cond) lasts as long as the host takes to run
    the other vCPUs (dirty-tlb's fixture: 261.6 M of its window's
    1,304 M instructions, 22,761 a call), and a root's count, unlike the
    window's kernel_insns_deterministic, leaves no function flagged
    nondeterministic out."""
    key = f"kernel_insns_per_{UNMAP_UNIT.name}"
    return tuple(
        replace(
            m,
            primary=False,
            label="counted: kernel instructions in do_vmi_munmap "
            "per munmap, with threads > 1 the spin waiting for the "
            "other CPUs' acknowledgements included (timing, not the "
            "kernel's path: compare at threads=1)",
        )
        if m.key == key
        else m
        for m in metrics
    )


def per_munmap(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The IPIs (shootdowns) and TLB invalidations inside each munmap."""
    return per_root_call(UNMAP_UNIT, counted)


TIME_UNMAP = Workload(
    name="time-unmap",
    title=f"mmtests time_unmap: munmap of a mapping populated by N "
    f"threads, TLB shootdowns ({LEAD})",
    script="time-unmap",
    params={
        "threads": Param.integer(
            "2",
            "threads populating the mapping, one a CPU (mmtests: one a "
            "CPU); the others spin through each munmap",
            1,
            64,
        ),
        "size_mb": Param.integer(
            "64",
            "MiB mapped and unmapped each iteration (mmtests: 80% of memory)",
            1,
            2048,
        ),
        "iterations": Param.integer(
            "10", "munmaps a sample (mmtests: 60)", 1, 1000
        ),
    },
    metrics=(
        Metric(
            LEAD,
            "us",
            "lower",
            "munmap of the whole mapping, microseconds, mean of the "
            "iterations",
        ),
        Metric(
            "tlb_shootdowns_per_unmap",
            "irqs",
            "lower",
            "TLB shootdown interrupts (/proc/interrupts TLB) per "
            "iteration, populating included",
        ),
        Metric(
            "time_us_min",
            "us",
            "lower",
            "fastest munmap of the sample",
            primary=False,
        ),
        Metric(
            "time_us_max",
            "us",
            "lower",
            "slowest munmap of the sample",
            primary=False,
        ),
        Metric(
            "tlb_shootdowns",
            "irqs",
            "lower",
            "TLB shootdown interrupts, the whole sample",
            primary=False,
        ),
        Metric(
            "call_ipis",
            "irqs",
            "lower",
            "function call IPIs (/proc/interrupts CAL)",
            primary=False,
        ),
        Metric(
            "nr_tlb_remote_flush",
            "flushes",
            "lower",
            "nr_tlb_remote_flush (CONFIG_DEBUG_TLBFLUSH kernels only)",
            primary=False,
        ),
        Metric(
            "pgfault",
            "faults",
            NO_DIRECTION,
            "pgfault (vmstat), the whole sample",
            primary=False,
        ),
        *_ipis_lead(
            window_secondary(
                count_metrics(
                    UNMAP_UNIT, _ROOTS, root_call_metrics(UNMAP_UNIT)
                )
            )
        ),
    ),
    derive=derive_time_unmap,
    timeout=300,
    window=WINDOW,
    count_roots=_ROOTS,
    count_unit=UNMAP_UNIT,
    count_extra=per_munmap,
    # its fixture's boot under TCG (defaults): 26.9 s; counting: x1.26,
    # the pageout fixture's counting boots against its timed ones (not
    # measured for this one)
    tcg_boot_s=26.9,
    tcg_count_boot_s=33.9,
    growth=(
        Growth("threads", LEAD, "munmap time"),
        Growth(MACHINE_VCPUS, LEAD, "munmap time"),
        Growth(MACHINE_VCPUS, "tlb_shootdowns_per_unmap", "shootdowns"),
        # counted (--count): the IPIs one munmap sends and its work, as
        # threads (CPUs running the mm) are added
        Growth("threads", "ipis_sent_per_munmap", "IPIs a munmap"),
        Growth("threads", "kernel_insns_per_munmap", "instructions a munmap"),
        Growth(MACHINE_VCPUS, "ipis_sent_per_munmap", "IPIs a munmap"),
    ),
    follow_vcpus=lambda n: {"threads": str(n)},
)

WORKLOADS = (TIME_UNMAP,)
