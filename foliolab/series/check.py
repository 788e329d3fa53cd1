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

What it found is also the run's outcomes (``SeriesCheck``, written to
OUT/outcomes.json as every command writes them): a checkpatch test and a
boot test per patch, each prefix built a kernel.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field, replace
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
from foliolab.kernelrecord import KernelRecord, kernel_record
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus


@dataclass(frozen=True)
class Step:
    """One check of a patch: passed (None: not run) and what it said."""

    passed: bool | None = None
    text: str = "not run"
    seconds: float | None = None  # how long it took, when timed
    log: Path | None = None  # the file that shows it, if any

    def __str__(self) -> str:
        return self.text


@dataclass
class PatchCheck:
    index: int
    name: str
    checkpatch: Step = field(default_factory=Step)
    build: Step = field(default_factory=Step)
    boot: Step = field(default_factory=Step)
    # the base and patches 1..index as built (None: not built)
    kernel: KernelRecord | None = None

    @property
    def label(self) -> str:
        """The patch's number as the run's paths name it: 0003."""
        return f"{self.index:04d}"

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


@dataclass(frozen=True)
class SeriesCheck:
    """What ``check`` found: each patch's checks, in the series' order,
    and the run directory their logs are in."""

    checks: tuple[PatchCheck, ...]
    rundir: Path

    @property
    def bad(self) -> list[PatchCheck]:
        return [c for c in self.checks if not c.ok]

    def kernels(self) -> list[KernelRecord]:
        """One per prefix built, named by its label (0003: the base and
        patches 1..3)."""
        return [c.kernel for c in self.checks if c.kernel is not None]

    def tests(self) -> list[TestOutcome]:
        """Per patch ``check.<NNNN>.checkpatch`` (no kernel: it reads
        the patch) and ``check.<NNNN>.boot`` on its prefix's kernel:
        pass or fail as the step went; a boot whose prefix did not
        build (or was not booted) is an error, with the build's words
        in its misc."""
        tests = []
        for c in self.checks:
            tests.append(
                TestOutcome(
                    f"check.{c.label}.checkpatch",
                    _status(c.checkpatch),
                    misc={"patch": c.name, "checkpatch": c.checkpatch.text},
                )
            )
            boot = _status(c.boot)
            misc = {"patch": c.name, "build": c.build.text}
            if c.boot.passed is None:
                boot = TestStatus.ERROR
            else:
                misc["boot"] = c.boot.text
            tests.append(
                TestOutcome(
                    f"check.{c.label}.boot",
                    boot,
                    c.kernel.name if c.kernel else "",
                    c.boot.seconds,
                    self._log(c.boot.log),
                    misc,
                )
            )
        return tests

    def outcomes(self) -> Outcomes:
        return Outcomes("check", self.kernels(), self.tests())

    def _log(self, log: Path | None) -> str:
        """``log`` relative to the run directory ("" outside it)."""
        if log is None:
            return ""
        try:
            return str(log.resolve().relative_to(self.rundir.resolve()))
        except ValueError:
            return ""


def _status(step: Step) -> TestStatus:
    if step.passed is None:
        return TestStatus.SKIP
    return TestStatus.PASS if step.passed else TestStatus.FAIL


def prefix_kernel(spec: kernels.KernelSpec, i: int) -> kernels.KernelSpec:
    """``spec`` (SOURCE+DIR) with its first ``i`` patches (0: SOURCE
    alone) as the run's records name it: by its label (0003), its text
    SOURCE+DIR:i."""
    label = f"{i:04d}"
    if i == 0:
        return replace(spec.source_spec(), name=label)
    assert spec.applied is not None  # only a series has prefixes
    text = f"{spec.source.text}+{spec.applied.input.given}:{i}"
    return replace(spec.with_prefix(i), name=label, text=text)


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
        pc.kernel = kernel_record(prefix_kernel(spec, i), tree, kernel)
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
        return Step(
            True, f"ok in {res.elapsed:.1f} s", res.elapsed, res.console
        )
    return Step(
        False,
        f"failed: {res.describe()}; log: {res.console}",
        res.elapsed,
        res.console,
    )
