"""Kernel builds: out of tree, one directory per (arch, purpose, checkout
and version), every kernel of that checkout incremental on the last one.

The base, a series on it and a user's commits of the base's version are
all built from one checkout (source.checkout()) in one directory: a
checkout rewrites exactly the files that differ, and make's mtime check
recompiles exactly the objects that depend on them. In a directory of its
own the patched kernel compiled all 1,357 objects again, 234 of them as
ccache hits (with their objtool runs, the host tools and the links) and
1,123 for real: patches/6.12 changes headers most files include
(page-flags.h, pgtable.h, asm/tlbflush.h), so most of the second build is
real compiling wherever it runs (2026-11-26). Build timestamps, build
number and host name are fixed so ccache, and the comparison of two
builds, are not defeated by them.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab import hostsetup, locks, proc, timings
from foliolab.arch import Arch
from foliolab.errors import BuildError, ConfigError
from foliolab.kernel import kconfig, source
from foliolab.kernel.source import Tree
from foliolab.paths import cache_root
from foliolab.ui import Progress

log = logging.getLogger("foliolab")


# What a kept kernel takes along besides its image (name kept -> path in
# the build directory): the config and symbols the counter reads, the
# release string.
KEPT_FILES = {
    ".config": ".config",
    "System.map": "System.map",
    "kernel.release": "include/config/kernel.release",
}


@dataclass(frozen=True)
class Kernel:
    """A built kernel: what it is and where its image is."""

    variant: str
    purpose: str
    arch: str
    build_dir: Path
    image: Path
    commit: str
    config_sha: str
    elapsed: float
    origin: str = ""  # e.g. a Debian package's version and .deb hash
    release: str = ""  # the kernel's version string (make kernelrelease)

    def kept_in(
        self, directory: Path, files: dict[str, str] | None = None
    ) -> Kernel:
        """This kernel with its image copied into ``directory`` (and
        ``files``, name there -> path in the build directory): the build
        directory is shared by every kernel of its slot (7.3.4 and 7.3.4
        with a series), and a boot that reads the image from there after
        the build lock is gone may boot the next build's kernel."""
        directory.mkdir(parents=True, exist_ok=True)
        copy = directory / self.image.name
        shutil.copy2(self.image, copy)
        for name, there in (files or {}).items():
            shutil.copy2(self.build_dir / there, directory / name)
        return replace(self, image=copy)


def build_dir(arch: Arch, purpose: str, slot: str) -> Path:
    return cache_root() / "build" / f"{arch.name}-{purpose}-{slot}"


BASE_SLOT = "base"


def slot_name(in_base_repo: bool, version: tuple[int, int]) -> str:
    """The build directory of a tree: `base` for every commit of the base's
    version in the cache's repository (the base, a series on it, a user's
    commits: one checkout, incremental builds of each other);
    `linux-X.Y` for any other tree of version X.Y (a Debian package's own
    unpacked tree, a 7.3 commit), which never takes over `base` and its
    incremental state."""
    if in_base_repo and version == kconfig.BASE_VERSION:
        return BASE_SLOT
    return f"linux-{version[0]}.{version[1]}"


def slot_for(tree: Tree) -> str:
    """The build directory ``tree`` is built in (slot_name())."""
    return slot_name(
        tree.path.resolve() == source.base_repo().resolve(), tree.version()
    )


def make_env() -> dict[str, str]:
    cache = cache_root()
    return {
        "CCACHE_DIR": str(cache / "ccache"),
        "CCACHE_BASEDIR": str(cache),
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_MAXSIZE": "10G",
        # A miss compiles once, not preprocesses then compiles: the key is
        # the direct mode's (source, command line, compiler) plus every
        # file the compiler's dependency file (-Wp,-MMD) names, which with
        # -nostdinc is every header. 27 kernel objects, 2026-11-26: 9.9 s
        # of CPU with gcc alone, 15.4 s through ccache, 10.4 s in depend
        # mode; entries of either mode are hits for the other.
        "CCACHE_DEPEND": "1",
        "KBUILD_BUILD_TIMESTAMP": "2026-01-01",
        # the banner's "#N": else a count of links in the directory, so
        # one commit's image would differ by which directory built it
        "KBUILD_BUILD_VERSION": "1",
        "KBUILD_BUILD_USER": "foliolab",
        "KBUILD_BUILD_HOST": "foliolab",
    }


# The host's programs (fixdep, objtool) include the host's headers, which
# -MMD leaves out of the dependency file: not in depend mode.
HOSTCC = "env -u CCACHE_DEPEND ccache gcc"


