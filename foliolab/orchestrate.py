"""The one orchestrator behind `compare`, `attribute` and `jobs export`:

    check -> manifest -> kernels, image, machine -> measure -> report

Bad input is found before anything is built or written (``check``). The
run's manifest is written when the run starts and completed as it ends;
whatever fails, or stops it (SIGTERM, SIGINT), the samples gathered so far
are on disk and the report of what finished is written. ``--resume``
checks the request against the manifest and runs only the boots that have
no boot.json yet.

Its stages live elsewhere: the manifest as the request makes it and what
--resume compares (runrecord.py), the plan said before it runs
(dryrun.py), the boots (measure.py, through an executor), the report
(report.py). `foliolab run`'s one boot is runcommand.py.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from foliolab import counting, proc, report, rootcheck, runboots
from foliolab.kernel import build, image, source
from foliolab.kernel import specs as kernels_mod
from foliolab.kernel import store as kernel_store
from foliolab.kernel import trees as kernel_trees
from foliolab.arch import get_arch
from foliolab.dryrun import dry_run, start_block
from foliolab.errors import (BenchmarkError, FoliolabError, Stop,
                             StoppedError, UsageError, stop_signals)
from foliolab.executors import ExecutorOptions, make_executor
from foliolab.executors.base import BootSpec, Executor, ExecutorKind
from foliolab.executors.lava.debs import LAVA_VERSION
from foliolab.executors.lava.export import collect as read_logs
from foliolab.executors.lava.job import JOBS_DIR
from foliolab.executors.qemu import check_cpu_model, choose_accel
from foliolab.kernel.kconfig import debug_cmdline
from foliolab.manifest import CountRecord, RunManifest
from foliolab.measure import RunRequest, RunResult, run_workloads
from foliolab.runrecord import (differences, qemu_version,
                                record_builds, record_series,
                                start_manifest, utc_now)
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")


@dataclass
class Request:
    """A measured run, as the command line asks for it."""

    workloads: list[Workload]
    params: dict[str, dict[str, str]]
    runs: int
    patches: Path | None          # None: A/A (vanilla vs vanilla)
    arch: str
    out: Path
    config: str = "perf"
    accel: str = "auto"
    vcpus: int = 2
    numa_nodes: int = 1
    cpu: str = ""                  # TCG CPU model; "" = the arch's default
    samples_per_boot: int = 1
    fault: str = ""
    timeout: float | None = None   # per-boot limit; default: the workload's
    count: bool = False            # add a counting boot per sample
    # --root: counted in every workload (``workloads`` already count them)
    roots: tuple[str, ...] = ()
    # --kernel NAME=SPEC, baseline first; empty: --patches' two kernels
    kernels: list[kernels_mod.KernelSpec] = field(default_factory=list)
    attribution: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False           # print the plan, run nothing
    records_on: str = "port"        # "port" or "console" (as on a board)
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    resume: bool = False            # finish the run in ``out``
    command: list[str] = field(default_factory=list)
    monitors: bool = False          # sample vmstat/interrupts each second

    @property
    def console_results(self) -> bool:
        # a LAVA job has no results port: its records are on the console
        return (self.records_on == "console"
                or not self.executor.executor.results_port)

    @property
    def specs(self) -> list[kernels_mod.KernelSpec]:
        """The kernels to compare: ``--kernel``s, else ``--patches``' two."""
        return self.kernels or kernels_mod.from_patches(self.patches)


# ---- before anything is built ----------------------------------------------

def check(req: Request) -> Executor:
    """Every check of the request that needs no build; the executor,
    checked and made."""
    check_cpu_model(BootSpec(get_arch(req.arch), Path(), accel=req.accel,
                             cpu=req.cpu))
    if req.count:
        counting.check_accel(req.accel)
    counting.check_root_option(req.roots, req.count)
    executor = make_executor(req.executor, req.out, req.count)
    kernels_mod.check_specs(req.specs, req.count)
    _check_kernel_trees(req.specs)
    roots_checked = rootcheck.check_kept(req.specs, req.workloads,
                                         req.roots, req.arch,
                                         req.config, req.count)
    if req.resume:
        differences(req, RunManifest.read(req.out))
    elif not req.dry_run and (req.out / "raw").exists() and any(
            (req.out / "raw").iterdir()):
        log.warning("%s holds an earlier run: its boots are cleared (use "
                    "--resume to finish it instead)", req.out)
    # last, the one check that does work (fetching, unpacking, applying);
    # a dry run changes nothing, so it applies nothing
    if not req.dry_run:
        trees = kernel_trees.series_trees(req.specs)
        if not roots_checked:
            rootcheck.check_in_source(req.specs, req.roots, trees)
    return executor


