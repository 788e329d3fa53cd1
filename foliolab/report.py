"""Reports from saved results: terminal table, report.md, results.json, PNGs.

Everything here reads the run directory only: OUT/environment.json and the
raw boots under OUT/raw/ (through ``derive``; OUT/samples.jsonl for runs
from before job.json), so `foliolab report OUT` redoes every sample, table
and plot without rebuilding or rebooting anything.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from foliolab import bootrecord, counting, derive, stats
from foliolab.derive import VARIANTS, Sample, load_samples
from foliolab.workloads import WORKLOADS, Metric, Workload

log = logging.getLogger("foliolab")

LEGEND = ("%diff: positive = patched better (the metric's better direction "
          "is given per row);\n*x%* = significant: the 95% bootstrap CI of "
          "patched/vanilla excludes 1 and Mann-Whitney p < 0.05")


def legend(names: list[str]) -> str:
    """The table legend, in the kernels' own names."""
    if list(names) == list(VARIANTS):
        return LEGEND
    return (f"%diff: positive = better than the baseline {names[0]} (the "
            "metric's better direction is given per row);\n*x%* = "
            f"significant: the 95% bootstrap CI of kernel/{names[0]} "
            "excludes 1 and Mann-Whitney p < 0.05")


def kernel_names(env: dict) -> list[str]:
    """The run's kernels in order, baseline first (runs from before
    --kernel have vanilla and patched)."""
    return list(env.get("kernels") or VARIANTS)


# How many functions a differential profile shows per workload.
PROFILE_TOP = 10


@dataclass
class CountAnalysis:
    """What the counting samples of one workload say across samples: which
    functions are nondeterministic and where the kernels differ."""

    workload: str
    windows: dict[str, list[counting.Window]]   # kernel -> valid windows
    flagged: set[str]            # functions whose count varies in repeats
    known: bool                  # every kernel had two windows or more
    # kernel -> its profile against the baseline (the first kernel)
    profiles: dict[str, list[counting.ProfileRow]]
    notes: list[str]

    @property
    def names(self) -> list[str]:
        return list(self.windows)

    @property
    def profile(self) -> list[counting.ProfileRow]:
        """The last kernel's profile (patched's, in a --patches run)."""
        return self.profiles.get(self.names[-1], []) if self.names else []

    def summary_line(self) -> str:
        n = "/".join(str(len(ws)) for ws in self.windows.values())
        who = ("v/p" if self.names == list(VARIANTS)
               else "/".join(self.names))
        if not self.known:
            return (f"determinism unknown: counting samples {who} {n} (a "
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
                f"over counting samples {who} {n}, up to {worst:.2f}% of a "
                "window; left out of kernel_insns_deterministic")

    def as_dict(self) -> dict:
        base = self.names[0] if self.names else ""

        def rows(name: str) -> list[dict]:
            return [{"function": r.function, "insns": r.insns,
                     "calls": r.calls, "delta": r.delta(base, name),
                     "nondeterministic": r.nondeterministic}
                    for r in self.profiles.get(name, [])]
        return {"flagged": sorted(self.flagged), "known": self.known,
                "notes": self.notes,
                "profile": rows(self.names[-1]) if self.names else [],
                "profiles": {k: rows(k) for k in self.names[1:]}}


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
            cache[s.counts] = counting.read_windows(path, w.window)
        mine = cache[s.counts]
        if 0 <= s.count_window < len(mine):
            pairs.append((s, mine[s.count_window]))
    return pairs


def analyse_counts(out: Path, samples: list[Sample],
                   names: list[str] | None = None
                   ) -> dict[str, CountAnalysis]:
    """Flag nondeterministic functions per workload (over every kernel's
    repeats), add ``kernel_insns_deterministic`` and
    ``nondeterministic_pct`` to each counting sample when that is known,
    and build the differential profile."""
    notes: list[str] = []
    pairs = _counting_windows(out, samples, notes)
    by: dict[str, dict[str, list[tuple[Sample, counting.Window]]]] = \
        defaultdict(lambda: defaultdict(list))
    for s, win in pairs:
        by[s.workload][s.variant].append((s, win))
    names = list(names or VARIANTS)
    result = {}
    for name, variants in by.items():
        windows = {v: [win for _, win in variants.get(v, [])]
                   for v in names}
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
        profiles = {k: counting.differential_profile(
            windows, names[0], k, flagged, PROFILE_TOP) for k in names[1:]}
        result[name] = CountAnalysis(name, windows, flagged, known, profiles,
                                     list(notes))
    return result


