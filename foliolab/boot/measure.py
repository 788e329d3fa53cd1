"""Measure workloads on built kernels: plan -> blocks of boot requests ->
executor -> captures -> outcome.judge -> samples, raw data kept.

For each workload, round i boots every kernel once, in the order given when
i is even and in the reverse order when i is odd (ABBA for two kernels, ABC
CBA for three), so every kernel's mean position in the run is the same and
slow drift of the host cancels instead of biasing one side. Every
sample's console log, results-port text and the derived values are kept
under OUT/raw/, and each finished sample is appended to OUT/samples.jsonl
at once, so a crash, a hang or a stop never
loses what was already measured. A resumed run keeps every boot that has
its boot.json and runs the others.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from foliolab import bootrecord, counting, timings
from foliolab.boot import derive, monitors, outcome
from foliolab.boot.derive import Sample, samples_from_boot
from foliolab.bootrecord import BootJob, BootResult, BootStatus, Pass
from foliolab.counting import Counter
from foliolab.executors.base import (
    BlockRequest,
    BootRequest,
    BootSpec,
    Executor,
)
from foliolab.guestdata import parse
from foliolab.kernel.build import Kernel
from foliolab.manifest import VARIANTS
from foliolab.ui import Progress
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")

# Give up on a (workload, variant) after this many failed boots in a row.
MAX_BOOT_FAILURES = 3


@dataclass
class RunRequest:
    workloads: list[Workload]
    params: dict[str, dict[str, str]]
    runs: int
    kernels: dict[str, Kernel]  # name -> kernel; baseline first
    image: Path
    spec: BootSpec  # machine shape (kernel replaced)
    out: Path
    samples_per_boot: int = 1
    fault: str = ""  # injected into every kernel
    # but the baseline
    timeout: float | None = None  # per boot; default from workload
    # variant -> its counter: adds a counting boot after each timed one
    counters: dict[str, Counter] | None = None
    executor: Executor | None = None  # who runs the boots
    resume: bool = False  # keep the boots that have a boot.json
    monitors: bool = False  # sample vmstat/interrupts in the window
    # keep the boots' wall times for estimates (timings.py): QEMU boots of
    # a real run, not a lab's, not a test's stand-ins
    record_times: bool = False


@dataclass
class RunResult:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    boots: int = 0  # boots started so far (a boot's seq)
    planned: int = 0  # boots in the plan
    kept: int = 0  # boots a resumed run found finished


def boot_order(
    pair: int, names: tuple[str, ...] = VARIANTS
) -> tuple[str, ...]:
    """The kernels' order in round ``pair``: as given, then reversed."""
    return tuple(names) if pair % 2 == 0 else tuple(names)[::-1]


@dataclass(frozen=True)
class PlannedBoot:
    """One boot of a run, in the order the run makes them."""

    workload: Workload
    params: dict[str, str]
    kernel: str  # the kernel's name (a sample's variant)
    what: Pass
    pair: int  # the round
    samples: int
    first_run: int
    seq: int = 0  # its place in the whole plan

    @property
    def name(self) -> str:
        """Its directory under OUT/raw/WORKLOAD/."""
        return f"{self.kernel}-{self.pair:03d}" + (
            "-count" if self.what is Pass.COUNT else ""
        )


def plan(
    workloads: list[Workload],
    params: dict[str, dict[str, str]],
    names: tuple[str, ...],
    runs: int,
    samples_per_boot: int,
    counted: bool,
) -> list[PlannedBoot]:
    """Every boot of a run in boot order: per workload, its rounds, each
    kernel in boot_order(); a counting boot right after its timed one,
    if ``counted``, for a workload that marks a counting window."""
    k = max(1, samples_per_boot)
    out: list[PlannedBoot] = []
    for w in workloads:
        # Each timed boot is followed by its counting boot, if asked for:
        # the plugin slows QEMU, so it never runs in a boot that is timed.
        # A workload with no window has nothing to count: a counting boot
        # of it would only give an invalid sample.
        passes = (
            (Pass.TIMED, Pass.COUNT)
            if counted and w.has_window
            else (Pass.TIMED,)
        )
        resolved = w.resolve(params.get(w.name, {}))
        for pair in range(math.ceil(runs / k)):
            n = min(k, runs - pair * k)
            for variant in boot_order(pair, names):
                out += [
                    PlannedBoot(
                        w,
                        resolved,
                        variant,
                        what,
                        pair,
                        n,
                        pair * k,
                        len(out) + i,
                    )
                    for i, what in enumerate(passes)
                ]
    return out


