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
import shutil
from typing import TYPE_CHECKING

from foliolab import __version__, executors, hostsetup, proc
from foliolab.kernel import build, source
from foliolab.kernel import specs as kernels_mod
from foliolab.arch import get_arch
from foliolab.errors import UsageError
from foliolab.manifest import (BuildRecord, HostRecord, KernelRecord,
                               RunManifest, SeriesRecord, SpecRecord, plain)
from foliolab.paths import PROJECT_ROOT

if TYPE_CHECKING:
    from foliolab.orchestrate import Request

log = logging.getLogger("foliolab")


def differences(req: Request, m: RunManifest) -> None:
    """``--resume``: the request must be the manifest's run (else one line
    saying what differs, in the command line's own words)."""
    now = start_manifest(req)
    for what, theirs, ours in (
            ("kernels", [f"{k.name}={k.spec}" for k in m.kernels],
             [f"{k.name}={k.spec}" for k in now.kernels]),
            ("workloads", m.workloads, now.workloads),
            ("parameters", m.params, now.params),
            ("--runs", m.runs, now.runs),
            ("--samples-per-boot", m.samples_per_boot, now.samples_per_boot),
            ("--arch", m.arch, now.arch), ("--config", m.config, now.config),
            ("--count", bool(m.count), req.count),
            ("--root", m.extra_roots, now.extra_roots),
            ("--monitors", m.monitors, now.monitors),
            ("--executor", m.executor.kind, now.executor.kind),
            ("--fault", m.fault_injection, now.fault_injection)):
        if theirs != ours:
            theirs, ours = _differing(theirs, ours)
            raise UsageError(f"--resume: the run in {req.out} has {what} "
                             f"{theirs}, this asks for {ours}",
                             hint="resume with the run's own options")


def _differing(theirs, ours) -> tuple[str, str]:
    """Two values of an option as a reader would write them; of two
    parameter tables only the parameters that differ."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        flat_a, flat_b = _flat(theirs), _flat(ours)
        keys = [k for k in dict.fromkeys([*flat_a, *flat_b])
                if flat_a.get(k) != flat_b.get(k)]
        return (_readable({k: flat_a.get(k) for k in keys}),
                _readable({k: flat_b.get(k) for k in keys}))
    return _readable(theirs), _readable(ours)


def _flat(params: dict) -> dict[str, object]:
    """{workload: {name: value}} -> {"workload.name": value}."""
    out: dict[str, object] = {}
    for w, values in params.items():
        for k, v in (values.items() if isinstance(values, dict)
                     else [("", values)]):
            out[f"{w}.{k}" if k else w] = v
    return out


def _readable(value) -> str:
    """A manifest value as the command line spells it: lists joined with
    commas, booleans on/off, a missing value "none"."""
    if value is None or value == [] or value == "":
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ", ".join(f"{k}={'(unset)' if v is None else _readable(v)}"
                         for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(getattr(value, "value", value))


def _same_builds(m: RunManifest, kernels: dict[str, build.Kernel]) -> None:
    """``--resume``: each kernel must be the build the run began with."""
    for k in m.kernels:
        if k.built and (k.commit, k.config_sha) != (
                kernels[k.name].commit, kernels[k.name].config_sha):
            raise UsageError(
                f"--resume: kernel {k.name} is now commit "
                f"{kernels[k.name].commit[:12]} config "
                f"{kernels[k.name].config_sha}, the run began with "
                f"{k.commit[:12]} config {k.config_sha}",
                hint="resume with the same kernels, or start a new run")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _project_rev() -> str:
    cp = proc.run(["git", "-C", PROJECT_ROOT, "describe", "--always",
                   "--dirty"], check=False)
    return cp.stdout.strip() or "?"


def qemu_version(binary: str) -> str:
    if not shutil.which(binary):
        return "not installed"
    cp = proc.run([binary, "--version"], check=False)
    return cp.stdout.splitlines()[0] if cp.stdout else "?"


def start_manifest(req: Request) -> RunManifest:
    """The manifest as a run starts: what was asked for, on which host."""
    specs = req.specs
    label = (kernels_mod.describe(specs) if req.kernels
             else "none (vanilla vs vanilla)" if req.patches is None
             else str(req.patches))
    return RunManifest(
        command=req.command, foliolab=f"{__version__} ({_project_rev()})",
        started=utc_now(),
        host=HostRecord(platform.release(), os.cpu_count(),
                        platform.machine()),
        arch=req.arch, accel=req.accel, vcpus=req.vcpus,
        cpu=req.cpu or get_arch(req.arch).cpu_tcg,
        numa_nodes=req.numa_nodes, config=req.config,
        base_package=hostsetup.BASE_PACKAGE,
        base_version=hostsetup.BASE_VERSION, patches_label=label,
        kernels=[KernelRecord(k.name, k.text, _given(k)) for k in specs],
        runs=req.runs, samples_per_boot=req.samples_per_boot,
        workloads=[w.name for w in req.workloads],
        params={w.name: w.resolve(req.params.get(w.name, {}))
                for w in req.workloads},
        memory_mb={w.name: w.memory_mb for w in req.workloads},
        numa_nodes_per_workload={w.name: w.nodes(req.numa_nodes)
                                 for w in req.workloads},
        fault_injection=req.fault or None,
        records_on="console" if req.console_results else "port",
        executor=executors.record(req.executor),
        attribution=dict(req.attribution), extra_roots=list(req.roots),
        timeout=req.timeout, monitors=req.monitors)


def _given(k: kernels_mod.KernelSpec) -> SpecRecord:
    """A kernel's spec as the manifest keeps it; a series with the sha of
    its patches (the report's reproduce line names it)."""
    given = SpecRecord.from_json(plain(k))
    if k.kind is kernels_mod.SpecKind.SERIES:
        given.series_sha = k.series().digest
    return given


def record_series(m: RunManifest, specs: list[kernels_mod.KernelSpec],
                  trees: dict[str, source.Tree]) -> None:
    """Each series kernel's series and the tree it was applied to."""
    for k in specs:
        if k.kind is kernels_mod.SpecKind.SERIES:
            m.kernel(k.name).series = series_record(k, trees[k.name])


def series_record(k: kernels_mod.KernelSpec, tree: source.Tree
                  ) -> SeriesRecord:
    series = k.series()
    return SeriesRecord(str(k.series_dir), len(series.patches),
                        series.digest, tree.onto.spec, tree.onto.tree,
                        tree.onto.commit)


def record_builds(req: Request, m: RunManifest,
                  kernels: dict[str, build.Kernel]) -> None:
    """The builds into the manifest (a resumed run's must be its own)."""
    if req.resume:
        _same_builds(m, kernels)
    for k in m.kernels:
        k.built = BuildRecord.from_json(plain(kernels[k.name]))
    shas = {k.name: k.config_sha for k in m.kernels}
    if len(set(shas.values())) > 1:
        log.warning("the kernels' .configs differ (a series changes "
                    "Kconfig?): %s", shas)

