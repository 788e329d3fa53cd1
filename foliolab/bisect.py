"""`foliolab bisect`: the first commit of a range where a counted metric
crosses a threshold, found with one counting boot per step.

A count is exact (the same kernel running the same workload gives the
same instructions, SPEC §7), so a step needs no repeats, no statistics and
no retries: one build, one counting boot, one number, one verdict. The
range is the first-parent line from --good to --bad of the user's tree
(a merge is one step, as with ``git bisect --first-parent``). Good is
counted first (a relative threshold is taken against its count), then
bad (which must cross, or there is nothing to find), then the middle of
what is still open. A commit that does not build or boot, or whose sample
is invalid, is skipped as ``git bisect skip`` does: the next step is the
open commit nearest the middle, and if only skipped commits are left the
answer is the range they span.

The run directory holds bisect.json (the request and every step: commit,
subject, build and boot status, count, verdict) and bisect.txt, rewritten
after every step, and each step's boot under steps/; a stopped bisect
keeps its finished steps and ``--resume`` reuses them. Builds are kept in
the kernel store, so a rerun over the same commits builds nothing.
"""

from __future__ import annotations

import enum
import json
import logging
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Protocol

from foliolab import counting
from foliolab.kernel import image, source, store
from foliolab.arch import get_arch
from foliolab.kernel.build import Kernel
from foliolab.derive import samples_from_boot
from foliolab.errors import (BenchmarkError, FoliolabError, Stop,
                             StoppedError, UsageError, stop_signals)
from foliolab.executors.base import BootRequest, BootSpec
from foliolab.executors.qemu import QemuExecutor
from foliolab.kernel.kconfig import debug_cmdline
from foliolab.measure import boot_spec
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")

RECORD = "bisect.json"
TEXT = "bisect.txt"
# Counted metrics a single window cannot give: the report derives them
# from the repeats of a kernel (which functions vary between them).
REPEAT_ONLY = ("kernel_insns_deterministic", "nondeterministic_pct")


# ---- the threshold ----------------------------------------------------------

class Direction(str, enum.Enum):
    BELOW = "below"
    ABOVE = "above"


@dataclass(frozen=True)
class Threshold:
    """``--below 0.5x``: under half of good's count; ``--above 1200``:
    over 1200 (an absolute count)."""

    direction: Direction
    value: float
    relative: bool                  # value times good's count

    def limit(self, good: float) -> float:
        return self.value * good if self.relative else self.value

    def crossed(self, count: float, good: float) -> bool:
        if self.direction is Direction.BELOW:
            return count < self.limit(good)
        return count > self.limit(good)

    def describe(self) -> str:
        v = f"{self.value:g}x good's count" if self.relative \
            else f"{self.value:g}"
        return f"{self.direction.value} {v}"


_THRESHOLD = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(x?)$")


def parse_threshold(below: str | None, above: str | None) -> Threshold:
    """Exactly one of ``--below``/``--above``: NUMBER or NUMBERx."""
    if (below is None) == (above is None):
        raise UsageError("give one threshold: --below VALUE or --above VALUE",
                         hint="e.g. --below 0.5x (half of good's count) or "
                              "--above 1200 (an absolute count)")
    direction = Direction.BELOW if below is not None else Direction.ABOVE
    text = below if below is not None else above
    m = _THRESHOLD.match(text.strip())
    if not m or (m.group(2) and float(m.group(1)) == 0):
        raise UsageError(f"--{direction.value} {text!r} is not a threshold",
                         hint="give a number (an absolute count) or a "
                              "number followed by x (times good's count), "
                              "e.g. 0.5x")
    return Threshold(direction, float(m.group(1)), bool(m.group(2)))


# ---- the range --------------------------------------------------------------

