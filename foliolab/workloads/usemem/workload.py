"""usemem: vm-scalability's usemem (usemem.c, run by usemem.sh), an
anonymous fill by a number of processes, in memory or under swap: the
kernel test robot's ``vm-scalability.throughput`` (its cases anon-w-seq,
swap-w-seq, and with ``random=1`` anon-w-rand and swap-w-rand, THP on or
off by ``thp`` as LKP's thp_enabled), mmtests' workload-usemem and
usemem-swap-ramdisk. Those four cases are each one usemem invocation in
vm-scalability too, differing in its flags, so they are this workload's
parameters, not workloads of their own (lru-file-readonce, no usemem,
is one: foliolab/workloads/lru_file_readonce).

Where it differs from vm-scalability's usemem (whose source is not
used): each process writes every word of its share (the page's own
pattern, so zram compresses it but never finds it zero-filled) and
checks it back untimed; random order is a permutation of the pages, each
written whole once a pass, so the pages written and their check stay
exact (vm-scalability's random mode draws its positions at random);
swap is zram in a memcg sized to a fraction of the fill, not a ramdisk
or a disk with the whole machine's memory.

Counted (``--count``): the fill is the window, every process's timed
part (usemem.c marks it: the last process to be ready opens it as they
all start, the last to finish writing closes it), divided by the MiB
written in it:
the kernel instructions, TLB invalidations and IPIs a MiB costs, the
faults and under swap the reclaim and zram included, and the faults'
own share (handle_mm_fault)."""

from __future__ import annotations

