"""``foliolab test --mm-ci``: the mm CI's tests for every kernel named.

For each kernel: its tree (the spec's, a series applied as any command
applies it), the host tests of that tree built and run on the host, and
the wrappers it has (those chosen), each on its own boot of the kernel
built with the mm CI's options (guest.py), all ``repeat`` times, the
kernels' boots side by side (_side_by_side). The first kernel is the
reference (``up``); every other is compared with it case by case, k of
n (compare.py). Written to OUT: outcomes.json (every
run's rows, then the comparison's), mmci-summary.txt and .json, and each
program's and wrapper's log under ``KERNEL/``.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.arch import Arch
from foliolab.boot.measure import boot_once, boot_order
from foliolab.bootrecord import BootStatus
from foliolab.errors import DamagedRunError, FoliolabError, UsageError
from foliolab.executors import ExecutorOptions, make_executor
from foliolab.executors.base import BootRequest, BootSpec, Executor
from foliolab.kernel import build, image, kconfig, source, specs, store, trees
from foliolab.kernelrecord import KernelRecord, kernel_record
from foliolab.suite.mmci import (
    compare,
    config,
    discover,
    firstbad,
    guest,
    hosttests,
    mmci,
    plan,
    results,
)
from foliolab.testrecord import OUTCOMES, Outcomes, TestOutcome, TestStatus

log = logging.getLogger("foliolab")


# the case naming rows are made with, as mmci-request.json keeps it: the
# [RUN] line's (results._case_names, 2026-11-30); a run stopped before
# it has none
CASE_NAMES = "run-line"


@dataclass(frozen=True)
class MmciRequest:
    kernels: tuple[specs.KernelSpec, ...]  # the first is the reference
    arch: Arch
    out: Path
    repeat: int = 1  # runs of the host tests and of each wrapper
    dry_run: bool = False
    # the wrappers to boot, by name: None every one the tree has, ()
    # none (the host tests alone)
    wrappers: tuple[str, ...] | None = ()
    accel: str = "tcg"
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    wrapper_limit_s: int | None = None  # None: plan.wrapper_limit_s()
    memory_mib: int = plan.GUEST_HERE.memory_mib
    # a new failure on a series kernel is found to its patch
    bisect: bool = True
    host_tests: bool = True  # False: the wrappers alone
    # kernel arguments added to every wrapper's boot (--append): a guest
    # changed on purpose, to show what a failure depends on; the summary
    # says so first, as it is not the mm CI's guest any more
    append: tuple[str, ...] = ()
    # go on with the stopped run in ``out``: its recorded host-test runs
    # and boots are kept, the rest run
    resume: bool = False
    # every bash command of the wrappers traced (guest.XTRACE): to find
    # where a wrapper waits; not the mm CI's guest
    xtrace: bool = False
    # MGLRU on in every wrapper's boot (--mglru on): not the mm CI's
    # guest, whose kernel boots with it off
    mglru: bool = False

    def key(self) -> dict[str, Any]:
        """What makes the run's answer, as OUT/mmci-request.json keeps
        it: a --resume must ask the same."""
        return {
            "kernels": [[k.name, k.text] for k in self.kernels],
            "arch": self.arch.name,
            "repeat": self.repeat,
            "wrappers": None if self.wrappers is None else list(self.wrappers),
            "host_tests": self.host_tests,
            "append": list(self.append),
            "accel": self.accel,
            "memory_mib": self.memory_mib,
            "wrapper_limit_s": self.wrapper_limit_s,
            "xtrace": self.xtrace,
            # only when on: a stopped run recorded before the option
            # was asked the same as one without it
            **({"mglru": "on"} if self.mglru else {}),
            # how its rows name cases (results._case_names): a stopped
            # run's rows and a resumed run's must, to be compared
            "case_names": CASE_NAMES,
        }


@dataclass(frozen=True)
class MmciResult:
    outcomes: Outcomes
    summary: str
    # no new failure on any compared kernel; with one kernel alone (a
    # baseline), no failure at all, as kselftest's own runner says
    passed: bool


def check_trees_at_hand(kernels: tuple[specs.KernelSpec, ...]) -> None:
    """Each kernel whose commit is at hand without fetching anything (a
    git: commit, a tree kept from before) has the mm selftests the run
    reads (discover.discover's SourceError if not): what the dry run
    reads of it, checked before the run does any work too."""
    for k in kernels:
        try:
            known = k.known_commit()
        except FoliolabError:
            continue  # the dry run says why; the run finds it out
        if known is not None:
            discover.discover(*known)


def dry_run(req: MmciRequest) -> str:
    """What the run would do, from trees already at hand (nothing is
    fetched, applied or unpacked)."""
    plans = []
    for k in req.kernels:
        try:
            known = k.known_commit()
        except FoliolabError as e:
            known, note = None, str(e)
        else:
            note = "it would be fetched, unpacked or applied first"
        if known is None:
            plans.append(
                plan.KernelPlan(k.name, k.text, "", "", None, {}, note)
            )
            continue
        repo, commit = known
        found = discover.discover(repo, commit)
        plans.append(
            plan.KernelPlan(
                k.name,
                k.text,
                str(repo),
                commit,
                found,
                {
                    d: [p.program for p in progs]
                    for d, progs in hosttests.programs(repo, commit).items()
                },
                kconfig=_kconfig_note(config.merged(repo, commit)),
                kept=str(
                    store.kept_kernel(
                        k, req.arch, kconfig.MMCI, (STORED_TEST_MODULES,)
                    )[0]
                    or ""
                ),
                test_modules=tuple(guest.test_module_dirs(repo, commit)),
                chosen=None
                if req.wrappers is None
                else tuple(chosen(req, found)),
            )
        )
    return mmci.changed_guest(req.append, req.mglru) + plan.describe(
        plans,
        req.arch,
        req.wrapper_limit_s,
        plan.RunShape(req.repeat, req.host_tests),
    )


def _kconfig_note(m: config.MmciOptions) -> str:
    from_tree = sum(o == config.FROM_TREE for o in m.origin.values())
    over = ", ".join(
        f"{k.removeprefix('CONFIG_')} {a}->{b}"
        for k, (a, b) in m.overridden.items()
    )
    return (
        f"{len(m.options)} options: the mm CI's fragment, then "
        f"{from_tree} of the tree's {config.TREE_CONFIG}"
        + (f" (overriding {over})" if over else "")
    )


def chosen(
    req: MmciRequest, found: discover.Discovery
) -> list[discover.Wrapper]:
    """The tree's wrappers ``req.wrappers`` names (all: None); a name the
    tree does not have is refused, naming those it has."""
    if req.wrappers is None:
        return list(found.wrappers)
    have = {w.name: w for w in found.wrappers}
    unknown = [n for n in req.wrappers if n not in have]
    if unknown:
        raise UsageError(
            f"--wrappers {unknown[0]}: the tree has no such {found.kind}",
            hint="it has: " + " ".join(have),
        )
    return [have[n] for n in req.wrappers]


REQUEST = "mmci-request.json"
RESUME_HINT = "give another --out and run the command whole"


@dataclass(frozen=True)
class Stopped:
    """What a stopped run left for --resume: its rows (None: it recorded
    none) and each kernel's tree commit ({}: it stopped before its trees
    were made)."""

    kept: Outcomes | None
    trees: dict[str, str]


def resumed(req: MmciRequest) -> Stopped:
    """--resume: what the stopped run in ``req.out`` left. UsageError
    when it asked for another run or is finished, DamagedRunError for a
    damaged record or a row of no unit the run has: what the command
    checks before it touches the directory, and the run reads."""
    path = req.out / REQUEST
    if not path.is_file():
        raise UsageError(
            f"--resume: {req.out} holds no {REQUEST} (a run from before "
            "--resume, or one stopped before it began)",
            hint=RESUME_HINT,
        )
    old = records.read_object(
        path, records.RecordKind.MMCI_REQUEST, hint=RESUME_HINT
    )
    new = json.loads(json.dumps(req.key()))
    differ = [k for k in new if old.get(k) != new[k]]
    if "case_names" in differ:
        raise UsageError(
            f"--resume: the run in {req.out} named its cases as foliolab "
            "did before a case was named by its [RUN] line; its rows and "
            "this run's would not compare",
            hint="run it again with another --out",
        )
    if differ:
        k = differ[0]
        raise UsageError(
            f"--resume: the run in {req.out} had {k} "
            f"{json.dumps(old.get(k))}, this asks for {json.dumps(new[k])}",
            hint="resume with the run's own kernels and options",
        )
    tree_commits = old.get("trees", {})
    if not isinstance(tree_commits, dict) or not all(
        isinstance(v, str) for v in tree_commits.values()
    ):
        raise DamagedRunError(
            f"{path}: trees {tree_commits!r} is not kernel: commit",
            hint=RESUME_HINT,
        )
    if not (req.out / OUTCOMES).exists():
        return Stopped(None, tree_commits)
    try:
        kept = Outcomes.read(req.out)
    except DamagedRunError as e:
        raise DamagedRunError(str(e), hint=RESUME_HINT) from e
    if kept.finished:
        raise UsageError(
            f"--resume: the run in {req.out} is finished",
            hint=f"its summary is {req.out}/mmci-summary.txt",
        )
    names = {k.name for k in req.kernels}
    for t in kept.tests:
        unit = _unit(t)
        if (
            unit is None
            or t.kernel not in names
            or not 1 <= unit[1] <= req.repeat
            or (unit[2] == HOST_UNIT and not req.host_tests)
        ):
            raise DamagedRunError(
                f"{req.out / OUTCOMES}: {t.path} on {t.kernel or 'no kernel'}"
                f" (run {t.misc.get('run', 1)}) is of no host-test run or "
                "boot this run has",
                hint=RESUME_HINT,
            )
    return Stopped(kept, tree_commits)


def _write_request(req: MmciRequest, kernel_trees: dict[str, str]) -> None:
    d = req.key()
    if kernel_trees:
        d["trees"] = kernel_trees
    records.write_whole(req.out / REQUEST, json.dumps(d, indent=1) + "\n")


def run(req: MmciRequest) -> MmciResult:
    hosttests.check_host()
    stopped = resumed(req) if req.resume else Stopped(None, {})
    req.out.mkdir(parents=True, exist_ok=True)
    if not req.resume:
        _write_request(req, {})
    executor = (
        make_executor(req.executor, req.out) if req.wrappers != () else None
    )
    kernel_records: list[KernelRecord] = []
    sofar = _SoFar(req.out, kernel_records, stopped.kept)
    made: list[tuple[specs.KernelSpec, source.Tree, list[discover.Wrapper]]]
    made = []
    for k in req.kernels:
        # every tree first: a resumed run checks each against the stopped
        # run's before it builds or boots anything
        tree = trees.tree_of(k)
        found = discover.discover(tree.path, tree.commit)
        wrappers = chosen(req, found)
        log.info(
            "%s: %d %s found, %d to run: %s",
            k.name,
            len(found.wrappers),
            found.kind,
            len(wrappers),
            " ".join(w.name for w in wrappers),
        )
        sofar.check(kernel_record(k, tree), {w.name for w in wrappers})
        made.append((k, tree, wrappers))
    commits = {k.name: tree.commit for k, tree, _ in made}
    for name, commit in stopped.trees.items():
        if commits.get(name) != commit:
            raise UsageError(
                f"--resume: kernel {name}'s tree is at "
                f"{commits.get(name, 'nothing')[:12]}, the stopped run's "
                f"was at {commit[:12]}",
                hint=RESUME_HINT,
            )
    if not stopped.trees:
        _write_request(req, commits)
    kernel_records += [kernel_record(k, tree) for k, tree, _ in made]
    tests = [
        _KernelTests(k.name, tree, tuple(wrappers), req.host_tests)
        for k, tree, wrappers in made
    ]
    guests = _Guests(req)
    runs = _side_by_side(req, tests, executor, guests, sofar)
    ref = req.kernels[0].name
    others: list[str | None] = [k.name for k in req.kernels[1:]]
    every_row = [r for name in runs for rows in runs[name] for r in rows]
    heading = mmci.changed_guest(req.append, req.mglru)
    texts = [heading] if heading else []
    passed = True
    for other in others or [None]:
        other_runs = runs[other] if other else []
        cases = compare.compare(runs[ref], other_runs)
        allowed = compare.allowed_failures(runs[ref], other_runs)
        texts.append(compare.summary_text(cases, ref, other, allowed))
        if other:
            every_row += compare.comparison_outcomes(cases, other)
            passed &= not any(c.verdict == compare.NEW for c in cases)
        else:
            passed = compare.summary(cases, ref, None)[0].failed == 0
        compare.write(
            req.out,
            cases,
            ref,
            other,
            extra=_guest_changes(req) or None,
            suffix=f"-{other}" if len(others) > 1 and other else "",
            heading=heading,
            allowed=allowed,
        )
        new = [c.path for c in cases if c.verdict == compare.NEW]
        spec = next((k for k in req.kernels if k.name == other), None)
        if new and spec is not None and req.bisect:
            up = req.kernels[0]
            located = firstbad.locate(
                spec,
                new,
                _prefix_runner(req, tests[0], executor, guests),
                up_is_source=up.applied is None
                and up.text == spec.source_spec().text,
            )
            located = replace(
                located, kernel_args_added=req.append, mglru=req.mglru
            )
            texts.append(firstbad.text(located))
            firstbad.write(req.out, located)
            every_row += firstbad.outcomes(located)
    outcomes = Outcomes("test", kernel_records, every_row)
    outcomes.write(req.out)
    return MmciResult(outcomes, "\n".join(texts), passed)


def _guest_changes(req: MmciRequest) -> dict[str, Any]:
    """How the run's guest differs from the mm CI's, as its summary's JSON
    keeps it (the arguments as a list; {}: it does not); each row keeps
    mmci.changed_guest_marks()."""
    changes: dict[str, Any] = {}
    if req.append:
        changes["kernel_args_added"] = list(req.append)
    if req.mglru:
        changes["mglru"] = "on"
    return changes


# the units of a run, each written whole as it ends: its host tests, or
# a wrapper's boot (named by its rows' path prefix, so none can collide)
HOST_UNIT = hosttests.PREFIX


def _unit(t: TestOutcome) -> tuple[str, int, str] | None:
    """The kernel, run and unit (HOST_UNIT or a wrapper's name) a row of
    an unfinished run came from; None for a row of neither."""
    run = t.misc.get("run", 1)
    if not isinstance(run, int) or isinstance(run, bool):
        return None
    if t.path.startswith(hosttests.PREFIX + "."):
        return t.kernel, run, HOST_UNIT
    wrapper = firstbad.wrapper_of_path(t.path)
    return None if wrapper is None else (t.kernel, run, wrapper)


class _SoFar:
    """The rows of a run as they come, written after each host-test run
    and each wrapper as an unfinished OUT/outcomes.json: a run stopped
    after hours (a signal, a lost worker, a failed build of a search's
    prefix) keeps every row it had. The run's end writes the whole file
    over it, comparison included. With the rows of a stopped run
    (--resume), each unit it recorded is taken from them rather than run
    again, and those not yet taken stay in every file written."""

    def __init__(
        self, out: Path, kernels: list[KernelRecord], kept: Outcomes | None
    ) -> None:
        self.out = out
        self.kernels = kernels
        self.rows: list[TestOutcome] = []
        self.old_kernels = list(kept.kernels) if kept else []
        self.kept: dict[tuple[str, int, str], list[TestOutcome]] = {}
        for t in kept.tests if kept else []:
            unit = _unit(t)
            if unit is not None:  # resumed() refused any other
                self.kept.setdefault(unit, []).append(t)

    def check(self, record: KernelRecord, wrappers: set[str]) -> None:
        """UsageError when the stopped run's kernel of this name was
        another; DamagedRunError for a kept boot of a wrapper this run
        does not boot."""
        old = next(
            (k for k in self.old_kernels if k.name == record.name), None
        )
        if old is not None and old.to_json() != record.to_json():
            raise UsageError(
                f"--resume: kernel {record.name} is not the stopped run's: "
                f"{json.dumps(record.to_json(), sort_keys=True)} against "
                f"{json.dumps(old.to_json(), sort_keys=True)}",
                hint=RESUME_HINT,
            )
        for kernel, run, unit in self.kept:
            if kernel == record.name and unit not in wrappers | {HOST_UNIT}:
                raise DamagedRunError(
                    f"{self.out / OUTCOMES}: a boot of {unit} on {kernel} "
                    f"(run {run}), a wrapper this run does not boot",
                    hint=RESUME_HINT,
                )

    def has(self, kernel: str, run: int, unit: str) -> bool:
        """The stopped run recorded this unit and it is not taken yet."""
        return (kernel, run, unit) in self.kept

    def take(self, kernel: str, run: int, unit: str) -> list[TestOutcome]:
        """The stopped run's rows of this unit ([] if it has none); the
        file on disk has them already."""
        rows = self.kept.pop((kernel, run, unit), [])
        if rows:
            log.info(
                "%s: %s, run %d: kept from the stopped run", kernel, unit, run
            )
            self.rows += rows
        return rows

    def add(self, rows: list[TestOutcome]) -> None:
        self.rows += rows
        names = {k.name for k in self.kernels}
        kernels = self.kernels + [
            k for k in self.old_kernels if k.name not in names
        ]
        untaken = [t for rows in self.kept.values() for t in rows]
        Outcomes("test", kernels, self.rows + untaken, finished=False).write(
            self.out
        )


@dataclass(frozen=True)
class _KernelTests:
    """What a run, or one probe of a first-bad search, runs of a kernel."""

    name: str  # the kernel's name, which its rows carry
    tree: source.Tree
    wrappers: tuple[discover.Wrapper, ...]
    host: bool  # its host tests too
    # where its logs go under OUT ("": its name); a reference booted
    # again beside a prefix of the search writes beside its first logs
    logs: str = ""

    @property
    def log_dir(self) -> str:
        return self.logs or self.name


class _Guests:
    """Each kernel's guest (its mm CI kernel, selftests and image), made
    once by name and taken again by every later boot of that name: the
    reference booted beside each prefix of a search is the run's own."""

    def __init__(self, req: MmciRequest) -> None:
        self.req = req
        self.made: dict[str, tuple[BootSpec, Path, guest.Selftests]] = {}

    def of(self, k: _KernelTests) -> tuple[BootSpec, Path, guest.Selftests]:
        if k.name not in self.made:
            self.made[k.name] = _guest_setup(self.req, k.name, k.tree)
        return self.made[k.name]


def _side_by_side(
    req: MmciRequest,
    kernels: list[_KernelTests],
    executor: Executor | None,
    guests: _Guests,
    sofar: _SoFar | None = None,
) -> dict[str, list[list[TestOutcome]]]:
    """``req.repeat`` runs of every kernel's tests, the kernels side by
    side: run i is the host tests of each kernel, then each wrapper
    booted on each kernel that has it, the kernels in the order given in
    runs 1, 3, ... and reversed in runs 2, 4, ... (ABBA: boot_order(),
    as the workloads' rounds are). A case whose rate drifts over the
    hours of a run (the host's load, a clock, a long-lived file) then
    falls on every kernel alike, not on the one booted later. Each run's rows,
    by kernel, each given to ``sofar`` too as they come (None: a probe
    of a first-bad search, whose kernels are not the run's); a unit
    ``sofar`` kept from a stopped run is not run again. Every kernel a
    boot will need is built before the first boot: one that does not
    build stops the run before hours of the others' boots."""
    runs: dict[str, list[list[TestOutcome]]] = {
        k.name: [[] for _ in range(req.repeat)] for k in kernels
    }
    by_name = {k.name: k for k in kernels}

    def kept(k: _KernelTests, i: int, unit: str) -> bool:
        rows = sofar.take(k.name, i, unit) if sofar is not None else []
        runs[k.name][i - 1] += rows
        return bool(rows)

    def came(k: _KernelTests, i: int, rows: list[TestOutcome]) -> None:
        tagged = [_with_run(r, i) if req.repeat > 1 else r for r in rows]
        runs[k.name][i - 1] += tagged
        if sofar is not None:
            sofar.add(tagged)

    def to_boot(k: _KernelTests) -> bool:
        return executor is not None and any(
            sofar is None or not sofar.has(k.name, i, w.name)
            for i in range(1, req.repeat + 1)
            for w in k.wrappers
        )

    for k in kernels:
        if to_boot(k):
            guests.of(k)
    wrapper_names: list[str] = []
    for k in kernels:
        wrapper_names += [
            w.name for w in k.wrappers if w.name not in wrapper_names
        ]
    for i in range(1, req.repeat + 1):
        order = [by_name[n] for n in boot_order(i - 1, tuple(by_name))]
        for k in order:
            if not k.host or kept(k, i, HOST_UNIT):
                continue
            log.info("%s: host tests, run %d of %d", k.name, i, req.repeat)
            sub = f"host-{i}" if req.repeat > 1 else "host"
            came(
                k,
                i,
                hosttests.run_host_tests(
                    k.tree.path,
                    k.tree.commit,
                    k.name,
                    req.out,
                    f"{k.log_dir}/{sub}",
                ),
            )
        if executor is None:
            continue
        for wrapper in wrapper_names:
            for k in order:
                w = next((w for w in k.wrappers if w.name == wrapper), None)
                if w is None or kept(k, i, w.name):
                    continue
                spec, img, tests = guests.of(k)
                log.info(
                    "%s: wrapper %s (%s), run %d of %d",
                    k.name,
                    w.name,
                    w.command,
                    i,
                    req.repeat,
                )
                sub = f"{w.name}-{i}" if req.repeat > 1 else w.name
                came(
                    k,
                    i,
                    _one_wrapper(
                        req,
                        k.name,
                        w,
                        spec,
                        img,
                        executor,
                        f"{k.log_dir}/guest/{sub}",
                        tests,
                    ),
                )
    return runs


def _prefix_runner(
    req: MmciRequest,
    reference: _KernelTests,
    executor: Executor | None,
    guests: _Guests,
) -> firstbad.RunPrefix:
    """How firstbad runs a prefix of the series: what the new failures
    are in (its host tests when one is a host test's, the wrappers they
    are in), each ``req.repeat`` times, side by side with the reference
    running the same again (its logs in REF-beside-PREFIX/, PREFIX a
    KERNEL+pN): the prefix is judged against the reference's runs of
    the same hours, not against runs made hours before."""

    def run_prefix(
        spec: specs.KernelSpec, paths: list[str]
    ) -> firstbad.ProbeRuns:
        tree = trees.tree_of(spec)
        names = {firstbad.wrapper_of_path(p) for p in paths} - {None}
        found = discover.discover(tree.path, tree.commit)
        host = any(p.startswith(hosttests.PREFIX + ".") for p in paths)
        prefix = _KernelTests(
            spec.name,
            tree,
            tuple(w for w in found.wrappers if w.name in names),
            host,
        )
        beside = _KernelTests(
            reference.name,
            reference.tree,
            tuple(w for w in reference.wrappers if w.name in names),
            host,
            logs=f"{reference.name}-beside-{spec.name}",
        )
        runs = _side_by_side(req, [beside, prefix], executor, guests)
        return firstbad.ProbeRuns(runs[reference.name], runs[spec.name])

    return run_prefix


def _with_run(r: TestOutcome, i: int) -> TestOutcome:
    return TestOutcome(
        r.path, r.status, r.kernel, r.duration_s, r.log, {**r.misc, "run": i}
    )


def _guest_setup(
    req: MmciRequest, name: str, tree: source.Tree
) -> tuple[BootSpec, Path, guest.Selftests]:
    """The kernel built with the mm CI's options, the selftests and the
    one image every boot of this kernel takes."""
    kdir = req.out / name
    made = _kernel(tree, req.arch, kdir)
    kernel = made.kernel
    tests = guest.build_selftests(tree.path, tree.commit, req.arch)
    if made.modules_not_built:
        # said on each wrapper's row as a program not built is
        tests = replace(
            tests, not_built=tests.not_built + made.modules_not_built
        )
    base = image.build_image(req.arch)
    # one image for every boot of this kernel: the base archive, then the
    # payload (the kernel unpacks them in order)
    img = kdir / "initramfs.cpio"
    img.write_bytes(
        base.path.read_bytes()
        + guest.payload(req.arch, tests, made.modules, made.test_modules)
    )
    limit = req.wrapper_limit_s or plan.wrapper_limit_s(req.arch)
    layout = plan.GUEST_HERE
    spec = BootSpec(
        req.arch,
        kernel.image,
        accel=req.accel,
        vcpus=layout.cpus,
        memory_mb=req.memory_mib,
        numa_nodes=len(layout.numa_nodes_mib),
        timeout=limit,
        cmdline=guest.kernel_args() + req.append,
    )
    return spec, img, tests


@dataclass(frozen=True)
class MmciKernel:
    """An mm CI kernel as a run's directory holds it."""

    kernel: build.Kernel
    modules: Path | None  # its modules_install tree (None: no modules)
    test_modules: Path  # the selftests' test modules built against it
    modules_not_built: tuple[str, ...]  # test modules that did not build


# beside a stored mm CI kernel's image: its modules, and the selftests'
# test modules built against it (guest.keep_test_modules)
STORED_MODULES = "modules"
STORED_TEST_MODULES = "test-modules"


def _kernel(tree: source.Tree, arch: Arch, kdir: Path) -> MmciKernel:
    """The mm CI kernel of ``tree``, its modules and the selftests' test
    modules, copied into the run's ``kdir`` from the kernel store (built
    there first if it is not kept). Kept per commit and fragment like
    every stored kernel: a run that goes back and forth between 7.3.4 and
    7.3.4 with a series, which share one build directory, builds each
    once, not at every switch (690-1,100 s each here, 2026-11-30)."""

    def also_keep(built: build.Kernel, there: Path) -> None:
        guest.keep_modules(built, there / STORED_MODULES)
        guest.keep_test_modules(built, tree, arch, there / STORED_TEST_MODULES)

    kept = store.build_and_keep(
        tree,
        arch,
        kconfig.MMCI,
        also_keep=also_keep,
        also_kept=(STORED_TEST_MODULES,),
    )
    kernel = kept.kept_in(kdir / "kernel", {f: f for f in build.KEPT_FILES})
    copies: dict[str, Path | None] = {}
    for stored in (STORED_MODULES, STORED_TEST_MODULES):
        there = kept.build_dir / stored
        copies[stored] = None
        if there.is_dir():
            copies[stored] = kdir / stored
            shutil.rmtree(kdir / stored, ignore_errors=True)
            shutil.copytree(there, kdir / stored, symlinks=True)
    test_modules = kdir / STORED_TEST_MODULES
    not_built = test_modules / guest.NOT_BUILT_MODULES
    return MmciKernel(
        kernel,
        copies[STORED_MODULES],
        test_modules,
        tuple(not_built.read_text().split()) if not_built.is_file() else (),
    )


def _one_wrapper(
    req: MmciRequest,
    name: str,
    w: discover.Wrapper,
    spec: BootSpec,
    img: Path,
    executor: Executor,
    log_dir: str,
    tests: guest.Selftests,
) -> list[TestOutcome]:
    layout = plan.GUEST_HERE
    job = guest.wrapper_job(
        w,
        layout.huge_1g_pages,
        layout.swap_mib,
        int(spec.timeout),
        xtrace=req.xtrace,
        mglru=req.mglru,
    )
    boot_dir = req.out / log_dir
    res = boot_once(
        executor,
        BootRequest(f"mmci/{log_dir.replace('/', '-')}", spec, job, boot_dir),
        img,
    )
    output = (
        res.results.read_text(errors="replace") if res.results.exists() else ""
    )
    console = (
        res.console.read_text(errors="replace") if res.console.exists() else ""
    )
    run = results.WrapperRun(
        w,
        guest.wrapper_output(output),
        res.exit_code,
        timed_out=res.status is BootStatus.TIMEOUT,
        console=console,
        duration_s=round(res.elapsed, 1),
        time_limit_s=int(spec.timeout),
        stuck_listed=guest.STUCK_TAG in output,
        boot_ended=res.status,
        boot_why=res.why_ended,
    )
    log_rel = (
        str(res.results.relative_to(req.out))
        if res.results.is_relative_to(req.out)
        else str(res.results)
    )
    rows = results.wrapper_outcomes(run, name, log_rel)
    setup = guest.guest_setup(output)
    problems = setup.problems(layout.huge_1g_pages, layout.swap_mib, req.mglru)
    # kept with the row: not the mm CI's guest
    misc = dict(rows[0].misc) | mmci.changed_guest_marks(req.append, req.mglru)
    if setup.lru_gen is not None:
        # what MGLRU did in this boot (7: every feature; 1 on a TCG arm64,
        # whose CPU lacks the hardware access flag; 0: off; -1: no MGLRU
        # in the kernel), kept beside the row where the boot's own output
        # is not
        misc["lru_gen_enabled"] = setup.lru_gen
    if tests.not_built:
        misc["not_built"] = " ".join(tests.not_built)
    if req.xtrace:
        misc["xtrace"] = True
    if problems and res.exit_code is not None:
        # the guest was not the one asked for: not the mm CI's result
        misc["detail"] = "guest setup did not hold: " + "; ".join(problems)
        rows[0] = replace(rows[0], status=TestStatus.ERROR, misc=misc)
    else:
        rows[0] = replace(rows[0], misc=misc)
    log.info("%s: %s %s", name, rows[0].path, rows[0].status)
    return rows
