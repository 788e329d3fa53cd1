"""--count --root NAME checked before any work: against the kernels'
System.maps when every kernel is kept built, else in their source where
it is at hand without fetching (a name no kernel's source has as a word is
no function of any); otherwise the System.maps decide once the kernels are
built, before the counter is (counting.check_roots())."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

from foliolab import counting
from foliolab.arch import Arch, get_arch
from foliolab.errors import FoliolabError, UsageError
from foliolab.kernel import source, symbols
from foliolab.kernel import specs as kernels_mod
from foliolab.kernel import store as kernel_store
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")


def check_kept(
    specs: list[kernels_mod.KernelSpec],
    workloads: list[Workload],
    roots: Sequence[str],
    arch_name: str,
    config: str,
    count: bool,
) -> bool:
    """--count's roots against the kernels' System.maps, when every kernel
    is kept built already (nothing is fetched or built to know): True if
    they were. Else check_in_source() looks for --root's names in
    the kernels' source, and every root is checked once the kernels are
    built, before the counter is."""
    if not count:
        return True
    arch = get_arch(arch_name)
    functions = {}
    for k in specs:
        where = _kept_symbols(k, arch, config)
        if where is None:
            return False
        functions[k.name] = counting.map_functions(where)
    counting.check_roots(workloads, functions, tuple(roots))
    return True


def check_in_source(
    specs: list[kernels_mod.KernelSpec],
    roots: Sequence[str],
    trees: dict[str, source.Tree],
) -> None:
    """--root's names in the source of kernels not built yet, before any
    is (or QEMU's source fetched for the counter): a name no kernel's
    source has as a word is no function of any. Searched where the source
    is at hand without fetching: each series' tree (its commit, and the
    commit it went on, which a base or debian: kernel of the run is), a
    git: kernel's clone, an image's System.map. When a kernel's source is
    not at hand, the kernels' System.maps decide once they are built."""
    if not roots:
        return
    wanted = {r: _source_names(r) for r in roots}
    left = set().union(*wanted.values())
    places = _sources_at_hand(specs, trees)
    if places is None:
        log.info(
            "--root %s: checked against the kernels' System.map once "
            "they are built",
            ",".join(roots),
        )
        return
    log.info(
        "--root %s: looking for it in the kernels' source", ",".join(roots)
    )
    for look in places:
        if not left:
            break
        found = look(left)
        if found is None:  # git could not say: System.map will
            return
        left -= found
    for root, names in wanted.items():
        if names <= left:
            raise UsageError(
                f"--root {root}: no kernel of the run has this function "
                f"({', '.join(k.name for k in specs)}: not in their "
                "source)",
                hint="check its spelling in System.map (a static "
                "function may carry a suffix such as .isra.0)",
            )


def check_in_tree(tree: source.Tree, roots: Sequence[str]) -> None:
    """`foliolab run --count`'s roots in its one kernel's source, once
    the tree is there and before it is built: a name the source lacks as
    a word is no function of it (the build took minutes before the
    System.map said so). Where git cannot say, the System.map decides
    after the build, as before."""
    if not roots:
        return
    wanted = {r: _source_names(r) for r in roots}
    found = source.words_at(
        tree.path, tree.commit, set().union(*wanted.values())
    )
    if found is None:
        return
    for root, names in wanted.items():
        if not names & found:
            raise UsageError(
                f"--root {root}: the {tree.variant} kernel has no such "
                f"function (not in its source, commit {tree.commit[:12]})",
                hint="check its spelling in System.map (a static "
                "function may carry a suffix such as .isra.0)",
            )


def _source_names(root: str) -> set[str]:
    """The names a root's function has in C: without a compiler's suffix
    (.isra.0, .constprop.0), and each name a kernel renamed it to."""
    name = root.split(".", 1)[0]
    return {name, *(r.new for r in symbols.RENAMES if r.name == name)}


# Where a kernel's function names are read: the names asked -> those found
# (None: they cannot be read there).
Places = Callable[[Iterable[str]], "set[str] | None"]


def _sources_at_hand(
    specs: list[kernels_mod.KernelSpec], trees: dict[str, source.Tree]
) -> list[Places] | None:
    """Where each kernel's function names can be read without fetching or
    building: a list of functions (names -> the ones found, or None), or
    None if some kernel's cannot."""
    places: list[Places] = []
    covered: set[str] = set()
    for name, tree in trees.items():
        places.append(partial(source.words_at, tree.path, tree.commit))
        covered.add(name)
    onto = {
        k.source.text: trees[k.name]
        for k in specs
        if k.name in trees and trees[k.name].onto is not None
    }
    for k in specs:
        if k.name in covered:
            continue
        at = None if k.applied else k.source.names_at()
        if at is not None and at.system_map is not None:
            places.append(partial(_in_map, at.system_map))
        elif at is not None and at.repo is not None:
            places.append(partial(source.words_at, at.repo, at.commit))
        elif k.text in onto:
            t = onto[k.text]
            assert t.onto is not None  # onto holds the trees that have one
            places.append(partial(source.words_at, t.path, t.onto.commit))
        else:
            return None
    return places


def _in_map(system_map: Path, words: Iterable[str]) -> set[str]:
    """Which of ``words`` ``system_map`` names (without a compiler's
    suffix)."""
    text = system_map.read_text()
    return set(words) & {
        n.split(".", 1)[0] for _, n in counting.text_symbols(text)
    }


def _kept_symbols(
    k: kernels_mod.KernelSpec, arch: Arch, config: str
) -> Path | None:
    """Where the kept build of ``k`` has its System.map, if it is kept."""
    if k.source.prebuilt:
        return k.source.prebuilt_symbols()
    try:
        kept, _ = kernel_store.kept_kernel(k, arch, config)
    except FoliolabError:
        return None
    return kept
