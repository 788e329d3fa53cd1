"""Reports from saved results: terminal table, report.md, results.json, PNGs.

Everything here reads OUT/environment.json and OUT/samples.jsonl, so
`foliolab report OUT` can redo it without rebuilding or rebooting anything.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from foliolab import counting, stats
from foliolab.run import VARIANTS, Sample, load_samples
from foliolab.workloads import WORKLOADS, Metric, Workload

log = logging.getLogger("foliolab")

LEGEND = ("%diff: positive = patched better (the metric's better direction "
          "is given per row);\n*x%* = significant: the 95% bootstrap CI of "
          "patched/vanilla excludes 1 and Mann-Whitney p < 0.05")


# How many functions a differential profile shows per workload.
PROFILE_TOP = 10


@dataclass
class CountAnalysis:
    """What the counting samples of one workload say across samples: which
    functions are nondeterministic and where the kernels differ."""

    workload: str
    windows: dict[str, list[counting.Window]]   # variant -> valid windows
    flagged: set[str]            # functions whose count varies in repeats
    known: bool                  # every variant had two windows or more
    profile: list[counting.ProfileRow]
    notes: list[str]

    def summary_line(self) -> str:
        n = "/".join(str(len(self.windows.get(v, []))) for v in VARIANTS)
        if not self.known:
            return (f"determinism unknown: counting samples v/p {n} (a "
                    "function is flagged only when repeats of one kernel "
                    "differ)")
        shares = []
        for ws in self.windows.values():
            for w in ws:
                if w.kernel_insns:
                    out = w.kernel_insns - counting.deterministic_insns(
                        w.insns(), w.kernel_insns, self.flagged)
                    shares.append(100.0 * out / w.kernel_insns)
        worst = max(shares, default=0.0)
        return (f"nondeterministic: {len(self.flagged)} functions flagged "
                f"over counting samples v/p {n}, up to {worst:.2f}% of a "
                "window; left out of kernel_insns_deterministic")

    def as_dict(self) -> dict:
        return {"flagged": sorted(self.flagged), "known": self.known,
                "notes": self.notes,
                "profile": [{"function": r.function, "insns": r.insns,
                             "calls": r.calls,
                             "delta": r.delta("vanilla", "patched"),
                             "nondeterministic": r.nondeterministic}
                            for r in self.profile]}


def _counting_windows(out: Path, samples: list[Sample], notes: list[str]
                      ) -> list[tuple[Sample, counting.Window]]:
    """Each valid counting sample with its window, read from the run
    directory's raw plugin output (each file parsed once)."""
    cache: dict[str, list[counting.Window]] = {}
    pairs = []
    for s in samples:
        w = WORKLOADS.get(s.workload)
        if not s.counts or not s.valid or w is None:
            continue
        if s.counts not in cache:
            path = out / s.counts
            if not path.exists():
                notes.append(f"{path} is missing: its sample has no profile")
                cache[s.counts] = []
            else:
                cache[s.counts] = counting.parse_counts(
                    path.read_text()).windows
        mine = [x for x in cache[s.counts] if x.tag == w.window]
        if 0 <= s.count_window < len(mine):
            pairs.append((s, mine[s.count_window]))
    return pairs


