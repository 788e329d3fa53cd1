"""lru-file-readonce: vm-scalability's lru-file-readonce case
(lrureadonce.c, run by lru-file-readonce.sh): files read once through
the page cache by a number of processes, more than their memcg may keep,
so the LRU's reclaim of clean file pages is in every read; the kernel
test robot's ``vm-scalability.throughput`` (KB/s summed over the
readers) with ``test: lru-file-readonce``.

Where it differs from vm-scalability (whose scripts are not used): there,
one dd a task reads a file of its own, more in all than the machine's
memory; here one process a task reads a sparse file of its own (a hole:
page cache allocated and zeroed, no I/O) on XFS on a brd ramdisk, 1 MiB a
read(), in a memcg of ``memcg_pct``% of the total, so reclaim is the
memcg's and not the whole guest's.

Why a workload and not a usemem parameter: vm-scalability's anon-w-* and
swap-w-* cases are usemem invocations (usemem's ``random`` and ``swap``
here), this one is no usemem at all. Its samples are not held to a
captured boot yet (no fixture; the contract test names it as missing).

Counted (``--count``): the reading is the window, every process's timed
part (lrureadonce.c marks it: the last process to be ready opens it as
they all start, the last to finish reading closes it), divided by the
MiB read in it: the kernel instructions, TLB invalidations and IPIs a
MiB costs (the page cache allocated, zeroed and copied, and the memcg's
reclaim), and reclaim's own share (shrink_lruvec)."""

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

# The counting window lrureadonce.c marks: FL_WIN_READONCE (windows.py
# gathers every workload's window).
WINDOW = Window(11, "READONCE", "the reading, every process (lrureadonce)")
# Reclaim's share: shrink_lruvec, the LRU's reclaim of one memcg on one
# node (the inactive and active lists scanned, the folios freed by
# shrink_folio_list), classic LRU or MGLRU (lru_gen_shrink_lruvec is
# called from it for a memcg's reclaim). A static function of
# mm/vmscan.c that the x86_64 6.12 and 7.3 builds here keep out of line
# at both its callers, shrink_node and mem_cgroup_shrink_node (objdump
# of mm/vmscan.o); arm64's build not checked. The memcg's limit reclaim
# is direct (try_charge_memcg), in the readers.
_ROOTS = ("shrink_lruvec",)
# The MiB the processes read in the window: what the counted figures are
# per. A counting sample's derive puts it among its values for per_mib
# (a counting sample keeps only what is counted, so a timed sample never
# reports it).
READ_MIB = "mib_read"

LEAD = "vm-scalability.throughput"
# Pages the memcg's reclaim took, as a share of what the read exceeds
# memory.max by, at least: less, and the files did not go through a full
# LRU as the case is about.
MIN_RECLAIMED_SHARE = 0.5


def derive_lru_file_readonce(
    s: GuestSample, params: dict[str, str]
) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    copy_metrics(s, d, ("elapsed_ms",))
    if "throughput_kbs" not in s.metrics:
        d.invalid.append("lrureadonce reported no throughput")
        return d
    d.values[LEAD] = s.metrics["throughput_kbs"]
    asked, read = s.metrics.get("bytes", 0), s.metrics.get("bytes_read", 0)
    if not asked or read < asked:
        d.invalid.append(f"{read:.0f} bytes read of the {asked:.0f} asked")
    if params.get(COUNTING) == "1" and read:
        d.values[READ_MIB] = read / 2**20
    events = counter_deltas(s, "memcg_events", parse.parse_memcg)
    stat = counter_deltas(s, "memcg_stat", parse.parse_memcg)
    if events.get("oom_kill"):
        d.invalid.append(f"{events['oom_kill']} memcg OOM kill(s)")
    if not events or not stat:
        d.invalid.append("the memcg's counters are missing")
        return d
    d.values["memcg_max_events"] = events.get("max", 0)
    d.values["memcg_pgsteal"] = stat.get("pgsteal", 0)
    total = int(params["total_mb"]) * 256
    over = total - total * int(params["memcg_pct"]) // 100
    if not events.get("max"):
        d.invalid.append(
            "the memcg limit was never reached (memory.events max "
            "did not move)"
        )
    elif stat.get("pgsteal", 0) < MIN_RECLAIMED_SHARE * over:
        d.invalid.append(
            f"the memcg's reclaim took {stat.get('pgsteal', 0)} pages, "
            f"the read exceeds memory.max by {over}"
        )
    if vm:
        for key in ("pgscan_file", "workingset_refault_file"):
            d.values[key] = vm.get(key, 0)
    return d


