"""Reports from saved results: terminal table, report.md, results.json, PNGs.

Everything here reads the run directory only: OUT/environment.json (the
run's manifest) and the raw boots under OUT/raw/ (through ``derive``;
OUT/samples.jsonl for runs from before job.json), so `foliolab report OUT`
redoes every sample, table and plot without rebuilding or rebooting
anything. The analysis is analyse.py's, the drawing render/'s.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from foliolab.analyse import Analysis, analyse, run_samples
from foliolab.derive import Sample
from foliolab.manifest import RunManifest
from foliolab.render import plots
from foliolab.render.markdown import markdown_report
from foliolab.render.text import text_report

log = logging.getLogger("foliolab")


def results_json(a: Analysis) -> dict:
    """results.json: SPEC §7's environment, samples and summary, and what
    was added since (invalid samples, counting, attribution)."""
    env = a.m.to_json()
    env["host_line"] = a.host_line
    env["missing_boots"] = a.missing
    results = {
        "environment": env,
        "samples": [r for s in a.samples for r in s.rows()],
        "summary": [r.as_json() for wa in a.workloads for r in wa.rows],
        "invalid": [{"workload": s.workload, "variant": s.variant,
                     "run": s.run, "reasons": s.reasons, "rundir": s.rundir}
                    for s in a.samples if not s.valid],
        "counting": {k: c.as_dict() for k, c in a.counts.items()}}
    if a.m.attribution:
        results["attribution"] = [r.as_json() for wa in a.workloads
                                  for r in wa.steps]
    return results


def _plots(a: Analysis, out: Path) -> None:
    for wa in a.workloads:
        name = wa.workload.name
        try:
            plots.plot_workload(wa.workload, a.samples,
                                out / "plots" / f"{name}.png", a.names)
            if wa.counts:
                plots.plot_profile(wa.workload, wa.counts,
                                   out / "plots" / f"{name}-profile.png")
        except Exception as e:   # a plot must never cost the results
            log.warning("plot for %s failed: %s", name, e)


def write_report(out: Path, samples: list[Sample] | None = None) -> str:
    """(Re)write results.json, report.md and plots/; return the text table.
    ``samples``: the run's, as it derived them (else derived again)."""
    m = RunManifest.read(out)
    if samples is None:
        samples = run_samples(out)
    a = analyse(out, m, samples)
    (out / "results.json").write_text(json.dumps(results_json(a), indent=1,
                                                 default=str) + "\n")
    (out / "report.md").write_text(markdown_report(a))
    _plots(a, out)
    text = text_report(a)
    (out / "report.txt").write_text(text)
    return text
