"""A new failure on a series kernel, found to the patch that brings it.

``test --mm-ci`` compares each kernel with the reference case by case
(compare.py). When a kernel that is SOURCE+SERIES has new failures, the
series' prefixes are searched for the first that has them: each prefix
tried runs what the new failures are in (the host tests if one is a host
test's, the wrappers they belong to), as many times as the kernels were
run, side by side with the reference running the same again, and is
compared with those runs of the reference by the same rule: a case
whose rate drifts over the hours of a search is judged against the
reference of the same hours, not the one booted before it began. A
prefix is bad when any of the new failures is a new failure there too.

The search is a bisection over prefixes 0..N of the N-patch series.
Prefix N, the whole series, is booted first beside the reference: when
none of the cases is a new failure again there, nothing is searched
(the run's finding did not hold; a bisection of steps all good would
name the last patch). Prefix 0 is the source. When
the reference is that source itself, prefix 0 is good by the comparison
already made; otherwise it is run first, and a bad prefix 0 says the
failure is the source's against the reference, not the series'. A
failure that comes and goes (a flaky case whose rate the series
changes) can mislead a bisection; each step's k of n is kept beside the
reference's, so a reader sees how clear each decision was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from foliolab.kernel.specs import KernelSpec
from foliolab.suite.mmci import compare, mmci
from foliolab.suite.mmci.results import PREFIX as WRAPPER_PREFIX
from foliolab.testrecord import TestOutcome, TestStatus

log = logging.getLogger("foliolab")

Runs = Sequence[Sequence[TestOutcome]]


@dataclass(frozen=True)
class ProbeRuns:
    """One prefix's runs and the reference's, made side by side."""

    reference: Runs
    prefix: Runs


# runs a prefix of the series: (the prefix's spec, the new failures'
# paths) -> its runs and the reference's beside them
RunPrefix = Callable[[KernelSpec, list[str]], ProbeRuns]
FILE = "mmci-first-bad"
NOT_AGAIN = (
    "the whole series booted again beside the reference did not fail "
    "them more often: nothing to search"
)


def wrapper_of_path(path: str) -> str | None:
    """The wrapper a ``kselftest.mm.WRAPPER...`` path is in."""
    head = WRAPPER_PREFIX + "."
    if not path.startswith(head):
        return None
    return path[len(head) :].split(".", 1)[0]


@dataclass(frozen=True)
class Step:
    """One prefix tried: how many patches, the last one, and the new
    failures' k of n there."""

    prefix: int
    patch: str  # the last patch applied ("" for none)
    bad: bool
    tallies: dict[str, str]  # path -> "k/n" on this prefix
    # path -> "k/n" on the reference booted beside it (empty in a search
    # recorded before the reference was booted again at each step)
    reference: dict[str, str] = field(default_factory=dict)

    def told(self, path: str) -> str:
        """``path``'s k/n here, and the reference's beside it where the
        step has it ("" for a path not searched)."""
        there = self.reference.get(path)
        return self.tallies.get(path, "") + (
            f" against {there}" if there is not None else ""
        )

    def line(self) -> str:
        counts = ", ".join(f"{p} {self.told(p)}" for p in self.tallies)
        what = self.patch or "the source alone"
        return (
            f"  prefix {self.prefix:>2} ({what}): "
            f"{'bad' if self.bad else 'good'}  [{counts}]"
        )


@dataclass(frozen=True)
class FirstBad:
    """The search's answer for one kernel."""

    kernel: str
    spec: str
    cases: tuple[str, ...]  # the new failures searched for
    steps: tuple[Step, ...]
    first_bad: int | None  # 1-based patch number; 0: the source; None
    patch: str  # its file name ("" when none)
    note: str = ""  # why there was no search, or what limits it
    # kernel arguments every boot of the search added (--append): not the
    # mm CI's guest, which the answer says wherever it is read
    kernel_args_added: tuple[str, ...] = ()
    mglru: bool = False  # every boot of the search with MGLRU on


def _tallies(
    paths: list[str], runs: ProbeRuns
) -> tuple[bool, dict[str, str], dict[str, str]]:
    """Whether the prefix is bad, and each path's k/n on it and on the
    reference beside it."""
    cases = {c.path: c for c in compare.compare(runs.reference, runs.prefix)}
    bad = False
    tallies = {}
    reference = {}
    for p in paths:
        c = cases.get(p)
        if c is None:
            tallies[p] = "not run"
            continue
        tallies[p] = f"{c.next.k}/{c.next.n}"
        reference[p] = f"{c.up.k}/{c.up.n}"
        bad |= c.verdict == compare.NEW
    return bad, tallies, reference


