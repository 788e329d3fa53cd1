"""The false discovery rate over a run's secondary metrics.

A workload declares its lead metrics (Metric.primary): those are the
pre-declared tests, each decided alone (its CI excludes 1 and p < 0.05).
Every other metric is secondary, and a default run has about 150 of them:
at 5% each, about 7 would be called significant by chance alone. Here
they are decided together: Benjamini-Hochberg (stats.bh_adjust, which
says why BH and not Holm or Benjamini-Yekutieli) at FDR stats.FDR_Q over
one family per kernel against the baseline, and a secondary row is
significant when its deciding CI excludes 1 and its adjusted p is below
stats.FDR_Q (StatRow.significant).

The family: every secondary metric with a test (StatRow.tested) of every
workload of the run, for one kernel against the baseline. Across
workloads, because a report's verdicts are read as one list ("N other
significant changes"), and a family per workload would let seven
workloads each bring their 5% of false verdicts. Per kernel, because a
kernel's verdicts against the baseline must not depend on which other
kernels shared the run: adding a third kernel to a run does not change
what the second one's rows say. Not in it: lead metrics (pre-declared),
exact rows (both kernels repeat one value: a fact, no test), rows with
too few samples for a CI (no verdict either way) and metrics whose
samples on a kernel split into two modes (no verdict: their means are
no kernel's typical value).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from foliolab.analysis import stats
from foliolab.analysis.workloadstats import WorkloadAnalysis

METHOD = "benjamini-hochberg"


@dataclass(frozen=True)
class FdrFamily:
    """One kernel's secondary metrics against the baseline, decided
    together (results.json's ``fdr``)."""

    baseline: str
    kernel: str
    method: str  # METHOD
    q: float  # the false discovery rate controlled: stats.FDR_Q
    tested: int  # the family's size: secondary rows with a test
    raw: int  # of them, significant by the rule of one test
    held: int  # of them, significant with the FDR controlled
    two_modes: int  # secondary rows in two modes: no verdict, not tested
    # the smallest p the family's sample sizes allow (StatRow.min_p):
    # above q / tested, no metric holds alone, only among many as small
    min_p: float

    @property
    def alone_can_hold(self) -> bool:
        """Whether one metric can hold without others beside it: its p
        can reach q / tested."""
        return self.tested == 0 or self.min_p <= self.q / self.tested


def control(
    workloads: list[WorkloadAnalysis], names: list[str]
) -> list[FdrFamily]:
    """Give every tested secondary row of ``workloads`` its adjusted p
    (StatRow.q_value), family by family (one per kernel after the
    baseline ``names[0]``); the rows are replaced in place. Returns the
    families, in the kernels' order."""
    families = []
    for kernel in names[1:]:
        tested = [
            r
            for wa in workloads
            for r in wa.rows
            if r.kernel == kernel and not r.primary and r.tested
        ]
        qs = stats.bh_adjust([r.decisive_p for r in tested])
        q_of = {id(r): q for r, q in zip(tested, qs)}
        for wa in workloads:
            wa.rows = [
                dataclasses.replace(r, q_value=q_of[id(r)])
                if id(r) in q_of
                else r
                for r in wa.rows
            ]
        adjusted = [
            r
            for wa in workloads
            for r in wa.rows
            if r.kernel == kernel and r.q_value is not None
        ]
        min_p = min((r.min_p for r in adjusted), default=math.nan)
        families.append(
            FdrFamily(
                names[0],
                kernel,
                METHOD,
                stats.FDR_Q,
                len(adjusted),
                sum(r.raw_significant for r in adjusted),
                sum(r.significant for r in adjusted),
                sum(
                    1
                    for wa in workloads
                    for r in wa.rows
                    if r.kernel == kernel and not r.primary and r.two_modes
                ),
                min_p,
            )
        )
    return families
