"""A kernel spec resolved to the source tree it is built from.

The base's pinned tree, a git: commit fetched into the cache's
repository, a debian: package unpacked as a commit, and a series applied
on any of them (or found applied from an earlier run): each source's
class (sources/) knows its own; this is where they are asked. Apart from
specs.py because this is where the work starts: fetching, unpacking and
applying, which a spec's parsing and checks never do; and apart from
store.py because a tree is wanted on its own too (``check``, ``kernel
apply``, ``run``, ``test``), before or without a build.
"""

from __future__ import annotations

from pathlib import Path

from foliolab.errors import UsageError
from foliolab.kernel import source, sources
from foliolab.kernel.specs import (
    SOURCE_FORMS,
    KernelSpec,
    check_spec,
    parse_kernel,
)


def tree_of(k: KernelSpec) -> source.Tree:
    """The commit a source-built kernel is built from (a series applied,
    or found applied)."""
    if k.applied is None:
        return k.source.tree(k.name)
    return k.source.series_tree(k.name, k.series())


def series_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """Every series of ``specs`` applied to its tree (or found applied),
    before any kernel is built: a patch that does not apply stops the
    whole request here, with one line naming the patch, the file and the
    tree (PatchApplyError)."""
    return {k.name: tree_of(k) for k in specs if k.applied is not None}


def source_trees(specs: list[KernelSpec]) -> dict[str, source.Tree]:
    """The tree of every source-built kernel of ``specs``."""
    return {k.name: tree_of(k) for k in specs if not k.source.prebuilt}


def variant_tree(
    variant: str, patches: Path | None, kernel: str = ""
) -> source.Tree:
    """The source tree of ``variant`` (patched: the base with ``patches``),
    or of ``kernel`` (``NAME=SPEC``, any source spec) when given; a bad
    spec is refused before anything is built."""
    if kernel:
        k = parse_kernel(kernel)
        if k.source.prebuilt:
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
    return source.prepare_patched(sources.read_patches(patches))
