"""`foliolab compare`: every stage in order, for vanilla and patched.

    source -> build -> image -> boot/run -> stats -> report

Whatever fails, environment.json and the samples gathered so far are on
disk and the report is written before the error is raised again.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from foliolab import kernels as kernels_mod
from foliolab import __version__, build, counting, hostsetup, image, report, source
from foliolab.arch import get_arch
from foliolab.boot import (BootSpec, check_cpu_model, debug_cmdline,
                           probe_kvm)
from foliolab import lava
from foliolab.errors import BenchmarkError, FoliolabError, UsageError
from foliolab.executor import (LAVA_ROUNDS_PER_BLOCK, ExecutorKind,
                               LavaLocalExecutor, LavaServerExecutor,
                               QemuExecutor)
from foliolab.paths import PROJECT_ROOT
from foliolab.run import RunRequest, run_workloads
from foliolab.workloads import Workload

log = logging.getLogger("foliolab")


@dataclass
class CompareRequest:
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
    environment: dict = field(default_factory=dict)
    # --kernel NAME=SPEC, baseline first; empty: --patches' two kernels
    kernels: list[kernels_mod.KernelSpec] = field(default_factory=list)
    dry_run: bool = False           # print the plan, run nothing
    records_on: str = "port"        # "port" or "console" (as on a board)
    executor: ExecutorKind = ExecutorKind.QEMU
    lava: LavaOptions = field(default_factory=lambda: LavaOptions())

    @property
    def console_results(self) -> bool:
        # a LAVA job has no results port: its records are on the console
        return self.records_on == "console" or self.executor.is_lava


@dataclass(frozen=True)
class LavaOptions:
    """Where LAVA jobs run and fetch their artifacts from."""

    target: lava.Target = field(default_factory=lambda: lava.Target())
    url: str = ""                   # --lava-url ("": lavacli's identity)
    identity: str = "default"       # lavacli's identity
    artifacts_url: str = ""         # where a lab's workers fetch them
    artifacts_dir: Path | None = None   # default OUT/lava/artifacts


def _qemu_version(binary: str) -> str:
    try:
        cp = subprocess.run([binary, "--version"], capture_output=True,
                            text=True)
        return cp.stdout.splitlines()[0] if cp.stdout else "?"
    except OSError:
        return "not installed"


def _project_rev() -> str:
    cp = subprocess.run(["git", "-C", str(PROJECT_ROOT), "describe",
                         "--always", "--dirty"], capture_output=True, text=True)
    return cp.stdout.strip() or "?"


def choose_accel(want: str, spec: BootSpec, image_path: Path,
                 count: bool = False) -> str:
    spec.arch.check_accel(want)
    if want in ("tcg", "kvm"):
        return want
    if spec.cpu or count:
        return "tcg"            # a CPU model, or counting, is a TCG choice
    if not spec.arch.kvm:
        return "tcg"
    return "kvm" if probe_kvm(spec, image_path) else "tcg"


def kernel_specs(req: CompareRequest) -> list[kernels_mod.KernelSpec]:
    """The kernels to compare: ``--kernel``s, else ``--patches``' two."""
    return req.kernels or kernels_mod.from_patches(req.patches)


def prepare_kernels(req: CompareRequest, env: dict) -> dict[str, build.Kernel]:
    specs = kernel_specs(req)
    arch = get_arch(req.arch)
    if req.patches is not None and not req.kernels:
        env["patches"] = [p.name for p in
                          source.read_series(req.patches).patches]
    kernels = kernels_mod.prepare(specs, arch, req.config)
    env["commits"] = {v: k.commit for v, k in kernels.items()}
    env["config_sha"] = {v: k.config_sha for v, k in kernels.items()}
    env["build_seconds"] = {v: round(k.elapsed, 1) for v, k in kernels.items()}
    env["kernel_release"] = {v: k.release for v, k in kernels.items()}
    env["kernel_origin"] = {v: k.origin for v, k in kernels.items()
                            if k.origin}
    if len(set(env["config_sha"].values())) > 1:
        log.warning("the kernels' .configs differ (a series changes "
                    "Kconfig?): %s", env["config_sha"])
    return kernels


