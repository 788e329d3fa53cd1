"""`foliolab run`: build (or find) one kernel and boot it running a
command, as `vng --exec` does; with --count, the command's kernel work
counted exactly."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from foliolab import counting
from foliolab.arch import get_arch
from foliolab.boot.accel import settle
from foliolab.boot.measure import boot_once
from foliolab.bootrecord import BootResult
from foliolab.errors import UsageError
from foliolab.executors import (
    HERE,
    ExecutorOptions,
    check_executor,
    check_files,
    make_executor,
)
from foliolab.executors.base import BootRequest, BootSpec, check_numa
from foliolab.guestdata.countwindows import MAX_ROOTS
from foliolab.kernel import build, image, sources, specs, trees
from foliolab.kernel.kconfig import debug_cmdline
from foliolab.run import rootcheck
from foliolab.workloads.windows import RUN


@dataclass(frozen=True)
class CommandRequest:
    """`foliolab run`: one boot of a built kernel running a command."""

    cmd: list[str]
    arch: str
    variant: str  # vanilla | patched
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
    kernel: str = ""  # --kernel NAME=SPEC, instead of variant
    # who runs the boot (--executor and its flags)
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)


def check_command(req: CommandRequest) -> None:
    """Every part of ``req`` that can be checked before anything is
    fetched, unpacked or built (`run`'s plan, and its dry run's if it
    gets one): the machine (its memory into its NUMA nodes among it),
    the counting, the executor, the files to add, and the kernel's spec
    or series as far as this host can say."""
    arch = get_arch(req.arch)
    HERE.check_machine(BootSpec(arch, Path(), accel=req.accel, cpu=req.cpu))
    check_numa(
        BootSpec(
            arch,
            Path(),
            vcpus=req.vcpus,
            memory_mb=req.memory_mb,
            numa_nodes=req.numa_nodes,
        )
    )
    counting.check_root_option(req.roots, req.count)
    if len(req.roots) > MAX_ROOTS:
        raise UsageError(
            f"--root given {len(req.roots)} times; the counter "
            f"follows at most {MAX_ROOTS} roots",
            hint="drop some --root options",
        )
    if req.count:
        counting.check_accel(req.accel)
    check_executor(req.executor, req.count)
    check_files(req.executor, tuple(req.add))
    if req.kernel:
        specs.check_local(specs.parse_kernel(req.kernel))
    elif req.variant == "patched" and req.patches is not None:
        sources.read_patches(req.patches)


def boot_command(req: CommandRequest) -> tuple[BootResult, str]:
    """Build (or find) the kernel, boot it running the command; the boot's
    result and the kernel's variant."""
    check_command(req)
    arch = get_arch(req.arch)
    src = trees.variant_tree(req.variant, req.patches, req.kernel)
    if req.count:
        # the source is there now: an unknown root is refused before the
        # build, not after it (the System.map check below stays for
        # what git could not say)
        rootcheck.check_in_tree(src, req.roots)
    rundir = Path(tempfile.mkdtemp(prefix="foliolab-run-"))
    executor = make_executor(req.executor, rundir, req.count)
    # booted and counted from its own copy, as the suite and compare do:
    # another command building in the same slot replaces the slot's image
    kernel = build.build_kernel(
        src,
        arch,
        req.config,
        keep=rundir / "kernel",
        keep_files=build.KEPT_FILES,
    )
    kept = kernel.image.parent
    img = image.build_image(arch)
    spec = BootSpec(
        arch,
        kernel.image,
        vcpus=req.vcpus,
        memory_mb=req.memory_mb,
        numa_nodes=req.numa_nodes,
        timeout=req.timeout,
        cpu=req.cpu,
        cmdline=debug_cmdline(req.config) + req.append,
        console_results=req.console_results,
    )
    # ``auto`` chosen here for an executor that boots here (a lab's QEMU
    # or board chooses its own)
    spec = settle(
        req.executor.executor, req.accel, spec, img.path, req.count
    ).spec
    job = shlex.join(req.cmd) + "\n"
    if req.count:
        have = counting.map_functions(kept)
        missing = [r for r in req.roots if r not in have]
        if missing:
            raise UsageError(
                f"--root {missing[0]}: no such function in the "
                f"{src.variant} kernel's System.map",
                hint="give a kernel text symbol (static "
                "functions may carry a suffix such as "
                ".isra.0)",
            )
        counter = counting.counter_for(arch, kept)
        spec = replace(
            spec,
            counter=counter.with_roots(req.roots),
            timeout=req.timeout * counting.TIMEOUT_FACTOR,
        )
        # The window closes in the marker's own process, so it also holds
        # one fork and exec of flmark (a few hundred thousand insns).
        job = (
            f"flmark begin {RUN:d}\n{job}fl_rc=$?\n"
            f"flmark end {RUN:d}\nexit $fl_rc\n"
        )
    try:
        res = boot_once(
            executor,
            BootRequest("run/run", spec, job, rundir, tuple(req.add)),
            img.path,
        )
    finally:
        # the copy served this boot only; the run directory keeps its logs
        shutil.rmtree(kept, ignore_errors=True)
    return res, src.variant