from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    common_checks,
    copy_metrics,
    counter_deltas,
    window_per,
)
from foliolab.workloads.model import (
    COUNTING,
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

# The counting window usemem.c marks: FL_WIN_USEMEM (windows.py gathers
# every workload's window).
WINDOW = Window(7, "USEMEM", "the fill, every process (usemem)")
_ROOTS = ("handle_mm_fault",)
# The MiB the processes wrote in the window, all passes: what the
# counted figures are per. A counting sample's derive puts it among its
# values for per_mib (a counting sample keeps only what is counted, so
# a timed sample never reports it).
WRITTEN_MIB = "mib_written"
# Pages of the guest's base size (usemem.c's PAGE_SIZE) in a MiB.
PAGES_PER_MIB = 256

LEAD = "vm-scalability.throughput"
# Swapped out under swap=1, as a share of what the fill exceeds the
# memcg by: less, and the run did not swap as it was set up to.
MIN_SWAPPED_SHARE = 0.5


def derive_usemem(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    swap = params["swap"] == "1"
    vm = common_checks(s, d, need_swap=swap)
    copy_metrics(s, d, ("elapsed_ms", "verify_errors"))
    if "throughput_kbs" not in s.metrics:
        d.invalid.append("usemem reported no throughput")
        return d
    d.values[LEAD] = s.metrics["throughput_kbs"]
    pages, written = s.metrics.get("pages", 0), s.metrics.get("pages_written")
    if params.get(COUNTING) == "1" and written:
        d.values[WRITTEN_MIB] = written / PAGES_PER_MIB
    asked = (
        int(params["total_mb"])
        * 256
        // int(params["tasks"])
        * int(params["tasks"])
    )
    if pages < asked or written != pages * int(params["loops"]):
        d.invalid.append(
            f"{written or 0:.0f} pages written of the "
            f"{asked * int(params['loops'])} asked"
        )
    if s.metrics.get("verify_errors"):
        d.invalid.append(
            f"{s.metrics['verify_errors']:.0f} pages read back wrong"
        )
    events = counter_deltas(s, "memcg_events", parse.parse_memcg)
    if events.get("oom_kill"):
        d.invalid.append(f"{events['oom_kill']} memcg OOM kill(s)")
    if not vm:
        return d
    # a zero-filled page is swapped out as a bit, not a write (6.12 on)
    swapped = vm.get("pswpout", 0) + vm.get("swpout_zero", 0)
    d.values["swapped_out"] = swapped
    d.values["pswpin"] = vm.get("pswpin", 0)
    d.values["thp_fault_alloc"] = vm.get("thp_fault_alloc", 0)
    if swap:
        over = asked * (100 - int(params["memcg_pct"])) // 100
        if swapped < MIN_SWAPPED_SHARE * over:
            d.invalid.append(
                f"swap not used as asked: {swapped} pages swapped out, "
                f"the fill exceeds the memcg by {over}"
            )
    elif swapped:
        d.invalid.append(f"{swapped} pages swapped out in a run in memory")
    thp = vm.get("thp_fault_alloc", 0)
    if params["thp"] == "always" and not thp:
        d.invalid.append("THP asked (thp=always), none allocated")
    if params["thp"] == "never" and thp:
        d.invalid.append(f"{thp} THPs allocated with thp=never")
    return d


def per_mib(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The window's counts per MiB written, and the MiB they are per
    (the roots --root adds are reported whole, as every workload's)."""
    mib = derived.get(WRITTEN_MIB)
    if not mib:
        return {}
    return {WRITTEN_MIB: mib, **window_per("mib", mib, counted, _ROOTS)}


USEMEM = Workload(
    name="usemem",
    title=f"vm-scalability usemem: anonymous fill by N processes ({LEAD})",
    script="usemem",
    params={
        "tasks": Param.integer(
            "2",
            "processes filling at once (vm-scalability's nr_task; sweep "
            "it: --sweep tasks=1,2,4)",
            1,
            64,
        ),
        "total_mb": Param.integer(
            "256", "MiB filled, all processes together", 16, 2048
        ),
        "loops": Param.integer(
            "1",
            "passes over the memory (the first faults it in)",
            1,
            100,
        ),
        "swap": Param.flag(
            "0",
            "0: in memory, no swap device; 1: in a memcg of memcg_pct% "
            "of the fill, swapping to zram",
        ),
        "memcg_pct": Param.integer(
            "50", "swap=1: memory.max as percent of the fill", 5, 95
        ),
        "thp": Param(
            "never",
            "PMD THP for the fill (transparent_hugepage/enabled)",
            choices=("never", "always"),
        ),
        "random": Param.flag(
            "0",
            "1: each process writes its pages in a random order (a "
            "permutation, every page once a pass): vm-scalability's "
            "anon-w-rand, and swap-w-rand with swap=1",
        ),
        "verify": Param.flag(
            "1", "read every page back and check it (untimed)"
        ),
    },
    metrics=(
        Metric(
            LEAD,
            "KB/s",
            "higher",
            "KB written a second, summed over the processes "
            "(vm-scalability's throughput)",
        ),
        Metric(
            "elapsed_ms",
            "ms",
            "lower",
            "first process's start to the last one's end",
        ),
        Metric(
            "swapped_out",
            "pages",
            NO_DIRECTION,
            "pages swapped out, written or zero-filled (pswpout + "
            "swpout_zero)",
            primary=False,
        ),
        Metric("pswpin", "pages", "lower", "pswpin", primary=False),
        Metric(
            "thp_fault_alloc",
            "THPs",
            NO_DIRECTION,
            "thp_fault_alloc",
            primary=False,
        ),
        Metric(
            "verify_errors",
            "pages",
            "lower",
            "pages read back wrong",
            primary=False,
        ),
        *count_metrics(
            None,
            _ROOTS,
            (
                Metric(
                    "kernel_insns_per_mib",
                    "insns",
                    "lower",
                    "counted: kernel instructions per MiB written, every "
                    "process (under swap, reclaim's too)",
                ),
                Metric(
                    "handle_mm_fault_insns_per_mib",
                    "insns",
                    "lower",
                    "counted: handle_mm_fault (callees included) per MiB "
                    "written",
                ),
                Metric(
                    "tlb_flush_insns_per_mib",
                    "insns",
                    "lower",
                    "counted: TLB invalidations per MiB written",
                    primary=False,
                ),
                Metric(
                    "ipis_sent_per_mib",
                    "IPIs",
                    "lower",
                    "counted: IPIs sent per MiB written",
                    primary=False,
                ),
                Metric(
                    WRITTEN_MIB,
                    "MiB",
                    NO_DIRECTION,
                    "counted: MiB written in the window, all passes (what "
                    "the per-MiB figures divide by)",
                    primary=False,
                ),
            ),
        ),
    ),
    derive=derive_usemem,
    timeout=300,
    window=WINDOW,
    count_roots=_ROOTS,
    count_extra=per_mib,
    # its fixture's boots under TCG, the host idle: 9.1 s in memory (the
    # default), 20.2 s under swap (swap=1); counting 16.7 s and 32.1 s
    # (beside a kernel build the swap boots took 96.5 s and 185.1 s)
    tcg_boot_s=9.1,
    tcg_count_boot_s=16.7,
    growth=(
        Growth("tasks", LEAD, "KB/s, all processes"),
        Growth(MACHINE_VCPUS, LEAD, "KB/s, all processes"),
        # counted (--count): what a MiB costs the kernel as processes
        # are added
        Growth("tasks", "kernel_insns_per_mib", "instructions a MiB"),
    ),
    follow_vcpus=lambda n: {"tasks": str(n)},
)

WORKLOADS = (USEMEM,)
