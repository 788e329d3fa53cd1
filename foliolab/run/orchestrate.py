"""The one orchestrator behind `compare`, `attribute` and `jobs export`:

    check -> manifest -> kernels, image, machine -> measure -> report

Bad input is found before anything is built or written (``check``). The
run's manifest is written when the run starts and completed as it ends;
whatever fails, or stops it (SIGTERM, SIGINT), the samples gathered so far
are on disk and the report of what finished is written. ``--resume``
checks the request against the manifest and runs only the boots that have
no boot.json yet.

The orchestrator prints nothing: it hands back what a run gave (Planned,
Finished), and the command shows it; the few lines a run starts with are
handed to the ``say`` the command passes.

The request (stages.Request) is turned once into each stage's own input
(stages.py: the kernels wanted, the machine's shape, the plan of boots,
the executor's options), and each stage is given only its own. The stages
live elsewhere: the kernels (kernel/), the manifest and what --resume
compares (record.py), the plan said before it runs (dryrun.py), the
boots (boot/measure.py, through an executor, each judged by
boot/outcome.py), the report (render/report.py). `foliolab run`'s one
boot is command.py. No executor is named here: the registry
(executors/__init__.py) names the one a run asks for, and the one here
whose machine options every run checks.
"""

from __future__ import annotations

import logging
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from foliolab import bootrecord, counting, rundir
from foliolab.analysis import runboots
from foliolab.arch import Arch
from foliolab.boot import outcome
from foliolab.boot.accel import settle
from foliolab.boot.derive import Sample
from foliolab.boot.measure import (
    RunRequest,
    RunResult,
    boot_spec,
    run_workloads,
)
from foliolab.counting import Counter
from foliolab.errors import (
    BenchmarkError,
    DamagedRunError,
    FoliolabError,
    Stop,
    StoppedError,
    UsageError,
    stop_signals,
)
from foliolab.executors import EXPORTER, HERE, make_executor
from foliolab.executors.base import (
    BootSpec,
    Executor,
    Exporter,
    check_numa,
)
from foliolab.kernel import build, image, sources
from foliolab.kernel import specs as kernels_mod
from foliolab.kernel import store as kernel_store
from foliolab.kernel import trees as kernel_trees
from foliolab.manifest import CountRecord, RunManifest
from foliolab.render import report
from foliolab.render.report import Written
from foliolab.run import rootcheck
from foliolab.run.dryrun import dry_run, start_block
from foliolab.run.record import (
    differences,
    record_builds,
    record_series,
    start_manifest,
    utc_now,
)
from foliolab.run.stages import BootPlan, KernelsWanted, Request, RunStages
from foliolab.rundir import Held, RunKind
from foliolab.testrecord import Outcomes, TestStatus
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")


# ---- before anything is built ----------------------------------------------


def check(run: RunStages) -> Executor:
    """Every check of the run that needs no build, stage by stage; the
    executor, checked and made."""
    machine, plan, wanted = run.machine, run.plan, run.kernels
    check_counted(plan)  # the options alone, before --out is claimed
    _claim_out(plan, run.dry_run)  # first: --out is this run's to write
    HERE.check_machine(
        BootSpec(machine.arch, Path(), accel=machine.accel, cpu=machine.cpu)
    )
    for w in plan.workloads:  # each one's memory into its NUMA nodes
        check_numa(boot_spec(machine.boot_spec(Path(), "tcg"), w, Path(), 1))
    if plan.count:
        counting.check_accel(machine.accel)
    counting.check_root_option(plan.roots, plan.count)
    executor = make_executor(run.executor, plan.out, plan.count)
    # the run to finish read before any kernel's check may ask Debian's
    # archive: a damaged one is refused as its dry run refuses it
    kept = RunManifest.read(plan.out) if plan.resume else None
    specs = list(wanted.specs)
    kernels_mod.check_specs(specs, plan.count, offline=run.dry_run)
    roots_checked = rootcheck.check_kept(
        specs,
        list(plan.workloads),
        plan.roots,
        wanted.arch.name,
        wanted.config,
        plan.count,
    )
    if kept is not None:
        differences(start_manifest(run), kept, plan.count, plan.out)
    # last, the one check that does work (fetching, unpacking, applying);
    # a dry run changes nothing, so it applies nothing, and a resumed run
    # with nothing left to boot does nothing
    if not run.dry_run and not (plan.resume and nothing_to_resume(plan.out)):
        trees = kernel_trees.series_trees(specs)
        if not roots_checked:
            rootcheck.check_in_source(specs, plan.roots, trees)
    return executor


