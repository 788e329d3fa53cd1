"""foliolab diff OUT1 OUT2...: ratios across finished runs.

Absolute values drift with the host (a TCG guest on a loaded machine runs
slower), so runs are compared by their ratios, each taken against its own
baseline inside its own interleaved run: series v1 against v2, x86_64
against arm64, one week against the next. The environments' differences
are listed first, since they explain most of what differs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.errors import UsageError
from foliolab.manifest import VARIANTS, check_fields

# The environment keys whose differences a reader needs to see.
ENV_KEYS = (
    "arch",
    "accel",
    "cpu",
    "vcpus",
    "config",
    "config_sha",
    "kernel_specs",
    "commits",
    "patches_label",
    "base_version",
    "qemu",
    "runs",
    "samples_per_boot",
    "params",
    "host_line",
)


@dataclass(frozen=True)
class Ratio:
    """One row of a run's summary as diff reads it: a kernel's ratio to
    the run's baseline for one metric."""

    workload: str
    metric: str
    kernel: str  # the kernel compared with the baseline
    primary: bool
    ratio: float | None  # None: from a mean of 0 (null in JSON)
    ci_low: float | None
    ci_high: float | None
    significant: bool
    exact: bool
    n: int  # the fewer samples of the two kernels
    baseline_mean: float | None
    kernel_mean: float | None
    unit: str = ""  # the metric's ("" in rows from before it was kept)

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Ratio:
        """A summary row, of this version or an older one (before rows
        named their kernel, before the per-kernel sample counts)."""
        n = min(
            row.get("n_baseline", row.get("n_vanilla", 3)),
            row.get("n_kernel", row.get("n_patched", 3)),
        )
        return cls(
            row["workload"],
            row["metric"],
            row.get("kernel", "patched"),
            bool(row.get("primary")),
            row.get("ratio"),
            row.get("ci_low"),
            row.get("ci_high"),
            bool(row.get("significant")),
            bool(row.get("exact")),
            n,
            row.get("baseline_mean", row.get("vanilla_mean")),
            row.get("kernel_mean", row.get("patched_mean")),
            row.get("unit", ""),
        )


@dataclass(frozen=True)
class Run:
    """A finished run's results.json, as diff compares it."""

    label: str  # its directory, as given
    environment: dict[str, Any]  # compared key by key (ENV_KEYS)
    kernels: list[str]  # the baseline first
    rows: list[Ratio]

    @classmethod
    def load(cls, out: Path) -> Run:
        path = out / "results.json"
        if not path.exists():
            raise UsageError(
                f"{out} holds no results.json",
                hint="give the --out directories of finished "
                "runs (foliolab report DIR writes it)",
            )
        hint = f"write it again from the run: foliolab report {out}"
        r = records.read_object(
            path, records.RecordKind.RESULTS, ("environment",), hint
        )
        f = records.Fields(path, r, hint)
        env = f.object("environment", default=False)
        # the copy of the run's manifest, as its reader checks it: what
        # diff prints of it is of the types a manifest's fields have
        check_fields(path, env, hint, "environment")
        e = records.Fields(path, env, hint, "environment")
        kernels = e.strings("kernels") or list(VARIANTS)
        rows = []
        for i, row in enumerate(f.objects("summary")):
            _check_row(records.Fields(path, row, hint, f"summary[{i}]"))
            rows.append(Ratio.from_json(row))
        return cls(str(out), env, kernels, rows)


def _check_row(f: records.Fields) -> None:
    """A summary row's fields of their types: names strings, figures
    finite numbers or null, counts whole numbers."""
    for key in ("workload", "metric"):
        f.string(key)
    f.string("kernel", "")
    for key in (
        "ratio",
        "ci_low",
        "ci_high",
        "baseline_mean",
        "vanilla_mean",
        "kernel_mean",
        "patched_mean",
    ):
        f.optional_number(key)
    for key in ("n_baseline", "n_vanilla", "n_kernel", "n_patched"):
        if f.has(key):
            f.integer(key, minimum=0)