def locate(
    spec: KernelSpec,
    new: list[str],
    run_prefix: RunPrefix,
    up_is_source: bool,
) -> FirstBad:
    """Bisect ``spec``'s series for the first prefix where any of ``new``
    is a new failure against the reference run beside it."""
    if spec.applied is None:
        return FirstBad(
            spec.name,
            spec.text,
            tuple(new),
            (),
            None,
            "",
            "not a series kernel: nothing to search",
        )
    patches = spec.series().patches
    n = len(patches)
    steps: dict[int, Step] = {}

    def probe(prefix: int) -> bool:
        # "+" is in no --kernel name: a probe's guest and logs are its own
        name = f"{spec.name}+p{prefix}"
        log.info(
            "%s: searching the first bad patch: prefix %d of %d",
            spec.name,
            prefix,
            n,
        )
        runs = run_prefix(_renamed(spec.with_prefix(prefix), name), new)
        bad, tallies, reference = _tallies(new, runs)
        steps[prefix] = Step(
            prefix,
            patches[prefix - 1].name if prefix else "",
            bad,
            tallies,
            reference,
        )
        return bad

    # the whole series first, beside the reference of the same hours: a
    # new failure of the run that is not new again there is not bisected
    # (a search with no bad step would name the last patch)
    if not probe(n):
        return FirstBad(
            spec.name,
            spec.text,
            tuple(new),
            tuple(steps.values()),
            None,
            "",
            NOT_AGAIN,
        )
    lo, hi = 0, n  # lo: good (or not yet known), hi: bad
    if not up_is_source and probe(0):
        return _answer(spec, new, steps, 0, "")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            hi = mid
        else:
            lo = mid
    return _answer(spec, new, steps, hi, patches[hi - 1].name if hi else "")


def _renamed(spec: KernelSpec, name: str) -> KernelSpec:
    return replace(spec, name=name)


def _answer(
    spec: KernelSpec,
    new: list[str],
    steps: dict[int, Step],
    at: int,
    patch: str,
) -> FirstBad:
    return FirstBad(
        spec.name,
        spec.text,
        tuple(new),
        tuple(steps[k] for k in sorted(steps)),
        at,
        patch,
        "" if at else "the source fails them against the reference",
    )


def text(found: FirstBad) -> str:
    lines = [f"first bad patch of {found.kernel} ({found.spec}):"]
    if found.first_bad is None:
        lines.append(f"  none searched: {found.note}")
    elif found.first_bad == 0:
        lines.append(f"  none: {found.note}")
    else:
        lines.append(f"  {found.first_bad}: {found.patch}")
    lines.append(f"  for {len(found.cases)} new failure(s):")
    lines += [f"    {c}" for c in found.cases]
    lines += [s.line() for s in found.steps]
    return (
        mmci.changed_guest(found.kernel_args_added, found.mglru)
        + "\n".join(lines)
        + "\n"
    )


def write(out: Path, found: FirstBad) -> None:
    base = out / f"{FILE}-{found.kernel}"
    base.with_suffix(".txt").write_text(text(found))
    base.with_suffix(".json").write_text(
        json.dumps(asdict(found), indent=1) + "\n"
    )


def outcomes(found: FirstBad) -> list[TestOutcome]:
    """A row ``firstbad.PATH`` per new failure, on the searched kernel:
    fail with the patch found, error when none was."""
    rows = []
    for path in found.cases:
        misc = {
            "first_bad": str(found.first_bad)
            if found.first_bad is not None
            else "",
            "patch": found.patch,
            "steps": "; ".join(
                f"{s.prefix}:{'bad' if s.bad else 'good'} {s.told(path)}"
                for s in found.steps
            ),
        }
        if found.note:
            misc["note"] = found.note
        misc.update(
            mmci.changed_guest_marks(found.kernel_args_added, found.mglru)
        )
        rows.append(
            TestOutcome(
                f"firstbad.{path}",
                TestStatus.FAIL if found.first_bad else TestStatus.ERROR,
                found.kernel,
                misc=misc,
            )
        )
    return rows