def check_counted(plan: BootPlan) -> None:
    """--count counts the workloads that mark a counting window and
    times the others (measure.plan); where none marks one, it would
    count nothing, and is refused."""
    if not plan.count or any(w.has_window for w in plan.workloads):
        return
    names = ", ".join(
        dict.fromkeys(w.sweep_of or w.name for w in plan.workloads)
    )
    raise UsageError(
        f"--count: none of the workloads ({names}) marks a counting "
        "window, so there is nothing to count",
        hint="leave --count out",
    )


def _claim_out(plan: BootPlan, dry_run: bool) -> Held | None:
    """A run writes only a directory of its own (rundir.claim): new,
    empty, or a compare run it finishes (--resume) or replaces
    (--force)."""
    held = rundir.claim(
        plan.out,
        RunKind.COMPARE,
        resume=plan.resume,
        force=plan.replace,
        resumable=True,
        forceable=True,
        dry_run=dry_run,
    )
    if held is not None and plan.replace:
        log.warning(
            "%s holds %s: --force %s its boots and samples",
            plan.out,
            held.describe(),
            "would delete" if dry_run else "deletes",
        )
    return held


def nothing_to_resume(out: Path) -> str | None:
    """--resume of a run that ended with every boot done (not stopped, no
    error): what to say instead of running anything, or None."""
    held = rundir.identify(out)
    if held is None or held.kind is not RunKind.COMPARE or not held.finished:
        return None
    # and every boot its last report listed is on disk, whole (a boot
    # removed to be booted again, a damaged one: named by read_boot)
    try:
        tests = Outcomes.read(out).tests
    except DamagedRunError:
        return None  # the run goes on and its report writes them again
    if any(t.status is TestStatus.MISS or not t.log for t in tests):
        return None
    listed = {(out / t.log).parent for t in tests}
    on_disk = set(bootrecord.boot_dirs(out))
    if listed != on_disk:
        return None
    if any(bootrecord.read_boot(d) is None for d in sorted(on_disk)):
        return None
    return (
        f"{out}: the run is finished, nothing to resume; its report is "
        f"{out / 'report.txt'} (`foliolab report {out}` writes it again)\n"
    )


# ---- kernels, image, machine ---------------------------------------------


def prepare_kernels(
    wanted: KernelsWanted, m: RunManifest, resume: bool = False
) -> dict[str, build.Kernel]:
    """Every kernel built (or found kept), recorded in the manifest."""
    specs = list(wanted.specs)
    if wanted.patches is not None:
        m.patches = [
            p.name for p in sources.read_patches(wanted.patches).patches
        ]
    trees = kernel_trees.source_trees(specs)
    record_series(m, specs, trees)
    kernels = kernel_store.prepare(specs, wanted.arch, wanted.config, trees)
    record_builds(m, kernels, resume)
    return kernels


@dataclass
class Machine:
    """What the boots of a run share."""

    kernels: dict[str, build.Kernel]
    image: Path
    spec: BootSpec  # the baseline's; run.boot_spec varies it
    counters: dict[str, Counter] | None = None


