"""``foliolab test --mm-ci``: the mm CI's tests for every kernel named.

For each kernel: its tree (the spec's, a series applied as any command
applies it), the host tests of that tree built and run on the host
(``repeat`` times), and the wrappers it has, listed as the planned guest
step. The first kernel is the reference (``up``); every other is
compared with it case by case, k of n (compare.py). Written to OUT:
outcomes.json (every run's rows, then the comparison's), mmci-summary.txt
and .json, and each program's log under ``KERNEL/``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from foliolab.arch import Arch
from foliolab.errors import FoliolabError
from foliolab.kernel import specs, trees
from foliolab.kernelrecord import KernelRecord, kernel_record
from foliolab.suite.mmci import compare, config, discover, hosttests, plan
from foliolab.testrecord import Outcomes, TestOutcome

log = logging.getLogger("foliolab")


@dataclass(frozen=True)
class MmciRequest:
    kernels: tuple[specs.KernelSpec, ...]  # the first is the reference
    arch: Arch
    out: Path
    repeat: int = 1  # host test runs per kernel
    dry_run: bool = False


@dataclass(frozen=True)
class MmciResult:
    outcomes: Outcomes
    summary: str
    passed: bool  # no new failure on any compared kernel


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
        plans.append(
            plan.KernelPlan(
                k.name,
                k.text,
                str(repo),
                commit,
                discover.discover(repo, commit),
                {
                    d: [p.program for p in progs]
                    for d, progs in hosttests.programs(repo, commit).items()
                },
                kconfig=_kconfig_note(config.merged(repo, commit)),
            )
        )
    return plan.describe(plans, req.arch)


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


def run(req: MmciRequest) -> MmciResult:
    hosttests.check_host()
    req.out.mkdir(parents=True, exist_ok=True)
    records: list[KernelRecord] = []
    runs: dict[str, list[list[TestOutcome]]] = {}
    for k in req.kernels:
        tree = trees.tree_of(k)
        records.append(kernel_record(k, tree))
        found = discover.discover(tree.path, tree.commit)
        log.info(
            "%s: %d %s found (guest runs are a later step): %s",
            k.name,
            len(found.wrappers),
            found.kind,
            " ".join(w.name for w in found.wrappers),
        )
        runs[k.name] = []
        for i in range(1, req.repeat + 1):
            log.info("%s: host tests, run %d of %d", k.name, i, req.repeat)
            rows = hosttests.run_host_tests(
                tree.path,
                tree.commit,
                k.name,
                req.out,
                f"{k.name}/host-{i}" if req.repeat > 1 else f"{k.name}/host",
            )
            runs[k.name].append(
                [_with_run(r, i) if req.repeat > 1 else r for r in rows]
            )
    ref = req.kernels[0].name
    others: list[str | None] = [k.name for k in req.kernels[1:]]
    every_row = [r for name in runs for rows in runs[name] for r in rows]
    texts = []
    passed = True
    for other in others or [None]:
        cases = compare.compare(runs[ref], runs[other] if other else [])
        texts.append(compare.summary_text(cases, ref, other))
        if other:
            every_row += compare.comparison_outcomes(cases, other)
            passed &= not any(c.verdict == compare.NEW for c in cases)
        compare.write(
            req.out,
            cases,
            ref,
            other,
            suffix=f"-{other}" if len(others) > 1 and other else "",
        )
    outcomes = Outcomes("test", records, every_row)
    outcomes.write(req.out)
    return MmciResult(outcomes, "\n".join(texts), passed)


def _with_run(r: TestOutcome, i: int) -> TestOutcome:
    return TestOutcome(
        r.path, r.status, r.kernel, r.duration_s, r.log, {**r.misc, "run": i}
    )
