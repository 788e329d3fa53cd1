"""What a run would do, said before it does it: the few lines a run starts
with (kernels, boots, the estimate) and `compare --dry-run`'s builds and
QEMU command lines, with nothing built, written or booted."""

from __future__ import annotations

import shlex
from pathlib import Path

from foliolab import timings
from foliolab.kernel import build
from foliolab.kernel import specs as kernels_mod
from foliolab.kernel import store
from foliolab.errors import FoliolabError
from foliolab.executors import HERE, ExecutorOptions, dry_run_note
from foliolab.executors.base import BootSpec
from foliolab.boot.measure import boot_spec, planned_time
from foliolab.run.stages import BootPlan, KernelsWanted, MachineShape


def start_block(
    kernels: KernelsWanted, plan: BootPlan, machine: MachineShape
) -> str:
    """The few lines a run starts with: its kernels (to build or found),
    its boots, the estimate and where the results go."""
    n = len(plan.boots(counted=False))
    points = sum(1 for w in plan.workloads if w.sweep_of)
    boots = (
        f"{len(plan.workloads)} workload(s)"
        + (f" ({points} of them sweep points)" if points else "")
        + f" x {plan.runs} run(s) x "
        f"{len(kernels.specs)} kernels = {n} boots"
        + (f" (+{n} counting)" if plan.count else "")
    )
    try:
        *kept, est = _plan_time(kernels, plan, machine)
    except FoliolabError as e:  # an estimate never stops a run
        kept, est = [], f"# estimate: none ({e.one_line()})"
    return (
        "\n".join([*kept, f"# boots: {boots}", est, f"# results: {plan.out}"])
        + "\n"
    )


def dry_run(
    kernels: KernelsWanted,
    machine: MachineShape,
    plan: BootPlan,
    executor: ExecutorOptions,
) -> str:
    """What a run would do: each kernel's build and every boot's QEMU
    command line, in boot order, with nothing built, written or booted."""
    arch, specs = kernels.arch, kernels.specs
    boots = plan.boots(counted=False)
    per_boot = len(boots) * (2 if plan.count else 1)
    lines = [
        f"# dry run: {len(specs)} kernels, baseline {specs[0].name}; "
        f"config {kernels.config}, arch {arch.name}; {per_boot} boots, "
        f"{plan.samples} samples"
    ]
    lines += _plan_time(kernels, plan, machine)
    note = dry_run_note(executor)
    if note:
        lines.append(note)
    images: dict[str, Path] = {}
    for k in specs:
        if k.kind is kernels_mod.SpecKind.IMAGE:
            assert k.image is not None  # an image: spec names its image
            images[k.name] = k.image
            lines.append(
                f"# kernel {k.name} = {k.text}: prebuilt, its "
                ".config checked against the fragment"
            )
            continue
        out = build.build_dir(arch, kernels.config, store.slot_of(k))
        images[k.name] = out / arch.kernel_image
        lines.append(
            f"# kernel {k.name} = {k.text}: unless already kept "
            "in the cache, checkout, then"
        )
        lines.append(
            shlex.join(
                build.make_argv(Path("<tree>"), out, arch, arch.make_target)
            )
        )
    base = machine.boot_spec(images[specs[0].name], _accel(machine))
    rounds = -(-plan.runs // max(1, plan.samples_per_boot))
    for w in plan.workloads:
        lines.append(
            f"# {w.name}: {rounds} rounds x {len(specs)} kernels"
            + (
                " (each boot followed by a counting boot)"
                if plan.count
                else ""
            )
        )
        for b in (b for b in boots if b.workload is w):
            spec = boot_spec(
                base, w, images[b.kernel], b.samples, plan.timeout
            )
            lines.append(
                shlex.join(boot_argv(spec, plan.out / "raw" / w.name / b.name))
            )
    return "\n".join(lines) + "\n"


def _accel(machine: MachineShape) -> str:
    """The accelerator a plan is said and estimated with: TCG unless KVM
    is asked for (``auto`` is decided only when a run starts)."""
    return "tcg" if machine.accel == "auto" else machine.accel


def _plan_time(
    kernels: KernelsWanted, plan: BootPlan, machine: MachineShape
) -> list[str]:
    """The dry run's builds (kept or to build) and its time estimate."""
    lines, to_build = [], set()
    for k in kernels.specs:
        kept, key = store.kept_kernel(k, kernels.arch, kernels.config)
        if kept is not None:
            lines.append(f"# kernel {k.name}: kept in the store ({kept})")
        elif key is None:
            lines.append(
                f"# kernel {k.name}: not known to be kept, counted as a build"
            )
            to_build.add(k.name)
        else:
            to_build.add(key)  # kernels of one commit: one build
            lines.append(f"# kernel {k.name}: to build")
    est = timings.estimate(
        timings.Timings.load(),
        kernels.arch.name,
        kernels.config,
        _accel(machine),
        len(to_build),
        [planned_time(b) for b in plan.boots(counted=plan.count)],
    )
    return lines + [est.line()]


def boot_argv(spec: BootSpec, rundir: Path) -> list[str]:
    """A boot's command line as QEMU here would run it."""
    return HERE.boot_argv(spec, rundir)