def prepare(run: RunStages, m: RunManifest) -> Machine:
    """Kernels, the base image and the guest machine, recorded in ``m``."""
    shape, plan = run.machine, run.plan
    arch = shape.arch
    kernels = prepare_kernels(run.kernels, m, plan.resume)
    img = image.build_image(arch)
    m.image = img.digest
    # TCG until the executor settles the accelerator (a lab's QEMU
    # chooses its own)
    settled = settle(
        run.executor.executor,
        shape.accel,
        shape.boot_spec(kernels[run.kernels.baseline.name].image, "tcg"),
        img.path,
        plan.count,
    )
    m.accel, m.qemu, spec = settled.accel, settled.emulator, settled.spec
    if spec.accel == "kvm":
        m.cpu = arch.cpu_kvm
    counters = None
    if plan.count:
        counters = _counters(arch, kernels, plan.workloads, plan.roots)
        m.count = CountRecord(
            str(counters[run.kernels.baseline.name].plugin),
            counting.PLUGIN_API,
            "per-vCPU counters, one callback per translated kernel block "
            "(exact with parallel vCPUs)",
            counting.root_semantics(arch.name),
            "nokaslr",
        )
    return Machine(kernels, img.path, spec, counters)


def _counters(
    arch: Arch,
    kernels: dict[str, build.Kernel],
    workloads: Sequence[Workload],
    roots: tuple[str, ...],
) -> dict[str, counting.Counter]:
    """Each kernel's counter, its roots checked against its System.map
    before the plugin is built (which may fetch QEMU's source)."""
    counting.check_roots(
        list(workloads),
        {v: counting.map_functions(k.build_dir) for v, k in kernels.items()},
        roots,
    )
    plugin = counting.build_plugin(arch)
    return {
        v: counting.counter_for(arch, k.build_dir, plugin)
        for v, k in kernels.items()
    }


# ---- the run ----------------------------------------------------------------


def _open(run: RunStages) -> RunManifest:
    """The run directory and its manifest: a new run clears the boots of
    an earlier one; a resumed run keeps them and its manifest's start."""
    out = run.plan.out
    out.mkdir(parents=True, exist_ok=True)
    rundir.hold(out)
    m = start_manifest(run)
    if run.plan.resume:
        old = RunManifest.read(out)
        m.started, m.command = old.started, old.command
        m.resumed = old.resumed + [list(run.command)]
        for k in m.kernels:  # the builds the run began with
            k.built = old.kernel(k.name).built
    else:
        # A run directory holds one run: the report derives every sample
        # from the boots under raw/, so an earlier run's must not stay.
        (out / "samples.jsonl").unlink(missing_ok=True)
        shutil.rmtree(out / "raw", ignore_errors=True)
    m.write(out)
    return m


def _measure(
    plan: BootPlan,
    machine: Machine,
    executor: Executor,
    record_times: bool = False,
) -> RunResult:
    return run_workloads(
        RunRequest(
            list(plan.workloads),
            plan.params,
            plan.runs,
            machine.kernels,
            machine.image,
            machine.spec,
            plan.out,
            plan.samples_per_boot,
            plan.fault,
            timeout=plan.timeout,
            counters=machine.counters,
            executor=executor,
            resume=plan.resume,
            monitors=plan.monitors,
            record_times=record_times,
        )
    )


Prepare = Callable[[RunStages, RunManifest], Machine]


@dataclass(frozen=True)
class Planned:
    """A dry run (what the run would do, said: dryrun.dry_run), or a
    --resume with nothing left to do (said so): nothing built, written
    or booted."""

    text: str


@dataclass(frozen=True)
class Finished:
    """A run that ended with its report written: the report, the boots
    that failed, the notes of `jobs collect`, and what ended the run with
    an error, for the command to raise once it has shown the report (a
    stop signal as StoppedError, failed boots as BenchmarkError; None if
    the run ended well)."""

    written: Written
    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: BaseException | None = None


def _quiet(text: str) -> None:
    """A ``say`` that shows nothing (a caller with no user to tell)."""


