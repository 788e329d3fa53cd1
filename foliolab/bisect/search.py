"""`foliolab bisect`: the first commit of a range where a counted metric
crosses a threshold, found with one counting boot per step.

A count is exact (the same kernel running the same workload gives the same
instructions: docs/manual.md, "Exact counts"), so a step needs no repeats,
no statistics and no retries: one build, one counting boot, one number,
one verdict. The range is the first-parent line from --good to --bad of
the user's tree (a merge is one step, as with ``git bisect
--first-parent``). Good is counted first (a relative threshold is taken
against its count), then bad (which must cross, or there is nothing to
find), then the middle of what is still open. A commit that does not build
or boot, or whose sample is invalid, is skipped as ``git bisect skip``
does: the next step is the open commit nearest the middle, and if only
skipped commits are left the answer is the range they span.

The run directory holds bisect.json (the request and every step: commit,
subject, build and boot status, count, verdict), bisect.txt and
outcomes.json (each step as a test, each commit's kernel), rewritten
after every step, and each step's boot under steps/; a stopped bisect
keeps its finished steps and ``--resume`` reuses them. Builds are kept in
the kernel store, so a rerun over the same commits builds nothing.

The record (the request, each step, bisect.json and bisect.txt) is
record.py's; the range and the lab that builds and counts a commit are
lab.py's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import Callable, NoReturn

from foliolab import rundir
from foliolab.bisect.lab import (
    Commit,
    Lab,
    QemuLab,
    check_kernel_tree,
    commit_range,
)
from foliolab.bisect.record import (
    RECORD,
    TEXT,
    BisectRequest,
    Measurement,
    Record,
    Step,
    StepStatus,
    Verdict,
    check_metric,
    step_line,
)
from foliolab.errors import (
    BenchmarkError,
    DamagedRunError,
    FoliolabError,
    Stop,
    StoppedError,
    UsageError,
    stop_signals,
)
from foliolab.executors import check_executor
from foliolab.kernelrecord import BuildRecord, build_record
from foliolab.rundir import RunKind
from foliolab.testrecord import Outcomes

log = logging.getLogger("foliolab")


# ---- the search -------------------------------------------------------------


def next_position(lo: int, hi: int, tried: set[int]) -> int | None:
    """The untried position nearest the middle of (lo, hi), the lower of
    two equally near; None when every one between is tried (skipped)."""
    mid = (lo + hi) / 2
    open_ = [p for p in range(lo + 1, hi) if p not in tried]
    return min(open_, key=lambda p: (abs(p - mid), p)) if open_ else None


class Bisection:
    """One bisect's state: the range, the lab, the record on disk."""

    def __init__(
        self,
        req: BisectRequest,
        commits: list[Commit],
        lab: Lab,
        record: Record,
        kept: dict[str, Step],
        built: dict[str, BuildRecord] | None = None,
    ):
        self.req, self.commits, self.lab = req, commits, lab
        self.record, self.kept = record, kept
        self.good_count: float | None = None
        # each commit's build, by commit, for the run's outcomes (a kept
        # step's from the outcomes of the bisect it resumes)
        self.built: dict[str, BuildRecord] = dict(built or {})

    def write(self) -> None:
        """The record (bisect.json, bisect.txt) and the outcomes it gives
        (outcomes.json), so that a stopped bisect's agree."""
        self.record.write(self.req.out)
        self.record.outcomes(self.req.out, self.built).write(self.req.out)

    def step(self, position: int) -> Step:
        """Build and count the commit at ``position``; the step, printed
        and recorded."""
        c = self.commits[position]
        s = self.kept.get(c.sha)
        if s is None:
            s = self._measure(position, c)
        else:
            s.position = position
        s.verdict = self._verdict(s)
        self.record.steps.append(s)
        self.record.wall_s = time.time() - self.record.started
        self.write()
        print(
            step_line(len(self.record.steps), s, len(self.commits)), flush=True
        )
        return s

    def _measure(self, position: int, c: Commit) -> Step:
        t0 = time.monotonic()
        rundir = self.req.out / "steps" / f"{position:04d}-{c.sha[:12]}"
        try:
            kernel = self.lab.build(c)
        except FoliolabError as e:
            m = Measurement(StepStatus.BUILD_FAILED, detail=e.one_line())
        else:
            self.built[c.sha] = build_record(kernel)
            m = self.lab.count(kernel, rundir)
        return Step(
            position,
            c.sha,
            c.subject,
            m.status,
            m.count,
            Verdict.SKIP,
            m.detail,
            round(time.monotonic() - t0, 1),
            str(rundir),
        )

    def _verdict(self, s: Step) -> Verdict:
        if s.count is None or s.status is not StepStatus.COUNTED:
            return Verdict.SKIP
        if self.good_count is None:  # good itself
            return Verdict.GOOD
        crossed = self.req.threshold.crossed(s.count, self.good_count)
        return Verdict.BAD if crossed else Verdict.GOOD

    def ends(self) -> None:
        """Count good and bad; a BenchmarkError if either gives no
        count, if good crosses, or bad does not."""
        last = len(self.commits) - 1
        good = self.step(0)
        if good.verdict is Verdict.SKIP:
            self._fail(
                f"good {self.req.good} gave no count ({good.status}: "
                f"{good.detail})",
                "a bisect needs good's count",
            )
        assert good.count is not None  # a counted step has its count
        self.good_count = self.record.good_count = good.count
        self.record.limit = self.req.threshold.limit(good.count)
        if self.req.threshold.crossed(good.count, good.count):
            self._fail(
                f"good {self.req.good} itself is "
                f"{self.req.threshold.describe()} ({good.count:g})",
                "give a threshold good does not cross",
            )
        bad = self.step(last)
        if bad.verdict is Verdict.SKIP:
            self._fail(
                f"bad {self.req.bad} gave no count ({bad.status}: "
                f"{bad.detail})",
                "give a bad commit that builds and boots",
            )
        if bad.verdict is Verdict.GOOD:
            self._fail(
                f"bad {self.req.bad} does not cross the threshold: "
                f"{bad.count:g} is not "
                f"{self.req.threshold.describe()} "
                f"(limit {self.req.threshold.limit(good.count):g})",
                "nothing to find in this range",
            )

    def _fail(self, what: str, hint: str) -> NoReturn:
        self.record.result = f"no answer: {what}"
        self.write()
        raise BenchmarkError(
            what, hint=f"{hint}; steps in {self.req.out / TEXT}"
        )

    def search(self) -> list[int]:
        """The positions of the first bad commit: one, or the span of
        skipped commits it is among."""
        lo, hi = 0, len(self.commits) - 1
        tried = {0, hi}
        while (p := next_position(lo, hi, tried)) is not None:
            tried.add(p)
            verdict = self.step(p).verdict
            if verdict is Verdict.BAD:
                hi = p
            elif verdict is Verdict.GOOD:
                lo = p
        return list(range(lo + 1, hi + 1))

    def answer(self, positions: list[int]) -> str:
        first = [self.commits[p] for p in positions]
        self.record.first_bad = [c.sha for c in first]
        bad = next(
            s
            for s in reversed(self.record.steps)
            if s.position == positions[-1]
        )
        if len(first) == 1:
            # good's count may be 0 (a count that first appears): no ratio
            assert bad.count is not None  # bad crossed: it was counted
            ratio = (
                f", {bad.count / self.good_count:.3g}x"
                if self.good_count
                else ""
            )
            text = (
                f"first bad commit: {first[0].sha} {first[0].subject} "
                f"({self.req.metric} {bad.count:g}, good "
                f"{self.good_count:g}{ratio})"
            )
        else:
            text = (
                f"the first bad commit is one of {len(first)} (the "
                "ones before the last could not be counted): "
                + ", ".join(f"{c.sha[:12]} {c.subject}" for c in first)
            )
        self.record.result = text
        return text