def dry_run(req: CompareRequest) -> str:
    """What a run would do: each kernel's build and every boot's QEMU
    command line, in boot order, with nothing built, written or booted."""
    from foliolab.run import boot_spec, plan
    arch = get_arch(req.arch)
    specs = kernel_specs(req)
    lines = [f"# dry run: {len(specs)} kernels, baseline {specs[0].name}; "
             f"config {req.config}, arch {arch.name}"]
    if req.executor.is_lava:
        lines.append(f"# executor {req.executor}: each workload's two "
                     "rounds are one LAVA job (device type "
                     f"{req.lava.target.device_type}); the QEMU lines below "
                     "are what the qemu executor would run for the same "
                     "boots")
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
    boots = plan(req.workloads, req.params, tuple(x.name for x in specs),
                 req.runs, req.samples_per_boot, counted=False)
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


def boot_argv(spec: BootSpec, rundir: Path) -> list[str]:
    from foliolab.boot import qemu_argv
    return qemu_argv(spec, rundir / "initrd.cpio", rundir / "console.log",
                     rundir / "results.txt")


def environment(req: CompareRequest,
                specs: list[kernels_mod.KernelSpec]) -> dict:
    """The run's environment.json as it starts: what was asked for, on
    which host (the stages add what they find)."""
    env = {
        "foliolab": f"{__version__} ({_project_rev()})",
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "host": {"kernel": platform.release(), "cpus": os.cpu_count(),
                 "machine": platform.machine()},
        "arch": req.arch, "accel": req.accel, "vcpus": req.vcpus,
        "cpu": req.cpu or get_arch(req.arch).cpu_tcg,
        "numa_nodes": req.numa_nodes, "config": req.config,
        "base_package": hostsetup.BASE_PACKAGE,
        "base_version": hostsetup.BASE_VERSION,
        "patches_label": (kernels_mod.describe(specs) if req.kernels
                          else "none (vanilla vs vanilla)"
                          if req.patches is None else str(req.patches)),
        # names in boot and report order; the first is the baseline
        "kernels": [k.name for k in specs],
        "kernel_specs": {k.name: k.text for k in specs},
        "runs": req.runs, "samples_per_boot": req.samples_per_boot,
        "workloads": [w.name for w in req.workloads],
        "memory_mb": {w.name: w.memory_mb for w in req.workloads},
        "numa_nodes_per_workload": {w.name: w.nodes(req.numa_nodes)
                                    for w in req.workloads},
        "params": {w.name: w.resolve(req.params.get(w.name, {}))
                   for w in req.workloads},
        "fault_injection": req.fault or None,
        "records_on": "console" if req.console_results else "port",
        "executor": executor_environment(req),
        "errors": [], "failures": [],
    }
    return env


def executor_environment(req: CompareRequest) -> dict:
    """Who ran the boots, as environment.json says it."""
    env: dict = {"kind": req.executor.value}
    if req.executor.is_lava:
        t = req.lava.target
        env.update(device_type=t.device_type, tags=list(t.tags),
                   lava_version=lava.LAVA_VERSION,
                   rounds_per_block=LAVA_ROUNDS_PER_BLOCK)
    if req.executor is ExecutorKind.LAVA:
        env.update(server=req.lava.url or f"lavacli:{req.lava.identity}",
                   artifacts_url=req.lava.artifacts_url)
    return env


def check_executor(req: CompareRequest, submit: bool = True) -> None:
    """Bad combinations of executor and options, before anything runs
    (``submit``: the jobs go to a server now, not only to files)."""
    if not req.executor.is_lava:
        return
    if req.count:
        raise UsageError(f"--count needs foliolab's QEMU plugin in the QEMU "
                         f"that runs the guest; --executor {req.executor} "
                         "runs LAVA's", hint="count with --executor qemu")
    req.lava.target.check()
    if req.executor is ExecutorKind.LAVA_LOCAL:
        if not req.lava.target.is_qemu:
            raise UsageError(f"--executor lava-local runs LAVA's qemu device "
                             f"type on this machine, not a "
                             f"{req.lava.target.device_type}",
                             hint="boards run with --executor lava on a lab")
        if os.geteuid() != 0:
            raise UsageError("--executor lava-local needs root: LAVA's "
                             "lava-run refuses to run otherwise",
                             hint="run as root, or `foliolab jobs export` "
                                  "the jobs for a LAVA worker")
    if req.executor is ExecutorKind.LAVA and submit:
        from foliolab import lavaserver
        lavaserver.credentials(req.lava.url, req.lava.identity)
        if not req.lava.artifacts_url:
            raise UsageError("--executor lava needs --artifacts-url: the "
                             "lab's workers fetch kernels, ramdisk and job "
                             "archives from it",
                             hint="serve --artifacts-dir over HTTP and give "
                                  "its URL")