@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def commit_range(repo: Path, good: str, bad: str) -> list[Commit]:
    """good, then the first-parent line from good to bad, oldest first
    (bad last); a UsageError if good is not on that line."""
    check_repo(repo)
    g, b = source.resolve_ref(repo, good), source.resolve_ref(repo, bad)
    if g == b:
        raise UsageError(f"--good {good} and --bad {bad} are the same commit",
                         hint="give a good commit older than bad")
    if source.git(repo, "merge-base", "--is-ancestor", g, b,
                  check=False).returncode != 0:
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad}",
                         hint="give a good commit that bad descends from "
                              "(git merge-base --is-ancestor GOOD BAD)")
    lines = source.git(repo, "log", "--first-parent", "--reverse",
                       "--format=%H %P%x00%s", f"{g}..{b}").stdout
    commits = [Commit(g, _subject(repo, g))]
    for line in lines.splitlines():
        shas, _, subject = line.partition("\0")
        sha, *parents = shas.split()
        if parents[:1] != [commits[-1].sha]:
            raise UsageError(f"--good {good} is not on the first-parent line "
                             f"of --bad {bad}",
                             hint="give a good commit on bad's first-parent "
                                  "line (git log --first-parent BAD)")
        commits.append(Commit(sha, subject))
    return commits


def check_repo(repo: Path) -> None:
    """--repo must be a git clone (of a kernel: check_kernel_tree)."""
    what = ("does not exist" if not repo.exists() else "is not a directory"
            if not repo.is_dir() else "is not a git repository"
            if not source.is_repository(repo) else "")
    if what:
        raise UsageError(f"--repo {repo} {what}",
                         hint="give --repo PATH of a Linux kernel clone "
                              "holding --good and --bad")


def _subject(repo: Path, sha: str) -> str:
    return source.git(repo, "log", "-1", "--format=%s", sha).stdout.strip()


def check_kernel_tree(repo: Path, commits: list[Commit]) -> None:
    """good and bad must be Linux trees (a Makefile with a version, and
    mm/rmap.c), said before anything is built."""
    for c in (commits[0], commits[-1]):
        if source.git(repo, "cat-file", "-e", f"{c.sha}:mm/rmap.c",
                      check=False).returncode != 0:
            raise UsageError(f"{repo} at {c.sha[:12]} is not a Linux kernel "
                             "tree (no mm/rmap.c)",
                             hint="give --repo PATH of a kernel clone")


# ---- the metric -------------------------------------------------------------

def check_metric(w: Workload, metric: str) -> None:
    """``metric`` must be one of ``w``'s counted metrics that one counting
    window gives."""
    counted = [m.key for m in w.metrics
               if m.counted and m.key not in REPEAT_ONLY]
    if metric in REPEAT_ONLY:
        raise UsageError(f"--metric {metric} is derived from repeated boots; "
                         "bisect counts each commit once",
                         hint="give kernel_insns, or another of: "
                              + ", ".join(counted))
    keys = [m.key for m in w.metrics]
    if metric not in keys:
        raise UsageError(f"workload {w.name} has no metric {metric!r}",
                         hint="its counted metrics: " + ", ".join(counted))
    if metric not in counted:
        raise UsageError(f"--metric {metric} is a timed metric; bisect "
                         "needs an exact count",
                         hint="give a counted one: " + ", ".join(counted))


# ---- the steps --------------------------------------------------------------

class StepStatus(str, enum.Enum):
    COUNTED = "counted"
    BUILD_FAILED = "build-failed"
    BOOT_FAILED = "boot-failed"     # the boot did not end clean
    INVALID = "invalid"             # booted, but no valid count

    def __str__(self) -> str:
        return self.value


class Verdict(str, enum.Enum):
    GOOD = "good"                   # has not crossed the threshold
    BAD = "bad"                     # has crossed it
    SKIP = "skip"                   # no count: neither

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Measurement:
    """What a lab's counting boot gave: the count, or why there is none."""

    status: StepStatus
    count: float | None = None
    detail: str = ""                # why not counted; where the logs are


@dataclass
class Step:
    """One commit tried."""

    position: int                   # in the range: 0 is good, last is bad
    commit: str
    subject: str
    status: StepStatus
    count: float | None
    verdict: Verdict
    detail: str = ""
    seconds: float = 0.0            # its build and boot, wall time
    rundir: str = ""

    def __post_init__(self) -> None:
        self.status = StepStatus(self.status)
        self.verdict = Verdict(self.verdict)


class Lab(Protocol):
    """Builds and counts a commit; a test passes a stand-in."""

    def build(self, commit: Commit) -> Kernel:
        """The commit's kernel, built or found in the store (BuildError
        if it does not build)."""

    def count(self, kernel: Kernel, rundir: Path) -> Measurement:
        """One counting boot of ``kernel``, its files in ``rundir``."""


