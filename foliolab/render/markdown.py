"""report.md: the run's header and, per workload, one table of every
metric against the baseline (the Table model the text renderer draws
too), the caveats, the profiles and the invalid samples."""

from __future__ import annotations

from foliolab.analysis.analyse import Analysis
from foliolab.analysis.countanalysis import CountAnalysis
from foliolab.analysis.workloadstats import (
    StatRow,
    WorkloadAnalysis,
    by_metric,
)
from foliolab.kernelrecord import KernelRecord
from foliolab.manifest import VARIANTS, RunManifest
from foliolab.render import (
    Column,
    Table,
    better_cell,
    change_cell,
    ci_cell,
    executor_note,
    fmt,
    fmt_ratio,
    fmt_small,
    growth,
    headline,
    legend,
    modes_text,
    p_cell,
    profile_table,
    q_cell,
    uses_base,
)


def built_as(k: KernelRecord) -> str:
    """`` (7.3.4, config sha X; Debian package and .deb hash)``: what the
    run recorded of a kernel's build."""
    parts = [
        p
        for p in (
            k.built.release if k.built else "",
            f"config sha {k.config_sha or '?'}",
            k.built.origin if k.built else "",
        )
        if p
    ]
    return f" ({'; '.join(parts)})"


def header(a: Analysis) -> list[str]:
    return [
        "# foliolab comparison",
        "",
        *headline.markdown(a.headline),
        "![overview: every workload's primary metrics against the "
        "baseline](plots/overview.png)",
        "",
        *run_lines(a),
        "",
        legend(a.names).replace("\n", " "),
        "",
    ]


def run_lines(a: Analysis) -> list[str]:
    """The run as a list: series, kernels, guest, host, runs."""
    m: RunManifest = a.m
    return [
        f"- series: {m.patches_label}",
        *(
            [f"- base: {m.base_package} {m.base_version}"]
            if uses_base(m)
            else []
        ),
        "- kernels (the first is the baseline): "
        + ", ".join(
            f"{k.name} `{k.spec}` {(k.commit or '?')[:12]}" + built_as(k)
            for k in m.kernels
        ),
        f"- guest: {m.arch}, {m.accel_label}, -cpu {m.cpu}, {m.vcpus} "
        f"vCPUs, config `{m.config}` "
        f"(sha {m.kernels[0].config_sha or '?'})",
        f"- emulator: {m.qemu}{executor_note(m)}",
        *([f"- {a.host_line}"] if a.host_line else []),
        *(f"- **MISSING:** {x}" for x in a.missing),
        f"- runs: {m.runs} per kernel, "
        f"{m.samples_per_boot} sample(s) per boot, "
        "interleaved (each round in the order given, the next reversed)",
    ]


def verdict_change(r: StatRow) -> str:
    """%change (+ = larger) and, when significant, the verdict; a
    secondary metric in two modes has neither (modes_text says them)."""
    if r.two_modes and not r.primary:
        return "two modes, no verdict"
    text = change_cell(r.base.mean, r.other.mean)
    return f"{text} {r.verdict}" if r.verdict else text


def modes_lines(wa: WorkloadAnalysis) -> list[str]:
    """The workload's metrics with a kernel's samples in two modes, each
    kernel's modes (or mean)."""
    return [
        f"- `{g[0].metric}`: {modes_text(g)}"
        + (" (a lead metric: its verdict stands)" if g[0].primary else "")
        for g in by_metric(wa.rows)
        if any(r.two_modes for r in g)
    ]


def metrics_table(wa: WorkloadAnalysis, names: list[str]) -> Table:
    two = names == list(VARIANTS)
    heads = (
        [
            "metric",
            "better",
            "vanilla",
            "patched",
            "%change",
            "ratio",
            "95% CI",
            "p",
            "q",
            "CoeffVar v/p",
            "n v/p",
        ]
        if two
        else [
            "metric",
            "better",
            "kernel",
            names[0],
            "kernel's",
            "%change",
            "ratio",
            "95% CI",
            "p",
            "q",
            "CoeffVar",
            "n",
        ]
    )
    t = Table([Column(h) for h in heads])
    zero = set(wa.zero)
    for r in wa.rows:
        if r.metric in zero:
            continue
        sig = "**" if r.significant else ""
        t.add(
            f"{r.label} (`{r.metric}`, {r.unit})",
            better_cell(r.better),
            *([] if two else [r.kernel]),
            fmt(r.base.mean),
            fmt(r.other.mean),
            verdict_change(r),
            f"{sig}{fmt_ratio(r.ratio)}{sig}",
            ci_cell(r),
            p_cell(r),
            q_cell(r),
            f"{fmt_small(r.base.coeffvar)}% / {fmt_small(r.other.coeffvar)}%",
            f"{r.base.n}/{r.other.n}",
        )
    return t


def profile_markdown(name: str, a: CountAnalysis) -> list[str]:
    md = [a.summary_line(), ""]
    if not a.profile:
        return md
    base = a.names[0]
    for other in a.names[1:]:
        rows = a.profiles.get(other, [])
        if not rows:
            continue
        md += [
            f"Differential profile of {other} against {base}: the "
            f"{len(rows)} kernel functions whose self instructions per "
            "window changed most (exact counts, mean over counting "
            "samples; ~ = varies between repeats of one kernel):",
            "",
            *profile_table(a, base, other, md=True).markdown(),
            "",
        ]
    md += [f"![{name} profile](plots/{name}-profile.png)"]
    return md


def markdown_report(a: Analysis) -> str:
    md = header(a)
    for error in a.m.errors:
        md.append(f"**ERROR:** {error}\n")
    md += growth.markdown_lines(a.growth)
    for wa in a.workloads:
        w = wa.workload
        md += [
            f"## {w.name}",
            "",
            w.title,
            "",
            *metrics_table(wa, a.names).markdown(),
        ]
        modes = modes_lines(wa)
        if modes:
            md += ["", "Two modes (a kernel's samples in two groups):", ""]
            md += modes
        if wa.zero:
            md += ["", f"Zero in every sample: {', '.join(wa.zero)}"]
        if wa.constant:
            md += [
                "",
                "Constant in every sample (not plotted): "
                f"{', '.join(wa.constant)}",
            ]
        if wa.caveats:
            md += ["", *(f"**{c}**" for c in wa.caveats)]
        if wa.counts:
            md += ["", *profile_markdown(w.name, wa.counts), "", wa.boot_cost]
        if wa.invalid:
            md += ["", "Invalid samples:", "", "```", *wa.invalid, "```"]
        if w.not_measurable:
            md += ["", f"Not measurable here: {w.not_measurable}"]
        md += ["", f"![{w.name}](plots/{w.name}.png)", ""]
    md += [f"- FAILED BOOT: {f}" for f in a.m.failures]
    return "\n".join(md) + "\n"