def host_line(out: Path) -> str:
    """The host while the run's boots ran: load average at their start and
    the CPU time stolen from it during them (from each boot.json)."""
    loads, steal, governors = [], [], set()
    for d in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(d)
        if res is None:
            continue
        if "loadavg_1m" in res.host:
            loads.append(res.host["loadavg_1m"])
        if "steal_pct" in res.host:
            steal.append(res.host["steal_pct"])
        if "governor" in res.host:
            governors.add(res.host["governor"])
    if not loads:
        return ""
    text = (f"host: load average {min(loads):.2f}-{max(loads):.2f} at the "
            f"start of {len(loads)} boots")
    if steal:
        text += f", steal up to {max(steal):.1f}% of CPU time during one"
    if governors:
        text += f"; CPU frequency governor {', '.join(sorted(governors))}"
    return text


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
    """The differential profiles (each kernel against the baseline) as
    text tables."""
    lines = [a.summary_line()]
    base = a.names[0] if a.names else ""
    for other in a.names[1:]:
        rows = a.profiles.get(other, [])
        if not rows:
            continue
        against = "" if len(a.names) == 2 else f", {other} against {base}"
        lines.append(f"Differential profile: top {len(rows)} kernel "
                     "functions by change in self instructions per window "
                     f"(mean; ~ = varies between repeats{against})")
        calls_head = ("calls v/p" if [base, other] == list(VARIANTS)
                      else "calls")
        lines.append(f"{'function':<36} {base[:12]:>12} {other[:12]:>12} "
                     f"{'delta':>12} {calls_head:>17}")
        for r in rows:
            name = ("~" if r.nondeterministic else " ") + r.function
            calls = f"{r.calls[base]:.0f}/{r.calls[other]:.0f}"
            lines.append(f"{name[:36]:<36} {_fmt_count(r.insns[base]):>12} "
                         f"{_fmt_count(r.insns[other]):>12} "
                         f"{_fmt_count(r.delta(base, other)):>12} "
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


def _valid_values(w: Workload, samples: list[Sample]):
    """The valid samples' values of workload ``w``, by metric and kernel,
    each kernel's also by run number (rounds pair up by run)."""
    by = defaultdict(lambda: defaultdict(list))
    by_run = defaultdict(lambda: defaultdict(dict))
    for s in samples:
        if s.workload == w.name and s.valid:
            for k, v in s.values.items():
                by[k][s.variant].append(v)
                by_run[k][s.variant][s.run] = v
    return by, by_run


def summarize_workload(w: Workload, samples: list[Sample],
                       names: list[str] | None = None) -> list[dict]:
    """SPEC §7 summary rows for one workload (valid samples only): one row
    per metric and kernel after the baseline, that kernel against the
    baseline. The ``vanilla_*``/``patched_*`` keys keep SPEC §7's names:
    they are the baseline's and the row's kernel's."""
    names = list(names or VARIANTS)
    base = names[0]
    by, by_run = _valid_values(w, samples)
    rows = []
    for m in w.metrics:
        if not any(by[m.key][k] for k in names):
            continue
        a = by[m.key][base]
        sa = stats.summarize(a, m.is_rate)
        for other in names[1:]:
            b = by[m.key][other]
            sb = stats.summarize(b, m.is_rate)
            c = stats.compare(a, b, m.is_rate)
            runs_a, runs_b = by_run[m.key][base], by_run[m.key][other]
            paired = stats.paired_ratio([(runs_a[r], runs_b[r])
                                         for r in sorted(runs_a)
                                         if r in runs_b])
            rows.append({
                "workload": w.name, "metric": m.key, "unit": m.unit,
                "better": m.better, "label": m.label, "primary": m.primary,
                "baseline": base, "kernel": other,
                "n_vanilla": sa.n, "n_patched": sb.n,
                "vanilla_mean": sa.mean, "patched_mean": sb.mean,
                "ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high,
                "p_value": c.p_value, "significant": c.significant,
                "pct_diff": stats.pct_diff(sa.mean, sb.mean, m.better),
                "mean_kind": "hmean" if m.is_rate else "amean",
                "vanilla": sa.as_dict(), "patched": sb.as_dict(),
                # the rounds as pairs: geometric mean of per-round ratios
                "paired_n": paired.n, "paired_ratio": paired.ratio,
                "paired_ci_low": paired.ci_low,
                "paired_ci_high": paired.ci_high,
                # the smallest p these sample sizes allow at all
                "min_p": stats.min_p_value(sa.n, sb.n),
            })
    return rows


def caveat_lines(w: Workload, samples: list[Sample], rows: list[dict],
                 names: list[str]) -> list[str]:
    """What limits this workload's table: too few runs for any row to be
    significant, and a drift of the host over the run (a trend in the
    baseline's primary metric over its rounds)."""
    out = []
    small = [r for r in rows if r["min_p"] >= stats.ALPHA]
    if small:
        r = small[0]
        out.append(f"WARNING: with n={r['n_vanilla']}/{r['n_patched']} no "
                   f"row can be significant (the smallest p a rank test can "
                   f"give is {r['min_p']:.3g}); use --runs "
                   f"{stats.runs_needed()} or more")
    for m in (m for m in w.metrics if m.primary):
        mine = sorted((s.run, s.values[m.key]) for s in samples
                      if s.workload == w.name and s.variant == names[0]
                      and s.valid and m.key in s.values)
        rho, p = stats.trend([v for _, v in mine])
        if p < stats.ALPHA:
            out.append(f"DRIFT: {names[0]}'s {m.key} "
                       f"{'rises' if rho > 0 else 'falls'} over the run "
                       f"(Spearman rho {rho:.2f}, p={p:.3g}, n={len(mine)}): "
                       "the host changed speed; the paired ratios are the "
                       "safer read")
    return out


def attribution_rows(w: Workload, samples: list[Sample],
                     names: list[str]) -> list[dict]:
    """What each step adds: for every metric, each kernel against the one
    before it (for ``attribute``: prefix k against prefix k-1)."""
    by, _ = _valid_values(w, samples)
    rows = []
    for m in w.metrics:
        for before, after in zip(names, names[1:]):
            a, b = by[m.key][before], by[m.key][after]
            if not a or not b:
                continue
            c = stats.compare(a, b, m.is_rate)
            rows.append({"workload": w.name, "metric": m.key,
                         "better": m.better, "primary": m.primary,
                         "from": before, "to": after, "ratio": c.ratio,
                         "ci_low": c.ci_low, "ci_high": c.ci_high,
                         "p_value": c.p_value,
                         "significant": c.significant})
    return rows


def attribution_lines(rows: list[dict], steps: dict[str, int]) -> list[str]:
    """The steps as a table: one line per metric, one column per step."""
    if not rows:
        return []
    order = list(dict.fromkeys((r["from"], r["to"]) for r in rows))
    head = f"{'':<9} {'':<28}"
    for before, after in order:
        head += f" {f'{before}->{after}':>24}"
    lines = ["Attribution: each step against the one before (ratio, 95% CI; "
             "* significant); steps are the series' first N patches: " +
             ", ".join(f"{k}={n}" for k, n in steps.items()), head]
    for group in _by_metric(rows):
        line = f"{'Step':<9} {group[0]['metric']:<28}"
        cells = {(r["from"], r["to"]): r for r in group}
        for step in order:
            r = cells.get(step)
            if r is None:
                line += f" {'-':>24}"
                continue
            mark = "*" if r["significant"] else " "
            cell = (f"{r['ratio']:.3f}{mark}[{r['ci_low']:.3f},"
                    f"{r['ci_high']:.3f}]")
            line += f" {cell:>24}"
        lines.append(line)
    return lines


def _all_zero(group: list[dict]) -> bool:
    """Every sample of every kernel is zero: the event never happened."""
    return all(r[side]["min"] == r[side]["max"] == 0
               for r in group for side in ("vanilla", "patched"))


def zero_metrics(groups: list[list[dict]]) -> list[str]:
    """The metrics (of _by_metric's groups) that are zero in every sample
    of every kernel; the tables list them by name only (results.json keeps
    their rows)."""
    return [g[0]["metric"] for g in groups if _all_zero(g)]


def _by_metric(rows: list[dict]) -> list[list[dict]]:
    """Summary rows grouped by metric (one row per kernel), in order."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["metric"], []).append(r)
    return list(groups.values())


def _metric_table(rows: list[dict]) -> list[str]:
    """mmtests-style rows for one metric (compare-kernels): the baseline
    first, then each kernel with its %diff; one Ratio line per kernel."""
    first = rows[0]
    key, better = first["metric"], first["better"]
    mean_name = "Hmean" if first["mean_kind"] == "hmean" else "Amean"
    lines = []
    for label, field, direction in (
            ("Min", "min", better), (mean_name, "mean", better),
            ("Median", "median", better), ("Stddev", "stddev", "lower"),
            ("CoeffVar", "coeffvar", "lower"), ("Max", "max", better)):
        v = first["vanilla"][field]
        # exact counts repeat to a few parts per million: show them
        fmt = _fmt_small if field == "coeffvar" else _fmt
        line = f"{label:<9} {key:<28} {fmt(v):>12} ({0:7.2f}%)"
        for row in rows:
            p = row["patched"][field]
            d = stats.pct_diff(v, p, direction)
            sig = row["significant"] and field == "mean"
            diff = f"*{d:7.2f}%*" if sig else f"({d:7.2f}%)"
            line += f" {fmt(p):>12} {diff}"
        lines.append(line)
    for row in rows:
        who = f"{row.get('kernel', '')[:12]:<12} " if len(rows) > 1 else ""
        lines.append(
            f"{'Ratio':<9} {key:<28} {who}{row['ratio']:.3f} "
            f"CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
            f"p={row['p_value']:.3g} n={row['n_vanilla']}/{row['n_patched']} "
            f"{better} is better"
            f"{'  SIGNIFICANT' if row['significant'] else ''}"
            + (f"; paired {row['paired_ratio']:.3f} "
               f"[{row['paired_ci_low']:.3f}, {row['paired_ci_high']:.3f}]"
               if row.get("paired_n", 0) >= 2 else ""))
    return lines


def _counter_row(rows: list[dict]) -> str:
    """One line per secondary metric: means, %diff, ratio CI per kernel."""
    first = rows[0]
    line = f"{'Mean':<9} {first['metric']:<28} {_fmt(first['vanilla_mean']):>12}"
    for row in rows:
        d = row["pct_diff"]
        diff = f"*{d:7.2f}%*" if row["significant"] else f"({d:7.2f}%)"
        line += (f" {'':10} {_fmt(row['patched_mean']):>12} {diff}  "
                 f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
    return line


def invalid_lines(w: Workload, samples: list[Sample],
                  names: list[str] | None = None) -> list[str]:
    out = []
    for variant in names or VARIANTS:
        mine = [s for s in samples
                if s.workload == w.name and s.variant == variant]
        bad = [s for s in mine if not s.valid]
        if bad:
            out.append(f"{variant}: {len(bad)} of {len(mine)} samples "
                       "INVALID (excluded):")
            for s in bad:
                out.append(f"  run {s.run}: {'; '.join(s.reasons)}")
    return out


def _title(env: dict, names: list[str]) -> str:
    if names == list(VARIANTS):
        return (f"foliolab comparison: {env.get('patches_label', '?')} vs "
                f"vanilla {env.get('base_version', '')}")
    specs = env.get("kernel_specs", {})
    return ("foliolab comparison of " + ", ".join(
        f"{k}={specs.get(k, '?')}" for k in names) +
        f" (base {env.get('base_version', '')}; baseline {names[0]})")


def executor_note(env: dict) -> str:
    """How the boots ran, when not by foliolab's own QEMU here."""
    ex = env.get("executor") or {}
    if ex.get("kind", "qemu") == "qemu":
        return ""
    where = ex.get("server", "this machine")
    return (f"; boots run as LAVA {ex.get('lava_version', '')} jobs "
            f"({ex['kind']}, device type {ex.get('device_type', '?')}, "
            f"{where}), records on the console")


def text_report(env: dict, summary: list[dict], samples: list[Sample],
                counts: dict[str, CountAnalysis] | None = None,
                attribution: list[dict] | None = None) -> str:
    names = kernel_names(env)
    attribution = attribution or []
    lines = [_title(env, names),
             f"guest: {env.get('arch')} {env.get('accel')} "
             f"-cpu {env.get('cpu', '?')} {env.get('vcpus')} vCPUs; "
             f"config {env.get('config')} "
             f"sha {env.get('config_sha', {}).get(names[0], '?')}"
             + executor_note(env),
             legend(names), ""]
    for error in env.get("errors", []):
        lines.append(f"ERROR: {error}")
    for name in env.get("workloads", []):
        w = WORKLOADS.get(name)
        if not w:
            continue
        rows = [r for r in summary if r["workload"] == name]
        lines.append(f"== {name}: {w.title}")
        header = f"{'':<38} {names[0][:12]:>12}"
        for other in names[1:]:
            header += f" {'':10} {other[:12]:>12}"
        lines.append(header)
        for group in _by_metric([r for r in rows if r["primary"]]):
            lines += _metric_table(group)
            lines.append("")
        groups = _by_metric([r for r in rows if not r["primary"]])
        secondary = [g for g in groups if not _all_zero(g)]
        if secondary:
            lines.append("Counters and secondary metrics (mean per sample):")
            lines += [_counter_row(g) for g in secondary]
            lines.append("")
        zero = zero_metrics(groups)
        if zero:
            lines += [f"Zero in every sample: {', '.join(zero)}", ""]
        if not rows:
            lines.append("(no valid samples)")
        caveats = caveat_lines(w, samples, rows, names)
        if caveats:
            lines += caveats + [""]
        steps = [r for r in attribution if r["workload"] == name]
        if steps:
            lines += attribution_lines(steps, env.get("attribution", {}))
            lines.append("")
        if counts and name in counts:
            lines += profile_lines(counts[name])
            lines.append(boot_cost_line(name, samples))
            lines.append("")
        lines += invalid_lines(w, samples, names)
        if w.not_measurable:
            lines.append(f"Not measurable here: {w.not_measurable}")
        lines.append("")
    for f in env.get("failures", []):
        lines.append(f"FAILED BOOT: {f}")
    if env.get("host_line"):
        lines.append(env["host_line"])
    return "\n".join(lines).rstrip() + "\n"


def _built_as(env: dict, name: str) -> str:
    """`` (7.3.4, config sha X; Debian package and .deb hash)`` for a
    kernel, from what the run recorded of its build."""
    parts = [p for p in (env.get("kernel_release", {}).get(name, ""),
                         "config sha " + env.get("config_sha", {}).get(
                             name, "?"),
                         env.get("kernel_origin", {}).get(name, "")) if p]
    return f" ({'; '.join(parts)})"


def markdown_report(env: dict, summary: list[dict], samples: list[Sample],
                    counts: dict[str, CountAnalysis] | None = None) -> str:
    names = kernel_names(env)
    commits = env.get("commits", {})
    specs = env.get("kernel_specs", {})
    md = ["# foliolab comparison", "",
          f"- series: {env.get('patches_label')}",
          f"- base: {env.get('base_package')} {env.get('base_version')}",
          "- kernels (the first is the baseline): " + ", ".join(
              f"{k} " + (f"`{specs[k]}` " if k in specs else "") +
              f"{commits.get(k, '?')[:12]}" + _built_as(env, k)
              for k in names),
          f"- guest: {env.get('arch')}, {env.get('accel')}, "
          f"-cpu {env.get('cpu', '?')}, {env.get('vcpus')} vCPUs, "
          f"config `{env.get('config')}` "
          f"(sha {env.get('config_sha', {}).get(names[0], '?')})",
          f"- emulator: {env.get('qemu', '?')}{executor_note(env)}",
          *([f"- {env['host_line']}"] if env.get("host_line") else []),
          f"- runs: {env.get('runs')} per kernel, "
          f"{env.get('samples_per_boot')} sample(s) per boot, "
          "interleaved (each round in the order given, the next reversed)",
          "", legend(names).replace("\n", " "), ""]
    for error in env.get("errors", []):
        md.append(f"**ERROR:** {error}\n")
    for name in env.get("workloads", []):
        w = WORKLOADS.get(name)
        if not w:
            continue
        two = names == list(VARIANTS)
        md += [f"## {name}", "", w.title, "",
               ("| metric | better | vanilla | patched | ratio | 95% CI | p | "
                "CoeffVar v/p | n v/p |" if two else
                f"| metric | better | kernel | {names[0]} | kernel's | ratio "
                "| 95% CI | p | CoeffVar | n |"),
               "|---|---|---|---|---|---|---|---|---|" +
               ("" if two else "---|")]
        mine = [r for r in summary if r["workload"] == name]
        zero = zero_metrics(_by_metric([r for r in mine
                                        if not r["primary"]]))
        for r in mine:
            if r["metric"] in zero:
                continue
            sig = "**" if r["significant"] else ""
            md.append(
                f"| {r['label']} (`{r['metric']}`, {r['unit']}) "
                f"| {r['better']} " +
                ("" if two else f"| {r.get('kernel', '?')} ") +
                f"| {_fmt(r['vanilla_mean'])} | {_fmt(r['patched_mean'])} "
                f"| {sig}{r['ratio']:.3f}{sig} "
                f"| [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                f"| {r['p_value']:.3g} "
                f"| {_fmt_small(r['vanilla']['coeffvar'])}% / "
                f"{_fmt_small(r['patched']['coeffvar'])}% "
                f"| {r['n_vanilla']}/{r['n_patched']} |")
        if zero:
            md += ["", f"Zero in every sample: {', '.join(zero)}"]
        caveats = caveat_lines(w, samples, mine, names)
        if caveats:
            md += ["", *(f"**{c}**" for c in caveats)]
        if counts and name in counts:
            md += ["", *_profile_markdown(name, counts[name]), "",
                   boot_cost_line(name, samples)]
        bad = invalid_lines(w, samples, names)
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
    base = a.names[0]
    for other in a.names[1:]:
        rows = a.profiles.get(other, [])
        if not rows:
            continue
        md += [f"Differential profile of {other} against {base}: the "
               f"{len(rows)} kernel functions whose self instructions per "
               "window changed most (exact counts, mean over counting "
               "samples; ~ = varies between repeats of one kernel):", "",
               f"| function | {base} | {other} | delta | calls |",
               "|---|---|---|---|---|"]
        for r in rows:
            flag = "~" if r.nondeterministic else ""
            md.append(f"| {flag}`{r.function}` "
                      f"| {_fmt_count(r.insns[base])} "
                      f"| {_fmt_count(r.insns[other])} "
                      f"| {_fmt_count(r.delta(base, other))} "
                      f"| {r.calls[base]:.0f}/{r.calls[other]:.0f} |")
        md.append("")
    md += [f"![{name} profile](plots/{name}-profile.png)"]
    return md


def plot_profile(w: Workload, a: CountAnalysis, path: Path) -> bool:
    """Horizontal bars: patched minus vanilla self instructions per window
    for the profile's functions (negative = the series saves work)."""
    if not a.profile:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base, other = a.names[0], a.names[-1]
    rows = a.profile[::-1]
    deltas = [r.delta(base, other) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh(range(len(rows)), deltas,
            color=["tab:green" if d < 0 else "tab:red" for d in deltas])
    ax.set_yticks(range(len(rows)),
                  [("~" if r.nondeterministic else "") + r.function
                   for r in rows], fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"{other} - {base}, kernel instructions per window "
                  "(self, exact)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"{w.name}: where the kernels' work differs", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_workload(w: Workload, samples: list[Sample], path: Path,
                  names: list[str] | None = None) -> bool:
    """One panel per metric: every valid sample, per kernel, with the mean."""
    names = list(names or VARIANTS)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics: list[Metric] = [m for m in w.metrics if any(
        m.key in s.values for s in samples if s.workload == w.name)]
    if not metrics:
        return False
    width = 3 + 0.6 * max(0, len(names) - 2)
    fig, axes = plt.subplots(1, len(metrics),
                             figsize=(width * len(metrics), 3.2),
                             squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for i, variant in enumerate(names):
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
        ax.set_xticks(range(len(names)), names,
                      fontsize=7 if len(names) > 3 else None)
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
    # Every sample again from the raw boots, when the run has them.
    samples = derive.rederive(out)
    if samples is None:
        samples = load_samples(out)
    else:
        derive.write_samples(out, samples)
    names = kernel_names(env)
    env["host_line"] = host_line(out)
    counts = analyse_counts(out, samples, names)
    summary, attribution = [], []
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            summary += summarize_workload(WORKLOADS[name], samples, names)
            if env.get("attribution"):
                attribution += attribution_rows(WORKLOADS[name], samples,
                                                names)
    rows = [r for s in samples for r in s.rows()]
    invalid = [{"workload": s.workload, "variant": s.variant, "run": s.run,
                "reasons": s.reasons, "rundir": s.rundir}
               for s in samples if not s.valid]
    results = {"environment": env, "samples": rows, "summary": summary,
               "invalid": invalid,
               "counting": {k: a.as_dict() for k, a in counts.items()}}
    if env.get("attribution"):
        results["attribution"] = attribution
    (out / "results.json").write_text(json.dumps(results, indent=1,
                                                 default=str) + "\n")
    (out / "report.md").write_text(markdown_report(env, summary, samples,
                                                   counts))
    for name in env.get("workloads", []):
        if name in WORKLOADS:
            try:
                plot_workload(WORKLOADS[name], samples,
                              out / "plots" / f"{name}.png", names)
                if name in counts:
                    plot_profile(WORKLOADS[name], counts[name],
                                 out / "plots" / f"{name}-profile.png")
            except Exception as e:   # a plot must never cost the results
                log.warning("plot for %s failed: %s", name, e)
    text = text_report(env, summary, samples, counts, attribution)
    (out / "report.txt").write_text(text)
    return text
