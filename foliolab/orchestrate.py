"""The one orchestrator behind `compare`, `attribute` and `jobs export`:

    check -> manifest -> kernels, image, machine -> measure -> report

Bad input is found before anything is built or written (``check``). The
run's manifest is written when the run starts and completed as it ends;
whatever fails, or stops it (SIGTERM, SIGINT), the samples gathered so far
are on disk and the report of what finished is written. ``--resume``
checks the request against the manifest and runs only the boots that have
no boot.json yet.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from foliolab import __version__, build, counting, hostsetup, image, proc
from foliolab import kernels as kernels_mod
from foliolab import analyse, report, source, timings
from foliolab.arch import get_arch
from foliolab.bootrecord import BootResult
from foliolab.errors import (BenchmarkError, FoliolabError, Stop,
                             StoppedError, UsageError, stop_signals)
from foliolab import executors
from foliolab.executors import ExecutorOptions, make_executor
from foliolab.executors.base import (BootRequest, BootSpec, Executor,
                                     ExecutorKind)
from foliolab.executors.qemu import (QemuExecutor, check_cpu_model,
                                     choose_accel, qemu_argv)
from foliolab.kconfig import debug_cmdline
from foliolab.executors.lava.debs import LAVA_VERSION
from foliolab.executors.lava.job import JOBS_DIR
from foliolab.manifest import (KernelRecord, RunManifest,
                               SeriesRecord, plain)
from foliolab.measure import RunRequest, RunResult, boot_spec, plan
from foliolab.measure import planned_time, run_workloads
from foliolab.paths import PROJECT_ROOT
from foliolab.workloads import Workload

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
    _check_kept_roots(req)
    if req.resume:
        differences(req, RunManifest.read(req.out))
    elif not req.dry_run and (req.out / "raw").exists() and any(
            (req.out / "raw").iterdir()):
        log.warning("%s holds an earlier run: its boots are cleared (use "
                    "--resume to finish it instead)", req.out)
    # last, the one check that does work (fetching, unpacking, applying);
    # a dry run changes nothing, so it applies nothing
    if not req.dry_run:
        kernels_mod.series_trees(req.specs)
    return executor


def _check_kept_roots(req: Request) -> None:
    """--count's roots against the kernels' System.maps, when every kernel
    is kept built already (nothing is fetched or built to know); else they
    are checked once the kernels are built, before the counter is."""
    if not req.count:
        return
    arch = get_arch(req.arch)
    functions = {}
    for k in req.specs:
        where = _kept_symbols(k, arch, req.config)
        if where is None:
            if req.roots:
                log.info("--root %s: checked against the kernels' "
                         "System.map once they are built", ",".join(req.roots))
            return
        functions[k.name] = counting.map_functions(where)
    counting.check_roots(req.workloads, functions, req.roots)


def _kept_symbols(k: kernels_mod.KernelSpec, arch, config: str
                  ) -> Path | None:
    """Where the kept build of ``k`` has its System.map, if it is kept."""
    try:
        kept, _ = kernels_mod.kept_kernel(k, arch, config)
    except FoliolabError:
        return None
    if kept is not None and k.kind is kernels_mod.SpecKind.IMAGE:
        system_map = kernels_mod.find_beside(k.image, "System.map")
        return system_map.parent if system_map else None
    return kept


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


# ---- the manifest -----------------------------------------------------------

def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _project_rev() -> str:
    cp = proc.run(["git", "-C", PROJECT_ROOT, "describe", "--always",
                   "--dirty"], check=False)
    return cp.stdout.strip() or "?"


def _qemu_version(binary: str) -> str:
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
        started=_now(),
        host={"kernel": platform.release(), "cpus": os.cpu_count(),
              "machine": platform.machine()},
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


def _given(k: kernels_mod.KernelSpec) -> dict:
    """A kernel's spec as the manifest keeps it; a series with the sha of
    its patches (the report's reproduce line names it)."""
    given = plain(k)
    if k.kind is kernels_mod.SpecKind.SERIES:
        given["series_sha"] = k.series().digest
    return given


# ---- kernels, image, machine ---------------------------------------------

def prepare_kernels(req: Request, m: RunManifest) -> dict[str, build.Kernel]:
    """Every kernel built (or found kept), recorded in the manifest."""
    if req.patches is not None and not req.kernels:
        m.patches = [p.name for p in source.read_series(req.patches).patches]
    trees = kernels_mod.source_trees(req.specs)
    record_series(m, req.specs, trees)
    kernels = kernels_mod.prepare(req.specs, get_arch(req.arch), req.config,
                                  trees)
    record_builds(req, m, kernels)
    return kernels


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
        k.built = plain(kernels[k.name])
    shas = {k.name: k.config_sha for k in m.kernels}
    if len(set(shas.values())) > 1:
        log.warning("the kernels' .configs differ (a series changes "
                    "Kconfig?): %s", shas)


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
        m.qemu = _qemu_version(arch.qemu_binary)
        spec = replace(spec, accel=m.accel)
    if spec.accel == "kvm":
        m.cpu = arch.cpu_kvm
    counters = None
    if req.count:
        counters = _counters(req, arch, kernels)
        m.count = {"plugin": str(counters[req.specs[0].name].plugin),
                   "plugin_api": counting.PLUGIN_API,
                   "mode": "per-vCPU counters, one callback per translated "
                           "kernel block (exact with parallel vCPUs)",
                   "roots": counting.root_semantics(arch.name),
                   "cmdline": "nokaslr"}
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
    m.finished = _now()
    m.write(req.out)
    text = report.write_report(req.out, samples)
    if print_report:
        print(text)
    return text


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
        out = build.build_dir(arch, req.config, kernels_mod.slot_of(k))
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
        kept, key = kernels_mod.kept_kernel(k, arch, req.config)
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
    from foliolab.executors.lava.export import collect as read_logs
    m = RunManifest.read(out)
    notes = read_logs(out, logs)
    m.failures = analyse.failed_boots(out)
    m.write(out)
    text = report.write_report(out)
    return text + "".join(f"note: {n}\n" for n in notes)


# ---- foliolab run -------------------------------------------------------------

@dataclass(frozen=True)
class CommandRequest:
    """`foliolab run`: one boot of a built kernel running a command."""

    cmd: list[str]
    arch: str
    variant: str                    # vanilla | patched
    patches: Path | None
    config: str
    accel: str
    vcpus: int
    memory_mb: int
    numa_nodes: int
    timeout: float
    cpu: str = ""
    append: tuple[str, ...] = ()
    console_results: bool = False
    add: list[Path] = field(default_factory=list)
    count: bool = False
    roots: tuple[str, ...] = ()
    kernel: str = ""                # --kernel NAME=SPEC, instead of variant


def _check_command(req: CommandRequest) -> None:
    check_cpu_model(BootSpec(get_arch(req.arch), Path(), accel=req.accel,
                             cpu=req.cpu))
    counting.check_root_option(req.roots, req.count)
    if len(req.roots) > counting.MAX_ROOTS:
        raise UsageError(f"--root given {len(req.roots)} times; the counter "
                         f"follows at most {counting.MAX_ROOTS} roots",
                         hint="drop some --root options")
    if req.count:
        counting.check_accel(req.accel)


def tree(variant: str, patches: Path | None, kernel: str = ""
         ) -> source.Tree:
    """The source tree of ``variant`` (patched: the base with ``patches``),
    or of ``kernel`` (``NAME=SPEC``, any source spec) when given; a bad
    spec is refused before anything is built."""
    if kernel:
        k = kernels_mod.parse_kernel(kernel)
        if k.kind is kernels_mod.SpecKind.IMAGE:
            raise UsageError(f"--kernel {kernel}: this command builds the "
                             "kernel it boots", hint="give a source spec: "
                             f"{kernels_mod.SOURCE_FORMS}, each with "
                             "+DIR[:N] or without")
        kernels_mod.check_spec(k)
        return kernels_mod.tree_of(k)
    if variant == "vanilla" or patches is None:
        return source.prepare_vanilla()
    return source.prepare_patched(source.read_series(patches))


def boot_command(req: CommandRequest) -> tuple[BootResult, str]:
    """Build (or find) the kernel, boot it running the command; the boot's
    result and the kernel's variant."""
    _check_command(req)
    arch = get_arch(req.arch)
    src = tree(req.variant, req.patches, req.kernel)
    kernel = build.build_kernel(src, arch, req.config)
    img = image.build_image(arch)
    spec = BootSpec(arch, kernel.image, vcpus=req.vcpus,
                    memory_mb=req.memory_mb, numa_nodes=req.numa_nodes,
                    timeout=req.timeout, cpu=req.cpu,
                    cmdline=debug_cmdline(req.config) + req.append,
                    console_results=req.console_results)
    spec = replace(spec, accel=choose_accel(req.accel, spec, img.path,
                                            req.count))
    job = shlex.join(req.cmd) + "\n"
    if req.count:
        have = counting.map_functions(kernel.build_dir)
        missing = [r for r in req.roots if r not in have]
        if missing:
            raise UsageError(f"--root {missing[0]}: no such function in the "
                             f"{src.variant} kernel's System.map",
                             hint="give a kernel text symbol (static "
                                  "functions may carry a suffix such as "
                                  ".isra.0)")
        counter = counting.counter_for(arch, kernel.build_dir)
        spec = replace(spec, counter=counter.with_roots(req.roots),
                       timeout=req.timeout * counting.TIMEOUT_FACTOR)
        # The window closes in the marker's own process, so it also holds
        # one fork and exec of flmark (a few hundred thousand insns).
        job = (f"flmark begin {counting.RUN_WINDOW}\n{job}fl_rc=$?\n"
               f"flmark end {counting.RUN_WINDOW}\nexit $fl_rc\n")
    rundir = Path(tempfile.mkdtemp(prefix="foliolab-run-"))
    res = QemuExecutor().boot(BootRequest("run", spec, job, rundir,
                                          tuple(req.add)), img.path)
    return res, src.variant
