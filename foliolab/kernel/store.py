"""The kernel store: each kernel found kept, or built and kept.

A kernel is kept per commit and config fragment under the cache's
``kernels/``; it builds in the directory build.slot_for() names (``base``,
``linux-X.Y``). prepare() turns a run's specs and their
trees into bootable kernels (a prebuilt image: checked and taken as it
is); kept_kernel() says what --dry-run may say with nothing fetched,
applied or built. Apart from trees.py because this is about
builds and their keeping, not about sources.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from foliolab import locks
from foliolab.arch import Arch
from foliolab.errors import FoliolabError
from foliolab.kernel import build, source
from foliolab.kernel.specs import KernelSpec
from foliolab.kernel.trees import source_trees
from foliolab.paths import cache_root


def store_dir(arch: Arch, purpose: str, tree: source.Tree) -> Path:
    """Where the built kernel of ``tree`` is kept, per fragment: a
    changed config fragment is another kernel."""
    frag = build.fragment_of(tree, arch, purpose).text()
    key = hashlib.sha256(f"{tree.commit}\0{frag}".encode()).hexdigest()[:16]
    return cache_root() / "kernels" / f"{arch.name}-{purpose}-{key}"


def is_whole(kept: Path, arch: Arch, also_kept: tuple[str, ...] = ()) -> bool:
    """Whether the store directory ``kept`` holds a whole kernel: its
    image, the files build.KEPT_FILES names and ``also_kept`` (what a
    caller's also_keep always makes); what a run takes without building
    and what its dry run says is kept."""
    return (kept / Path(arch.kernel_image).name).exists() and all(
        (kept / f).exists() for f in (*build.KEPT_FILES, *also_kept)
    )


def kept_kernel(
    k: KernelSpec, arch: Arch, purpose: str, also_kept: tuple[str, ...] = ()
) -> tuple[Path | None, str | None]:
    """(its store directory if ``k`` is built and kept there, whole as
    is_whole() says with ``also_kept``, its commit if known): what
    --dry-run says of a kernel, with nothing changed."""
    prebuilt = k.source.prebuilt_image()
    if prebuilt is not None:
        return prebuilt, None
    try:
        known = k.known_commit()
    except FoliolabError:
        known = None
    if known is None:
        return None, None
    repo, commit = known
    kept = store_dir(
        arch, purpose, source.Tree(k.name, Path(repo), commit, "")
    )
    return (kept if is_whole(kept, arch, also_kept) else None), commit


def build_and_keep(
    tree: source.Tree,
    arch: Arch,
    purpose: str,
    also_keep: Callable[[build.Kernel, Path], object] | None = None,
    also_kept: tuple[str, ...] = (),
) -> build.Kernel:
    """The kernel of ``tree``: found in the store, or built and stored.

    It builds in the directory build.slot_for() names (every kernel of
    the base's version from one checkout, in one directory); the image,
    .config and System.map are then copied to a store directory per
    commit and fragment, which the run boots from and the next run finds
    again without building. ``also_keep(kernel, directory)`` copies more
    of the build into the store directory while the build lock is held
    (the mm CI kernel's modules); the directory is renamed into place
    only when all of it is there, so a kernel found kept is whole;
    ``also_kept`` names what ``also_keep`` always makes, so a kernel kept
    before the callback made it is built again, not taken without it.
    """
    kept = store_dir(arch, purpose, tree)
    image = kept / Path(arch.kernel_image).name
    # one process at a time looks, builds and puts in place: a second one
    # asking for the same kernel waits, then finds it whole (two runs
    # once shared one part directory here, and the second emptied the
    # first's half-copied modules). Taken before the checkout and build
    # locks, always.
    kept.parent.mkdir(parents=True, exist_ok=True)
    with locks.held(kept):
        if is_whole(kept, arch, also_kept):
            config_sha = build.config_digest(kept / ".config")
            elapsed = 0.0
            release = (kept / "kernel.release").read_text().strip()
        else:
            tmp = Path(
                tempfile.mkdtemp(prefix=f"{kept.name}.", dir=kept.parent)
            )
            try:
                # copied before the build lock is let go: another kernel
                # of the slot may be built into the same directory right
                # after
                k = build.build_kernel(
                    tree,
                    arch,
                    purpose,
                    keep=tmp,
                    keep_files=build.KEPT_FILES,
                    also_keep=(
                        None
                        if also_keep is None
                        else lambda built: also_keep(built, tmp)
                    ),
                )
                shutil.rmtree(kept, ignore_errors=True)
                tmp.rename(kept)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            config_sha, elapsed, release = k.config_sha, k.elapsed, k.release
    return build.Kernel(
        variant=tree.variant,
        purpose=purpose,
        arch=arch.name,
        build_dir=kept,
        image=image,
        commit=tree.commit,
        config_sha=config_sha,
        elapsed=elapsed,
        origin=tree.origin,
        release=release,
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
        if k.source.prebuilt:
            built[k.name] = k.source.prebuilt_kernel(k.name, arch, purpose)
            continue
        tree = trees[k.name]
        if tree.commit not in by_commit:
            by_commit[tree.commit] = build_and_keep(tree, arch, purpose)
        built[k.name] = by_commit[tree.commit]
    return built