# ---- the whole bisect -------------------------------------------------------


def check(req: BisectRequest) -> list[Commit]:
    """Everything about the request that needs no build: the executor
    (one that counts), the range, the tree, the metric; the commits to
    bisect."""
    check_executor(req.executor, count=True)
    check_metric(req.workload, req.metric)
    commits = commit_range(req.repo, req.good, req.bad)
    check_kernel_tree(req.repo, commits)
    return commits


def _kept_builds(req: BisectRequest) -> dict[str, BuildRecord]:
    """--resume: the builds the bisect in ``req.out`` recorded in its
    outcomes, by commit (none from a bisect that wrote none)."""
    try:
        kernels = Outcomes.read(req.out).kernels
    except DamagedRunError:
        return {}
    return {k.built.commit: k.built for k in kernels if k.built}


def _kept_steps(req: BisectRequest) -> dict[str, Step]:
    """--resume: the counted steps of the bisect in ``req.out``."""
    if not (req.out / RECORD).exists():
        raise UsageError(
            f"--resume: {req.out} holds no {RECORD}",
            hint="give the --out of the stopped bisect",
        )
    old = Record.read(req.out)
    if old.key != req.key():
        raise UsageError(
            f"--resume: the bisect in {req.out} was "
            f"{asdict(old.key)}, this asks for "
            f"{asdict(req.key())}",
            hint="resume with the bisect's own options",
        )
    # only what was counted: a build or boot that failed (a timeout under
    # load, say) is tried again
    return {s.commit: s for s in old.steps if s.status is StepStatus.COUNTED}


