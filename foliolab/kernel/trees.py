"""A kernel spec resolved to the source tree it is built from.

The base's pinned tree, a git: commit fetched into the cache's
repository, a debian: package unpacked as a commit, and a series applied
on any of them (or found applied from an earlier run). Apart from
specs.py because this is where the work starts: fetching, unpacking and
applying, which a spec's parsing and checks never do; and apart from
store.py because a tree is wanted on its own too (``check``, ``kernel
apply``, ``run``, ``test``), before or without a build.
"""

from __future__ import annotations

from pathlib import Path

from foliolab import proc
from foliolab.errors import UsageError
from foliolab.kernel import debian, source
from foliolab.kernel.specs import (
    SOURCE_FORMS,
    KernelSpec,
    SpecKind,
    check_spec,
    parse_kernel,
)


def tree_of(k: KernelSpec) -> source.Tree:
    """The commit a source-built kernel is built from (a series applied,
    or found applied)."""
    if k.kind is SpecKind.SERIES:
        return _series_tree(k)
    return _source_tree(k)[0]


def _source_tree(k: KernelSpec) -> tuple[source.Tree, source.Onto]:
    """The tree of a base, git: or debian: spec, and what it is."""
    if k.kind is SpecKind.BASE:
        repo = source.prepare_base()
        onto = source.base_onto(repo)
        return source.Tree(k.name, repo, onto.commit, ""), onto
    if k.kind is SpecKind.GIT:
        assert k.repo is not None  # a git: spec names its repository
        tree = source.prepare_git(k.name, k.repo, k.ref)
        return tree, source.Onto(
            k.text, f"{k.repo.resolve()} {tree.commit[:12]}", tree.commit
        )
    if k.kind is SpecKind.DEBIAN:
        src = debian.prepare(debian.resolve(k.debian_version))
        pkg = src.package
        return (
            source.Tree(k.name, src.tree, src.commit, "", src.describe()),
            source.Onto(k.text, f"{pkg.name} {pkg.version}", src.commit),
        )
    raise ValueError(k.kind)


def _series_tree(k: KernelSpec) -> source.Tree:
    series = k.series()
    if k.onto is None and series.patches:
        return source.prepare_patched(series, k.name)
    under, onto = _source_tree(k.source_spec())
    return source.prepare_series(under, onto, series, k.name)


def check_git_trees(specs: list[KernelSpec]) -> None:
    """A git: kernel's commit (or the one its series goes on) must be a
    kernel tree (its mm/ has rmap.c): said before anything is fetched or
    built."""
    for k in (s.source_spec() for s in specs):
        if k.kind is not SpecKind.GIT:
            continue
        assert k.repo is not None  # a git: spec names its repository
        cp = proc.run(
            ["git", "-C", k.repo, "cat-file", "-e", f"{k.ref}:mm/rmap.c"],
            check=False,
        )
        if cp.returncode != 0:
            raise UsageError(
                f"kernel {k.name}: {k.text} is not a Linux "
                "kernel tree (no mm/rmap.c at that commit)",
                hint="give git:PATH@REF of a kernel clone",
            )


def series_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """Every series of ``specs`` applied to its tree (or found applied),
    before any kernel is built: a patch that does not apply stops the
    whole request here, with one line naming the patch, the file and the
    tree (PatchApplyError)."""
    return {k.name: tree_of(k) for k in specs if k.kind is SpecKind.SERIES}


def source_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """The tree of every source-built kernel of ``specs``."""
    return {k.name: tree_of(k) for k in specs if k.kind is not SpecKind.IMAGE}


def variant_tree(
    variant: str, patches: Path | None, kernel: str = ""
) -> source.Tree:
    """The source tree of ``variant`` (patched: the base with ``patches``),
    or of ``kernel`` (``NAME=SPEC``, any source spec) when given; a bad
    spec is refused before anything is built."""
    if kernel:
        k = parse_kernel(kernel)
        if k.kind is SpecKind.IMAGE:
            raise UsageError(
                f"--kernel {kernel}: this command builds the kernel it boots",
                hint="give a source spec: "
                f"{SOURCE_FORMS}, each with "
                "+DIR[:N] or without",
            )
        check_spec(k)
        return tree_of(k)
    if variant == "vanilla" or patches is None:
        return source.prepare_vanilla()
    return source.prepare_patched(source.read_series(patches))
