"""The workloads foliolab runs: one folder each (``NAME/``: its C
program(s), guest script, ``workload.py`` and ``fixture/``), registered
here.

A folder's ``workload.py`` holds its parameters, metrics, derive function,
counting window and expected time (model.Workload); its C programs are
built by the Makefile here and its script goes into the guest image as
/foliolab/workloads/<script>.sh (kernel/image.py). Its ``fixture/`` is a
run directory of real boots of its workloads and the samples they derive
(expected.jsonl), which the contract test holds its derive to; it stays
in the source tree (pyproject ships a folder's C, headers and scripts).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from foliolab.errors import UsageError
from foliolab.workloads.dirty_tlb import workload as dirty_tlb
from foliolab.workloads.file_reclaim import workload as file_reclaim
from foliolab.workloads.khugepaged import workload as khugepaged
from foliolab.workloads.ksm_rmap import workload as ksm_rmap
from foliolab.workloads.model import MACHINE_VCPUS, Workload
from foliolab.workloads.pageout import workload as pageout
from foliolab.workloads.sweep import parse_point_name, point


def _registry(*folders: ModuleType) -> dict[str, Workload]:
    """Each folder's workloads by name; a name given twice is a mistake."""
    out: dict[str, Workload] = {}
    for folder in folders:
        for w in folder.WORKLOADS:
            if w.name in out:
                raise ValueError(f"two workloads are named {w.name}")
            out[w.name] = w
    return out


# Every workload folder, in the order a run boots and reports their
# workloads.
FOLDERS = (pageout, dirty_tlb, khugepaged, ksm_rmap, file_reclaim)
# Every workload by name.
WORKLOADS = _registry(*FOLDERS)


def find(name: str) -> Workload | None:
    """A workload by name, or a sweep point by its name (``NAME@P=V``,
    sweep.py): what a run directory's boots and samples name. None for
    a name this checkout does not know."""
    base, values = parse_point_name(name)
    w = WORKLOADS.get(base)
    if w is None or not values:
        return w
    if any(k not in w.params and k != MACHINE_VCPUS for k, _ in values):
        return None
    return point(w, values)


def fixtures() -> list[Path]:
    """Each workload folder's fixture/: its captured boots (a run
    directory), for the contract test."""
    return [
        Path(str(folder.__file__)).parent / "fixture" for folder in FOLDERS
    ]


def get_workloads(names: str | None) -> list[Workload]:
    """Parse ``--workloads a,b``; None (the option not given) means all."""
    if names is None:
        return list(WORKLOADS.values())
    out = []
    for name in names.split(","):
        name = name.strip()
        if name not in WORKLOADS:
            raise UsageError(
                f"unknown workload {name!r}"
                if name
                else f"--workloads {names!r} names an empty workload",
                hint=f"choose from: {', '.join(WORKLOADS)}",
            )
        if WORKLOADS[name] in out:
            raise UsageError(
                f"--workloads names {name} twice",
                hint="give each workload once (--runs sets the repetitions)",
            )
        out.append(WORKLOADS[name])
    return out


def parse_params(
    items: list[str], workloads: list[Workload]
) -> dict[str, dict[str, str]]:
    """``--param WORKLOAD.NAME=VALUE`` (or ``NAME=VALUE`` for all that
    have it)."""
    out: dict[str, dict[str, str]] = {w.name: {} for w in workloads}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r} is not NAME=VALUE")
        wname, dot, pname = key.rpartition(".")
        targets = [w for w in workloads if not dot or w.name == wname]
        if dot and not targets:
            raise UsageError(
                f"--param {item!r}: workload {wname!r} is not being run"
            )
        if not dot:
            targets = [w for w in targets if pname in w.params]
            if not targets:
                raise UsageError(
                    f"--param {item!r}: no selected workload has "
                    f"a parameter {pname!r}"
                )
        for w in targets:
            out[w.name][pname] = value
    for w in workloads:
        w.resolve(out[w.name])  # validate now, before any build
    return out


def listing(workloads: list[Workload]) -> str:
    """`foliolab workloads`: each workload's parameters (type or range,
    default) and metrics, from their folders' definitions."""
    out = []
    for w in workloads:
        out += [
            f"{w.name}: {w.title}",
            f"  parameters (--param {w.name}.NAME=VALUE):",
        ]
        width = max((len(k) for k in w.params), default=0)
        out += [
            f"    {k:<{width}}  {p.kind}; default {p.default}: {p.help}"
            for k, p in w.params.items()
        ]
        out.append(
            "  metrics (unit, better; * primary; counted: with --count):"
        )
        width = max(len(m.key) for m in w.metrics)
        out += [
            f"    {'*' if m.primary else ' '} {m.key:<{width}}  {m.unit}, "
            f"{m.better}{', counted' if m.counted else ''}: {m.label}"
            for m in w.metrics
        ]
        out.append("")
    return "\n".join(out)
