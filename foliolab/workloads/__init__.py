"""The workloads foliolab runs: one folder each (``NAME/``: its C
program(s), guest script, ``workload.py`` and ``fixture/``), registered
here. A user's own folder, given by its path where a name is, is loaded
by user.py into the same Workload.

A folder's ``workload.py`` holds its parameters, metrics, derive function,
counting window and expected time (model.Workload); its C programs are
built by the Makefile here and its script goes into the guest image as
/foliolab/workloads/<script>.sh (kernel/image.py). Its ``fixture/`` is a
run directory of real boots of its workloads and the samples they derive
(expected.jsonl), which the contract test holds its derive to; it stays
in the source tree (pyproject ships a folder's C, headers and scripts).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from foliolab.errors import UsageError
from foliolab.paths import user_path
from foliolab.workloads import user
from foliolab.workloads.dirty_tlb import workload as dirty_tlb
from foliolab.workloads.file_reclaim import workload as file_reclaim
from foliolab.workloads.khugepaged import workload as khugepaged
from foliolab.workloads.ksm_rmap import workload as ksm_rmap
from foliolab.workloads.lru_file_readonce import (
    workload as lru_file_readonce,
)
from foliolab.workloads.madvise import workload as madvise
from foliolab.workloads.model import MACHINE_VCPUS, Workload
from foliolab.workloads.mremap import workload as mremap
from foliolab.workloads.page_fault import workload as page_fault
from foliolab.workloads.pageout import workload as pageout
from foliolab.workloads.stress_ng import workload as stress_ng
from foliolab.workloads.stutterp import workload as stutterp
from foliolab.workloads.sweep import parse_point_name, point
from foliolab.workloads.thpchallenge import workload as thpchallenge
from foliolab.workloads.time_unmap import workload as time_unmap
from foliolab.workloads.usemem import workload as usemem


def _registry(*folders: ModuleType) -> dict[str, Workload]:
    """Each folder's workloads by name; a name given twice is a mistake."""
    out: dict[str, Workload] = {}
    for folder in folders:
        for w in folder.WORKLOADS:
            if w.name in out:
                raise ValueError(f"two workloads are named {w.name}")
            out[w.name] = w
    return out


# The seeds' workload folders: what a run without --workloads runs.
SEED_FOLDERS = (pageout, dirty_tlb, khugepaged, ksm_rmap, file_reclaim)
# The general mm workloads (issue 61): the benchmarks the kernel test
# robot and mmtests report any mm change with, written here. Run by name
# or all of them as ``--workloads general``; not in the default run,
# whose time they would more than double.
GENERAL_FOLDERS = (
    page_fault,
    usemem,
    lru_file_readonce,
    time_unmap,
    mremap,
    madvise,
    thpchallenge,
    stutterp,
    stress_ng,
)
# Every workload folder, in the order a run boots and reports their
# workloads.
FOLDERS = SEED_FOLDERS + GENERAL_FOLDERS
# Every workload by name.
WORKLOADS = _registry(*FOLDERS)
# The names of the workload sets ``--workloads`` takes besides names.
GENERAL = "general"
SEEDS = "seeds"
ALL = "all"
SETS = {
    SEEDS: [w for f in SEED_FOLDERS for w in f.WORKLOADS],
    GENERAL: [w for f in GENERAL_FOLDERS for w in f.WORKLOADS],
    ALL: list(WORKLOADS.values()),
}


def find(name: str) -> Workload | None:
    """A workload by name, or a sweep point by its name (``NAME@P=V``,
    sweep.py): what a run directory's boots and samples name, built in
    or a user's folder loaded (user.py). None for a name this checkout
    does not know."""
    base, values = parse_point_name(name)
    w = WORKLOADS.get(base)
    if w is None and (uw := user.loaded(base)) is not None:
        w = uw.workload
    if w is None and stress_ng.is_family_name(base):
        try:
            w = stress_ng.workload(base)
        except UsageError:
            return None
    if w is None or not values:
        return w
    if any(k not in w.params and k != MACHINE_VCPUS for k, _ in values):
        return None
    return point(w, values)


def fixtures() -> list[Path]:
    """Each workload folder's fixture/: its captured boots (a run
    directory), for the contract test; a folder without one has none to
    give (the contract test says which workload has no captured boot)."""
    folders = (Path(str(folder.__file__)).parent for folder in FOLDERS)
    return [f / "fixture" for f in folders if (f / "fixture").is_dir()]


