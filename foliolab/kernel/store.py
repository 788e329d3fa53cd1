"""The kernel store: each kernel found kept, or built and kept.

A kernel is kept per commit and config fragment under the cache's
``kernels/``; it builds in the directory build.slot_for() names (``base``,
``linux-X.Y``). prepare() turns a run's specs and their
trees into bootable kernels (a prebuilt image: checked and taken as it
is); kept_kernel() and slot_of() say what --dry-run may say with nothing
fetched, applied or built. Apart from trees.py because this is about
builds and their keeping, not about sources.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from foliolab.arch import Arch
from foliolab.errors import FoliolabError
from foliolab.kernel import build, debian, kconfig, source
from foliolab.kernel.specs import KernelSpec, SpecKind, find_beside
from foliolab.kernel.trees import source_trees
from foliolab.paths import cache_root


def image_kernel(k: KernelSpec, arch: Arch, purpose: str) -> build.Kernel:
    """A prebuilt image as a Kernel, after checking that its .config has
    every option of the lab's fragment for ``purpose``."""
    assert k.image is not None  # an image: spec names its image
    config = find_beside(k.image, ".config")
    assert config is not None  # check_spec found it
    kconfig.check(
        kconfig.merge(
            purpose, arch.name, version=kconfig.version_of(config.read_text())
        ),
        config,
    )
    digest = hashlib.sha256(k.image.read_bytes()).hexdigest()[:12]
    system_map = find_beside(k.image, "System.map")
    return build.Kernel(
        k.name,
        purpose,
        arch.name,
        system_map.parent if system_map else config.parent,
        k.image.resolve(),
        f"image:{digest}",
        hashlib.sha256(config.read_bytes()).hexdigest()[:12],
        0.0,
    )


def slot_of(k: KernelSpec) -> str:
    """The build directory build_and_keep() will use for ``k``, known
    before anything is fetched or built (for --dry-run): a Debian
    package's tree is its own checkout, never the base's."""
    if k.kind is SpecKind.DEBIAN:
        name, _ = debian.package_of(k.debian_version)
        major, minor = name[len("linux-source-") :].split(".")
        return build.slot_name(False, (int(major), int(minor)))
    if k.kind is SpecKind.GIT:
        assert k.repo is not None  # a git: spec names its repository
        return build.slot_name(
            True,
            source.makefile_version(k.repo, source.resolve_ref(k.repo, k.ref)),
        )
    if k.kind is SpecKind.SERIES and k.onto is not None:
        return slot_of(k.onto)
    return build.slot_name(True, kconfig.BASE_VERSION)


# What a kernel needs besides its image: its config (checked, hashed), its
# symbols (for --count) and its version string.


def store_dir(arch: Arch, purpose: str, tree: source.Tree) -> Path:
    """Where the built kernel of ``tree`` is kept, per fragment: a
    changed config fragment is another kernel."""
    frag = kconfig.merge(purpose, arch.name, version=tree.version()).text()
    key = hashlib.sha256(f"{tree.commit}\0{frag}".encode()).hexdigest()[:16]
    return cache_root() / "kernels" / f"{arch.name}-{purpose}-{key}"


def _known_commit(k: KernelSpec) -> tuple[Path, str] | None:
    """(a repository holding it, ``k``'s commit) if it can be had without
    fetching, applying or unpacking anything (for --dry-run), else None."""
    repo = source.base_repo()
    try:
        if k.kind is SpecKind.GIT:
            assert k.repo is not None  # a git: spec names its repository
            return k.repo, source.resolve_ref(k.repo, k.ref)
        if k.kind is SpecKind.SERIES and k.onto is not None:
            return _known_series_commit(k)
        if not (repo / ".git").exists():
            return None
        if k.kind is SpecKind.BASE or (
            k.kind is SpecKind.SERIES and not k.series().patches
        ):
            return repo, source.base_commit(repo)
        if k.kind is SpecKind.SERIES:
            return _kept_ref(repo, source.series_ref(k.series().digest))
    except FoliolabError:
        return None
    return None


