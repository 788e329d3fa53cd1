"""What a run would do, said before it does it: the few lines a run starts
with (kernels, boots, the estimate) and `compare --dry-run`'s builds and
QEMU command lines, with nothing built, written or booted."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from foliolab import timings
from foliolab.analysis import stats
from foliolab.boot.measure import boot_spec, planned_time
from foliolab.errors import FoliolabError
from foliolab.executors import HERE, ExecutorOptions, dry_run_note
from foliolab.executors.base import BootSpec
from foliolab.kernel import store
from foliolab.run.stages import BootPlan, KernelsWanted, MachineShape


def start_block(
    kernels: KernelsWanted, plan: BootPlan, machine: MachineShape
) -> str:
    """The few lines a run starts with: its kernels (to build or found),
    its boots, the estimate and where the results go."""
    n = len(plan.boots(counted=False))
    counting = len(plan.boots(counted=plan.count)) - n
    points = sum(1 for w in plan.workloads if w.sweep_of)
    boots = (
        f"{len(plan.workloads)} workload(s)"
        + (f" ({points} of them sweep points)" if points else "")
        + f" x {plan.runs} run(s) x "
        f"{len(kernels.specs)} kernels = {n} boots"
        + (f" (+{counting} counting)" if plan.count else "")
    )
    try:
        # a run keeps its probe: the next estimate here needs none
        *kept, est = _plan_time(kernels, plan, machine, keep=True)
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
    per_boot = len(plan.boots(counted=plan.count))
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
        images[k.name], said = k.source.dry_run(
            k.name, k.text, arch, kernels.config
        )
        lines += said
    base = machine.boot_spec(images[specs[0].name], _accel(machine))
    rounds = -(-plan.runs // max(1, plan.samples_per_boot))
    for w in plan.workloads:
        lines.append(
            f"# {w.name}: {rounds} rounds x {len(specs)} kernels"
            + (
                (
                    " (each boot followed by a counting boot)"
                    if w.has_window
                    else " (timed only: it marks no counting window)"
                )
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
    kernels: KernelsWanted,
    plan: BootPlan,
    machine: MachineShape,
    keep: bool = False,
) -> list[str]:
    """The dry run's builds (kept or to build) and its time estimate,
    with a shorter run where it is long (the estimate last). On a
    machine with no measured builds or boots, the defaults are scaled by
    a probe of it (timings.calibrated(); kept if ``keep``)."""
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
    t = timings.calibrated(timings.Timings.load(), keep)

    def estimate(p: BootPlan) -> timings.Estimate:
        return timings.estimate(
            t,
            kernels.arch.name,
            kernels.config,
            _accel(machine),
            len(to_build),
            [planned_time(b) for b in p.boots(counted=p.count)],
        )

    est = estimate(plan)
    if est.long:
        lines.append(shorter_run_line(plan, est, estimate))
    return lines + [est.line()]


def shorter_plans(plan: BootPlan) -> list[tuple[str, BootPlan]]:
    """Shorter runs of ``plan``, longest first, with the options that
    ask for them: the fewest runs at which a row can be significant,
    then also fewer workloads (the first ones given), then exact counts
    alone (two runs with --count: a count that repeats exactly needs no
    more). A run with a sweep is offered fewer runs only: its points are
    not names --workloads takes, and its --sweep options name its
    workloads."""
    out = []
    runs = stats.runs_needed()
    if plan.runs > runs:
        plan = replace(plan, runs=runs)
        out.append((f"--runs {runs}", plan))
    if any(w.sweep_of for w in plan.workloads):
        return out
    names = [w.name for w in plan.workloads]
    for k in range(len(names) - 1, 0, -1):
        fewer = replace(plan, workloads=plan.workloads[:k])
        out.append(
            (f"--runs {plan.runs} --workloads {','.join(names[:k])}", fewer)
        )
    # exact counts of the first workload that has any (a count needs a
    # window: --count alone of a workload without one is refused)
    counted = [w for w in plan.workloads if w.has_window][:1]
    if counted:
        counts = replace(plan, runs=2, count=True, workloads=tuple(counted))
        out.append((f"--count --runs 2 --workloads {counted[0].name}", counts))
    return out


def shorter_run_line(
    plan: BootPlan,
    est: timings.Estimate,
    estimate: Callable[[BootPlan], timings.Estimate],
) -> str:
    """One line before the first build: the run is long, and the longest
    shorter run within timings.LONG_RUN_S (else the shortest) with its
    estimate."""
    tried = [(opts, estimate(p).total_s) for opts, p in shorter_plans(plan)]
    fits = [x for x in tried if x[1] <= timings.LONG_RUN_S]
    opts, seconds = (
        fits[0] if fits else min(tried, key=lambda x: x[1], default=("", 0))
    )
    head = f"# long run: {timings.clock(est.total_s)}"
    if not opts:
        return head
    return f"{head}; a shorter one: {opts} ({timings.clock(seconds)})"


def boot_argv(spec: BootSpec, rundir: Path) -> list[str]:
    """A boot's command line as QEMU here would run it."""
    return HERE.boot_argv(spec, rundir)
