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
from dataclasses import dataclass
from pathlib import Path

from foliolab import boot as boot_mod
from foliolab import bootrecord, derive, image, lava, report
from foliolab.arch import get_arch
from foliolab.boot import BootSpec, debug_cmdline
from foliolab.bootrecord import BootJob, BootResult
from foliolab.compare import (CompareRequest, environment, kernel_specs,
                              prepare_kernels)
from foliolab.errors import UsageError
from foliolab import kernels as kernels_mod
from foliolab.run import boot_spec, plan

JOBS_DIR = "lava/jobs"
ARTIFACTS_DIR = "lava/artifacts"


@dataclass(frozen=True)
class ExportRequest:
    compare: CompareRequest
    target: lava.Target
    artifacts_url: str = ""        # "": file:// of the artifacts directory


def export(req: ExportRequest) -> str:
    """Write the jobs of a run; return what was written, for the user."""
    c = req.compare
    if c.count:
        raise UsageError("--count needs foliolab's QEMU plugin on the "
                         "machine that runs QEMU, which a LAVA worker is not",
                         hint="export without --count")
    req.target.check()
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
    artifacts_dir = out / ARTIFACTS_DIR
    url = req.artifacts_url or artifacts_dir.resolve().as_uri()
    env["image"] = img.digest
    env["records_on"] = "console"
    env["executor"] = {"kind": "lava", "device_type": req.target.device_type,
                       "tags": list(req.target.tags), "artifacts_url": url,
                       "lava_version": lava.LAVA_VERSION}
    env["accel"] = f"lava {req.target.device_type}"
    base = BootSpec(arch, kernels[specs[0].name].image, vcpus=c.vcpus,
                    numa_nodes=c.numa_nodes, cpu=c.cpu,
                    cmdline=debug_cmdline(c.config))
    boots = plan(c.workloads, c.params, tuple(kernels), c.runs,
                 c.samples_per_boot, counted=False)
    store = lava.Artifacts(artifacts_dir, url)
    written = []
    seq = 0
    for w in c.workloads:
        mine = [b for b in boots if b.workload is w]
        # a block: two rounds, each kernel once in order, once reversed
        for first in range(0, len(mine), 2 * len(kernels)):
            block_boots = []
            for b in mine[first:first + 2 * len(kernels)]:
                spec = boot_spec(base, w, kernels[b.kernel].image, b.samples,
                                 c.timeout)
                boot_id = f"{w.name}/{b.name}"
                BootJob(seq, w.name, b.kernel, b.what, b.first_run,
                        b.samples, b.params, arch.name).write(
                            out / "raw" / boot_id)
                seq += 1
                fault = c.fault if b.kernel != specs[0].name else ""
                block_boots.append(lava.Boot(
                    boot_id, spec.kernel, w.job(b.params, b.samples, fault),
                    spec.cmdline, spec.timeout))
            block = lava.Block(f"{w.name}-{first // (2 * len(kernels))}",
                               w.name, tuple(block_boots), w.memory_mb,
                               c.vcpus, w.nodes(c.numa_nodes))
            job = lava.block_job(block, req.target, store, img.path,
                                 arch.name, arch.console,
                                 c.cpu or arch.cpu_tcg)
            lava.validate(job)
            path = out / JOBS_DIR / f"{block.name}.yaml"
            lava.write_job(path, job)
            written.append(path)
    (out / "environment.json").write_text(
        json.dumps(env, indent=1, default=str) + "\n")
    return (f"{len(written)} LAVA jobs ({seq} boots) in {out / JOBS_DIR}, "
            f"valid for LAVA {lava.LAVA_VERSION}\n"
            f"artifacts: {artifacts_dir} (the jobs fetch them from {url})\n"
            f"then: foliolab jobs collect {out} LOG...\n")


def _planned_blocks(out: Path) -> dict[str, list[str]]:
    """Each exported job's boots, in order (from its metadata)."""
    import yaml
    blocks = {}
    for path in sorted((out / JOBS_DIR).glob("*.yaml")):
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
        parts = lava.split_boots(lava.console_lines(
            path.read_text(errors="replace")))
        named = [p.boot_id for p in parts if p.boot_id]
        if not named:
            raise UsageError(f"{path}: no boot of a foliolab job in it",
                             hint="give the log of a job that `jobs export` "
                                  "wrote (its console shows foliolab.boot=)")
        bid = named[0]
        if bid not in block_of:
            raise UsageError(f"{path}: boot {bid} is not one {out} planned",
                             hint="collect into the directory its jobs were "
                                  "exported to")
        block = block_of[bid]
        ids = blocks[block]
        for k, part in enumerate(parts):
            want = ids[k] if k < len(ids) else None
            if want is None or (part.boot_id and part.boot_id != want):
                raise UsageError(f"{path}: its boot {k + 1} is "
                                 f"{part.boot_id or 'unnamed'}, job "
                                 f"{block} has {want} there",
                                 hint="a log holds one exported job's boots "
                                      "in their order")
            _ingest(out / "raw" / want, part, path)
        missing = ids[len(parts):]
        if missing:
            notes.append(f"{path.name}: job {block} ended before "
                         f"{', '.join(missing)}")
    samples = derive.rederive(out) or []
    derive.write_samples(out, samples)
    text = report.write_report(out)
    return text + "".join(f"note: {n}\n" for n in notes)


def _ingest(rundir: Path, part: lava.BootLog, log_path: Path) -> None:
    """One boot's console from a LAVA log into its directory, as a boot
    under QEMU would have left it."""
    console = rundir / "console.log"
    results = rundir / "results.txt"
    raw = part.console()
    console.write_bytes(raw)
    records, kernel_text, lost = boot_mod.records_from_console(raw)
    results.write_text(records)
    issues = boot_mod.scan_console(kernel_text)
    code = boot_mod.exit_code_of(records)
    status = boot_mod.status_of(issues, code, lost)
    bootrecord.write_boot(BootResult(
        status, code, issues, console, results, part.elapsed or 0.0,
        records.splitlines(), None,
        {"executor": "lava", "log": str(log_path)}))
