"""The false discovery rate over a run's secondary metrics (issue 61,
item 5): lead metrics keep the rule of one test, secondary ones are
decided together by Benjamini-Hochberg per kernel against the baseline,
and a metric whose samples on a kernel fall in two modes gets no verdict.

The runs here are built from samples in memory (and, for the report's
text and results.json, written as a run directory as test_headline.py
writes them), each kernel's 10 samples per metric drawn with a fixed
seed."""

import dataclasses
import json

import numpy as np
import pytest
from test_headline import write_run

from foliolab.analysis import fdr, stats
from foliolab.analysis.workloadstats import (
    WorkloadAnalysis,
    summarize_workload,
)
from foliolab.boot.derive import Sample
from foliolab.render import report
from foliolab.workloads import WORKLOADS
from foliolab.workloads.model import Metric

RUNS = 10


@pytest.fixture(autouse=True)
def fewer_resamples(monkeypatch):
    """A tenth of the bootstrap's resamples: the CIs here decide rows far
    from their edges, and 200 rows at 10,000 take half a minute."""
    monkeypatch.setattr(stats, "BOOTSTRAP_RESAMPLES", 1000)


def workload(n_secondary, name="pageout"):
    """A registered workload with one lead metric and ``n_secondary``
    secondary ones, m0, m1, ..."""
    base = WORKLOADS[name]
    metrics = (
        Metric("lead", "ms", "lower", "the lead metric"),
        *(
            Metric(f"m{i}", "ms", "lower", f"secondary {i}", primary=False)
            for i in range(n_secondary)
        ),
    )
    return dataclasses.replace(base, metrics=metrics)


def samples_of(w, draws, names=("vanilla", "patched")):
    """Samples of ``w``: ``draws[kernel][metric]`` is that kernel's
    RUNS values of the metric."""
    return [
        Sample(
            w.name,
            k,
            i,
            {m: float(v[i]) for m, v in draws[k].items()},
            True,
            [],
            "ok",
            "",
        )
        for k in names
        for i in range(RUNS)
    ]


def analysed(w, samples, names=("vanilla", "patched")):
    """``w``'s rows with the FDR controlled, and the families."""
    rows = summarize_workload(w, samples, list(names))
    wa = WorkloadAnalysis(w, rows, [], [], [], None, "")
    return wa, fdr.control([wa], list(names))


def null_draws(rng, n_secondary, names=("vanilla", "patched"), shift=None):
    """Every kernel's metrics from one distribution (100 +- 5), but the
    metrics in ``shift`` (name -> factor) on the last kernel."""
    shift = shift or {}
    keys = ["lead", *(f"m{i}" for i in range(n_secondary))]
    draws = {}
    for k in names:
        draws[k] = {}
        for m in keys:
            factor = shift.get(m, 1.0) if k == names[-1] else 1.0
            draws[k][m] = rng.normal(100 * factor, 5, RUNS)
    return draws


def test_known_nulls_mostly_raw_verdicts_none_with_the_fdr():
    """100 secondary metrics, both kernels from one distribution: the
    rule of one test calls about 5% of them significant, the FDR
    control none or nearly none (200 at the p-values' level:
    test_stats.py)."""
    w = workload(100)
    wa, (family,) = analysed(
        w, samples_of(w, null_draws(np.random.default_rng(1), 100))
    )
    secondary = [r for r in wa.rows if not r.primary]
    raw = sum(r.raw_significant for r in secondary)
    held = sum(r.significant for r in secondary)
    assert 3 <= raw <= 12, raw
    assert held <= 1, held
    assert (family.tested, family.raw, family.held) == (100, raw, held)
    assert all(r.q_value is not None for r in secondary)


def test_known_effects_survive_and_the_lead_keeps_its_rule():
    """10 of 100 secondary metrics 30% higher on the kernel: each holds;
    the lead metric is decided alone (no q) as before."""
    w = workload(100)
    shifted = {f"m{i}": 1.3 for i in range(90, 100)}
    draws = null_draws(np.random.default_rng(2), 100, shift=shifted)
    wa, (family,) = analysed(w, samples_of(w, draws))
    held = {r.metric for r in wa.rows if not r.primary and r.significant}
    assert set(shifted) <= held, set(shifted) - held
    assert len(held - set(shifted)) <= 1, held - set(shifted)
    (lead,) = [r for r in wa.rows if r.primary]
    assert lead.q_value is None
    assert lead.significant == lead.raw_significant
    assert family.held == len(held)


def test_a_lead_metric_shift_holds_alone():
    """A lead metric's real shift is significant whatever the family."""
    w = workload(50)
    draws = null_draws(np.random.default_rng(3), 50, shift={"lead": 1.3})
    wa, _ = analysed(w, samples_of(w, draws))
    (lead,) = [r for r in wa.rows if r.primary]
    assert lead.significant and lead.verdict == "worse"


def test_the_family_is_per_kernel():
    """A second kernel in the run does not change the first one's
    adjusted p: each kernel against the baseline is its own family."""
    w = workload(40)
    rng = np.random.default_rng(4)
    three = ("vanilla", "patched", "other")
    draws = null_draws(rng, 40, three, shift={"m0": 1.3})
    two = {k: draws[k] for k in three[:2]}
    wa2, fam2 = analysed(w, samples_of(w, two), three[:2])
    wa3, fam3 = analysed(w, samples_of(w, draws, three), three)
    q2 = {r.metric: r.q_value for r in wa2.rows if r.kernel == "patched"}
    q3 = {r.metric: r.q_value for r in wa3.rows if r.kernel == "patched"}
    assert q2 == q3
    assert [f.kernel for f in fam3] == ["patched", "other"]
    assert fam3[0] == fam2[0]