def _check_kernel_trees(specs: list[kernels_mod.KernelSpec]) -> None:
    """A git: kernel's commit (or the one its series goes on) must be a
    kernel tree (its mm/ has rmap.c)."""
    for k in (s.source_spec() for s in specs):
        if k.kind is not kernels_mod.SpecKind.GIT:
            continue
        cp = proc.run(["git", "-C", k.repo, "cat-file", "-e",
                       f"{k.ref}:mm/rmap.c"], check=False)
        if cp.returncode != 0:
            raise UsageError(f"kernel {k.name}: {k.text} is not a Linux "
                             "kernel tree (no mm/rmap.c at that commit)",
                             hint="give git:PATH@REF of a kernel clone")


# ---- kernels, image, machine ---------------------------------------------

def prepare_kernels(req: Request, m: RunManifest) -> dict[str, build.Kernel]:
    """Every kernel built (or found kept), recorded in the manifest."""
    if req.patches is not None and not req.kernels:
        m.patches = [p.name for p in source.read_series(req.patches).patches]
    trees = kernel_trees.source_trees(req.specs)
    record_series(m, req.specs, trees)
    kernels = kernel_store.prepare(req.specs, get_arch(req.arch),
                                   req.config, trees)
    record_builds(req, m, kernels)
    return kernels


@dataclass
class Machine:
    """What the boots of a run share."""

    kernels: dict[str, build.Kernel]
    image: Path
    spec: BootSpec                  # the baseline's; run.boot_spec varies it
    counters: dict | None = None


def prepare(req: Request, m: RunManifest) -> Machine:
    """Kernels, the base image and the guest machine, recorded in ``m``."""
    arch = get_arch(req.arch)
    kernels = prepare_kernels(req, m)
    img = image.build_image(arch)
    m.image = img.digest
    spec = BootSpec(arch, kernels[req.specs[0].name].image, vcpus=req.vcpus,
                    numa_nodes=req.numa_nodes, cpu=req.cpu,
                    cmdline=debug_cmdline(req.config),
                    console_results=req.console_results)
    if not req.executor.executor.boots_here:
        m.accel = "lava"
        m.qemu = "LAVA's (see each job's log)"
    else:
        m.accel = choose_accel(req.accel, spec, img.path, req.count)
        m.qemu = qemu_version(arch.qemu_binary)
        spec = replace(spec, accel=m.accel)
    if spec.accel == "kvm":
        m.cpu = arch.cpu_kvm
    counters = None
    if req.count:
        counters = _counters(req, arch, kernels)
        m.count = CountRecord(
            str(counters[req.specs[0].name].plugin), counting.PLUGIN_API,
            "per-vCPU counters, one callback per translated kernel block "
            "(exact with parallel vCPUs)", counting.root_semantics(arch.name),
            "nokaslr")
    return Machine(kernels, img.path, spec, counters)


def _counters(req: Request, arch, kernels: dict[str, build.Kernel]
              ) -> dict[str, counting.Counter]:
    """Each kernel's counter, its roots checked against its System.map
    before the plugin is built (which may fetch QEMU's source)."""
    counting.check_roots(req.workloads, {
        v: counting.map_functions(k.build_dir) for v, k in kernels.items()},
        req.roots)
    plugin = counting.build_plugin(arch)
    return {v: counting.counter_for(arch, k.build_dir, plugin)
            for v, k in kernels.items()}


# ---- the run ----------------------------------------------------------------

def _open(req: Request) -> RunManifest:
    """The run directory and its manifest: a new run clears the boots of
    an earlier one; a resumed run keeps them and its manifest's start."""
    req.out.mkdir(parents=True, exist_ok=True)
    m = start_manifest(req)
    if req.resume:
        old = RunManifest.read(req.out)
        m.started, m.command = old.started, old.command
        m.resumed = old.resumed + [req.command]
        for k in m.kernels:        # the builds the run began with
            k.built = old.kernel(k.name).built
    else:
        # A run directory holds one run: the report derives every sample
        # from the boots under raw/, so an earlier run's must not stay.
        (req.out / "samples.jsonl").unlink(missing_ok=True)
        shutil.rmtree(req.out / "raw", ignore_errors=True)
    m.write(req.out)
    return m


