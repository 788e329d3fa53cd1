"""stress-ng-STRESSOR: any of stress-ng's mm stressors by name
(stress-ng.sh; stress-ng 0.15 of the guest image, as dirty-tlb uses it),
its bogo-ops a second under the name the kernel test robot reports it
by, ``stress-ng.STRESSOR.ops_per_sec``: mmtests'
workload-stressng-{mmap,madvise,...} and LKP's stress-ng jobs.

``stress-ng-mmap`` is registered (mmtests' stressng-mmap); any other
mm stressor's workload is made when it is named (``--workloads
stress-ng-mremap``), and a stressor that is not an mm one is refused in
one line before anything is built. Where it differs: mmtests runs 30 s,
7 iterations, 1..2 x NCPU instances; LKP 60 s at 100% of the CPUs;
here ``seconds`` (default 10) with ``workers`` (default 2, the
vCPUs), one sample a boot.

Counted (``--count``): the stress-ng run is the window, dirty-tlb's
(stress-ng.sh marks it in a counting boot: every worker's kernel work,
stress-ng's start and exit, one fork and exec of flmark), divided by the
bogo-ops stress-ng reports for it: the kernel instructions, TLB
invalidations and IPIs a bogo-op costs. A bogo-op is whatever the
stressor counts as one (mmap: a map, touch and unmap of bytes_mb), so
the figures compare kernels on one stressor and one size, not
stressors."""

from __future__ import annotations

import functools

from foliolab.errors import UsageError
from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks
from foliolab.workloads.dirty_tlb.workload import WINDOW
from foliolab.workloads.model import (
    MACHINE_VCPUS,
    NO_DIRECTION,
    CountedExtra,
    Derived,
    Growth,
    Metric,
    Param,
    Workload,
    count_metrics,
)

PREFIX = "stress-ng-"
# stress-ng 0.15.06's mm stressors: its class "vm" (`stress-ng --class
# vm?`) without env, watchdog and bad-altstack, which are not about
# memory management, and the mm ones of its other classes (fault,
# memfd, mincore, remap, rmap, numa, tlb-shootdown, zero).
MM_STRESSORS = (
    "bigheap",
    "brk",
    "dev-shm",
    "fault",
    "madvise",
    "malloc",
    "memfd",
    "mincore",
    "mlock",
    "mlockmany",
    "mmap",
    "mmapaddr",
    "mmapfixed",
    "mmapfork",
    "mmaphuge",
    "mmapmany",
    "mprotect",
    "mremap",
    "msync",
    "msyncmany",
    "munmap",
    "numa",
    "pagemove",
    "pageswap",
    "physpage",
    "remap",
    "rmap",
    "shm",
    "shm-sysv",
    "stack",
    "stackmmap",
    "swap",
    "tlb-shootdown",
    "tmpfs",
    "userfaultfd",
    "vm",
    "vm-addr",
    "vm-rw",
    "vm-segv",
    "vm-splice",
    "zero",
)


# The mm stressors with a --NAME-bytes option in stress-ng 0.15.06
# (`stress-ng --help`): their size is a parameter, bytes_mb.
SIZED = (
    "malloc",
    "memfd",
    "mmap",
    "mremap",
    "msync",
    "pagemove",
    "shm",
    "shm-sysv",
    "vm",
    "vm-rw",
    "vm-splice",
)


def ops_per_sec(stressor: str) -> str:
    """The robot's name of a stressor's bogo-ops a second."""
    return f"stress-ng.{stressor}.ops_per_sec"