def compare(
    req: Request,
    prepare: Prepare = prepare,
    executor: Executor | None = None,
    say: Callable[[str], object] = _quiet,
) -> Planned | Finished:
    """Run the whole comparison (or, for a dry run, only plan it).
    ``prepare`` makes the kernels, image and machine, and ``executor``
    runs the boots (by default the one the request names; a test passes
    stand-ins). ``say`` is given the lines a real run starts with
    (dryrun.start_block) before anything is built. The request is turned
    once into its stages' inputs; from there on each stage is given its
    own. A run that ends in an error with no report of what finished
    raises it; with a report, the error is in Finished.error."""
    run = req.stages()
    plan = run.plan
    made = check(run)
    executor = executor or made
    if plan.resume:
        # said, and nothing written: not the manifest, not the report
        done = nothing_to_resume(plan.out)
        if done is not None:
            return Planned(done)
    if run.dry_run:
        return Planned(dry_run(run.kernels, run.machine, plan, run.executor))
    m = _open(run)
    say(start_block(run.kernels, plan, run.machine))
    result = None
    try:
        with stop_signals():
            machine = prepare(run, m)
            m.write(plan.out)
            result = _measure(
                plan,
                machine,
                executor,
                record_times=(executor is made and made.kind.boots_here),
            )
        m.failures = result.failures
    except (Stop, FoliolabError, KeyboardInterrupt) as e:
        _record_end(m, e)
        error: BaseException = e
        if isinstance(e, Stop):
            error = StoppedError(
                f"stopped by {e.signame}; the report of the boots that "
                f"finished is in {plan.out}",
                hint=f"finish the run with `{_resume_line(run)}`",
            )
        written = _report_what_finished(plan.out, m)
        if written is None:
            if error is e:
                raise
            raise error from None
        return Finished(written, tuple(m.failures), error=error)
    written = _finish(plan.out, m, samples=result.samples)
    failed = None
    if result.failures:
        failed = BenchmarkError(
            f"{len(result.failures)} boot(s) failed; results "
            f"so far are in {plan.out}",
            log_path=plan.out / "report.txt",
        )
    return Finished(written, tuple(result.failures), error=failed)


def _record_end(m: RunManifest, e: BaseException) -> None:
    """Why a run ended early (stopped by a signal, an error, an
    interrupt), in its manifest."""
    if isinstance(e, Stop):
        m.stopped = e.signame
        m.errors.append(f"stopped by {e.signame}")
    elif isinstance(e, FoliolabError):
        m.errors.append(e.one_line())
    else:
        m.errors.append("interrupted")


def _resume_line(run: RunStages) -> str:
    """The command that finishes the run: its own, with --resume."""
    cmd = [a for a in run.command if a != "--resume"] or [
        "foliolab",
        "compare",
    ]
    if not any(a == "--out" or a.startswith("--out=") for a in cmd):
        cmd += ["--out", str(run.plan.out)]
    return shlex.join(cmd + ["--resume"])


def _report_what_finished(out: Path, m: RunManifest) -> Written | None:
    """The report of a run that failed or was stopped, or None: a report
    that cannot be written (a damaged boot) must not hide why the run
    ended."""
    try:
        return _finish(out, m)
    except FoliolabError as e:
        log.warning("no report of what finished: %s", e.one_line())
        return None


def _finish(
    out: Path, m: RunManifest, samples: list[Sample] | None = None
) -> Written:
    m.finished = utc_now()
    m.write(out)
    return report.write_report(out, samples)


# ---- jobs export and collect ---------------------------------------------


def export(req: Request, prepare: Prepare = prepare) -> str:
    """`jobs export`: the run planned and its LAVA jobs written, nothing
    run; returns what was written, for the user."""
    run = req.stages()  # its executor: the jobs' exporter
    out = run.plan.out
    made = check(run)  # --out claimed there, as compare's
    exporter = cast(Exporter, made)
    m = _open(run)
    machine = prepare(run, m)
    exporter.record_into(m.executor)
    result = _measure(run.plan, machine, made)
    m.write(out)
    return exporter.summary_of(result.boots)


def collect(out: Path, logs: list[Path]) -> Finished:
    """`jobs collect`: LAVA logs read into the run directory ``out``; the
    manifest's failed boots as the boots now on disk say; the report, and
    a note for each log that has one."""
    rundir.hold(out)  # not while another command writes the run
    m = RunManifest.read(out)
    notes = []
    for captures, note in EXPORTER.collect(out, logs):
        for c in captures:
            outcome.judge(c)
        notes += [note] if note else []
    m.failures = runboots.failed_boots(out)
    m.write(out)
    return Finished(report.write_report(out), tuple(m.failures), tuple(notes))