def analyse_counts(out: Path, samples: list[Sample]
                   ) -> dict[str, CountAnalysis]:
    """Flag nondeterministic functions per workload (over both kernels'
    repeats), add ``kernel_insns_deterministic`` and
    ``nondeterministic_pct`` to each counting sample when that is known,
    and build the differential profile."""
    notes: list[str] = []
    pairs = _counting_windows(out, samples, notes)
    by: dict[str, dict[str, list[tuple[Sample, counting.Window]]]] = \
        defaultdict(lambda: defaultdict(list))
    for s, win in pairs:
        by[s.workload][s.variant].append((s, win))
    result = {}
    for name, variants in by.items():
        windows = {v: [win for _, win in variants.get(v, [])]
                   for v in VARIANTS}
        known = all(len(ws) >= 2 for ws in windows.values())
        flagged = counting.nondeterministic_functions(
            {v: [win.insns() for win in ws] for v, ws in windows.items()})
        if known:
            for s, win in (p for v in variants.values() for p in v):
                det = counting.deterministic_insns(win.insns(),
                                                   win.kernel_insns, flagged)
                s.values["kernel_insns_deterministic"] = det
                if win.kernel_insns:
                    s.values["nondeterministic_pct"] = \
                        100.0 * (1 - det / win.kernel_insns)
        profile = counting.differential_profile(
            windows, "vanilla", "patched", flagged, PROFILE_TOP)
        result[name] = CountAnalysis(name, windows, flagged, known, profile,
                                     list(notes))
    return result


def boot_cost_line(name: str, samples: list[Sample]) -> str:
    """What counting cost: mean wall and QEMU CPU time of the timed and of
    the counting boots of one workload (one line, empty if not counted)."""
    def cost(counted: bool) -> str:
        boots = {s.rundir: s for s in samples if s.workload == name
                 and bool(s.counts) == counted}.values()
        wall = [s.wall_s for s in boots if s.wall_s is not None]
        cpu = [s.cpu_s for s in boots if s.cpu_s is not None]
        text = f"{sum(wall) / len(wall):.1f} s wall" if wall else "? wall"
        if cpu:
            text += f", {sum(cpu) / len(cpu):.1f} s CPU"
        return text + f" over {len(boots)} boots"
    if not any(s.counts for s in samples if s.workload == name):
        return ""
    return (f"boot cost: timed {cost(False)}; counting {cost(True)} "
            "(means per boot; a timed boot also runs the profiled passes)")


def profile_lines(a: CountAnalysis) -> list[str]:
    """The differential profile as a text table."""
    lines = [a.summary_line()]
    if not a.profile:
        return lines
    lines.append(f"Differential profile: top {len(a.profile)} kernel "
                 "functions by change in self instructions per window "
                 "(mean; ~ = varies between repeats)")
    lines.append(f"{'function':<36} {'vanilla':>12} {'patched':>12} "
                 f"{'delta':>12} {'calls v/p':>17}")
    for r in a.profile:
        name = ("~" if r.nondeterministic else " ") + r.function
        calls = f"{r.calls['vanilla']:.0f}/{r.calls['patched']:.0f}"
        lines.append(f"{name[:36]:<36} {_fmt_count(r.insns['vanilla']):>12} "
                     f"{_fmt_count(r.insns['patched']):>12} "
                     f"{_fmt_count(r.delta('vanilla', 'patched')):>12} "
                     f"{calls:>17}")
    return lines


def _fmt_count(x: float) -> str:
    """An exact count, or a mean of exact counts, in full."""
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"


def _fmt_small(x: float) -> str:
    """Like _fmt, with four significant digits below 1."""
    if x is None or math.isnan(x) or abs(x) >= 1 or x == 0:
        return _fmt(x)
    return f"{x:.3g}" if abs(x) >= 1e-4 else f"{x:.1e}"


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
        # exact counts repeat to a few parts per million: show them
        fmt = _fmt_small if field == "coeffvar" else _fmt
        lines.append(f"{label:<9} {key:<28} {fmt(v):>12} ({0:7.2f}%) "
                     f"{fmt(p):>12} {diff}")
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


def text_report(env: dict, summary: list[dict], samples: list[Sample],
                counts: dict[str, CountAnalysis] | None = None) -> str:
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
        if counts and name in counts:
            lines += profile_lines(counts[name])
            lines.append(boot_cost_line(name, samples))
            lines.append("")
        lines += invalid_lines(w, samples)
        if w.not_measurable:
            lines.append(f"Not measurable here: {w.not_measurable}")
        lines.append("")
    for f in env.get("failures", []):
        lines.append(f"FAILED BOOT: {f}")
    return "\n".join(lines).rstrip() + "\n"