def make_argv(tree: Path, out: Path, arch: Arch, *targets: str) -> list[str]:
    cc = f"ccache {arch.cross_compile}gcc"
    return [
        "make",
        "-C",
        str(tree),
        f"O={out}",
        f"ARCH={arch.linux_arch}",
        f"CROSS_COMPILE={arch.cross_compile}",
        f"CC={cc}",
        f"HOSTCC={HOSTCC}",
        f"-j{os.cpu_count() or 2}",
        *targets,
    ]


def _run_make(
    argv: list[str], log_path: Path, label: str, total: int | None
) -> int:
    """Run make, tee to log_path, advance a progress bar per compiled file."""
    progress = Progress(label, total, eta=True)
    count = 0

    def on_line(line: str) -> None:
        nonlocal count
        if line.startswith(("  CC ", "  AS ", "  LD ", "  AR ")):
            count += 1
            progress.step()

    rc = proc.run_lines(
        argv,
        log_path=log_path,
        on_line=on_line,
        env=make_env(),
        error=BuildError,
    )
    progress.finish("ok" if rc == 0 else f"FAILED (exit {rc})")
    if rc != 0:
        raise BuildError(f"{label} failed", log_path=log_path)
    return count


def _objects(count_file: Path, arch: str, purpose: str) -> int:
    """The object total of a fresh build: the host's last count, else the
    declared one."""
    try:
        return int(count_file.read_text())
    except (OSError, ValueError):
        return timings.default_objects(arch, purpose)


def fragment_of(tree: Tree, arch: Arch, purpose: str) -> kconfig.Fragment:
    """The fragment ``tree`` is configured with for ``purpose``: for the
    mm CI's kernel, with the tree's own selftests/mm/config last, read
    from git's objects at its commit (a tree without one adds nothing)."""
    tree_options = None
    if purpose == kconfig.MMCI:
        cp = source.git(
            tree.path,
            "show",
            f"{tree.commit}:{kconfig.TREE_FRAGMENT}",
            check=False,
        )
        tree_options = (
            kconfig.parse(
                cp.stdout, f"{tree.commit[:12]}:{kconfig.TREE_FRAGMENT}"
            )
            if cp.returncode == 0
            else {}
        )
    frag = kconfig.merge(
        purpose, arch.name, version=tree.version(), tree_options=tree_options
    )
    if purpose != kconfig.MMCI:
        return frag
    # The mm CI's fragment follows mm-unstable: an option an older tree
    # does not define (6.12 has no MM_ID) is not asked of it, as the mm
    # CI's own build of that tree would drop it.
    defined = _defined_at(tree.path, tree.commit)
    absent = [
        k
        for k, where in frag.origin.items()
        if where == kconfig.FRAGMENT_FILE[kconfig.MMCI]
        and k in frag.options
        and k not in defined
    ]
    return replace(
        frag,
        options={k: v for k, v in frag.options.items() if k not in absent},
        gone={**frag.gone, **{k: NOT_IN_TREE for k in absent}},
    )


NOT_IN_TREE = "not defined by the tree's Kconfig files"
_CONFIG_LINE = re.compile(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)", re.M)


# one git grep a commit: a build asks three times (configure, the check
# after make, the store's key)
@functools.lru_cache(maxsize=8)
def _defined_at(repo: Path, commit: str) -> frozenset[str]:
    """Every CONFIG_ symbol the Kconfig files of ``commit`` define (read
    from git's objects)."""
    cp = source.git(
        repo,
        "grep",
        "-h",
        "-E",
        r"^\s*(menu)?config\s+[A-Za-z0-9_]+",
        commit,
        "--",
        "Kconfig*",
        "*/Kconfig*",
        check=False,
    )
    return frozenset(f"CONFIG_{m}" for m in _CONFIG_LINE.findall(cp.stdout))


def configure(tree: Tree, arch: Arch, purpose: str, out: Path) -> Path:
    """Write ``out/.config`` from the fragment with ``make allnoconfig``.

    The .config is a function of the tree and the fragment alone: it is
    made again whenever either differs from what made the one in ``out``
    (a build directory is shared by several commits, and make's own
    oldconfig would carry options of the last tree into the next).
    """
    frag = fragment_of(tree, arch, purpose)
    out.mkdir(parents=True, exist_ok=True)
    stamp_path = out / "foliolab.fragment"
    config = out / ".config"
    # the fragment as given to kconfig, and the commit it configured
    stamp = frag.text() + f"# tree {tree.commit}\n"
    if not (
        config.exists()
        and stamp_path.exists()
        and stamp_path.read_text() == stamp
    ):
        stamp_path.write_text(stamp)
        argv = make_argv(
            tree.path,
            out,
            arch,
            f"KCONFIG_ALLCONFIG={stamp_path}",
            "allnoconfig",
        )
        logp = out / "config.log"
        rc = proc.run(
            argv, env=make_env(), log_path=logp, check=False, error=BuildError
        ).returncode
        if rc != 0:
            stamp_path.unlink()
            raise BuildError(
                f"kernel config for {tree.variant}/{purpose} failed",
                log_path=logp,
            )
    kconfig.check(frag, config)
    return config


