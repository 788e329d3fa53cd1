"""`foliolab jobs export` and `jobs collect`: a run's boots as LAVA jobs.

export plans a run as `compare` does (kernels built, boots interleaved)
and writes, instead of booting, one LAVA job per interleaved block, the
artifacts the jobs fetch, and the run directory every boot will report
into (environment.json and each boot's job.json). collect reads the logs
of those jobs, from lava-run or downloaded from a lab, into that run
directory: each boot's console, its records recovered from the console,
and how it ended, after which `foliolab report` reads the run like any
other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab import bootrecord, derive, image, lava, report
from foliolab.arch import get_arch
from foliolab.boot import BootSpec, debug_cmdline
from foliolab.bootrecord import BootStatus
from foliolab.compare import (CompareRequest, LavaOptions, check_executor,
                              environment, kernel_specs, prepare_kernels)
from foliolab.errors import UsageError
from foliolab.executor import JOBS_DIR, ExecutorKind, LavaExport
from foliolab import kernels as kernels_mod
from foliolab.run import RunRequest, run_workloads


@dataclass(frozen=True)
class ExportRequest:
    compare: CompareRequest
    target: lava.Target
    artifacts_url: str = ""        # "": file:// of the artifacts directory


def export(req: ExportRequest) -> str:
    """Write the jobs of a run; return what was written, for the user."""
    c = replace(req.compare, executor=ExecutorKind.LAVA,
                lava=LavaOptions(req.target, artifacts_url=req.artifacts_url))
    check_executor(c, submit=False)
    specs = kernel_specs(c)
    kernels_mod.check_specs(specs, False)
    arch = get_arch(c.arch)
    out = c.out
    if (out / "raw").exists():
        raise UsageError(f"{out} already holds a run",
                         hint="give a new --out directory")
    out.mkdir(parents=True, exist_ok=True)
    env = environment(c, specs)
    env.update(c.environment)
    kernels = prepare_kernels(c, env)
    img = image.build_image(arch)
    env["image"] = img.digest
    env["accel"] = f"lava {req.target.device_type}"
    exporter = LavaExport(img.path, out, req.target, req.artifacts_url)
    env["executor"]["artifacts_url"] = exporter.store.base_url
    spec = BootSpec(arch, kernels[specs[0].name].image, vcpus=c.vcpus,
                    numa_nodes=c.numa_nodes, cpu=c.cpu,
                    cmdline=debug_cmdline(c.config), console_results=True)
    result = run_workloads(RunRequest(
        c.workloads, c.params, c.runs, kernels, img.path, spec, out,
        c.samples_per_boot, c.fault, timeout=c.timeout, executor=exporter))
    (out / "environment.json").write_text(
        json.dumps(env, indent=1, default=str) + "\n")
    return (f"{len(exporter.written)} LAVA jobs ({result.boots} boots) in "
            f"{out / JOBS_DIR}, valid for LAVA {lava.LAVA_VERSION}\n"
            f"artifacts: {exporter.store.directory} (the jobs fetch them "
            f"from {exporter.store.base_url})\n"
            f"then: foliolab jobs collect {out} LOG...\n")


def _planned_blocks(out: Path) -> dict[str, list[str]]:
    """Each exported job's boots, in order (from its metadata)."""
    import yaml
    blocks = {}
    for path in sorted((out / JOBS_DIR).glob("*.yaml")):
        if path.name.endswith(".device.yaml"):
            continue            # lava-local's rendered device, not a job
        meta = yaml.safe_load(path.read_text()).get("metadata", {})
        blocks[path.stem] = meta.get("foliolab.boots", "").split(",")
    return blocks


def collect(out: Path, logs: list[Path]) -> str:
    """Read LAVA logs into the run directory ``out``; return the report."""
    if not (out / JOBS_DIR).is_dir():
        raise UsageError(f"{out} holds no exported jobs",
                         hint="give the --out directory of `foliolab jobs "
                              "export`")
    blocks = _planned_blocks(out)
    block_of = {bid: name for name, ids in blocks.items() for bid in ids}
    notes = []
    for path in logs:
        if not path.is_file():
            raise UsageError(f"{path}: no such log file")
        text = path.read_text(errors="replace")
        parts = lava.split_boots(lava.console_lines(text))
        named = [p.boot_id for p in parts if p.boot_id]
        if not named:
            raise UsageError(f"{path}: no boot of a foliolab job in it",
                             hint="give the log of a job that `jobs export` "
                                  "wrote (its console shows foliolab.boot=)")
        if named[0] not in block_of:
            raise UsageError(f"{path}: boot {named[0]} is not one {out} "
                             "planned", hint="collect into the directory "
                                             "its jobs were exported to")
        block = block_of[named[0]]
        ids = blocks[block]
        try:
            results = lava.block_results(text, ids,
                                         [out / "raw" / i for i in ids],
                                         str(path), ExecutorKind.LAVA.value)
        except lava.LavaError as e:
            raise UsageError(e.message.replace(f"{path}: ", f"{path}: job "
                                               f"{block}: ", 1),
                             hint=e.hint) from e
        missing = [i for i, r in zip(ids, results)
                   if r.status is BootStatus.NOT_RUN]
        if missing:
            notes.append(f"{path.name}: job {block} ended before "
                         f"{', '.join(missing)}")
    samples = derive.rederive(out) or []
    derive.write_samples(out, samples)
    _boot_failures_again(out)
    text = report.write_report(out)
    return text + "".join(f"note: {n}\n" for n in notes)


def _boot_failures_again(out: Path) -> None:
    """environment.json's failed boots, as the boots now on disk say (a run
    collected again keeps no failure of an earlier reading)."""
    env_path = out / "environment.json"
    env = json.loads(env_path.read_text())
    failures = []
    for rundir in bootrecord.boot_dirs(out):
        res = bootrecord.read_boot(rundir)
        if res is not None and not res.clean:
            failures.append(f"{rundir.parent.name}/{rundir.name}: "
                            f"{res.describe()}; console log: {res.console}")
    env["failures"] = failures
    env_path.write_text(json.dumps(env, indent=1, default=str) + "\n")