def _measure(req: Request, m: RunManifest, machine: Machine,
             executor: Executor, record_times: bool = False) -> RunResult:
    return run_workloads(RunRequest(
        req.workloads, req.params, req.runs, machine.kernels, machine.image,
        machine.spec, req.out, req.samples_per_boot, req.fault,
        timeout=req.timeout, counters=machine.counters, executor=executor,
        resume=req.resume, monitors=req.monitors,
        record_times=record_times))


Prepare = Callable[[Request, RunManifest], Machine]


def compare(req: Request, prepare: Prepare = prepare,
            executor: Executor | None = None) -> str:
    """Run the whole comparison; return the text report. ``prepare`` makes
    the kernels, image and machine, and ``executor`` runs the boots (by
    default the one the request names; a test passes stand-ins)."""
    made = check(req)
    executor = executor or made
    if req.dry_run:
        return dry_run(req)
    m = _open(req)
    sys.stderr.write(start_block(req))
    result = None
    try:
        with stop_signals():
            machine = prepare(req, m)
            m.write(req.out)
            result = _measure(req, m, machine, executor,
                              executor is made and made.boots_here)
        m.failures = result.failures
    except Stop as s:
        m.stopped = s.signame
        m.errors.append(f"stopped by {s.signame}")
        _report_what_finished(req, m)
        raise StoppedError(
            f"stopped by {s.signame}; the report of the boots that "
            f"finished is in {req.out}",
            hint=f"finish the run with `{_resume_line(req)}`"
        ) from None
    except FoliolabError as e:
        m.errors.append(e.one_line())
        _report_what_finished(req, m)
        raise
    except KeyboardInterrupt:
        m.errors.append("interrupted")
        _report_what_finished(req, m)
        raise
    text = _finish(req, m, samples=result.samples)
    if result.failures:
        print(text)
        raise BenchmarkError(f"{len(result.failures)} boot(s) failed; results "
                             f"so far are in {req.out}",
                             log_path=req.out / "report.txt")
    return text


def _resume_line(req: Request) -> str:
    """The command that finishes the run: its own, with --resume."""
    cmd = [a for a in req.command if a != "--resume"] or ["foliolab",
                                                         "compare"]
    if not any(a == "--out" or a.startswith("--out=") for a in cmd):
        cmd += ["--out", str(req.out)]
    return shlex.join(cmd + ["--resume"])


def _report_what_finished(req: Request, m: RunManifest) -> None:
    """The report of a run that failed or was stopped, printed; a report
    that cannot be written (a damaged boot) must not hide why the run
    ended."""
    try:
        _finish(req, m, print_report=True)
    except FoliolabError as e:
        log.warning("no report of what finished: %s", e.one_line())


def _finish(req: Request, m: RunManifest, samples=None,
            print_report: bool = False) -> str:
    m.finished = utc_now()
    m.write(req.out)
    text = report.write_report(req.out, samples)
    if print_report:
        print(text)
    return text


# ---- jobs export and collect ---------------------------------------------

def export(req: Request, prepare: Prepare = prepare) -> str:
    """`jobs export`: the run planned and its LAVA jobs written, nothing
    run; returns what was written, for the user."""
    req = replace(req, executor=replace(req.executor,
                                        kind=ExecutorKind.LAVA_EXPORT))
    exporter = check(req)
    if (req.out / "raw").exists():
        raise UsageError(f"{req.out} already holds a run",
                         hint="give a new --out directory")
    m = _open(req)
    machine = prepare(req, m)
    m.executor.artifacts_url = exporter.base_url
    result = _measure(req, m, machine, exporter)
    m.write(req.out)
    return (f"{len(exporter.written)} LAVA jobs ({result.boots} boots) in "
            f"{req.out / JOBS_DIR}, valid for LAVA {LAVA_VERSION}\n"
            f"artifacts: {exporter.store.directory} (the jobs fetch them "
            f"from {exporter.base_url})\n"
            f"then: foliolab jobs collect {req.out} LOG...\n")


def collect(out: Path, logs: list[Path]) -> str:
    """`jobs collect`: LAVA logs read into the run directory ``out``; the
    manifest's failed boots as the boots now on disk say; the report."""
    m = RunManifest.read(out)
    notes = read_logs(out, logs)
    m.failures = runboots.failed_boots(out)
    m.write(out)
    text = report.write_report(out)
    return text + "".join(f"note: {n}\n" for n in notes)




