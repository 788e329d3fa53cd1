"""Check a series patch by patch, the way a maintainer would before taking it:
``scripts/checkpatch.pl --strict`` on every patch, and for every i the base
plus patches 1..i must build and boot, so that a bisection never lands on a
broken tree.

The series goes on the pinned base, or with ``--base`` on any source spec
(``debian:7.3``, ``git:PATH@REF``). Each prefix is applied and built like
any patched tree of that version (same checkout path, same build
directory), so with a warm ccache a prefix that changes one mm file costs
seconds. The last prefix is the whole series, which leaves the patched
tree ready for ``foliolab compare``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import proc
from foliolab.arch import Arch, get_arch
from foliolab.boot.measure import boot_once
from foliolab.errors import FoliolabError
from foliolab.executors import ExecutorOptions, make_executor
from foliolab.executors.base import BootRequest, BootSpec, Executor
from foliolab.kernel import build, image, trees
from foliolab.kernel import specs as kernels
from foliolab.kernel.kconfig import debug_cmdline


@dataclass(frozen=True)
class Step:
    """One check of a patch: passed (None: not run) and what it said."""

    passed: bool | None = None
    text: str = "not run"

    def __str__(self) -> str:
        return self.text


@dataclass
class PatchCheck:
    index: int
    name: str
    checkpatch: Step = field(default_factory=Step)
    build: Step = field(default_factory=Step)
    boot: Step = field(default_factory=Step)

    @property
    def ok(self) -> bool:
        return bool(
            self.checkpatch.passed and self.build.passed and self.boot.passed
        )

    def row(self) -> str:
        verdict = "ok" if self.ok else "FAIL"
        return (
            f"{self.index:3d} {verdict:4s} {self.name}\n"
            f"         checkpatch: {self.checkpatch}\n"
            f"         build: {self.build}\n"
            f"         boot: {self.boot}"
        )


def checkpatch(repo: Path, patch: Path) -> subprocess.CompletedProcess[str]:
    """``scripts/checkpatch.pl --strict`` of the tree ``repo`` on ``patch``
    (check and check --robot both run it so)."""
    # The base is Debian's source tarball imported into git, without
    # upstream history: every upstream commit a message cites is unknown to
    # it. checkpatch still checks how such a reference is written.
    return proc.run(
        [
            "perl",
            "scripts/checkpatch.pl",
            "--strict",
            "--ignore",
            "UNKNOWN_COMMIT_ID",
            patch.resolve(),
        ],
        cwd=repo,
        check=False,
    )


def run_checkpatch(repo: Path, patch: Path) -> Step:
    """Passed ("ok"), or checkpatch's summary line when it finds anything
    at all."""
    res = checkpatch(repo, patch)
    total = [ln for ln in res.stdout.splitlines() if ln.startswith("total:")]
    summary = total[-1] if total else (res.stderr.strip() or "no summary")
    if res.returncode == 0 and "0 errors, 0 warnings, 0 checks" in summary:
        return Step(True, "ok")
    return Step(False, summary)


def check_series(
    spec: kernels.KernelSpec,
    arch: Arch,
    config: str,
    accel: str,
    rundir: Path,
    executor: ExecutorOptions = ExecutorOptions(),
) -> list[PatchCheck]:
    """Each patch of ``spec``'s series (``SOURCE+DIR``) checked on its
    tree: checkpatch, then that tree with patches 1..i built and booted
    (by ``executor``, its files in ``rundir``)."""
    booter = make_executor(executor, rundir)
    series = spec.series()
    checkout = trees.tree_of(spec.source_spec()).path
    img = image.build_image(arch)
    checks = []
    for i, patch in enumerate(series.patches, 1):
        pc = PatchCheck(i, patch.name)
        checks.append(pc)
        pc.checkpatch = run_checkpatch(checkout, patch)
        try:
            tree = trees.tree_of(spec.with_prefix(i))
            kernel = build.build_kernel(
                tree, arch, config, keep=rundir / f"{i:04d}" / "kernel"
            )
        except FoliolabError as e:
            pc.build = Step(False, f"failed: {e.one_line()}")
            continue
        pc.build = Step(True, f"ok in {kernel.elapsed:.0f} s")
        pc.boot = _boot(
            booter, kernel, img.path, config, accel, rundir / f"{i:04d}"
        )
    return checks


def _boot(
    executor: Executor,
    kernel: build.Kernel,
    img: Path,
    config: str,
    accel: str,
    rundir: Path,
) -> Step:
    """One boot of ``kernel`` running `true`."""
    spec = BootSpec(
        get_arch(kernel.arch),
        kernel.image,
        accel=accel,
        vcpus=2,
        memory_mb=1024,
        timeout=180,
        cmdline=debug_cmdline(config),
    )
    res = boot_once(
        executor,
        BootRequest(f"check/{rundir.name}", spec, "true\n", rundir),
        img,
    )
    if res.clean and res.exit_code == 0:
        return Step(True, f"ok in {res.elapsed:.1f} s")
    return Step(False, f"failed: {res.describe()}; log: {res.console}")
