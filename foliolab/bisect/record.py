"""What a bisect asks and what it records: the request and its threshold,
the metric it may count, each step's status and verdict, and the record
on disk (bisect.json, rewritten after every step, and bisect.txt, its
text) and the run's outcomes (outcomes.json: each step a test, each
commit a kernel).

The search over the range is search.py's; building and counting a commit
is lab.py's.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from foliolab import records
from foliolab.errors import DamagedRunError, UsageError
from foliolab.executors import ExecutorOptions
from foliolab.kernelrecord import BuildRecord, KernelRecord
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus
from foliolab.workloads.model import Workload

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
    relative: bool  # value times good's count

    def limit(self, good: float) -> float:
        return self.value * good if self.relative else self.value

    def crossed(self, count: float, good: float) -> bool:
        if self.direction is Direction.BELOW:
            return count < self.limit(good)
        return count > self.limit(good)

    def describe(self) -> str:
        v = (
            f"{self.value:g}x good's count"
            if self.relative
            else f"{self.value:g}"
        )
        return f"{self.direction.value} {v}"


_THRESHOLD = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(x?)$")


def parse_threshold(below: str | None, above: str | None) -> Threshold:
    """Exactly one of ``--below``/``--above``: NUMBER or NUMBERx."""
    if (below is None) == (above is None):
        raise UsageError(
            "give one threshold: --below VALUE or --above VALUE",
            hint="e.g. --below 0.5x (half of good's count) or "
            "--above 1200 (an absolute count)",
        )
    direction = Direction.BELOW if below is not None else Direction.ABOVE
    text = below if below is not None else above
    assert text is not None  # one of --below, --above: checked above
    m = _THRESHOLD.match(text.strip())
    if not m or (m.group(2) and float(m.group(1)) == 0):
        raise UsageError(
            f"--{direction.value} {text!r} is not a threshold",
            hint="give a number (an absolute count) or a "
            "number followed by x (times good's count), "
            "e.g. 0.5x",
        )
    return Threshold(direction, float(m.group(1)), bool(m.group(2)))


# ---- the metric -------------------------------------------------------------


def check_metric(w: Workload, metric: str) -> None:
    """``metric`` must be one of ``w``'s counted metrics that one counting
    window gives."""
    counted = [
        m.key for m in w.metrics if m.counted and m.key not in REPEAT_ONLY
    ]
    if metric in REPEAT_ONLY:
        raise UsageError(
            f"--metric {metric} is derived from repeated boots; "
            "bisect counts each commit once",
            hint="give kernel_insns, or another of: " + ", ".join(counted),
        )
    keys = [m.key for m in w.metrics]
    if metric not in keys:
        raise UsageError(
            f"workload {w.name} has no metric {metric!r}",
            hint="its counted metrics: " + ", ".join(counted),
        )
    if metric not in counted:
        raise UsageError(
            f"--metric {metric} is a timed metric; bisect "
            "needs an exact count",
            hint="give a counted one: " + ", ".join(counted),
        )


# ---- the steps --------------------------------------------------------------


class StepStatus(str, enum.Enum):
    COUNTED = "counted"
    BUILD_FAILED = "build-failed"
    BOOT_FAILED = "boot-failed"  # the boot did not end clean
    INVALID = "invalid"  # booted, but no valid count

    def __str__(self) -> str:
        return self.value


class Verdict(str, enum.Enum):
    GOOD = "good"  # has not crossed the threshold
    BAD = "bad"  # has crossed it
    SKIP = "skip"  # no count: neither

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Measurement:
    """What a lab's counting boot gave: the count, or why there is none."""

    status: StepStatus
    count: float | None = None
    detail: str = ""  # why not counted; where the logs are


@dataclass
class Step:
    """One commit tried."""

    position: int  # in the range: 0 is good, last is bad
    commit: str
    subject: str
    status: StepStatus
    count: float | None
    verdict: Verdict
    detail: str = ""
    seconds: float = 0.0  # its build and boot, wall time
    rundir: str = ""

    def __post_init__(self) -> None:
        self.status = StepStatus(self.status)
        self.verdict = Verdict(self.verdict)

    @property
    def kernel(self) -> str:
        """The name its commit's kernel has in the run's outcomes."""
        return self.commit[:12]

    @property
    def test_status(self) -> TestStatus:
        """Its verdict as a test's status: a commit that did not build or
        boot is an error, one booted without a count is skipped."""
        if self.status in (StepStatus.BUILD_FAILED, StepStatus.BOOT_FAILED):
            return TestStatus.ERROR
        return {
            Verdict.GOOD: TestStatus.PASS,
            Verdict.BAD: TestStatus.FAIL,
            Verdict.SKIP: TestStatus.SKIP,
        }[self.verdict]


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
    params: dict[str, str]  # resolved
    metric: str
    threshold: Threshold
    arch: str
    config: str
    out: Path
    resume: bool = False
    command: list[str] = field(default_factory=list)
    # who runs the counting boots (--executor and its flags)
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)

    def key(self) -> BisectKey:
        return BisectKey(
            str(self.repo.resolve()),
            self.workload.name,
            dict(self.params),
            self.metric,
            self.arch,
            self.config,
        )