def boot_spec(
    base: BootSpec,
    w: Workload,
    kernel: Path,
    samples: int,
    timeout: float | None = None,
) -> BootSpec:
    """How to boot one sample set of ``w``: the machine of the run with
    the workload's memory, NUMA nodes, time limit and kernel arguments
    (and a vCPU sweep's point its own vCPUs)."""
    return replace(
        base,
        kernel=kernel,
        vcpus=w.vcpus or base.vcpus,
        memory_mb=w.memory_mb,
        numa_nodes=w.nodes(base.numa_nodes),
        timeout=timeout or w.timeout * samples,
        cmdline=base.cmdline + w.cmdline,
    )


def blocks(boots: list[PlannedBoot], rounds: int) -> list[list[PlannedBoot]]:
    """``boots`` (in plan order) grouped for an executor: ``rounds``
    consecutive rounds of one workload per block, or one boot per block
    for ``rounds`` 0."""
    out: list[list[PlannedBoot]] = []
    key = None
    for b in boots:
        k = (id(b.workload), b.pair // rounds) if rounds else None
        if rounds and out and k == key:
            out[-1].append(b)
        else:
            out.append([b])
        key = k
    return out


def run_workloads(req: RunRequest) -> RunResult:
    result = RunResult()
    req.out.mkdir(parents=True, exist_ok=True)
    executor = req.executor
    if executor is None:
        raise TypeError("a RunRequest names its executor")
    boots = plan(
        req.workloads,
        req.params,
        tuple(req.kernels),
        req.runs,
        req.samples_per_boot,
        bool(req.counters),
    )
    result.planned = len(boots)
    if req.resume:
        boots = _keep_finished(req, boots, result)
    fails = {(b.workload.name, b.kernel, b.what): 0 for b in boots}
    planned: dict[str, list[PlannedBoot]] = {}
    numbered = {w.name: 0 for w in req.workloads}  # blocks so far
    progress: dict[str, Progress] = {}
    left = {w.name: sum(b.workload is w for b in boots) for w in req.workloads}

    def begin(w: Workload) -> None:
        """A workload's progress starts with its first boot handed over."""
        if w.name not in progress:
            progress[w.name] = Progress(f"run {w.name}", left[w.name])

    eta = RunEta(req, boots)

    def step(
        w: Workload,
        b: PlannedBoot | None = None,
        elapsed: float = 0.0,
        seq: int | None = None,
    ) -> None:
        begin(w)
        progress[w.name].note = eta.step(b, elapsed, seq)
        progress[w.name].step()
        left[w.name] -= 1
        if not left[w.name]:
            progress[w.name].finish()

    def requests() -> Iterator[BlockRequest]:
        # One stream for the whole run: an executor that runs blocks side
        # by side (a lab) takes them all at once; one that runs them in
        # turn takes each when it is ready, after the results before it,
        # so a kernel that keeps failing is given up on.
        for group in blocks(boots, executor.rounds_per_block):
            todo = []
            for b in group:
                key = (b.workload.name, b.kernel, b.what)
                if fails[key] < MAX_BOOT_FAILURES:
                    todo.append(b)
                    continue
                if fails[key] == MAX_BOOT_FAILURES:
                    fails[key] += 1  # said once
                    result.failures.append(
                        f"{b.workload.name} {b.kernel} ({b.what.value}): "
                        f"gave up after {MAX_BOOT_FAILURES} failed boots "
                        "in a row"
                    )
                step(b.workload, seq=b.seq)
            if not todo:
                continue
            w = todo[0].workload
            begin(w)
            name = f"{w.name}-{numbered[w.name]}"
            numbered[w.name] += 1
            planned[name] = todo
            yield BlockRequest(
                name, w.name, tuple(_request(req, b, result) for b in todo)
            )

    stream = executor.run(req.image, requests())
    try:
        for block, captured in stream:
            for b, c in zip(planned[block.name], captured, strict=True):
                key = (b.workload.name, b.kernel, b.what)
                res = outcome.judge(c)
                fails[key] = _record(req, b, res, result, fails[key])
                step(b.workload, b, res.elapsed)
    finally:
        stream.close()  # a stopped run ends its executor's work
    return result


def planned_time(b: PlannedBoot) -> timings.PlannedBootTime:
    """What an estimate of ``b``'s time needs of it."""
    return timings.PlannedBootTime(
        b.workload.base_name,  # a sweep's points share their workload's
        b.what is Pass.COUNT,
        b.samples,
        b.workload.tcg_boot_s,
        b.workload.tcg_count_boot_s,
    )


class RunEta:
    """The run's position (boot i of N) and its ETA: the sum, over the
    boots still to run, of each one's own workload's estimate. That is
    the workload's times on this host, or its declared time
    (timings.boot_seconds()); once boots of a workload have finished in
    this run, its estimate is scaled by how they compared with it (the
    run's observed mean). One workload's measured speed never changes
    another's: khugepaged's 87 s boots say nothing of ksm-rmap's 10 s.
    But a workload estimated from defaults (never measured here) is
    scaled by how this run's boots compared with their defaults: that
    ratio is the machine's, not the workload's, and from boot 1 on it is
    measured (a machine 4x slower than the defaults' says so at boot 1,
    not when each workload has had its first boot)."""

    def __init__(self, req: RunRequest, boots: list[PlannedBoot]) -> None:
        t = timings.Timings.load()
        arch, accel = req.spec.arch.name, req.spec.accel
        estimated = {
            b.seq: timings.boot_seconds(t, arch, accel, planned_time(b))
            for b in boots
        }
        self.expected = {seq: s for seq, (s, _) in estimated.items()}
        self.from_defaults = {
            seq for seq, (_, measured) in estimated.items() if not measured
        }
        # by workload, a sweep's points together: what its first points
        # took is the best guess for the others (each point alone would
        # start from the workload's kept times at every new point)
        self.workload = {b.seq: b.workload.base_name for b in boots}
        self.seqs: dict[str, list[int]] = {}
        for b in boots:
            self.seqs.setdefault(b.workload.base_name, []).append(b.seq)
        # per workload, the same for boots estimated from defaults
        self.default_seen: dict[str, float] = {}
        self.default_seen_expected: dict[str, float] = {}
        self.left = set(self.expected)
        self.total = len(boots)
        self.done = 0
        # per workload: seconds observed in this run, and their estimate
        self.seen: dict[str, float] = {}
        self.seen_expected: dict[str, float] = {}

    def left_s(self) -> float:
        """The estimated seconds of the boots still to run."""
        return sum(
            self.expected[s] * self.factor(self.workload[s]) for s in self.left
        )

    def factor(self, workload: str) -> float:
        exp = self.seen_expected.get(workload, 0.0)
        if exp > 0:
            return self.seen[workload] / exp
        if any(s in self.from_defaults for s in self.seqs[workload]):
            return self.machine_factor()
        return 1.0

    def machine_factor(self) -> float:
        """This run's boots against their defaults (the boots estimated
        from defaults only): how much slower this machine is."""
        exp = sum(self.default_seen_expected.values())
        seen = sum(self.default_seen.values())
        return seen / exp if exp > 0 else 1.0

    def step(
        self,
        b: PlannedBoot | None,
        elapsed: float = 0.0,
        seq: int | None = None,
    ) -> str:
        """Count one boot that took ``elapsed`` seconds (0: not known);
        ``b`` None: one given up on, not run (``seq``: which)."""
        self.done += 1
        seq = b.seq if b is not None else seq
        self.left.discard(seq)
        if b is not None and elapsed > 0 and seq in self.expected:
            w = self.workload[seq]
            self.seen[w] = self.seen.get(w, 0.0) + elapsed
            self.seen_expected[w] = (
                self.seen_expected.get(w, 0.0) + self.expected[seq]
            )
            if seq in self.from_defaults:
                self.default_seen[w] = self.default_seen.get(w, 0.0) + elapsed
                self.default_seen_expected[w] = (
                    self.default_seen_expected.get(w, 0.0) + self.expected[seq]
                )
        return (
            f"boot {self.done} of {self.total}, ETA "
            f"{timings.clock(self.left_s())}"
        )


def _rundir(req: RunRequest, b: PlannedBoot) -> Path:
    return req.out / "raw" / b.workload.name / b.name


def _keep_finished(
    req: RunRequest, boots: list[PlannedBoot], result: RunResult
) -> list[PlannedBoot]:
    """A resumed run: the boots that have their boot.json are kept (their
    samples derived from their files, samples.jsonl written anew from
    them); the rest are still to run."""
    todo = []
    for b in boots:
        rundir = _rundir(req, b)
        res = bootrecord.read_boot(rundir)
        if res is not None:
            result.samples += derive.samples_of_boot(req.out, rundir)
            result.kept += 1
            if not res.clean:
                result.failures.append(_failure(b, res))
        else:
            todo.append(b)
    derive.write_samples(req.out, result.samples)
    result.boots = result.kept
    return todo


def _request(
    req: RunRequest, b: PlannedBoot, result: RunResult
) -> BootRequest:
    """The boot of ``b`` for an executor; its job.json written now."""
    w, variant = b.workload, b.kernel
    counted = b.what is Pass.COUNT
    fault = req.fault if variant != next(iter(req.kernels)) else ""
    spec = boot_spec(
        req.spec, w, req.kernels[variant].image, b.samples, req.timeout
    )
    if counted:
        assert req.counters is not None  # a counting run has its counters
        spec = replace(
            spec,
            timeout=spec.timeout * counting.TIMEOUT_FACTOR,
            counter=req.counters[variant].with_roots(w.count_roots),
        )
    rundir = _rundir(req, b)
    BootJob(
        b.seq,
        w.name,
        variant,
        b.what,
        b.first_run,
        b.samples,
        b.params,
        spec.arch.name,
        list(w.count_roots) if counted else [],
    ).write(rundir)
    result.boots += 1
    return BootRequest(
        f"{w.name}/{b.name}",
        spec,
        w.job(b.params, b.samples, fault, counted, req.monitors),
        rundir,
    )


def _record(
    req: RunRequest,
    b: PlannedBoot,
    res: BootResult,
    result: RunResult,
    failed: int,
) -> int:
    """A finished boot's samples, appended to the results at once; returns
    the kernel's count of failed boots in a row."""
    w, variant = b.workload, b.kernel
    counted = b.what is Pass.COUNT
    samples = samples_from_boot(
        w,
        b.params,
        variant,
        b.first_run,
        res,
        b.samples,
        req.spec.arch.name if counted else "",
        req.out,
    )
    if req.record_times and res.clean:
        timings.record_boot(
            req.spec.arch.name,
            w.base_name,
            req.spec.accel,
            counted,
            b.samples,
            res.elapsed,
        )
    if req.monitors and not counted:
        monitors.write_monitors(
            _rundir(req, b), parse.parse_records(res.records).samples
        )
    with open(req.out / "samples.jsonl", "a") as f:
        for s in samples:
            f.write(json.dumps(asdict(s)) + "\n")
    result.samples += samples
    if res.clean:
        return 0
    msg = _failure(b, res)
    result.failures.append(msg)
    log.warning("%s", msg)
    # a boot its executor never started says nothing about its kernel
    return failed if res.status is BootStatus.NOT_RUN else failed + 1


def _failure(b: PlannedBoot, res: BootResult) -> str:
    return (
        f"{b.workload.name} {b.kernel} {b.what.value} boot {b.pair}: "
        f"{res.describe()}; console log: {res.console}"
    )


def boot_once(
    executor: Executor, request: BootRequest, image: Path
) -> BootResult:
    """One boot, run by ``executor`` and judged (its boot.json written):
    for the commands that boot one kernel at a time (run, test, check,
    bisect, the KVM probe), on the executor the user chose (the probe's
    is QEMU here). An executor without a results port gets the records
    framed on the console; the boot's block is named by its id
    (WORKLOAD/NAME as WORKLOAD-NAME, a LAVA job's file name)."""
    if not executor.results_port:
        request = replace(
            request, spec=replace(request.spec, console_results=True)
        )
    workload, _, _ = request.boot_id.partition("/")
    block = BlockRequest(
        request.boot_id.replace("/", "-"), workload, (request,)
    )
    ((_, (captured,)),) = executor.run(image, [block])
    return outcome.judge(captured)