def build_kernel(
    tree: Tree,
    arch: Arch,
    purpose: str,
    slot: str | None = None,
    make_vars: tuple[str, ...] = (),
    keep: Path | None = None,
    keep_files: dict[str, str] | None = None,
    also_keep: Callable[[Kernel], object] | None = None,
) -> Kernel:
    """Configure and build ``tree`` in the build directory ``slot`` (by
    default slot_for() the tree); BuildError names the log on failure.
    ``make_vars``: VAR=VALUE for make's command line (the coverage
    kernel's GCOV_PROFILE; kbuild rebuilds an object whose flags they
    change). ``keep``: a directory the image is copied into before the
    build lock is released (Kernel.kept_in), for a caller that boots it
    later; ``keep_files``: more of the build's files to copy with it;
    ``also_keep``: called with the built kernel while the lock is still
    held, for a caller that copies more of the build directory (the
    coverage run's notes files).

    The .config is checked again after make (make's syncconfig has the last
    word) and recorded as built: its hash is the one of the kernel.
    """
    hostsetup.ensure_arch(arch)  # first use of a cross arch sets it up
    out = build_dir(arch, purpose, slot or slot_for(tree))
    # One checkout serves every build from its tree: a second command that
    # checked out another commit while this make runs would have it compile
    # the other tree's files (two runs on one cache, 2026-11-26, built one
    # image for two series). Held from checkout to image. The directory's
    # own lock: two trees (a Debian 7.3 and a git: 7.3 commit) share a
    # directory but not a checkout. Always taken in this order.
    with source.checkout_lock(tree.path), locks.held(out):
        kernel = _build_checked_out(tree, arch, purpose, out, make_vars)
        if also_keep is not None:
            also_keep(kernel)
        return kernel.kept_in(keep, keep_files) if keep is not None else kernel


def _build_checked_out(
    tree: Tree, arch: Arch, purpose: str, out: Path, make_vars: tuple[str, ...]
) -> Kernel:
    started = time.monotonic()
    source.checkout(tree)
    config = configure(tree, arch, purpose, out)
    # A fresh build compiles about as many files as the last fresh build
    # of this purpose did, or, before this host has counted one, the
    # declared total (timings.DEFAULT_OBJECTS); an incremental one about
    # as many as are older than a file they depend on (stale_steps()).
    count_file = out.parent / f"{arch.name}-{purpose}.objects"
    fresh = not (out / "vmlinux").exists()
    fresh_objects = _objects(count_file, arch.name, purpose)
    total = fresh_objects if fresh else stale_steps(out, tree.path)
    t0 = time.monotonic()
    # the mm CI's kernel has test modules (test_vmalloc, test_hmm,
    # hwpoison_inject) its wrappers modprobe
    modules = ("modules",) if purpose == kconfig.MMCI else ()
    count = _run_make(
        make_argv(
            tree.path, out, arch, *make_vars, arch.make_target, *modules
        ),
        out / "build.log",
        f"build {tree.variant}/{purpose}",
        total,
    )
    if modules:
        _install_modules(tree, arch, out)
    if fresh:
        count_file.write_text(str(count))
    kconfig.check(fragment_of(tree, arch, purpose), config)
    # checkout to image: what the next dry run's estimate takes a build
    # for, unless make had next to nothing to do
    if fresh or timings.is_real_build(count, fresh_objects):
        timings.record_build(arch.name, purpose, time.monotonic() - started)
    release = out / "include" / "config" / "kernel.release"
    return Kernel(
        tree.variant,
        purpose,
        arch.name,
        out,
        out / arch.kernel_image,
        tree.commit,
        config_digest(config),
        time.monotonic() - t0,
        tree.origin,
        release.read_text().strip() if release.exists() else "",
    )