@dataclass
class Record:
    """bisect.json: the request, the range and every step so far."""

    command: list[str]
    key: BisectKey
    good: str
    bad: str
    threshold: str
    commits: int  # in the range, good and bad included
    steps: list[Step] = field(default_factory=list)
    good_count: float | None = None
    limit: float | None = None  # the count a commit must cross
    first_bad: list[str] = field(default_factory=list)  # one, or a span
    result: str = ""
    stopped: str = ""
    started: float = 0.0
    wall_s: float = 0.0

    def write(self, out: Path) -> None:
        records.write_whole(
            out / RECORD, json.dumps(asdict(self), indent=1) + "\n"
        )
        (out / TEXT).write_text(render(self))

    def tests(self, out: Path) -> list[TestOutcome]:
        """Every step as a test of the run in ``out``: path
        ``bisect.<commit>``, its count, the limit and its verdict as misc,
        its boot's console (when it booted) as its log."""
        return [
            TestOutcome(
                f"bisect.{s.kernel}",
                s.test_status,
                s.kernel,
                s.seconds,
                _console(out, s),
                {
                    k: v
                    for k, v in (
                        ("metric", self.key.metric),
                        ("value", s.count),
                        ("limit", self.limit),
                        ("threshold", self.threshold),
                        ("verdict", s.verdict.value),
                        ("detail", s.detail),
                    )
                    if v is not None and v != ""
                },
            )
            for s in self.steps
        ]

    def kernels(self, built: Mapping[str, BuildRecord]) -> list[KernelRecord]:
        """One kernel per commit tried, named as its step's test names it:
        the commit of the bisected tree as its spec, and its build where
        ``built`` (by commit) has it (none for a commit that did not
        build)."""
        seen: dict[str, KernelRecord] = {}
        for s in self.steps:
            seen.setdefault(
                s.kernel,
                KernelRecord(
                    s.kernel,
                    f"git:{self.key.repo}@{s.commit}",
                    built=built.get(s.commit),
                ),
            )
        return list(seen.values())

    def outcomes(
        self, out: Path, built: Mapping[str, BuildRecord]
    ) -> Outcomes:
        return Outcomes("bisect", self.kernels(built), self.tests(out))

    @classmethod
    def read(cls, out: Path) -> Record:
        path = out / RECORD
        hint = "give the --out of a foliolab bisect"
        raw = records.read_object(
            path, records.RecordKind.BISECT, ("steps", "key"), hint
        )
        f = records.Fields(path, raw, hint)
        for i, step in enumerate(f.objects("steps")):
            s = records.Fields(path, step, hint, f"steps[{i}]")
            s.integer("position", minimum=0)
            s.optional_number("count")
            s.number("seconds", minimum=0, default=0.0)
            for key in ("commit", "subject", "status", "verdict"):
                s.string(key)
        f.object("key", default=False)
        f.integer("commits", minimum=1)
        for key in ("good_count", "limit"):
            f.optional_number(key)
        for key in ("started", "wall_s"):
            f.number(key, minimum=0, default=0.0)
        try:
            raw["steps"] = [Step(**s) for s in raw["steps"]]
            raw["key"] = BisectKey(**raw["key"])
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as e:
            raise DamagedRunError(
                f"{path} is not a bisect record ({e})", hint=hint
            ) from None


def _console(out: Path, s: Step) -> str:
    """The step's console log relative to ``out``, if it booted."""
    console = Path(s.rundir) / "console.log"
    if not s.rundir or not console.is_file():
        return ""
    try:
        return str(console.relative_to(out))
    except ValueError:  # a step recorded under another --out
        return str(console)


def render(r: Record) -> str:
    """bisect.txt: one line per step, then the answer."""
    lines = [
        f"# foliolab bisect {r.good}..{r.bad}: {r.commits - 1} "
        f"commits after good, {r.key.workload} {r.key.metric} "
        f"{r.threshold}"
    ]
    for i, s in enumerate(r.steps, 1):
        lines.append(step_line(i, s, r.commits))
    if r.result:
        lines.append(r.result)
    if r.stopped:
        lines.append(f"stopped by {r.stopped} after {len(r.steps)} steps")
    lines.append(
        f"wall time {r.wall_s:.0f} s; command: " + " ".join(r.command)
    )
    return "\n".join(lines) + "\n"


def step_line(i: int, s: Step, commits: int) -> str:
    count = f"{s.count:.6g}" if s.count is not None else str(s.status)
    return (
        f"step {i}: {s.commit[:12]} [{s.position}/{commits - 1}] "
        f"{count} -> {s.verdict}  ({s.seconds:.0f} s) {s.subject}"
        + (f"  [{s.detail}]" if s.detail else "")
    )
