"""foliolab diff OUT1 OUT2...: ratios across finished runs.

Absolute values drift with the host (a TCG guest on a loaded machine runs
slower), so runs are compared by their ratios, each taken against its own
baseline inside its own interleaved run: series v1 against v2, x86_64
against arm64, one week against the next. The environments' differences
are listed first, since they explain most of what differs.
"""

from __future__ import annotations

import json
from pathlib import Path

from foliolab.errors import UsageError

# The environment keys whose differences a reader needs to see.
ENV_KEYS = ("arch", "accel", "cpu", "vcpus", "config", "config_sha",
            "kernel_specs", "commits", "patches_label", "base_version",
            "qemu", "runs", "samples_per_boot", "params", "host_line")


def load_run(out: Path) -> dict:
    path = out / "results.json"
    if not path.exists():
        raise UsageError(f"{out} holds no results.json",
                         hint="give the --out directories of finished runs "
                              "(foliolab report DIR writes it)")
    return json.loads(path.read_text())


def environment_lines(runs: list[tuple[str, dict]]) -> list[str]:
    """One line per environment key whose value differs between runs."""
    lines = []
    for key in ENV_KEYS:
        values = [r["environment"].get(key) for _, r in runs]
        if all(v == values[0] for v in values):
            continue
        lines.append(f"{key}:")
        for (label, _), v in zip(runs, values):
            lines.append(f"  {label}: {json.dumps(v, default=str)[:150]}")
    return lines or ["(the environments agree on " + ", ".join(ENV_KEYS) +
                     ")"]


def _key(row: dict) -> tuple[str, str, str]:
    return (row["workload"], row["metric"],
            row.get("kernel", "patched"))


def ratio_lines(runs: list[tuple[str, dict]], primary_only: bool = True
                ) -> list[str]:
    """Per (workload, metric, kernel): each run's ratio against its own
    baseline with its 95% CI (* significant), in one row."""
    rows: dict[tuple[str, str, str], dict[str, dict]] = {}
    for label, r in runs:
        for row in r.get("summary", []):
            if primary_only and not row.get("primary"):
                continue
            rows.setdefault(_key(row), {})[label] = row
    labels = [label for label, _ in runs]
    width = max([24] + [len(lb) for lb in labels])
    lines = [f"{'workload':<14} {'metric':<26} {'kernel':<10} " +
             " ".join(f"{lb[-width:]:>{width}}" for lb in labels)]
    for (workload, metric, kernel), by in rows.items():
        cells = []
        for lb in labels:
            row = by.get(lb)
            if row is None:
                cells.append(f"{'-':>{width}}")
                continue
            mark = "*" if row["significant"] else " "
            cell = (f"{row['ratio']:.3f}{mark}[{row['ci_low']:.3f},"
                    f"{row['ci_high']:.3f}]")
            cells.append(f"{cell:>{width}}")
        lines.append(f"{workload[:14]:<14} {metric[:26]:<26} "
                     f"{kernel[:10]:<10} " + " ".join(cells))
    return lines


def diff(outs: list[Path], all_metrics: bool = False) -> str:
    if len(outs) < 2:
        raise UsageError("foliolab diff needs two or more run directories",
                         hint="foliolab diff OUT1 OUT2 [OUT3...]")
    runs = [(str(o), load_run(o)) for o in outs]
    lines = ["foliolab diff: ratios against each run's own baseline "
             "(95% CI, * significant); absolute values are not compared",
             "", "Environment differences:", *environment_lines(runs), "",
             *ratio_lines(runs, primary_only=not all_metrics)]
    return "\n".join(lines) + "\n"
