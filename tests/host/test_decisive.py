"""One CI per row, the one that decides: where a run's rounds pair every
sample (and are enough for a signed-rank test to reach 0.05), the paired
CI decides and is the one report.txt and the mail show; elsewhere the
bootstrap CI of the ratio of means. Decided once, in analysis
(StatRow.decisive); results.json keeps both."""

import numpy as np
import pytest

from foliolab.analysis import stats
from foliolab.analysis.workloadstats import StatRow, summarize_workload
from foliolab.boot.derive import Sample
from foliolab.render import ci_cell
from foliolab.render.mail import ratio_cell
from foliolab.render.text import metric_lines
from foliolab.workloads import WORKLOADS

PAGEOUT = WORKLOADS["pageout"]  # pageout_ms: lower is better


def row(base: list[float], other: list[float]) -> StatRow:
    """pageout_ms of two kernels, sample i of each in round i."""
    samples = [
        Sample("pageout", k, i, {"pageout_ms": v}, True, [], "ok", "")
        for k, values in (("vanilla", base), ("patched", other))
        for i, v in enumerate(values)
    ]
    (r,) = [
        r
        for r in summarize_workload(PAGEOUT, samples)
        if r.metric == "pageout_ms"
    ]
    return r


def test_the_paired_ci_decides_where_the_plain_one_crosses_1():
    """The host's speed varies from round to round by a factor of 2; in
    every round the patched kernel is 5% faster: the ratio of means
    cannot tell, the paired ratio can."""
    base = [100.0, 150, 80, 200, 120, 90, 170, 110]
    noise = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01]
    r = row(base, [b * 0.95 * e for b, e in zip(base, noise)])
    assert r.decisive == "paired"
    assert r.ci_low < 1 < r.ci_high and not r.comparison.significant
    low, high = r.decisive_ci
    assert high < 1 and r.significant and r.verdict == "better"
    assert r.decisive_p < stats.ALPHA
    # shown: the paired CI alone, said to be paired
    (ratio_line,) = [x for x in metric_lines([r]) if x.startswith("Ratio")]
    assert f"paired CI [{low:.3f}, {high:.3f}]" in ratio_line
    assert f"{r.ci_low:.3f}" not in ratio_line
    assert "SIGNIFICANT, better" in ratio_line
    assert ci_cell(r) == f"p[{low:.3f}, {high:.3f}]"
    assert ratio_cell(r).startswith("0.95") and " p[0." in ratio_cell(r)
    # the plain CI stays in results.json, beside the paired one
    j = r.as_json()
    assert (j["ci_low"], j["ci_high"]) == (r.ci_low, r.ci_high)
    assert (j["paired_ci_low"], j["paired_ci_high"]) == (low, high)
    assert j["decisive"] == "paired" and j["significant"]


def test_the_paired_ci_decides_where_the_plain_one_excludes_1():
    """The converse: the two kernels' sets differ by 4% (the plain CI
    excludes 1, Mann-Whitney p < 0.05), but paired round by round the
    ratios run from 0.9 to 1.1: not significant."""
    base = list(np.linspace(95, 105, 10))
    other = [b * 1.04 for b in base][::-1]
    r = row(base, other)
    assert r.decisive == "paired"
    assert r.comparison.significant  # what the plain CI would say
    low, high = r.decisive_ci
    assert low < 1 < high
    assert not r.significant and r.verdict == ""
    (ratio_line,) = [x for x in metric_lines([r]) if x.startswith("Ratio")]
    assert f"paired CI [{low:.3f}, {high:.3f}]" in ratio_line
    assert "SIGNIFICANT" not in ratio_line


def test_too_few_rounds_for_a_paired_test_leave_it_to_the_plain_ci():
    """5 rounds: a signed-rank p cannot go below 2/2^5 = 0.0625, so the
    ratio of means decides (and is shown, unmarked)."""
    assert stats.PAIRED_MIN_ROUNDS == 6
    base = [100.0, 101, 99, 100.5, 99.5]
    r = row(base, [b * 0.8 for b in base])
    assert r.decisive == "plain" and r.significant
    assert r.decisive_ci == (r.ci_low, r.ci_high)
    assert ci_cell(r) == f"[{r.ci_low:.3f}, {r.ci_high:.3f}]"


def test_a_lost_round_still_pairs_but_a_zero_does_not():
    """A kernel that lost rounds pairs over the rounds both have; a pair
    with a zero has no ratio, so the pairs no longer cover the samples
    and the ratio of means decides."""
    base = [100.0 + i for i in range(8)]
    r = row(base, [b * 0.9 for b in base[:6]])
    assert r.paired.n == 6 and r.decisive == "paired"
    z = row(base, [0.0] + [b * 0.9 for b in base[1:]])
    assert z.paired.n == 7 and z.decisive == "plain"


def test_the_plots_draw_the_ci_that_decides():
    """A row decided by its paired CI is coloured by that verdict, so its
    whiskers are the paired CI's, around the paired ratio, not the plain
    CI that crosses 1."""
    from foliolab.render import plotparts

    base = [100.0, 150, 80, 200, 120, 90, 170, 110]
    noise = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01]
    r = row(base, [b * 0.95 * e for b, e in zip(base, noise)])
    assert r.decisive == "paired" and plotparts.colour(r) == "tab:green"
    low, high = r.decisive_ci
    (below,), (above,) = plotparts.whiskers(r, 0.0)
    assert below == pytest.approx(r.paired.ratio - low)
    assert above == pytest.approx(high - r.paired.ratio)
    assert r.paired.ratio + above < 1 < r.ci_high