MakeLab = Callable[[BisectRequest, list[Commit]], Lab]


def bisect(req: BisectRequest, make_lab: MakeLab | None = None) -> Record:
    """Run the bisect; its record (also in ``req.out``). ``make_lab``
    makes what builds and counts (QemuLab; a test passes a stand-in),
    once the request is checked. A stop signal raises StoppedError with
    the finished steps written."""
    # --out: new, empty, or a bisect to go on with (--resume)
    held = rundir.claim(
        req.out, RunKind.BISECT, resume=req.resume, resumable=True
    )
    commits = check(req)
    kept = _kept_steps(req) if req.resume else {}
    if held is not None and held.finished:  # --resume of a finished one
        old = Record.read(req.out)
        print(
            f"{req.out}: the bisect is finished, nothing to resume: "
            f"{old.result}",
            flush=True,
        )
        return old
    built = _kept_builds(req) if req.resume else {}
    lab = (make_lab or QemuLab)(req, commits)
    req.out.mkdir(parents=True, exist_ok=True)
    rundir.hold(req.out)
    record = Record(
        req.command,
        req.key(),
        req.good,
        req.bad,
        req.threshold.describe(),
        len(commits),
        started=time.time(),
    )
    b = Bisection(req, commits, lab, record, kept, built)
    if not req.resume:  # a resumed one's record keeps its steps
        b.write()  # the directory is known as a bisect from its start
    print(
        f"# bisect {len(commits) - 1} commits after {req.good} up to "
        f"{req.bad}: {req.workload.name} {req.metric} "
        f"{req.threshold.describe()}",
        flush=True,
    )
    try:
        with stop_signals():
            b.ends()
            positions = b.search()
    except Stop as s:
        record.stopped = s.signame
        record.wall_s = time.time() - record.started
        b.write()
        raise StoppedError(
            f"stopped by {s.signame}; the {len(record.steps)} "
            f"finished steps are in {req.out / RECORD}",
            hint=f"go on with the same command and --out {req.out} --resume",
        ) from None
    except FoliolabError as e:
        if not record.result:  # an error of the lab, not ends()
            record.result = f"{rundir.BISECT_ERROR}: {e.one_line()}"
            b.write()
        raise
    print(b.answer(positions), flush=True)
    record.wall_s = time.time() - record.started
    b.write()
    return record