def test_two_modes_get_no_verdict_and_leave_the_family():
    """KSM's case: the kernel's merge time is 8 of 10 samples near 1 ms
    and 2 near 200 ms, the baseline's all near 1 ms. As a secondary
    metric it gets no verdict and is not tested; as a lead metric it
    keeps the verdict its pre-declared test gives."""
    w = workload(3)
    rng = np.random.default_rng(5)
    draws = null_draws(rng, 3)
    modes = [*rng.normal(1.0, 0.05, 8), 195.0, 205.0]
    draws["vanilla"]["m0"] = rng.normal(1.0, 0.05, RUNS)
    draws["patched"]["m0"] = np.array(modes)
    draws["vanilla"]["lead"] = rng.normal(1.0, 0.05, RUNS)
    draws["patched"]["lead"] = np.array(modes)
    wa, (family,) = analysed(w, samples_of(w, draws))
    row = {r.metric: r for r in wa.rows}
    m0, lead = row["m0"], row["lead"]
    assert m0.two_modes and m0.other_modes is not None
    assert (m0.other_modes.low_n, m0.other_modes.high_n) == (8, 2)
    assert m0.base_modes is None
    assert m0.q_value is None and not m0.tested
    assert not m0.significant and m0.verdict == ""
    assert (family.tested, family.two_modes) == (2, 1)
    assert lead.two_modes and lead.significant == lead.raw_significant


def test_bh_is_applied_over_the_whole_run():
    """The family spans workloads: the same p-values split over two
    workloads get the q-values they get in one."""
    rng = np.random.default_rng(6)
    one = workload(20)
    draws = null_draws(rng, 20, shift={f"m{i}": 1.2 for i in range(5)})
    wa, _ = analysed(one, samples_of(one, draws))
    q_one = {r.metric: r.q_value for r in wa.rows if not r.primary}
    first = dataclasses.replace(one, metrics=one.metrics[:11])
    second = dataclasses.replace(
        WORKLOADS["pageout-4k"],
        metrics=(one.metrics[0], *one.metrics[11:]),
    )
    wa1 = WorkloadAnalysis(
        first,
        summarize_workload(
            first, samples_of(first, draws), ["vanilla", "patched"]
        ),
        [],
        [],
        [],
        None,
        "",
    )
    wa2 = WorkloadAnalysis(
        second,
        summarize_workload(
            second, samples_of(second, draws), ["vanilla", "patched"]
        ),
        [],
        [],
        [],
        None,
        "",
    )
    (family,) = fdr.control([wa1, wa2], ["vanilla", "patched"])
    q_two = {r.metric: r.q_value for r in wa1.rows + wa2.rows if not r.primary}
    assert family.tested == 20
    assert q_two == pytest.approx(q_one)


# A run written as `compare` leaves it: dirty-tlb's lead metric and
# three counters, one (pgactivate) made to fall in two modes on the
# patched kernel below.
MODES_RUN = {
    ("dirty-tlb", "bogo_ops_per_s"): (1000.0, 1126.0),
    ("dirty-tlb", "pswpout"): (8000.0, 8010.0),
    ("dirty-tlb", "nr_tlb_remote_flush"): (20000.0, 3000.0),
    ("dirty-tlb", "pgactivate"): (4000.0, 4000.0),
}


def test_the_report_says_the_rule_and_results_json_types_it(tmp_path):
    out = write_run(tmp_path / "run", table=MODES_RUN)
    # pgactivate on patched: 8 samples near 4,000, 2 near 40,000
    rows = [
        json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()
    ]
    for r in rows:
        if r["variant"] == "patched":
            high = 36000 if r["run"] >= 8 else 0
            r["values"]["pgactivate"] = 4000.0 + high + r["run"]
    (out / "samples.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    text = report.write_report(out).text
    assert (
        "secondary metrics (Benjamini-Hochberg, FDR 5%): 2 tested, 1 hold "
        "(1 at p < 0.05 alone), 1 in two modes (no verdict)"
    ) in " ".join(text.split())
    # the patched kernel's modes, each side's median; the baseline's
    # mean (one mode); no ratio, no verdict
    assert (
        "Modes pgactivate vanilla 3,974; patched two modes: 8 of 10 near "
        "4,004, 2 near 40,008 (no verdict)"
    ) in " ".join(text.split())
    md = (out / "report.md").read_text()
    assert "| p | q |" in md
    assert (
        "- `pgactivate`: vanilla 3,974; patched two modes: 8 of 10 near "
        "4,004, 2 near 40,008"
    ) in md
    html = (out / "report.html").read_text()
    assert "<th>q</th>" in html
    assert "<li>pgactivate: vanilla 3,974; patched two modes" in html
    results = json.loads((out / "results.json").read_text())
    (family,) = results["fdr"]
    assert family == {
        "baseline": "vanilla",
        "kernel": "patched",
        "method": "benjamini-hochberg",
        "q": 0.05,
        "tested": 2,
        "raw": 1,
        "held": 1,
        "two_modes": 1,
        "min_p": pytest.approx(stats.paired_min_p(RUNS)),
    }
    by = {r["metric"]: r for r in results["summary"]}
    assert by["bogo_ops_per_s"]["family"] == "lead"
    assert by["bogo_ops_per_s"]["q_value"] is None
    assert by["pswpout"]["family"] == "secondary"
    assert 0 <= by["pswpout"]["q_value"] <= 1
    assert by["nr_tlb_remote_flush"]["verdict"] == "better"
    assert by["pgactivate"]["two_modes"] is True
    assert by["pgactivate"]["kernel_modes"]["low_n"] == 8
    assert by["pgactivate"]["baseline_modes"] is None
    assert by["pgactivate"]["verdict"] == ""