def _known_series_commit(k: KernelSpec) -> tuple[Path, str] | None:
    """A series on a git: tree: its commit if applied before (in the
    cache's repository, where git: commits are fetched); on a debian:
    tree it is not known without asking the archive which version."""
    assert k.onto is not None  # a series has the tree it goes on
    if k.onto.kind is not SpecKind.GIT:
        return None
    assert k.onto.repo is not None  # a git: spec names its repository
    under = source.resolve_ref(k.onto.repo, k.onto.ref)
    series = k.series()
    if not series.patches:
        return k.onto.repo, under
    repo = source.base_repo()
    if not (repo / ".git").exists():
        return None
    return _kept_ref(repo, source.series_ref(series.digest, under))


def _kept_ref(repo: Path, ref: str) -> tuple[Path, str] | None:
    cp = source.git(
        repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False
    )
    return (repo, cp.stdout.strip()) if cp.returncode == 0 else None


def kept_kernel(
    k: KernelSpec, arch: Arch, purpose: str
) -> tuple[Path | None, str | None]:
    """(its store directory if ``k`` is built and kept there, its commit
    if known): what --dry-run says of a kernel, with nothing changed."""
    if k.kind is SpecKind.IMAGE:
        return k.image, None
    known = _known_commit(k)
    if known is None:
        return None, None
    repo, commit = known
    kept = store_dir(
        arch, purpose, source.Tree(k.name, Path(repo), commit, "")
    )
    image = kept / Path(arch.kernel_image).name
    if image.exists() and all((kept / f).exists() for f in build.KEPT_FILES):
        return kept, commit
    return None, commit


def build_and_keep(
    tree: source.Tree, arch: Arch, purpose: str
) -> build.Kernel:
    """The kernel of ``tree``: found in the store, or built and stored.

    It builds in the directory build.slot_for() names (every kernel of
    the base's version from one checkout, in one directory); the image,
    .config and System.map are then copied to a store directory per
    commit and fragment, which the run boots from and the next run finds
    again without building.
    """
    kept = store_dir(arch, purpose, tree)
    image = kept / Path(arch.kernel_image).name
    if image.exists() and all((kept / f).exists() for f in build.KEPT_FILES):
        return build.Kernel(
            tree.variant,
            purpose,
            arch.name,
            kept,
            image,
            tree.commit,
            build.config_digest(kept / ".config"),
            0.0,
            tree.origin,
            (kept / "kernel.release").read_text().strip(),
        )
    tmp = kept.with_name(kept.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    # copied before the build lock is let go: another kernel of the slot
    # may be built into the same directory right after
    k = build.build_kernel(
        tree, arch, purpose, keep=tmp, keep_files=build.KEPT_FILES
    )
    shutil.rmtree(kept, ignore_errors=True)
    tmp.rename(kept)
    return build.Kernel(
        tree.variant,
        purpose,
        arch.name,
        kept,
        image,
        tree.commit,
        k.config_sha,
        k.elapsed,
        tree.origin,
        k.release,
    )


def prepare(
    specs: list[KernelSpec],
    arch: Arch,
    purpose: str,
    trees: dict[str, source.Tree] | None = None,
) -> dict[str, build.Kernel]:
    """Build (or find) every kernel, in order, from ``trees`` (by default
    source_trees()); kernels of one commit share one image, so an A/A run
    boots one image under two names."""
    trees = source_trees(specs) if trees is None else trees
    built: dict[str, build.Kernel] = {}
    by_commit: dict[str, build.Kernel] = {}
    for k in specs:
        if k.kind is SpecKind.IMAGE:
            built[k.name] = image_kernel(k, arch, purpose)
            continue
        tree = trees[k.name]
        if tree.commit not in by_commit:
            by_commit[tree.commit] = build_and_keep(tree, arch, purpose)
        built[k.name] = by_commit[tree.commit]
    return built
