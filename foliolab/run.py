"""Run workloads on built kernels: interleaved A/B boots, raw data kept.

For each workload, round i boots every kernel once, in the order given when
i is even and in the reverse order when i is odd (ABBA for two kernels, ABC
CBA for three), so every kernel's mean position in the run is the same and
slow drift of the host cancels instead of biasing one side. Every sample's console log, results-port text
and the derived values are kept under OUT/raw/, and each finished sample is
appended to OUT/samples.jsonl at once, so a crash, a hang or Ctrl-C never
loses what was already measured.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from foliolab import boot as boot_mod
from foliolab import counting
from foliolab.boot import BootSpec
from foliolab.bootrecord import BootJob, Pass
from foliolab.build import Kernel
from foliolab.counting import Counter
from foliolab.derive import VARIANTS, Sample, samples_from_boot  # noqa: F401
from foliolab.ui import Progress
from foliolab.workloads import Workload

log = logging.getLogger("foliolab")

# Give up on a (workload, variant) after this many failed boots in a row.
MAX_BOOT_FAILURES = 3


@dataclass
class RunRequest:
    workloads: list[Workload]
    params: dict[str, dict[str, str]]
    runs: int
    kernels: dict[str, Kernel]          # name -> kernel; baseline first
    image: Path
    spec: BootSpec                      # machine shape (kernel replaced)
    out: Path
    samples_per_boot: int = 1
    fault: str = ""                     # injected into every kernel
                                        # but the baseline
    timeout: float | None = None        # per boot; default from workload
    # variant -> its counter: adds a counting boot after each timed one
    counters: dict[str, Counter] | None = None


@dataclass
class RunResult:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    boots: int = 0              # boots started so far (a boot's seq)


def boot_order(pair: int, names: tuple[str, ...] = VARIANTS
               ) -> tuple[str, ...]:
    """The kernels' order in round ``pair``: as given, then reversed."""
    return tuple(names) if pair % 2 == 0 else tuple(names)[::-1]


def run_workloads(req: RunRequest) -> RunResult:
    result = RunResult()
    req.out.mkdir(parents=True, exist_ok=True)
    k = max(1, req.samples_per_boot)
    pairs = math.ceil(req.runs / k)
    # Each timed boot is followed by its counting boot, if asked for: the
    # plugin slows QEMU, so it never runs in a boot that is timed.
    passes = (Pass.TIMED, Pass.COUNT) if req.counters else (Pass.TIMED,)
    for w in req.workloads:
        params = w.resolve(req.params.get(w.name, {}))
        names = tuple(req.kernels)
        fails = {(v, p): 0 for v in names for p in passes}
        progress = Progress(f"run {w.name}",
                            pairs * len(names) * len(passes))
        for pair in range(pairs):
            n = min(k, req.runs - pair * k)
            for variant in boot_order(pair, names):
                for what in passes:
                    if fails[variant, what] < MAX_BOOT_FAILURES:
                        fails[variant, what] = _boot_samples(
                            req, w, params, variant, what, pair, n, result,
                            fails[variant, what])
                    progress.step()
        progress.finish()
    return result


def _boot_samples(req: RunRequest, w: Workload, params: dict[str, str],
                  variant: str, what: Pass, pair: int, n: int,
                  result: RunResult, failed: int) -> int:
    """One boot of ``variant`` for ``n`` samples, appended to the results
    at once; returns the variant's count of failed boots in a row."""
    k = max(1, req.samples_per_boot)
    counted = what is Pass.COUNT
    fault = req.fault if variant != next(iter(req.kernels)) else ""
    limit = req.timeout or w.timeout * n
    spec = replace(req.spec, kernel=req.kernels[variant].image,
                   memory_mb=w.memory_mb,
                   numa_nodes=w.nodes(req.spec.numa_nodes),
                   timeout=(limit * counting.TIMEOUT_FACTOR if counted
                            else limit),
                   cmdline=req.spec.cmdline + w.cmdline)
    name = f"{variant}-{pair:03d}"
    if counted:
        spec = replace(spec, counter=req.counters[variant].with_roots(
            w.count_roots))
        name += "-count"
    rundir = req.out / "raw" / w.name / name
    BootJob(result.boots, w.name, variant, what, pair * k, n, params,
            spec.arch.name).write(rundir)
    result.boots += 1
    res = boot_mod.boot(spec, req.image, w.job(params, n, fault, counted),
                        rundir)
    samples = samples_from_boot(w, params, variant, pair * k, res, n,
                                spec.arch.name if counted else "", req.out)
    with open(req.out / "samples.jsonl", "a") as f:
        for s in samples:
            f.write(json.dumps(asdict(s)) + "\n")
    result.samples += samples
    if res.clean:
        return 0
    failed += 1
    msg = (f"{w.name} {variant} {what.value} boot {pair}: {res.describe()}; "
           f"console log: {res.console}")
    result.failures.append(msg)
    log.warning("%s", msg)
    if failed == MAX_BOOT_FAILURES:
        result.failures.append(f"{w.name} {variant} ({what.value}): gave up after "
                               f"{MAX_BOOT_FAILURES} failed boots in a row")
    return failed