def per_mib(
    counted: dict[str, float],
    derived: dict[str, float],
    roots: tuple[str, ...],
) -> dict[str, float]:
    """The window's counts per MiB read, and the MiB they are per (the
    roots --root adds are reported whole, as every workload's)."""
    mib = derived.get(READ_MIB)
    if not mib:
        return {}
    return {READ_MIB: mib, **window_per("mib", mib, counted, _ROOTS)}


LRU_FILE_READONCE = Workload(
    name="lru-file-readonce",
    title="vm-scalability lru-file-readonce: files read once through a "
    f"full page cache LRU ({LEAD})",
    script="lru-file-readonce",
    params={
        "tasks": Param.integer(
            "2",
            "processes, each reading a file of its own (vm-scalability's "
            "nr_task; sweep it: --sweep tasks=1,2,4)",
            1,
            64,
        ),
        "total_mb": Param.integer(
            "256", "MiB read, all files together", 16, 1536
        ),
        "memcg_pct": Param.integer(
            "25",
            "the readers' memcg's memory.max as percent of total_mb",
            5,
            90,
        ),
    },
    metrics=(
        Metric(
            LEAD,
            "KB/s",
            "higher",
            "KB read a second, summed over the processes "
            "(vm-scalability's throughput)",
        ),
        Metric(
            "elapsed_ms",
            "ms",
            "lower",
            "first process's start to the last one's end",
        ),
        Metric(
            "memcg_pgsteal",
            "pages",
            NO_DIRECTION,
            "pages the memcg's reclaim took (memory.stat pgsteal)",
            primary=False,
        ),
        Metric(
            "memcg_max_events",
            "events",
            NO_DIRECTION,
            "charges that met memory.max (memory.events max)",
            primary=False,
        ),
        Metric(
            "pgscan_file",
            "pages",
            "lower",
            "file pages scanned by reclaim (vmstat pgscan_file)",
            primary=False,
        ),
        Metric(
            "workingset_refault_file",
            "pages",
            NO_DIRECTION,
            "file pages read again after reclaim (vmstat)",
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
                    "counted: kernel instructions per MiB read, every "
                    "process (the memcg's reclaim included)",
                ),
                Metric(
                    "shrink_lruvec_insns_per_mib",
                    "insns",
                    "lower",
                    "counted: reclaim's share, shrink_lruvec (callees "
                    "included), per MiB read",
                ),
                Metric(
                    "tlb_flush_insns_per_mib",
                    "insns",
                    "lower",
                    "counted: TLB invalidations per MiB read",
                    primary=False,
                ),
                Metric(
                    "ipis_sent_per_mib",
                    "IPIs",
                    "lower",
                    "counted: IPIs sent per MiB read",
                    primary=False,
                ),
                Metric(
                    READ_MIB,
                    "MiB",
                    NO_DIRECTION,
                    "counted: MiB read in the window, all processes (what "
                    "the per-MiB figures divide by)",
                    primary=False,
                ),
            ),
        ),
    ),
    derive=derive_lru_file_readonce,
    # the ramdisk the files' XFS is on (pages only as written: a few MiB
    # of metadata, the files being sparse)
    cmdline=("brd.rd_nr=1", "brd.rd_size=2097152"),
    timeout=240,
    # its fixture's boots under TCG (defaults, beside a kernel build):
    # 10.5 s, counting 18.7 s
    tcg_boot_s=10.5,
    tcg_count_boot_s=18.7,
    window=WINDOW,
    count_roots=_ROOTS,
    count_extra=per_mib,
    growth=(
        Growth("tasks", LEAD, "KB/s, all processes"),
        Growth(MACHINE_VCPUS, LEAD, "KB/s, all processes"),
        # counted (--count): what a MiB costs the kernel, and its
        # reclaim, as readers are added
        Growth("tasks", "kernel_insns_per_mib", "instructions a MiB"),
        Growth("tasks", "shrink_lruvec_insns_per_mib", "reclaim a MiB"),
    ),
    follow_vcpus=lambda n: {"tasks": str(n)},
)

WORKLOADS = (LRU_FILE_READONCE,)
