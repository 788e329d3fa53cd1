"""Check a series patch by patch, the way a maintainer would before taking it:
``scripts/checkpatch.pl --strict`` on every patch, and for every i the base
plus patches 1..i must build and boot, so that a bisection never lands on a
broken tree.

Each prefix is applied and built like any patched tree (same checkout path,
same build directory), so with a warm ccache a prefix that changes one mm
file costs seconds. The last prefix is the whole series, which leaves the
patched tree ready for ``foliolab compare``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from foliolab import boot, build, image, source
from foliolab.arch import Arch
from foliolab.errors import FoliolabError


@dataclass
class PatchCheck:
    index: int
    name: str
    checkpatch: str = "not run"
    build: str = "not run"
    boot: str = "not run"

    @property
    def ok(self) -> bool:
        return self.checkpatch == "ok" and self.build.startswith("ok") and \
            self.boot.startswith("ok")

    def row(self) -> str:
        verdict = "ok" if self.ok else "FAIL"
        return (f"{self.index:3d} {verdict:4s} {self.name}\n"
                f"         checkpatch: {self.checkpatch}\n"
                f"         build: {self.build}\n"
                f"         boot: {self.boot}")


def run_checkpatch(repo: Path, patch: Path) -> str:
    """"ok", or checkpatch's summary line when it finds anything at all."""
    # The base is Debian's source tarball imported into git, without
    # upstream history: every upstream commit a message cites is unknown to
    # it. checkpatch still checks how such a reference is written.
    res = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict",
                          "--ignore", "UNKNOWN_COMMIT_ID",
                          str(patch.resolve())], cwd=repo,
                         capture_output=True, text=True)
    total = [ln for ln in res.stdout.splitlines() if ln.startswith("total:")]
    summary = total[-1] if total else (res.stderr.strip() or "no summary")
    if res.returncode == 0 and "0 errors, 0 warnings, 0 checks" in summary:
        return "ok"
    return summary


def check_series(series: source.Series, arch: Arch, config: str, accel: str,
                 rundir: Path) -> list[PatchCheck]:
    repo = source.prepare_base()
    img = image.build_image(arch)
    checks = []
    for i, patch in enumerate(series.patches, 1):
        pc = PatchCheck(i, patch.name)
        checks.append(pc)
        pc.checkpatch = run_checkpatch(repo, patch)
        prefix = source.Series(series.directory, series.patches[:i])
        try:
            tree = source.prepare_patched(prefix)
            kernel = build.build_kernel(tree, arch, config)
        except FoliolabError as e:
            pc.build = f"failed: {e.one_line()}"
            continue
        pc.build = f"ok in {kernel.elapsed:.0f} s"
        spec = boot.BootSpec(arch, kernel.image, accel=accel, vcpus=2,
                             memory_mb=1024, timeout=180,
                             cmdline=boot.debug_cmdline(config))
        res = boot.boot(spec, img.path, "true\n", rundir / f"{i:04d}")
        if res.clean and res.exit_code == 0:
            pc.boot = f"ok in {res.elapsed:.1f} s"
        else:
            pc.boot = f"failed: {res.describe()}; log: {res.console}"
    return checks