@dataclass(frozen=True)
class BisectKey:
    """What a resumed bisect must share with the one it resumes (its
    counts are reused): the tree, the workload and metric, the kernel."""

    repo: str
    workload: str
    params: dict[str, str]
    metric: str
    arch: str
    config: str


@dataclass
class BisectRequest:
    repo: Path
    good: str
    bad: str
    workload: Workload
    params: dict[str, str]          # resolved
    metric: str
    threshold: Threshold
    arch: str
    config: str
    out: Path
    resume: bool = False
    command: list[str] = field(default_factory=list)

    def key(self) -> BisectKey:
        return BisectKey(str(self.repo.resolve()), self.workload.name,
                         dict(self.params), self.metric, self.arch,
                         self.config)


@dataclass
class Record:
    """bisect.json: the request, the range and every step so far."""

    command: list[str]
    key: BisectKey
    good: str
    bad: str
    threshold: str
    commits: int                    # in the range, good and bad included
    steps: list[Step] = field(default_factory=list)
    good_count: float | None = None
    limit: float | None = None      # the count a commit must cross
    first_bad: list[str] = field(default_factory=list)  # one, or a span
    result: str = ""
    stopped: str = ""
    started: float = 0.0
    wall_s: float = 0.0

    def write(self, out: Path) -> None:
        tmp = out / (RECORD + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        tmp.replace(out / RECORD)
        (out / TEXT).write_text(render(self))

    @classmethod
    def read(cls, out: Path) -> Record:
        path = out / RECORD
        try:
            raw = json.loads(path.read_text())
            raw["steps"] = [Step(**s) for s in raw["steps"]]
            raw["key"] = BisectKey(**raw["key"])
            return cls(**raw)
        except (OSError, ValueError, TypeError, KeyError) as e:
            raise UsageError(f"{path} is not a bisect record ({e})",
                             hint="give the --out of a foliolab bisect")


def render(r: Record) -> str:
    """bisect.txt: one line per step, then the answer."""
    lines = [f"# foliolab bisect {r.good}..{r.bad}: {r.commits - 1} "
             f"commits after good, {r.key.workload} {r.key.metric} "
             f"{r.threshold}"]
    for i, s in enumerate(r.steps, 1):
        lines.append(step_line(i, s, r.commits))
    if r.result:
        lines.append(r.result)
    if r.stopped:
        lines.append(f"stopped by {r.stopped} after {len(r.steps)} steps")
    lines.append(f"wall time {r.wall_s:.0f} s; command: "
                 + " ".join(r.command))
    return "\n".join(lines) + "\n"


def step_line(i: int, s: Step, commits: int) -> str:
    count = f"{s.count:.6g}" if s.count is not None else str(s.status)
    return (f"step {i}: {s.commit[:12]} [{s.position}/{commits - 1}] "
            f"{count} -> {s.verdict}  ({s.seconds:.0f} s) {s.subject}"
            + (f"  [{s.detail}]" if s.detail else ""))


# ---- the search -------------------------------------------------------------

def next_position(lo: int, hi: int, tried: set[int]) -> int | None:
    """The untried position nearest the middle of (lo, hi), the lower of
    two equally near; None when every one between is tried (skipped)."""
    mid = (lo + hi) / 2
    open_ = [p for p in range(lo + 1, hi) if p not in tried]
    return min(open_, key=lambda p: (abs(p - mid), p)) if open_ else None


class Bisection:
    """One bisect's state: the range, the lab, the record on disk."""

    def __init__(self, req: BisectRequest, commits: list[Commit], lab: Lab,
                 record: Record, kept: dict[str, Step]):
        self.req, self.commits, self.lab = req, commits, lab
        self.record, self.kept = record, kept
        self.good_count: float | None = None

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
        self.record.write(self.req.out)
        print(step_line(len(self.record.steps), s, len(self.commits)),
              flush=True)
        return s

    def _measure(self, position: int, c: Commit) -> Step:
        t0 = time.monotonic()
        rundir = self.req.out / "steps" / f"{position:04d}-{c.sha[:12]}"
        try:
            kernel = self.lab.build(c)
        except FoliolabError as e:
            m = Measurement(StepStatus.BUILD_FAILED, detail=e.one_line())
        else:
            m = self.lab.count(kernel, rundir)
        return Step(position, c.sha, c.subject, m.status, m.count,
                    Verdict.SKIP, m.detail, round(time.monotonic() - t0, 1),
                    str(rundir))

    def _verdict(self, s: Step) -> Verdict:
        if s.count is None or s.status is not StepStatus.COUNTED:
            return Verdict.SKIP
        if self.good_count is None:          # good itself
            return Verdict.GOOD
        crossed = self.req.threshold.crossed(s.count, self.good_count)
        return Verdict.BAD if crossed else Verdict.GOOD

    def ends(self) -> None:
        """Count good and bad; a BenchmarkError if either gives no
        count, if good crosses, or bad does not."""
        last = len(self.commits) - 1
        good = self.step(0)
        if good.verdict is Verdict.SKIP:
            self._fail(f"good {self.req.good} gave no count ({good.status}: "
                       f"{good.detail})", "a bisect needs good's count")
        self.good_count = self.record.good_count = good.count
        self.record.limit = self.req.threshold.limit(good.count)
        if self.req.threshold.crossed(good.count, good.count):
            self._fail(f"good {self.req.good} itself is "
                       f"{self.req.threshold.describe()} ({good.count:g})",
                       "give a threshold good does not cross")
        bad = self.step(last)
        if bad.verdict is Verdict.SKIP:
            self._fail(f"bad {self.req.bad} gave no count ({bad.status}: "
                       f"{bad.detail})", "give a bad commit that builds "
                                         "and boots")
        if bad.verdict is Verdict.GOOD:
            self._fail(f"bad {self.req.bad} does not cross the threshold: "
                       f"{bad.count:g} is not "
                       f"{self.req.threshold.describe()} "
                       f"(limit {self.req.threshold.limit(good.count):g})",
                       "nothing to find in this range")

    def _fail(self, what: str, hint: str) -> None:
        self.record.result = f"no answer: {what}"
        self.record.write(self.req.out)
        raise BenchmarkError(what, hint=f"{hint}; steps in "
                                        f"{self.req.out / TEXT}")

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
        bad = next(s for s in reversed(self.record.steps)
                   if s.position == positions[-1])
        if len(first) == 1:
            # good's count may be 0 (a count that first appears): no ratio
            ratio = (f", {bad.count / self.good_count:.3g}x"
                     if self.good_count else "")
            text = (f"first bad commit: {first[0].sha} {first[0].subject} "
                    f"({self.req.metric} {bad.count:g}, good "
                    f"{self.good_count:g}{ratio})")
        else:
            text = (f"the first bad commit is one of {len(first)} (the "
                    "ones before the last could not be counted): "
                    + ", ".join(f"{c.sha[:12]} {c.subject}" for c in first))
        self.record.result = text
        return text


# ---- the whole bisect -------------------------------------------------------

def check(req: BisectRequest) -> list[Commit]:
    """Everything about the request that needs no build: the range, the
    tree, the metric; the commits to bisect."""
    check_metric(req.workload, req.metric)
    commits = commit_range(req.repo, req.good, req.bad)
    check_kernel_tree(req.repo, commits)
    return commits


def _kept_steps(req: BisectRequest) -> dict[str, Step]:
    """--resume: the counted steps of the bisect in ``req.out``."""
    if not (req.out / RECORD).exists():
        raise UsageError(f"--resume: {req.out} holds no {RECORD}",
                         hint="give the --out of the stopped bisect")
    old = Record.read(req.out)
    if old.key != req.key():
        raise UsageError(f"--resume: the bisect in {req.out} was "
                         f"{asdict(old.key)}, this asks for "
                         f"{asdict(req.key())}",
                         hint="resume with the bisect's own options")
    # only what was counted: a build or boot that failed (a timeout under
    # load, say) is tried again
    return {s.commit: s for s in old.steps if s.status is StepStatus.COUNTED}


MakeLab = Callable[[BisectRequest, list[Commit]], Lab]


def bisect(req: BisectRequest, make_lab: MakeLab | None = None) -> Record:
    """Run the bisect; its record (also in ``req.out``). ``make_lab``
    makes what builds and counts (QemuLab; a test passes a stand-in),
    once the request is checked. A stop signal raises StoppedError with
    the finished steps written."""
    commits = check(req)
    kept = _kept_steps(req) if req.resume else {}
    if not req.resume and (req.out / RECORD).exists():
        log.warning("%s holds an earlier bisect: it is replaced (use "
                    "--resume to go on with it)", req.out)
    lab = (make_lab or QemuLab)(req, commits)
    req.out.mkdir(parents=True, exist_ok=True)
    record = Record(req.command, req.key(), req.good, req.bad,
                    req.threshold.describe(), len(commits),
                    started=time.time())
    b = Bisection(req, commits, lab, record, kept)
    print(f"# bisect {len(commits) - 1} commits after {req.good} up to "
          f"{req.bad}: {req.workload.name} {req.metric} "
          f"{req.threshold.describe()}", flush=True)
    try:
        with stop_signals():
            b.ends()
            positions = b.search()
    except Stop as s:
        record.stopped = s.signame
        record.wall_s = time.time() - record.started
        record.write(req.out)
        raise StoppedError(f"stopped by {s.signame}; the {len(record.steps)} "
                           f"finished steps are in {req.out / RECORD}",
                           hint="go on with the same command and --out "
                                f"{req.out} --resume") from None
    except FoliolabError as e:
        if not record.result:            # an error of the lab, not ends()
            record.result = f"ended by an error: {e.one_line()}"
            record.write(req.out)
        raise
    print(b.answer(positions), flush=True)
    record.wall_s = time.time() - record.started
    record.write(req.out)
    return record


def fetch_range(user_repo: Path, commits: list[Commit]) -> None:
    """The range's commits into the cache's repository in one fetch
    (prepare_git would fetch each commit alone). When the cache has good
    already (a range on the base), the fetch sends only the range's new
    objects; otherwise it goes as deep as the range, no further into a
    user's history."""
    repo = source.prepare_base()
    bad = commits[-1].sha
    if _has_commit(repo, bad):
        return
    # A depth when good is there would only mark good shallow, and a clone
    # of a shallow repository copies every object instead of sharing them.
    depth = [] if _has_commit(repo, commits[0].sha) else [
        f"--depth={len(commits)}"]
    source.git(repo, "fetch", "-q", "--no-tags", *depth,
               str(user_repo.resolve()), bad)
    source.git(repo, "update-ref", f"refs/foliolab/git/{bad}", bad)


def _has_commit(repo: Path, sha: str) -> bool:
    return source.git(repo, "cat-file", "-e", f"{sha}^{{commit}}",
                      check=False).returncode == 0


class QemuLab:
    """The lab itself: each commit's kernel built (or found) in the kernel
    store, counted in one boot under QEMU TCG with the counting plugin."""

    def __init__(self, req: BisectRequest, commits: list[Commit]):
        self.req = req
        self.arch = get_arch(req.arch)
        fetch_range(req.repo, commits)
        self.image = image.build_image(self.arch).path
        self.base = BootSpec(self.arch, Path(), accel="tcg",
                             cmdline=debug_cmdline(req.config))

    def build(self, commit: Commit) -> Kernel:
        tree = source.prepare_git("bisect", self.req.repo, commit.sha)
        return store.build_and_keep(tree, self.arch, self.req.config)

    def count(self, kernel: Kernel, rundir: Path) -> Measurement:
        w, params = self.req.workload, self.req.params
        counter = counting.counter_for(self.arch, kernel.build_dir)
        roots = w.count_roots + ((w.count_unit.root,) if w.count_unit
                                 else ())
        missing = counting.missing_functions(counter.symbols, roots)
        if missing:
            return Measurement(StepStatus.INVALID, detail=f"no function "
                               f"{missing[0]} to count in this kernel")
        spec = boot_spec(self.base, w, kernel.image, 1)
        spec = replace(spec, timeout=spec.timeout * counting.TIMEOUT_FACTOR,
                       counter=counter.with_roots(w.count_roots))
        res = QemuExecutor().boot(BootRequest(
            f"{w.name}/{rundir.name}", spec, w.job(params, 1, "", True),
            rundir), self.image)
        if not res.clean:
            return Measurement(StepStatus.BOOT_FAILED, detail=f"boot "
                               f"{res.describe()}, console {res.console}")
        [sample] = samples_from_boot(w, params, "bisect", 0, res, 1,
                                     self.arch.name, self.req.out)
        value = sample.values.get(self.req.metric)
        if not sample.valid or value is None:
            why = "; ".join(sample.reasons) or f"no {self.req.metric}"
            return Measurement(StepStatus.INVALID, detail=why)
        return Measurement(StepStatus.COUNTED, float(value))
