"""Reports from saved results: terminal table, report.md, results.json, PNGs.

Everything here reads OUT/environment.json and OUT/samples.jsonl, so
`foliolab report OUT` can redo it without rebuilding or rebooting anything.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from pathlib import Path

from foliolab import stats
from foliolab.run import Sample, load_samples
from foliolab.workloads import WORKLOADS, Metric, Workload

log = logging.getLogger("foliolab")

LEGEND = ("%diff: positive = patched better (the metric's better direction "
          "is given per row);\n*x%* = significant: the 95% bootstrap CI of "
          "patched/vanilla excludes 1 and Mann-Whitney p < 0.05")


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    if abs(x) >= 1e6:
        return f"{x:.4g}"
    return f"{x:.2f}"


def summarize_workload(w: Workload, samples: list[Sample]) -> list[dict]:
    """SPEC §7 summary rows for one workload (valid samples only)."""
    by = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.workload == w.name and s.valid:
            for k, v in s.values.items():
                by[k][s.variant].append(v)
    rows = []
    for m in w.metrics:
        a, b = by[m.key]["vanilla"], by[m.key]["patched"]
        if not a and not b:
            continue
        sa, sb = stats.summarize(a, m.is_rate), stats.summarize(b, m.is_rate)
        c = stats.compare(a, b, m.is_rate)
        rows.append({
            "workload": w.name, "metric": m.key, "unit": m.unit,
            "better": m.better, "label": m.label, "primary": m.primary,
            "n_vanilla": sa.n, "n_patched": sb.n,
            "vanilla_mean": sa.mean, "patched_mean": sb.mean,
            "ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "p_value": c.p_value, "significant": c.significant,
            "pct_diff": stats.pct_diff(sa.mean, sb.mean, m.better),
            "mean_kind": "hmean" if m.is_rate else "amean",
            "vanilla": sa.as_dict(), "patched": sb.as_dict(),
        })
    return rows


def _metric_table(row: dict) -> list[str]:
    """mmtests-style rows for one metric: vanilla first, %diff after."""
    key, better = row["metric"], row["better"]
    va, pa = row["vanilla"], row["patched"]
    mean_name = "Hmean" if row["mean_kind"] == "hmean" else "Amean"
    lines = []
    for label, field, direction in (
            ("Min", "min", better), (mean_name, "mean", better),
            ("Median", "median", better), ("Stddev", "stddev", "lower"),
            ("CoeffVar", "coeffvar", "lower"), ("Max", "max", better)):
        v, p = va[field], pa[field]
        d = stats.pct_diff(v, p, direction)
        sig = row["significant"] and field == "mean"
        diff = f"*{d:7.2f}%*" if sig else f"({d:7.2f}%)"
        lines.append(f"{label:<9} {key:<28} {_fmt(v):>12} ({0:7.2f}%) "
                     f"{_fmt(p):>12} {diff}")
    lines.append(
        f"{'Ratio':<9} {key:<28} {row['ratio']:.3f} "
        f"CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
        f"p={row['p_value']:.3g} n={row['n_vanilla']}/{row['n_patched']} "
        f"{better} is better{'  SIGNIFICANT' if row['significant'] else ''}")
    return lines


def _counter_row(row: dict) -> str:
    """One line per secondary metric: means, %diff, ratio CI."""
    d = row["pct_diff"]
    diff = f"*{d:7.2f}%*" if row["significant"] else f"({d:7.2f}%)"
    return (f"{'Mean':<9} {row['metric']:<28} {_fmt(row['vanilla_mean']):>12}"
            f" {'':10} {_fmt(row['patched_mean']):>12} {diff}  "
            f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]")


def invalid_lines(w: Workload, samples: list[Sample]) -> list[str]:
    out = []
    for variant in ("vanilla", "patched"):
        mine = [s for s in samples
                if s.workload == w.name and s.variant == variant]
        bad = [s for s in mine if not s.valid]
        if bad:
            out.append(f"{variant}: {len(bad)} of {len(mine)} samples "
                       "INVALID (excluded):")
            for s in bad:
                out.append(f"  run {s.run}: {'; '.join(s.reasons)}")
    return out


def text_report(env: dict, summary: list[dict], samples: list[Sample]
                ) -> str:
    lines = [f"foliolab comparison: {env.get('patches_label', '?')} vs "
             f"vanilla {env.get('base_version', '')}",
             f"guest: {env.get('arch')} {env.get('accel')} "
             f"-cpu {env.get('cpu', '?')} {env.get('vcpus')} vCPUs; "
             f"config {env.get('config')} "
             f"sha {env.get('config_sha', {}).get('vanilla', '?')}",
             LEGEND, ""]
    for error in env.get("errors", []):
        lines.append(f"ERROR: {error}")
    for name in env.get("workloads", []):
        w = WORKLOADS.get(name)
        if not w:
            continue
        rows = [r for r in summary if r["workload"] == name]
        lines.append(f"== {name}: {w.title}")
        header = f"{'':<38} {'vanilla':>12} {'':10} {'patched':>12}"
        lines.append(header)
        for r in (r for r in rows if r["primary"]):
            lines += _metric_table(r)
            lines.append("")
        secondary = [r for r in rows if not r["primary"]]
        if secondary:
            lines.append("Counters and secondary metrics (mean per sample):")
            lines += [_counter_row(r) for r in secondary]
            lines.append("")
        if not rows:
            lines.append("(no valid samples)")
        lines += invalid_lines(w, samples)
        if w.not_measurable:
            lines.append(f"Not measurable here: {w.not_measurable}")
        lines.append("")
    for f in env.get("failures", []):
        lines.append(f"FAILED BOOT: {f}")
    return "\n".join(lines).rstrip() + "\n"


def markdown_report(env: dict, summary: list[dict],
                    samples: list[Sample]) -> str:
    md = ["# foliolab comparison", "",
          f"- series: {env.get('patches_label')}",
          f"- base: {env.get('base_package')} {env.get('base_version')}",
          f"- kernels: vanilla {env.get('commits', {}).get('vanilla', '?')[:12]}"
          f", patched {env.get('commits', {}).get('patched', '?')[:12]}",
          f"- guest: {env.get('arch')}, {env.get('accel')}, "
          f"-cpu {env.get('cpu', '?')}, {env.get('vcpus')} vCPUs, "
          f"config `{env.get('config')}` "
          f"(sha {env.get('config_sha', {}).get('vanilla', '?')})",
          f"- emulator: {env.get('qemu', '?')}",
          f"- runs: {env.get('runs')} per variant, "
          f"{env.get('samples_per_boot')} sample(s) per boot, ABBA order",
          "", LEGEND.replace("\n", " "), ""]
    for error in env.get("errors", []):
        md.append(f"**ERROR:** {error}\n")
    for name in env.get("workloads", []):
        w = WORKLOADS.get(name)
        if not w:
            continue
        md += [f"## {name}", "", w.title, "",
               "| metric | better | vanilla | patched | ratio | 95% CI | p | "
               "CoeffVar v/p | n v/p |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in [r for r in summary if r["workload"] == name]:
            sig = "**" if r["significant"] else ""
            md.append(
                f"| {r['label']} (`{r['metric']}`, {r['unit']}) "
                f"| {r['better']} "
                f"| {_fmt(r['vanilla_mean'])} | {_fmt(r['patched_mean'])} "
                f"| {sig}{r['ratio']:.3f}{sig} "
                f"| [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                f"| {r['p_value']:.3g} "
                f"| {_fmt(r['vanilla']['coeffvar'])}% / "
                f"{_fmt(r['patched']['coeffvar'])}% "
                f"| {r['n_vanilla']}/{r['n_patched']} |")
        bad = invalid_lines(w, samples)
        if bad:
            md += ["", "Invalid samples:", "", "```", *bad, "```"]
        if w.not_measurable:
            md += ["", f"Not measurable here: {w.not_measurable}"]
        md += ["", f"![{name}](plots/{name}.png)", ""]
    for f in env.get("failures", []):
        md.append(f"- FAILED BOOT: {f}")
    return "\n".join(md) + "\n"


def plot_workload(w: Workload, samples: list[Sample], path: Path) -> bool:
    """One panel per metric: every valid sample, per variant, with the mean."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics: list[Metric] = [m for m in w.metrics if any(
        m.key in s.values for s in samples if s.workload == w.name)]
    if not metrics:
        return False
    fig, axes = plt.subplots(1, len(metrics), figsize=(3 * len(metrics), 3.2),
                             squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for i, variant in enumerate(("vanilla", "patched")):
            vals = [s.values[m.key] for s in samples
                    if s.workload == w.name and s.variant == variant
                    and s.valid and m.key in s.values]
            bad = [s.values[m.key] for s in samples
                   if s.workload == w.name and s.variant == variant
                   and not s.valid and m.key in s.values]
            xs = [i + 0.08 * ((j % 5) - 2) for j in range(len(vals))]
            ax.scatter(xs, vals, s=14, alpha=0.7)
            if bad:
                ax.scatter([i] * len(bad), bad, marker="x", c="red", s=14)
            if vals:
                ax.hlines(stats.mean(vals, m.is_rate), i - 0.3, i + 0.3,
                          colors="black")
        ax.set_xticks([0, 1], ["vanilla", "patched"])
        ax.set_title(f"{m.key}\n({m.unit}, {m.better} is better)",
                     fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(w.title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_report(out: Path) -> str:
    """(Re)write results.json, report.md and plots/; return the text table."""
    env = json.loads((out / "environment.json").read_text())
    samples = load_samples(out)
    summary = []
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            summary += summarize_workload(WORKLOADS[name], samples)
    rows = [r for s in samples for r in s.rows()]
    invalid = [{"workload": s.workload, "variant": s.variant, "run": s.run,
                "reasons": s.reasons, "rundir": s.rundir}
               for s in samples if not s.valid]
    results = {"environment": env, "samples": rows, "summary": summary,
               "invalid": invalid}
    (out / "results.json").write_text(json.dumps(results, indent=1,
                                                 default=str) + "\n")
    (out / "report.md").write_text(markdown_report(env, summary, samples))
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            try:
                plot_workload(WORKLOADS[name], samples,
                              out / "plots" / f"{name}.png")
            except Exception as e:   # a plot must never cost the results
                log.warning("plot for %s failed: %s", name, e)
    text = text_report(env, summary, samples)
    (out / "report.txt").write_text(text)
    return text
