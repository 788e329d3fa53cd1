"""Analysis of a run, apart from its rendering: samples -> typed rows.

analyse() puts together, per workload, the statistics of its samples
(workloadstats.py: StatRows, StepRows, caveats, invalid samples), the
counting analysis (countanalysis.py), the false discovery rate over the
secondary metrics (fdr.py), what the run's boots say about the
run (runboots.py: the host, the boots that did not finish) and the
headline (headline.py) in one Analysis. The renderers (render/) and
results.json read it; nothing here formats a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from foliolab.analysis import fdr
from foliolab.analysis.countanalysis import CountAnalysis, analyse_counts
from foliolab.analysis.growth import GrowthTable, growth_tables
from foliolab.analysis.headline import Headline, headline
from foliolab.analysis.kernelsummary import WorkloadCost, workload_cost
from foliolab.analysis.runboots import boot_cost_line, host_line, missing_boots
from foliolab.analysis.workloadstats import (
    WorkloadAnalysis,
    attribution_rows,
    caveat_lines,
    invalid_lines,
    summarize_workload,
)
from foliolab.boot.derive import Sample
from foliolab.manifest import RunManifest
from foliolab.workloads import find
from foliolab.workloads.model import with_roots


@dataclass
class Analysis:
    """A run analysed: its manifest, samples and every workload's rows."""

    m: RunManifest
    samples: list[Sample]
    workloads: list[WorkloadAnalysis]
    counts: dict[str, CountAnalysis]
    host_line: str = ""
    missing: list[str] = field(default_factory=list)  # unfinished boots
    headline: Headline = field(default_factory=lambda: Headline([], ""))
    # per workload, each kernel's mean window (kernelsummary.py)
    costs: dict[str, WorkloadCost] = field(default_factory=dict)
    # a sweep's points read together (compare --sweep)
    growth: list[GrowthTable] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return self.m.names


def analyse(out: Path, m: RunManifest, samples: list[Sample]) -> Analysis:
    """The run in ``out`` analysed from its manifest and samples."""
    names = m.names
    releases = {
        k.name: k.built.release for k in m.kernels if k.built is not None
    }
    counts = analyse_counts(out, samples, names, releases)
    workloads = []
    for name in m.workloads:
        w = find(name)
        if w is None:
            continue
        w = with_roots(w, tuple(m.extra_roots))
        rows = summarize_workload(w, samples, names)
        workloads.append(
            WorkloadAnalysis(
                w,
                rows,
                attribution_rows(w, samples, names) if m.attribution else [],
                caveat_lines(w, samples, rows, names),
                invalid_lines(w, samples, names),
                counts.get(name),
                boot_cost_line(name, samples),
            )
        )
    # the secondary metrics decided together, before anything counts
    # their verdicts (the headline, the renderers)
    families = fdr.control(workloads, names)
    missing = missing_boots(m, out) if (out / "raw").is_dir() else []
    costs = {
        w: c
        for w in m.workloads
        if (c := workload_cost(w, samples, names)) is not None
    }
    return Analysis(
        m,
        samples,
        workloads,
        counts,
        host_line(out),
        missing,
        headline(workloads, m, families),
        costs,
        growth_tables([wa.workload for wa in workloads], samples, names),
    )
