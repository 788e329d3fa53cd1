"""page-fault and page-fault-threads: will-it-scale's page_fault1/2/3
over a task count (pagefault.c, run by page-fault.sh), as processes and
as threads: the kernel test robot's ``will-it-scale.per_process_ops``
and ``will-it-scale.per_thread_ops``, mmtests' will-it-scale-pf
configs.

Where it differs from will-it-scale (whose source is not used): one
measured interval of ``seconds`` after one second of warm-up, not the
average of its one-second samples; tasks pinned to CPU i modulo the
vCPUs, not laid out by hwloc; the file of cases 2 and 3 on a tmpfs of
its own; base pages only (THP and every mTHP size off), so that an op
is one fault on every kernel.

Counted (``--count``): the measured seconds are the window, all tasks'
kernel work in them (pagefault.c marks it from the parent), divided by
the faults the kernel took in it, handle_mm_fault's entries: the
instructions, TLB invalidations and IPIs a fault costs, its share of
each pass's mmap and munmap included (will-it-scale's op loop has
them), and handle_mm_fault's own work a fault."""

from __future__ import annotations

from foliolab.guestdata.countwindows import CountUnit
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks, copy_metrics
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

# The counting window both workloads mark: FL_WIN_FAULT in pagefault.c
# (windows.py gathers every workload's window).
WINDOW = Window(6, "FAULT", "the measured seconds, every task (pagefault)")
# A fault is an entry of handle_mm_fault (every user fault on x86_64 and
# arm64 goes through it; a fault retried under the mmap lock enters it
# twice, a few a pass at most against size_mb * 256 faults), and the
# window's whole count is divided by them.
FAULT_UNIT = CountUnit("fault", "handle_mm_fault")
_ROOTS = ("handle_mm_fault",)

# will-it-scale's names for its three page-fault cases, by FL_CASE.
CASES = {
    "1": "page_fault1: anonymous private",
    "2": "page_fault2: private mapping of a file (copy on write)",
    "3": "page_fault3: shared mapping of a file (dirtied)",
}

# The lead metric by how the tasks are made, as LKP names it.
LEAD = {
    "processes": "will-it-scale.per_process_ops",
    "threads": "will-it-scale.per_thread_ops",
}


def derive_page_fault(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    copy_metrics(
        s,
        d,
        (
            "ops_per_s",
            "task_ops_per_s_min",
            "task_ops_per_s_max",
            "min_passes",
        ),
    )
    if "ops_per_s" not in d.values or "ops" not in s.metrics:
        d.invalid.append("pagefault reported no ops")
        return d
    tasks = int(params["tasks"])
    d.values[LEAD[params["mode"]]] = d.values["ops_per_s"] / tasks
    # each task must have written every page of its mapping at least
    # once in the measured seconds, or it faulted less than was asked
    if d.values.get("min_passes", 0) < 1:
        d.invalid.append(
            f"a task did not touch all its {params['size_mb']} MiB "
            f"in {params['seconds']} s (no whole pass)"
        )
    if vm:
        # every op a fault: THP or fault-around taking several pages in
        # one fault would make ops something else than faults
        ops, faults = s.metrics["ops"], vm.get("pgfault", 0)
        d.values["pgfault"] = faults
        if faults < 0.95 * ops:
            d.invalid.append(
                f"{faults} page faults for {ops:.0f} pages written: "
                "not one fault a page"
            )
    return d


def _params(mode: str) -> dict[str, Param]:
    return {
        "case": Param(
            "1",
            "will-it-scale's case: 1 anonymous private (page_fault1), 2 "
            "private file mapping (page_fault2), 3 shared file mapping "
            "(page_fault3)",
            choices=tuple(CASES),
        ),
        "tasks": Param.integer(
            "2",
            f"{mode} faulting at once (will-it-scale's task count; "
            "sweep it: --sweep tasks=1,2,4)",
            1,
            64,
        ),
        "seconds": Param.integer(
            "5", "measured seconds, after 1 s of warm-up", 1, 600
        ),
        "size_mb": Param.integer(
            "16",
            "MiB each task maps, faults in and unmaps per pass "
            "(will-it-scale: 128; tasks x size_mb must fit the guest)",
            1,
            512,
        ),
        "mode": Param(
            mode,
            "processes or threads (set by the workload: page-fault or "
            "page-fault-threads)",
            choices=(mode,),
        ),
    }


def _metrics(mode: str) -> tuple[Metric, ...]:
    return (
        Metric(
            LEAD[mode],
            "ops/s",
            "higher",
            f"page faults a second per task ({mode}), as "
            "will-it-scale's " + LEAD[mode].split(".")[1],
        ),
        Metric(
            "ops_per_s",
            "ops/s",
            "higher",
            "page faults a second, all tasks",
            primary=False,
        ),
        Metric(
            "task_ops_per_s_min",
            "ops/s",
            "higher",
            "the slowest task's faults a second",
            primary=False,
        ),
        Metric(
            "task_ops_per_s_max",
            "ops/s",
            NO_DIRECTION,
            "the fastest task's faults a second",
            primary=False,
        ),
        Metric(
            "min_passes",
            "passes",
            NO_DIRECTION,
            "fewest whole passes over its mapping by a task, measured seconds",
            primary=False,
        ),
        Metric(
            "pgfault",
            "faults",
            NO_DIRECTION,
            "pgfault (vmstat), the whole run",
            primary=False,
        ),
        *count_metrics(FAULT_UNIT, _ROOTS),
    )


def _workload(name: str, mode: str) -> Workload:
    return Workload(
        name=name,
        title=f"will-it-scale page_fault1/2/3 over {mode} ({LEAD[mode]})",
        script="page-fault",
        params=_params(mode),
        metrics=_metrics(mode),
        derive=derive_page_fault,
        timeout=240,
        # its fixture's boots under TCG (defaults, beside a kernel
        # build): processes 16.3 s, threads 15.2 s; the measured seconds
        # are fixed
        tcg_boot_s=16.3 if mode == "processes" else 15.2,
        window=WINDOW,
        count_roots=_ROOTS,
        count_unit=FAULT_UNIT,
        # its fixture's counting boots: 19.8 s and 21.0 s
        tcg_count_boot_s=19.8 if mode == "processes" else 21.0,
        # what a sweep of the task count (or of the vCPUs) is about:
        # how each task's fault rate holds up as tasks are added
        growth=(
            Growth("tasks", LEAD[mode], "faults a second per task"),
            Growth("tasks", "ops_per_s", "faults a second, all tasks"),
            Growth(MACHINE_VCPUS, LEAD[mode], "faults a second per task"),
            # counted (--count): what a fault costs the kernel as tasks
            # are added (lock contention, and with threads the shootdowns
            # of each pass's munmap to more CPUs)
            Growth("tasks", "kernel_insns_per_fault", "instructions a fault"),
            Growth("tasks", "ipis_sent_per_fault", "IPIs a fault"),
        ),
        follow_vcpus=lambda n: {"tasks": str(n)},
    )


PAGE_FAULT = _workload("page-fault", "processes")
PAGE_FAULT_THREADS = _workload("page-fault-threads", "threads")

WORKLOADS = (PAGE_FAULT, PAGE_FAULT_THREADS)