def environment_lines(runs: list[Run]) -> list[str]:
    """One line per environment key whose value differs between runs."""
    lines = []
    for key in ENV_KEYS:
        values = [r.environment.get(key) for r in runs]
        if all(v == values[0] for v in values):
            continue
        lines.append(f"{key}:")
        for r, v in zip(runs, values):
            lines.append(f"  {r.label}: {json.dumps(v, default=str)[:150]}")
    return lines or ["(the environments agree on " + ", ".join(ENV_KEYS) + ")"]


# Differences that make two runs' ratios measure different things.
WARN_KEYS = ("arch", "config", "accel")


def warning_lines(runs: list[Run]) -> list[str]:
    out = []
    for key in WARN_KEYS:
        values = [r.environment.get(key) for r in runs]
        if any(v != values[0] for v in values):
            out.append(
                f"WARNING: the runs differ in {key} ("
                + " vs ".join(str(v) for v in values)
                + "): their ratios measure different machines"
            )
    return out


def role_label(runs: list[Run], role: int) -> str:
    """A role by its kernels' names: the name when every run used it,
    else ``#N a/b`` (kernel N after the baseline, by each run's name)."""
    names = [r.kernels[role] if role < len(r.kernels) else "-" for r in runs]
    if all(n == names[0] for n in names):
        return names[0]
    return f"#{role} " + "/".join(names)


def _cell(row: Ratio | None) -> str:
    """A run's ratio: with its CI, or exact, or without a CI below n=3
    (older results.json rows printed one; it is not shown here)."""
    if row is None:
        return "-"
    mark = "*" if row.significant else " "
    if row.ratio is None or not math.isfinite(row.ratio):
        # 0 -> N (null in results.json, Infinity in older ones), or 0/0
        grew = row.baseline_mean == 0 and (row.kernel_mean or 0) > 0
        return "from 0" + mark.strip() if grew else "-"
    if row.exact:
        return f"{row.ratio:.3f}{mark}exact"
    if row.ci_low is None or row.ci_high is None or row.n < 3:
        return f"{row.ratio:.3f} (no CI, n<3)"
    return f"{row.ratio:.3f}{mark}[{row.ci_low:.3f},{row.ci_high:.3f}]"


def ratio_lines(runs: list[Run], primary_only: bool = True) -> list[str]:
    """Per (workload, metric, role): each run's ratio against its own
    baseline with its 95% CI (* significant), in one row. Kernels line up
    by role (the baseline against the first other kernel, the second...),
    so runs whose kernels are named differently still do."""
    rows: dict[tuple[str, str, int], dict[str, Ratio]] = {}
    for r in runs:
        for row in r.rows:
            if primary_only and not row.primary:
                continue
            role = (
                r.kernels.index(row.kernel) if row.kernel in r.kernels else 1
            )
            rows.setdefault((row.workload, row.metric, role), {})[r.label] = (
                row
            )
    labels = [r.label for r in runs]
    table = [["workload", "metric", "kernel", *labels]]
    for (workload, metric, role), by in rows.items():
        table.append(
            [
                workload,
                metric,
                role_label(runs, role),
                *(_cell(by.get(lb)) for lb in labels),
            ]
        )
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    return [
        " ".join(
            f"{c:<{w}}" if i < 3 else f"{c:>{w}}"
            for i, (c, w) in enumerate(zip(t, widths))
        ).rstrip()
        for t in table
    ]


def diff(outs: list[Path], all_metrics: bool = False) -> str:
    if len(outs) < 2:
        raise UsageError(
            "foliolab diff needs two or more run directories",
            hint="foliolab diff OUT1 OUT2 [OUT3...]",
        )
    seen: dict[Path, Path] = {}
    for o in outs:
        same = seen.setdefault(o.resolve(), o)
        if same is not o:
            raise UsageError(
                f"foliolab diff: {same} and {o} are the same run directory",
                hint="give two different runs' --out directories",
            )
    runs = [Run.load(o) for o in outs]
    lines = [
        "foliolab diff: ratios against each run's own baseline "
        "(95% CI, * significant); absolute values are not compared;"
        " kernels line up by role (the baseline, then each kernel in "
        "order)",
        *warning_lines(runs),
        "",
        "Environment differences:",
        *environment_lines(runs),
        "",
        *ratio_lines(runs, primary_only=not all_metrics),
    ]
    return "\n".join(lines) + "\n"