def markdown_report(env: dict, summary: list[dict], samples: list[Sample],
                    counts: dict[str, CountAnalysis] | None = None) -> str:
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
                f"| {_fmt_small(r['vanilla']['coeffvar'])}% / "
                f"{_fmt_small(r['patched']['coeffvar'])}% "
                f"| {r['n_vanilla']}/{r['n_patched']} |")
        if counts and name in counts:
            md += ["", *_profile_markdown(name, counts[name]), "",
                   boot_cost_line(name, samples)]
        bad = invalid_lines(w, samples)
        if bad:
            md += ["", "Invalid samples:", "", "```", *bad, "```"]
        if w.not_measurable:
            md += ["", f"Not measurable here: {w.not_measurable}"]
        md += ["", f"![{name}](plots/{name}.png)", ""]
    for f in env.get("failures", []):
        md.append(f"- FAILED BOOT: {f}")
    return "\n".join(md) + "\n"


def _profile_markdown(name: str, a: CountAnalysis) -> list[str]:
    md = [a.summary_line(), ""]
    if not a.profile:
        return md
    md += [f"Differential profile: the {len(a.profile)} kernel functions "
           "whose self instructions per window changed most (exact counts, "
           "mean over counting samples; ~ = varies between repeats of one "
           "kernel):", "",
           "| function | vanilla | patched | delta | calls v/p |",
           "|---|---|---|---|---|"]
    for r in a.profile:
        flag = "~" if r.nondeterministic else ""
        md.append(f"| {flag}`{r.function}` "
                  f"| {_fmt_count(r.insns['vanilla'])} "
                  f"| {_fmt_count(r.insns['patched'])} "
                  f"| {_fmt_count(r.delta('vanilla', 'patched'))} "
                  f"| {r.calls['vanilla']:.0f}/{r.calls['patched']:.0f} |")
    md += ["", f"![{name} profile](plots/{name}-profile.png)"]
    return md


def plot_profile(w: Workload, a: CountAnalysis, path: Path) -> bool:
    """Horizontal bars: patched minus vanilla self instructions per window
    for the profile's functions (negative = the series saves work)."""
    if not a.profile:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = a.profile[::-1]
    deltas = [r.delta("vanilla", "patched") for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh(range(len(rows)), deltas,
            color=["tab:green" if d < 0 else "tab:red" for d in deltas])
    ax.set_yticks(range(len(rows)),
                  [("~" if r.nondeterministic else "") + r.function
                   for r in rows], fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("patched - vanilla, kernel instructions per window "
                  "(self, exact)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{w.name}: where the kernels' work differs", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


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
    counts = analyse_counts(out, samples)
    summary = []
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            summary += summarize_workload(WORKLOADS[name], samples)
    rows = [r for s in samples for r in s.rows()]
    invalid = [{"workload": s.workload, "variant": s.variant, "run": s.run,
                "reasons": s.reasons, "rundir": s.rundir}
               for s in samples if not s.valid]
    results = {"environment": env, "samples": rows, "summary": summary,
               "invalid": invalid,
               "counting": {k: a.as_dict() for k, a in counts.items()}}
    (out / "results.json").write_text(json.dumps(results, indent=1,
                                                 default=str) + "\n")
    (out / "report.md").write_text(markdown_report(env, summary, samples,
                                                   counts))
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            try:
                plot_workload(WORKLOADS[name], samples,
                              out / "plots" / f"{name}.png")
                if name in counts:
                    plot_profile(WORKLOADS[name], counts[name],
                                 out / "plots" / f"{name}-profile.png")
            except Exception as e:   # a plot must never cost the results
                log.warning("plot for %s failed: %s", name, e)
    text = text_report(env, summary, samples, counts)
    (out / "report.txt").write_text(text)
    return text
