"""A run's manifest as its request makes it, and what --resume compares.

``start_manifest`` records what was asked for and on which host when a
run starts; ``record_series`` and ``record_builds`` add each kernel's
series and build once they are known; ``differences`` says, in the
command line's own words, how a resumed request differs from the run it
would finish.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foliolab import __version__, executors, hostsetup, proc
from foliolab.errors import UsageError
from foliolab.kernel import build, source
from foliolab.kernel import specs as kernels_mod
from foliolab.kernelrecord import (
    KernelRecord,
    build_record,
    given_record,
    series_record,
)
from foliolab.manifest import HostRecord, RunManifest
from foliolab.paths import PROJECT_ROOT
from foliolab.run.stages import RunStages
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")


def differences(
    now: RunManifest, m: RunManifest, count: bool, out: Path
) -> None:
    """``--resume``: the run asked for now (its manifest as it would
    start, and whether it counts) must be the run ``m`` in ``out`` (else
    one line saying what differs, in the command line's own words)."""
    for what, theirs, ours in (
        (
            "kernels",
            [f"{k.name}={k.spec}" for k in m.kernels],
            [f"{k.name}={k.spec}" for k in now.kernels],
        ),
        ("--sweep", m.sweeps, now.sweeps),
        ("workloads", m.workloads, now.workloads),
        ("parameters", m.params, now.params),
        ("--runs", m.runs, now.runs),
        ("--samples-per-boot", m.samples_per_boot, now.samples_per_boot),
        ("--arch", m.arch, now.arch),
        ("--config", m.config, now.config),
        ("--count", bool(m.count), count),
        ("--root", m.extra_roots, now.extra_roots),
        ("--monitors", m.monitors, now.monitors),
        ("--executor", m.executor.kind, now.executor.kind),
        ("--fault", m.fault_injection, now.fault_injection),
    ):
        if theirs != ours:
            theirs, ours = _differing(theirs, ours)
            raise UsageError(
                f"--resume: the run in {out} has {what} "
                f"{theirs}, this asks for {ours}",
                hint="resume with the run's own options",
            )


def _differing(theirs: object, ours: object) -> tuple[str, str]:
    """Two values of an option as a reader would write them; of two
    parameter tables only the parameters that differ."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        flat_a, flat_b = _flat(theirs), _flat(ours)
        keys = [
            k
            for k in dict.fromkeys([*flat_a, *flat_b])
            if flat_a.get(k) != flat_b.get(k)
        ]
        return (
            _readable({k: flat_a.get(k) for k in keys}),
            _readable({k: flat_b.get(k) for k in keys}),
        )
    return _readable(theirs), _readable(ours)


def _flat(params: dict[str, Any]) -> dict[str, object]:
    """{workload: {name: value}} -> {"workload.name": value}."""
    out: dict[str, object] = {}
    for w, values in params.items():
        for k, v in (
            values.items() if isinstance(values, dict) else [("", values)]
        ):
            out[f"{w}.{k}" if k else w] = v
    return out


def _readable(value: object) -> str:
    """A manifest value as the command line spells it: lists joined with
    commas, booleans on/off, a missing value "none"."""
    if value is None or value == [] or value == "":
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ", ".join(
            f"{k}={'(unset)' if v is None else _readable(v)}"
            for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(getattr(value, "value", value))


def _same_builds(m: RunManifest, kernels: dict[str, build.Kernel]) -> None:
    """``--resume``: each kernel must be the build the run began with."""
    for k in m.kernels:
        if k.built and (k.commit, k.config_sha) != (
            kernels[k.name].commit,
            kernels[k.name].config_sha,
        ):
            raise UsageError(
                f"--resume: kernel {k.name} is now commit "
                f"{kernels[k.name].commit[:12]} config "
                f"{kernels[k.name].config_sha}, the run began with "
                f"{k.commit[:12]} config {k.config_sha}",
                hint="resume with the same kernels, or start a new run",
            )


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _project_rev() -> str:
    cp = proc.run(
        ["git", "-C", PROJECT_ROOT, "describe", "--always", "--dirty"],
        check=False,
    )
    return cp.stdout.strip() or "?"


def start_manifest(run: RunStages) -> RunManifest:
    """The manifest as a run starts: what was asked for, on which host.
    It is the record of the whole request, so it reads every stage's
    input."""
    kernels, machine, plan = run.kernels, run.machine, run.plan
    return RunManifest(
        command=list(run.command),
        foliolab=f"{__version__} ({_project_rev()})",
        started=utc_now(),
        host=HostRecord(
            platform.release(), os.cpu_count(), platform.machine()
        ),
        arch=machine.arch.name,
        accel=machine.accel,
        vcpus=machine.vcpus,
        cpu=machine.cpu or machine.arch.cpu_tcg,
        numa_nodes=machine.numa_nodes,
        config=kernels.config,
        base_package=hostsetup.BASE_PACKAGE,
        base_version=hostsetup.BASE_VERSION,
        patches_label=kernels.label,
        kernels=[
            KernelRecord(k.name, k.text, given_record(k))
            for k in kernels.specs
        ],
        runs=plan.runs,
        samples_per_boot=plan.samples_per_boot,
        workloads=[w.name for w in plan.workloads],
        params={
            w.name: w.resolve(plan.params.get(w.name, {}))
            for w in plan.workloads
        },
        memory_mb={w.name: w.memory_mb for w in plan.workloads},
        numa_nodes_per_workload={
            w.name: w.nodes(machine.numa_nodes) for w in plan.workloads
        },
        fault_injection=plan.fault or None,
        records_on="console" if machine.console_results else "port",
        executor=executors.record(run.executor),
        attribution=dict(run.attribution),
        extra_roots=list(plan.roots),
        timeout=plan.timeout,
        monitors=plan.monitors,
        sweeps=swept(plan.workloads),
        vcpus_per_workload={
            w.name: w.vcpus for w in plan.workloads if w.vcpus
        },
    )


def swept(workloads: Sequence[Workload]) -> dict[str, dict[str, list[str]]]:
    """What the manifest keeps of the run's sweeps: each swept workload's
    parameters and their values, from its points."""
    out: dict[str, dict[str, list[str]]] = {}
    for w in workloads:
        for k, v in w.point:
            values = out.setdefault(w.sweep_of, {}).setdefault(k, [])
            if v not in values:
                values.append(v)
    return out


def record_series(
    m: RunManifest,
    specs: list[kernels_mod.KernelSpec],
    trees: dict[str, source.Tree],
) -> None:
    """Each series kernel's series and the tree it was applied to."""
    for k in specs:
        if k.applied is not None:
            m.kernel(k.name).series = series_record(k, trees[k.name])


def record_builds(
    m: RunManifest, kernels: dict[str, build.Kernel], resume: bool = False
) -> None:
    """The builds into the manifest (a resumed run's must be its own)."""
    if resume:
        _same_builds(m, kernels)
    for k in m.kernels:
        k.built = build_record(kernels[k.name])
    shas = {k.name: k.config_sha for k in m.kernels}
    if len(set(shas.values())) > 1:
        log.warning(
            "the kernels' .configs differ (a series changes Kconfig?): %s",
            shas,
        )