def build_external_module(
    kernel: Kernel, tree: Tree, arch: Arch, source_dir: Path
) -> list[Path]:
    """The ``.ko`` files of the out-of-tree module in ``source_dir`` (a
    copy the caller owns: kbuild writes its objects there), built against
    ``kernel``'s build directory with the kernel's compiler, so its
    vermagic and symbol versions are the kernel's. Called while the
    build lock is held (build_kernel's ``also_keep``); BuildError names
    the log (``source_dir``/build.log) when make fails."""
    _run_make(
        make_argv(
            tree.path, kernel.build_dir, arch, f"M={source_dir}", "modules"
        ),
        source_dir / "build.log",
        f"build {tree.variant} {source_dir.name} module",
        None,
    )
    return sorted(source_dir.glob("*.ko"))


MODULES_ROOT = "modules-root"


def _install_modules(tree: Tree, arch: Arch, out: Path) -> None:
    """``out/modules-root/lib/modules/RELEASE``, stripped, with depmod's
    files: what a guest image carries for modprobe. Made again whole each
    build, so no module of an earlier build stays in it."""
    root = out / MODULES_ROOT
    shutil.rmtree(root, ignore_errors=True)
    _run_make(
        make_argv(
            tree.path,
            out,
            arch,
            f"INSTALL_MOD_PATH={root}",
            "INSTALL_MOD_STRIP=1",
            "modules_install",
        ),
        out / "modules_install.log",
        f"install {tree.variant} modules",
        None,
    )


# kbuild's steps after the objects of an incremental build: the built-in.a
# of each directory above them, vmlinux.a, vmlinux.o, modpost, kallsyms'
# links, the image (a 6.12 x86_64 perf build, 2026-11-26: about 20)
LINK_STEPS = 20


def stale_steps(out: Path, srctree: Path) -> int | None:
    """About how many steps (objects compiled, archives, links) make's next
    build in ``out`` takes: an object is compiled again when a file its
    .cmd names is newer than it, as kbuild's own dependencies say (a
    checkout rewrote it), or when its .cmd is gone. None when not known:
    ``out`` last built another source tree (every command line differs)."""
    src = out / "source"
    try:
        if src.resolve() != srctree.resolve():
            return None
    except OSError:
        return None
    mtimes: dict[str, float] = {}

    def mtime(path: str) -> float:
        if path not in mtimes:
            p = Path(path) if path.startswith("/") else out / path
            try:
                mtimes[path] = p.stat().st_mtime
            except OSError:
                mtimes[path] = 0.0  # gone: kbuild ignores it too
        return mtimes[path]

    changed = changed_option_files(out)
    stale, dirs = 0, set[Path]()
    for cmd in out.rglob(".*.o.cmd"):
        rel = cmd.relative_to(out)
        if rel.parts[0] in ("tools", "scripts"):
            continue
        obj = cmd.with_name(cmd.name[1 : -len(".cmd")])
        try:
            built = obj.stat().st_mtime
        except OSError:
            continue
        if any(dep in changed or mtime(dep) > built for dep in _cmd_deps(cmd)):
            stale += 1
            dirs.update(rel.parents)
    return stale + len(dirs) + LINK_STEPS if stale else LINK_STEPS


def changed_option_files(out: Path) -> set[str]:
    """``include/config/NAME`` for every option whose value the new
    ``.config`` in ``out`` changes against the last build's (its
    ``include/config/auto.conf``). kbuild's fixdep makes each object
    depend on such a file per option it tests, and make's syncconfig
    touches the file of every changed option only once make runs: before
    that, a config change leaves no file newer than its objects."""
    new_conf, old_conf = out / ".config", out / "include/config/auto.conf"
    try:
        if new_conf.stat().st_mtime <= old_conf.stat().st_mtime:
            return set()
        new = kconfig.parse(new_conf.read_text(errors="replace"))
        old = kconfig.parse(old_conf.read_text(errors="replace"))
    except (OSError, ConfigError):
        return set()
    return {
        f"include/config/{name[len('CONFIG_') :]}"
        for name in new.keys() | old.keys()
        if new.get(name, "n") != old.get(name, "n")
    }


def _cmd_deps(cmd: Path) -> Iterator[str]:
    """The files a kbuild .cmd file lists as its object's dependencies."""
    try:
        text = cmd.read_text(errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        if line.startswith("source_"):
            yield line.split(":=", 1)[1].strip()
        elif line.startswith("  "):
            dep = line.strip().removesuffix("\\").strip()
            if dep.startswith("$(wildcard "):
                dep = dep[len("$(wildcard ") : -1]
            if dep:
                yield dep


def config_digest(config: Path) -> str:
    """The short hash a run records for a kernel's .config."""
    return hashlib.sha256(config.read_bytes()).hexdigest()[:12]