def get_workloads(names: str | None) -> list[Workload]:
    """Parse ``--workloads a,b``; None (the option not given) means the
    seeds' workloads; ``seeds``, ``general`` and ``all`` stand for their
    sets. An entry with a slash (``./mywl``) is a user's workload
    folder, loaded and checked now (user.py), before anything is
    built."""
    if names is None:
        return list(SETS[SEEDS])
    out: list[Workload] = []
    for name in _expand_sets(names):
        if user.looks_like_path(name):
            w = user.load(
                user_path(name, "--workloads"), set(WORKLOADS)
            ).workload
        elif name in WORKLOADS:
            w = WORKLOADS[name]
        elif stress_ng.is_family_name(name):
            # any mm stressor by name; another is refused here, in one
            # line, before anything is built
            w = stress_ng.workload(name)
        else:
            raise UsageError(
                f"unknown workload {name!r}"
                if name
                else f"--workloads {names!r} names an empty workload",
                hint=f"choose from: {', '.join(WORKLOADS)}, "
                f"{stress_ng.PREFIX}STRESSOR (an mm stressor), the sets "
                f"{', '.join(SETS)}, or a folder of your own by its path "
                "(./NAME)",
            )
        if any(o.name == w.name for o in out):
            raise UsageError(
                f"--workloads names {w.name} twice",
                hint="give each workload once (--runs sets the repetitions)",
            )
        out.append(w)
    return out


def _expand_sets(names: str) -> list[str]:
    """The entries of ``--workloads``, each set replaced by its
    workloads' names."""
    out: list[str] = []
    for name in names.split(","):
        name = name.strip()
        out += [w.name for w in SETS[name]] if name in SETS else [name]
    return out


def load_kept(out: Path) -> None:
    """The user workloads the run in ``out`` kept, loaded (user.py), so
    its samples can be derived and reported by name."""
    user.load_kept(out, set(WORKLOADS))


def keep_user_workloads(out: Path, names: list[str]) -> None:
    """The user workloads among ``names`` kept in the run directory."""
    user.keep(out, names)


def parse_params(
    items: list[str], workloads: list[Workload]
) -> dict[str, dict[str, str]]:
    """``--param WORKLOAD.NAME=VALUE`` (or ``NAME=VALUE`` for all that
    have it)."""
    out: dict[str, dict[str, str]] = {w.name: {} for w in workloads}
    given: dict[tuple[str, str], str] = {}  # (workload, param) -> item
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r} is not NAME=VALUE")
        wname, dot, pname = key.rpartition(".")
        targets = [w for w in workloads if not dot or w.name == wname]
        if dot and not targets:
            raise UsageError(
                f"--param {item!r}: workload {wname!r} is not being run"
            )
        if not dot:
            targets = [w for w in targets if pname in w.params]
            if not targets:
                raise UsageError(
                    f"--param {item!r}: no selected workload has "
                    f"a parameter {pname!r}"
                )
        for w in targets:
            first = given.setdefault((w.name, pname), item)
            if first != item:
                # the last one would win without a word
                raise UsageError(
                    f"--param {item!r}: {w.name}.{pname} is already set "
                    f"by --param {first!r}",
                    hint="give each parameter once",
                )
            out[w.name][pname] = value
    for w in workloads:
        w.resolve(out[w.name])  # validate now, before any build
    return out


def listing(workloads: list[Workload]) -> str:
    """`foliolab workloads`: each workload's parameters (type or range,
    default) and metrics, from their folders' definitions."""
    out = []
    for w in workloads:
        out += [
            f"{w.name}: {w.title}",
            f"  parameters (--param {w.name}.NAME=VALUE):",
        ]
        width = max((len(k) for k in w.params), default=0)
        out += [
            f"    {k:<{width}}  {p.kind}; default {p.default}: {p.help}"
            for k, p in w.params.items()
        ]
        out.append(
            "  metrics (unit, better; * primary; counted: with --count):"
        )
        width = max(len(m.key) for m in w.metrics)
        out += [
            f"    {'*' if m.primary else ' '} {m.key:<{width}}  {m.unit}, "
            f"{m.better}{', counted' if m.counted else ''}: {m.label}"
            for m in w.metrics
        ]
        out.append("")
    return "\n".join(out)