def make_executor(req: CompareRequest, image_path: Path, accel: str):
    if req.executor is ExecutorKind.LAVA_LOCAL:
        return LavaLocalExecutor(image_path, req.out, kvm=accel == "kvm")
    if req.executor is ExecutorKind.LAVA:
        from foliolab import lavaserver
        creds = lavaserver.credentials(req.lava.url, req.lava.identity)
        return LavaServerExecutor(image_path, req.out, req.lava.target,
                                  lavaserver.Server(creds),
                                  req.lava.artifacts_dir,
                                  req.lava.artifacts_url)
    return QemuExecutor(image_path)


def compare(req: CompareRequest) -> str:
    """Run the whole comparison; return the text report."""
    # Bad input is found before anything is built or written.
    check_cpu_model(BootSpec(get_arch(req.arch), Path(), accel=req.accel,
                             cpu=req.cpu))
    if req.count:
        counting.check_accel(req.accel)
    check_executor(req)
    specs = kernel_specs(req)
    kernels_mod.check_specs(specs, req.count)
    if req.dry_run:
        return dry_run(req)
    req.out.mkdir(parents=True, exist_ok=True)
    # A run directory holds one run: the report derives every sample from
    # the boots under raw/, so an earlier run's must not stay there.
    (req.out / "samples.jsonl").unlink(missing_ok=True)
    shutil.rmtree(req.out / "raw", ignore_errors=True)
    env = environment(req, specs)
    env.update(req.environment)
    env_path = req.out / "environment.json"

    def save_env() -> None:
        env_path.write_text(json.dumps(env, indent=1, default=str) + "\n")

    save_env()
    result = None
    try:
        arch = get_arch(req.arch)
        kernels = prepare_kernels(req, env)
        img = image.build_image(arch)
        env["image"] = img.digest
        baseline = kernels[specs[0].name]
        spec = BootSpec(arch, baseline.image, vcpus=req.vcpus,
                        numa_nodes=req.numa_nodes, cpu=req.cpu,
                        cmdline=debug_cmdline(req.config),
                        console_results=req.console_results)
        if req.executor is ExecutorKind.LAVA:
            env["accel"] = f"lava {req.lava.target.device_type}"
        else:
            env["accel"] = choose_accel(req.accel, spec, img.path, req.count)
        counters = None
        if req.count:
            counters = {v: counting.counter_for(arch, k.build_dir)
                        for v, k in kernels.items()}
            counting.check_roots(req.workloads, counters)
            env["count"] = {
                "plugin": str(counters[specs[0].name].plugin),
                "plugin_api": counting.PLUGIN_API,
                "mode": "per-vCPU counters, one callback per translated "
                        "kernel block (exact with parallel vCPUs)",
                "cmdline": "nokaslr"}
        env["qemu"] = (_qemu_version(arch.qemu_binary)
                       if req.executor is not ExecutorKind.LAVA
                       else "the lab's (see each job's log)")
        if req.executor is not ExecutorKind.LAVA:
            spec = replace(spec, accel=env["accel"])
        if spec.accel == "kvm":
            env["cpu"] = arch.cpu_kvm
        save_env()
        result = run_workloads(RunRequest(
            req.workloads, req.params, req.runs, kernels, img.path, spec,
            req.out, req.samples_per_boot, req.fault, timeout=req.timeout,
            counters=counters,
            executor=make_executor(req, img.path, spec.accel)))
        env["failures"] = result.failures
    except FoliolabError as e:
        env["errors"].append(e.one_line())
        raise
    except KeyboardInterrupt:
        env["errors"].append("interrupted")
        raise
    finally:
        env["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(
            timespec="seconds")
        save_env()
        text = report.write_report(req.out)
        if result is None:
            print(text)
    if result.failures:
        print(text)
        raise BenchmarkError(f"{len(result.failures)} boot(s) failed; results "
                             f"so far are in {req.out}",
                             log_path=req.out / "report.txt")
    return text
