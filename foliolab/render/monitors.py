"""The monitors' time series (foliolab/boot/monitors.py) as figures: per
workload, reclaim and fault rates from /proc/vmstat and TLB-shootdown and
function-call IPI rates from /proc/interrupts, one line per timed boot's
sample, coloured by kernel. Monitor files that do not parse are named in
the caption and their good reads still drawn."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import bootrecord
from foliolab.boot import monitors
from foliolab.bootrecord import BootJob, Pass
from foliolab.errors import FoliolabError


@dataclass(frozen=True)
class Panel:
    """One panel: the per-second increase of the sum of some counters."""

    title: str
    monitor: str
    keys: tuple[str, ...] = ()  # vmstat counters
    names: tuple[str, ...] = ()  # /proc/interrupts row descriptions


PANELS = (
    Panel(
        "pages scanned /s (pgscan)",
        "vmstat",
        (
            "pgscan_kswapd",
            "pgscan_direct",
            "pgscan_khugepaged",
            "pgscan_proactive",
        ),
    ),
    Panel(
        "pages reclaimed /s (pgsteal)",
        "vmstat",
        (
            "pgsteal_kswapd",
            "pgsteal_direct",
            "pgsteal_khugepaged",
            "pgsteal_proactive",
        ),
    ),
    Panel("pages swapped out /s (pswpout)", "vmstat", ("pswpout",)),
    Panel("page faults /s (pgfault)", "vmstat", ("pgfault",)),
    Panel("TLB shootdown IPIs /s", "interrupts", names=("TLB shootdowns",)),
    Panel(
        "function-call IPIs /s",
        "interrupts",
        names=("Function call interrupts",),
    ),
)


@dataclass
class _Line:
    kernel: str
    label: str  # boot and sample
    series: dict[str, monitors.MonitorSeries] = field(default_factory=dict)


def _lines(run_dir: Path) -> tuple[dict[str, list[_Line]], list[str]]:
    """Per workload, a line per timed sample with monitors; the damage."""
    by_workload: dict[str, list[_Line]] = {}
    damage: list[str] = []
    try:
        dirs = bootrecord.boot_dirs(run_dir)
    except FoliolabError as e:
        return {}, [e.one_line()]
    for d in dirs:
        job = BootJob.read(d)  # boot_dirs() read them all already
        if job.pass_ is not Pass.TIMED:
            continue
        got = {m: monitors.read_monitor(d, m) for m in monitors.MONITORS}
        for m, series in got.items():
            damage += [
                f"{monitors.monitor_path(d, m).relative_to(run_dir)}"
                f" (sample {s.sample}): {s.problems[0]}"
                for s in series
                if s.problems
            ]
        samples = sorted({s.sample for ss in got.values() for s in ss})
        for i in samples:
            line = _Line(
                job.kernel,
                f"{d.name} #{i}",
                {m: s for m, ss in got.items() for s in ss if s.sample == i},
            )
            by_workload.setdefault(job.workload, []).append(line)
    return by_workload, damage


def _keys(panel: Panel, s: monitors.MonitorSeries) -> tuple[str, ...]:
    if panel.keys:
        return panel.keys
    return tuple(k for k, text in s.names.items() if text in panel.names)


Points = list[tuple[float, float]]


def _points(lines: list[_Line]) -> dict[Panel, list[tuple[str, Points]]]:
    """Per panel, (kernel, rates) of each line that has the monitor."""
    out: dict[Panel, list[tuple[str, Points]]] = {}
    for panel in PANELS:
        out[panel] = [
            (
                x.kernel,
                x.series[panel.monitor].rates(
                    _keys(panel, x.series[panel.monitor])
                ),
            )
            for x in lines
            if panel.monitor in x.series
        ]
    return out


def _figure(
    workload: str,
    kernels: list[str],
    drawn: dict[Panel, list[tuple[str, Points]]],
) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {k: f"C{i}" for i, k in enumerate(kernels)}
    rows = -(-len(drawn) // 3)
    fig, axes = plt.subplots(
        rows, 3, figsize=(10, 2.6 * rows + 0.4), squeeze=False
    )
    for ax, (panel, lines) in zip(axes.flat, drawn.items()):
        for kernel, pts in lines:
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                color=colours[kernel],
                linewidth=1,
                alpha=0.8,
            )
        ax.set_title(panel.title, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("s into the window", fontsize=7)
    for ax in list(axes.flat)[len(drawn) :]:
        ax.set_visible(False)
    for k in kernels:
        axes.flat[0].plot([], [], color=colours[k], label=k)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{workload}: monitors, one line per sample", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def monitor_report(run_dir: Path) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(caption, PNG) per workload whose timed boots have monitor files
    with a rate to draw, and a line for each workload that has monitor
    files but nothing to draw, saying why. A rate needs two reads, and
    the sampler reads about once a second: a window under a second has
    none."""
    by_workload, damage = _lines(run_dir)
    out, notes = [], []
    for workload, lines in by_workload.items():
        caption = (
            f"{workload}: /proc/vmstat and /proc/interrupts rates "
            "per second during the timed window, sampled about "
            "once a second in the guest; one line per sample, "
            "colour by kernel."
        )
        points = _points(lines)
        drawn = {
            p: v
            for p, v in points.items()
            if any(y for _, pts in v for _, y in pts)
        }
        # no line has a rate: every window had fewer than two reads
        no_rate = [
            p.title
            for p in PANELS
            if not any(pts for _, pts in points.get(p, []))
        ]
        zero = [
            p.title
            for p in PANELS
            if p not in drawn and p.title not in no_rate
        ]
        if zero:
            caption += " Zero throughout, not drawn: " + ", ".join(zero) + "."
        if no_rate and drawn:
            caption += (
                " No rate (fewer than two reads in every window), "
                "not drawn: " + ", ".join(no_rate) + "."
            )
        mine = [d for d in damage if f"raw/{workload}/" in d]
        if mine:
            caption += (
                f" Damaged monitor files ({len(mine)}), their good "
                "reads drawn: " + "; ".join(mine[:3])
            )
        if drawn:
            kernels = list(dict.fromkeys(x.kernel for x in lines))
            out.append((caption, _figure(workload, kernels, drawn)))
        elif len(no_rate) == len(PANELS):
            reads = max(
                (len(s.readings) for x in lines for s in x.series.values()),
                default=0,
            )
            notes.append(
                f"{workload}: no panel: every timed window had "
                f"fewer than two reads (at most {reads}; the "
                "sampler reads about once a second, so a window "
                "under a second has no rate)"
            )
        else:
            notes.append(
                f"{workload}: no panel: "
                + "; ".join(
                    part
                    for part in (
                        "zero throughout: " + ", ".join(zero) if zero else "",
                        "fewer than two reads in every window: "
                        + ", ".join(no_rate)
                        if no_rate
                        else "",
                    )
                    if part
                )
            )
    return out, notes
