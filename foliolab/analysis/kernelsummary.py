"""Per workload and kernel, what its timed windows cost, as mmtests'
compare-kernels prints under its tables: the workload's User, System and
Elapsed time and the vmstat counters reclaim is judged by (swap in and
out, pages scanned and stolen directly and by kswapd, reclaim efficiency),
each the mean over the kernel's valid timed samples.

Read from the samples' windows (guestdata.window.TimedWindow); a run
whose samples predate the times has its counters and no times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from foliolab.boot.derive import Sample
from foliolab.guestdata.window import RECLAIM_COUNTERS, THP_PREFIX

# Shown only where some kernel moved it: MADV_FREE's drops are 0 but in
# the lazy-free workloads.
SHOWN_IF_MOVED = ("pglazyfreed",)


@dataclass(frozen=True)
class KernelCost:
    """One kernel's mean window in one workload; None: no sample had it."""

    kernel: str
    n: int  # valid timed samples with a window
    n_times: int  # of them, those that recorded the times
    user_s: float | None
    sys_s: float | None
    elapsed_s: float | None
    counters: dict[str, float] = field(default_factory=dict)

    @property
    def scanned(self) -> float:
        return self.counters.get("pgscan_direct", 0.0) + self.counters.get(
            "pgscan_kswapd", 0.0
        )

    @property
    def stolen(self) -> float:
        return self.counters.get("pgsteal_direct", 0.0) + self.counters.get(
            "pgsteal_kswapd", 0.0
        )

    @property
    def efficiency_pct(self) -> float | None:
        """Reclaim efficiency, pages stolen per page scanned (direct and
        kswapd together), in percent; None where nothing was scanned."""
        if not self.scanned:
            return None
        return 100.0 * self.stolen / self.scanned


@dataclass(frozen=True)
class WorkloadCost:
    """A workload's kernels' windows, in the run's kernel order, and the
    counters shown: the reclaim ones the kernels' vmstat has, and the THP
    ones that moved in some kernel."""

    workload: str
    kernels: list[KernelCost]
    counters: list[str]

    @property
    def has_times(self) -> bool:
        return any(k.n_times for k in self.kernels)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def kernel_cost(kernel: str, samples: list[Sample]) -> KernelCost:
    windows = [s.window for s in samples if s.window is not None]
    timed = [w for w in windows if w.elapsed_s is not None]
    keys = sorted({k for w in windows for k in w.vmstat})
    return KernelCost(
        kernel,
        len(windows),
        len(timed),
        _mean([w.user_s for w in timed if w.user_s is not None]),
        _mean([w.sys_s for w in timed if w.sys_s is not None]),
        _mean([w.elapsed_s for w in timed if w.elapsed_s is not None]),
        # a counter a window lacks was not in that kernel's vmstat: the
        # mean is over the windows that have it
        {
            k: _mean([float(w.vmstat[k]) for w in windows if k in w.vmstat])
            or 0.0
            for k in keys
        },
    )


def workload_cost(
    workload: str, samples: list[Sample], names: list[str]
) -> WorkloadCost | None:
    """The workload's per-kernel windows from its valid timed samples;
    None if none has one (a counting-only run, or no valid sample)."""
    mine = [
        s
        for s in samples
        if s.workload == workload and s.valid and s.window is not None
    ]
    if not mine:
        return None
    kernels = [
        kernel_cost(k, [s for s in mine if s.variant == k]) for k in names
    ]
    present = {c for k in kernels for c in k.counters}

    def moved(c: str) -> bool:
        return any(k.counters.get(c) for k in kernels)

    shown = [
        c
        for c in RECLAIM_COUNTERS
        if c in present and (c not in SHOWN_IF_MOVED or moved(c))
    ]
    shown += sorted(
        c for c in present if c.startswith(THP_PREFIX) and moved(c)
    )
    return WorkloadCost(workload, kernels, shown)