def derive_stress_ng(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    vm = common_checks(s, d, need_swap=False)
    stressor = params["stressor"]
    sng = parse.parse_stress_ng_yaml(s.files.get("stress-ng.yaml", ""))
    got = sng.get(stressor, {})
    rate = got.get("bogo-ops-per-second-real-time")
    if rate is None:
        d.invalid.append(f"stress-ng reported no {stressor} metrics")
        return d
    if not got.get("bogo-ops"):
        d.invalid.append(f"stress-ng's {stressor} did no bogo-op")
    d.values[ops_per_sec(stressor)] = rate
    d.values[f"stress-ng.{stressor}.ops"] = got.get("bogo-ops", 0)
    if vm:
        d.values["pgfault"] = vm.get("pgfault", 0)
    return d


# What the counted figures are per: a bogo-op, as the stressor counts it.
OP = "bogo_op"
_PER_OP = ("kernel_insns", "tlb_flush_insns", "ipis_sent")


def per_bogo_op(stressor: str) -> CountedExtra:
    """The window's counts per bogo-op of ``stressor`` (its count from
    stress-ng's YAML, as the sample derived it)."""

    def per_op(
        counted: dict[str, float],
        derived: dict[str, float],
        roots: tuple[str, ...],
    ) -> dict[str, float]:
        ops = derived.get(f"stress-ng.{stressor}.ops")
        if not ops:
            return {}
        return {f"{key}_per_{OP}": counted[key] / ops for key in _PER_OP}

    return per_op


_PER_OP_METRICS = (
    Metric(
        f"kernel_insns_per_{OP}",
        "insns",
        "lower",
        "counted: kernel instructions per bogo-op, every worker",
    ),
    Metric(
        f"tlb_flush_insns_per_{OP}",
        "insns",
        "lower",
        "counted: TLB invalidations per bogo-op",
        primary=False,
    ),
    Metric(
        f"ipis_sent_per_{OP}",
        "IPIs",
        "lower",
        "counted: IPIs sent per bogo-op",
        primary=False,
    ),
)


def is_family_name(name: str) -> bool:
    """``name`` is a stress-ng workload's (mm stressor or not)."""
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


@functools.cache
def workload(name: str) -> Workload:
    """The workload ``stress-ng-STRESSOR``; a stressor that is not one
    of stress-ng's mm ones is a usage error."""
    stressor = name[len(PREFIX) :]
    if stressor not in MM_STRESSORS:
        raise UsageError(
            f"{name}: {stressor!r} is not an mm stressor of stress-ng 0.15",
            hint="choose stress-ng-NAME with NAME one of: "
            + ", ".join(MM_STRESSORS),
        )
    params = {
        "stressor": Param(
            stressor,
            "the stressor (set by the workload's name)",
            choices=(stressor,),
        ),
        "workers": Param.integer(
            "2", "instances (mmtests: 1..2 x CPUs)", 1, 64
        ),
        "seconds": Param.integer(
            "10", "--timeout (mmtests 30, LKP 60)", 1, 600
        ),
    }
    if stressor in SIZED:
        # stress-ng's own default (mmap: 256 MiB an op) did no op in a
        # 10 s sample under TCG (captured); on this host, 2 mmap
        # workers made 1.6 ops/s at 16 MiB, 12.6 at 4, 47.5 at 1
        params["bytes_mb"] = Param.integer(
            "4",
            f"--{stressor}-bytes, MiB (0: stress-ng's default)",
            0,
            2048,
        )
    return Workload(
        name=name,
        title=f"stress-ng --{stressor} (any mm stressor: "
        f"stress-ng-NAME), bogo-ops/s ({ops_per_sec(stressor)})",
        script="stress-ng",
        params=params,
        metrics=(
            Metric(
                ops_per_sec(stressor),
                "ops/s",
                "higher",
                "bogo-ops a second, real time (stress-ng --metrics)",
            ),
            Metric(
                f"stress-ng.{stressor}.ops",
                "ops",
                NO_DIRECTION,
                "bogo-ops, the whole run",
                primary=False,
            ),
            Metric(
                "pgfault",
                "faults",
                NO_DIRECTION,
                "pgfault (vmstat), the whole run",
                primary=False,
            ),
            *count_metrics(None, (), _PER_OP_METRICS),
        ),
        derive=derive_stress_ng,
        timeout=240,
        # dirty-tlb's window: both mark the stress-ng run and nothing else
        window=WINDOW,
        count_extra=per_bogo_op(stressor),
        # stress-ng-mmap's fixture boots under TCG (defaults, beside a
        # kernel build): 21.9 s, counting 22.9 s; the other stressors'
        # boots last as long (--timeout), give or take the end of the
        # last bogo-op
        tcg_boot_s=21.9,
        tcg_count_boot_s=22.9,
        growth=(
            Growth("workers", ops_per_sec(stressor), "bogo-ops/s"),
            Growth(MACHINE_VCPUS, ops_per_sec(stressor), "bogo-ops/s"),
        ),
        follow_vcpus=lambda n: {"workers": str(n)},
    )


WORKLOADS = (workload(PREFIX + "mmap"),)
