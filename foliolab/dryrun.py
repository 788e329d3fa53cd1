"""What a run would do, said before it does it: the few lines a run starts
with (kernels, boots, the estimate) and `compare --dry-run`'s builds and
QEMU command lines, with nothing built, written or booted."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from foliolab import timings
from foliolab.kernel import build
from foliolab.kernel import specs as kernels_mod
from foliolab.kernel import store
from foliolab.arch import get_arch
from foliolab.errors import FoliolabError
from foliolab.executors.base import BootSpec
from foliolab.executors.qemu import qemu_argv
from foliolab.kernel.kconfig import debug_cmdline
from foliolab.measure import boot_spec, plan, planned_time

if TYPE_CHECKING:
    from foliolab.orchestrate import Request


def start_block(req: Request) -> str:
    """The few lines a run starts with: its kernels (to build or found),
    its boots, the estimate and where the results go."""
    arch = get_arch(req.arch)
    n = len(plan(req.workloads, req.params, tuple(x.name for x in req.specs),
                 req.runs, req.samples_per_boot, counted=False))
    boots = (f"{len(req.workloads)} workload(s) x {req.runs} run(s) x "
             f"{len(req.specs)} kernels = {n} boots"
             + (f" (+{n} counting)" if req.count else ""))
    try:
        *kernels, est = _plan_time(req, arch)
    except FoliolabError as e:      # an estimate never stops a run
        kernels, est = [], f"# estimate: none ({e.one_line()})"
    return "\n".join([*kernels, f"# boots: {boots}", est,
                      f"# results: {req.out}"]) + "\n"


def dry_run(req: Request) -> str:
    """What a run would do: each kernel's build and every boot's QEMU
    command line, in boot order, with nothing built, written or booted."""
    arch = get_arch(req.arch)
    specs = req.specs
    boots = plan(req.workloads, req.params, tuple(x.name for x in specs),
                 req.runs, req.samples_per_boot, counted=False)
    per_boot = len(boots) * (2 if req.count else 1)
    lines = [f"# dry run: {len(specs)} kernels, baseline {specs[0].name}; "
             f"config {req.config}, arch {arch.name}; {per_boot} boots, "
             f"{req.runs * len(specs) * len(req.workloads)} samples"]
    lines += _plan_time(req, arch)
    if not req.executor.executor.boots_here:
        lines.append(f"# executor {req.executor.kind}: each workload's two "
                     "rounds are one LAVA job (device type "
                     f"{req.executor.target.device_type}); the QEMU lines "
                     "below are what the qemu executor would run for the "
                     "same boots")
    images = {}
    for k in specs:
        if k.kind is kernels_mod.SpecKind.IMAGE:
            images[k.name] = k.image
            lines.append(f"# kernel {k.name} = {k.text}: prebuilt, its "
                         ".config checked against the fragment")
            continue
        out = build.build_dir(arch, req.config, store.slot_of(k))
        images[k.name] = out / arch.kernel_image
        lines.append(f"# kernel {k.name} = {k.text}: unless already kept "
                     "in the cache, checkout, then")
        lines.append(shlex.join(build.make_argv(Path("<tree>"), out, arch,
                                                arch.make_target)))
    accel = "tcg" if req.accel == "auto" else req.accel
    base = BootSpec(arch, images[specs[0].name], vcpus=req.vcpus,
                    numa_nodes=req.numa_nodes, cpu=req.cpu, accel=accel,
                    cmdline=debug_cmdline(req.config),
                    console_results=req.console_results)
    rounds = -(-req.runs // max(1, req.samples_per_boot))
    for w in req.workloads:
        lines.append(f"# {w.name}: {rounds} rounds x {len(specs)} kernels"
                     + (" (each boot followed by a counting boot)"
                        if req.count else ""))
        for b in (b for b in boots if b.workload is w):
            spec = boot_spec(base, w, images[b.kernel], b.samples,
                             req.timeout)
            lines.append(shlex.join(boot_argv(
                spec, req.out / "raw" / w.name / b.name)))
    return "\n".join(lines) + "\n"


def _plan_time(req: Request, arch) -> list[str]:
    """The dry run's builds (kept or to build) and its time estimate."""
    lines, to_build = [], set()
    for k in req.specs:
        kept, key = store.kept_kernel(k, arch, req.config)
        if kept is not None:
            lines.append(f"# kernel {k.name}: kept in the store ({kept})")
        elif key is None:
            lines.append(f"# kernel {k.name}: not known to be kept, "
                         "counted as a build")
            to_build.add(k.name)
        else:
            to_build.add(key)       # kernels of one commit: one build
            lines.append(f"# kernel {k.name}: to build")
    boots = plan(req.workloads, req.params, tuple(x.name for x in req.specs),
                 req.runs, req.samples_per_boot, counted=req.count)
    accel = "tcg" if req.accel == "auto" else req.accel
    est = timings.estimate(
        timings.Timings.load(), arch.name, req.config, accel, len(to_build),
        [planned_time(b) for b in boots])
    return lines + [est.line()]


def boot_argv(spec: BootSpec, rundir: Path) -> list[str]:
    return qemu_argv(spec, rundir / "initrd.cpio", rundir / "console.log",
                     rundir / "results.txt")

