"""The mm kselftests of a suite's tree, built against its kernel's
headers, once per commit and architecture (in the cache)."""

from __future__ import annotations

import os
from pathlib import Path

from foliolab import hostsetup, proc
from foliolab.arch import Arch
from foliolab.errors import BuildError
from foliolab.kernel import build, image, source
from foliolab.suite.plan import kselftests_for


def build_kselftests(
    tree: source.Tree, arch: Arch, kernel: build.Kernel
) -> Path:
    """Build the mm selftests of ``tree`` against the kernel's headers,
    in the cache directory of its commit; the directory they are in."""
    out = image.kselftest_dir(arch, tree.commit)
    stamp = out.parent / "built-from"

    def built() -> bool:
        return stamp.exists() and stamp.read_text().strip() == tree.commit

    if built():
        return out
    with source.checkout_lock(tree.path):
        if built():  # another run built them while we waited
            return out
        return _build_kselftests_checked_out(tree, arch, kernel, out, stamp)


def _build_kselftests_checked_out(
    tree: source.Tree, arch: Arch, kernel: build.Kernel, out: Path, stamp: Path
) -> Path:
    source.checkout(tree)
    logp = out.parent / "build.log"
    out.mkdir(parents=True, exist_ok=True)
    proc.run(
        build.make_argv(tree.path, kernel.build_dir, arch, "headers"),
        env=build.make_env(),
        log_path=out.parent / "headers.log",
        error=BuildError,
        what="make headers",
    )
    hdr = kernel.build_dir / "usr" / "include"
    mm = tree.path / "tools/testing/selftests/mm"
    # 6.12.117's khugepaged.c uses KSFT_SKIP without including
    # kselftest.h (a stable backport slip); including it for every test is
    # harmless (include guards). -k keeps the rest building if an optional
    # test cannot be.
    cflags = f"-include {mm.parent / 'kselftest.h'}"
    # libnuma's header and library for another architecture: the guest
    # sysroot's
    if not arch.native:
        cflags += " " + hostsetup.sysroot_cflags(arch)
    _forget_other_probe(mm, arch)
    proc.run(
        [
            "make",
            "-k",
            "-C",
            str(mm),
            f"OUTPUT={out}",
            *arch.cross_make_args,
            f"KHDR_INCLUDES=-isystem {hdr}",
            f"EXTRA_CFLAGS={cflags}",
            f"-j{os.cpu_count() or 2}",
        ],
        log_path=logp,
        check=False,
    )
    missing = [
        cmd.split()[0]
        for cmd, _ in kselftests_for(arch).values()
        if not (out / cmd.split()[0]).exists()
    ]
    if missing:
        raise BuildError(
            f"mm kselftests not built: {', '.join(sorted(set(missing)))}",
            log_path=logp,
        )
    stamp.write_text(tree.commit + "\n")
    return out


def _forget_other_probe(mm: Path, arch: Arch) -> None:
    """The mm Makefile probes the compiler for liburing once and keeps the
    answer in the source tree (local_config.h/.mk), which every
    architecture builds from: drop an answer made with another compiler."""
    marker = mm / ".foliolab-probe-cc"
    if (
        marker.read_text().strip() if marker.exists() else "gcc"
    ) != arch.guest_cc:
        for name in ("local_config.h", "local_config.mk"):
            (mm / name).unlink(missing_ok=True)
    marker.write_text(arch.guest_cc + "\n")
