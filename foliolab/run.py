"""Run workloads on built kernels: interleaved A/B boots, raw data kept.

For each workload, boot pair i runs vanilla then patched when i is even and
patched then vanilla when i is odd (ABBA), so slow drift of the host cancels
instead of biasing one side. Every sample's console log, results-port text
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
from foliolab import parse
from foliolab.boot import BootSpec
from foliolab.build import Kernel
from foliolab.ui import Progress
from foliolab.workloads import Workload

log = logging.getLogger("foliolab")

VARIANTS = ("vanilla", "patched")
# Give up on a (workload, variant) after this many failed boots in a row.
MAX_BOOT_FAILURES = 3


@dataclass
class Sample:
    workload: str
    variant: str
    run: int
    values: dict[str, float]
    valid: bool
    reasons: list[str]
    boot: str                 # boot status ("ok", "panic", ...)
    rundir: str
    boot_s: float | None = None   # guest uptime when the job started
    wall_s: float | None = None   # host wall time of the whole boot

    def rows(self) -> list[dict]:
        """The flat {workload, variant, run, metric, value, valid} rows."""
        return [{"workload": self.workload, "variant": self.variant,
                 "run": self.run, "metric": k, "value": v,
                 "valid": self.valid} for k, v in self.values.items()]


@dataclass
class RunRequest:
    workloads: list[Workload]
    params: dict[str, dict[str, str]]
    runs: int
    kernels: dict[str, Kernel]          # variant -> kernel
    image: Path
    spec: BootSpec                      # machine shape (kernel replaced)
    out: Path
    samples_per_boot: int = 1
    fault: str = ""
    fault_variant: str = "patched"      # fault injection hits one variant
    timeout: float | None = None        # per boot; default from workload


@dataclass
class RunResult:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def boot_order(pair: int) -> tuple[str, str]:
    return VARIANTS if pair % 2 == 0 else VARIANTS[::-1]


def samples_from_boot(w: Workload, params: dict[str, str], variant: str,
                      first_run: int, res: boot_mod.BootResult,
                      expected: int) -> list[Sample]:
    """Turn one boot's output into samples; a bad boot invalidates them all."""
    g = parse.parse_records(res.records)
    out = []
    for i in range(expected):
        gs = g.samples[i] if i < len(g.samples) else parse.GuestSample()
        d = w.derive(gs, params)
        reasons = list(d.invalid)
        if not res.clean:
            reasons.insert(0, f"boot {res.describe()} "
                              f"(console: {res.console})")
        elif g.exit_code not in (0, None):
            reasons.append(f"job exited {g.exit_code}")
        if i >= len(g.samples):
            reasons.append("sample missing from guest output")
        out.append(Sample(w.name, variant, first_run + i, d.values,
                          not reasons, reasons, res.status,
                          str(res.console.parent), g.boot_s,
                          round(res.elapsed, 2)))
    return out


def run_workloads(req: RunRequest) -> RunResult:
    result = RunResult()
    req.out.mkdir(parents=True, exist_ok=True)
    jsonl = req.out / "samples.jsonl"
    k = max(1, req.samples_per_boot)
    pairs = math.ceil(req.runs / k)
    for w in req.workloads:
        params = w.resolve(req.params.get(w.name, {}))
        fails = {v: 0 for v in VARIANTS}
        progress = Progress(f"run {w.name}", pairs * 2)
        for pair in range(pairs):
            n = min(k, req.runs - pair * k)
            for variant in boot_order(pair):
                if fails[variant] >= MAX_BOOT_FAILURES:
                    progress.step()
                    continue
                fault = req.fault if variant == req.fault_variant else ""
                spec = replace(req.spec, kernel=req.kernels[variant].image,
                               memory_mb=w.memory_mb,
                               numa_nodes=w.nodes(req.spec.numa_nodes),
                               timeout=req.timeout or w.timeout * n,
                               cmdline=req.spec.cmdline + w.cmdline)
                rundir = req.out / "raw" / w.name / f"{variant}-{pair:03d}"
                res = boot_mod.boot(spec, req.image, w.job(params, n, fault),
                                    rundir)
                samples = samples_from_boot(w, params, variant, pair * k,
                                            res, n)
                with open(jsonl, "a") as f:
                    for s in samples:
                        f.write(json.dumps(asdict(s)) + "\n")
                result.samples += samples
                if res.clean:
                    fails[variant] = 0
                else:
                    fails[variant] += 1
                    msg = (f"{w.name} {variant} boot {pair}: "
                           f"{res.describe()}; console log: {res.console}")
                    result.failures.append(msg)
                    log.warning("%s", msg)
                    if fails[variant] == MAX_BOOT_FAILURES:
                        result.failures.append(
                            f"{w.name} {variant}: gave up after "
                            f"{MAX_BOOT_FAILURES} failed boots in a row")
                progress.step()
        progress.finish()
    return result


def load_samples(out: Path) -> list[Sample]:
    path = out / "samples.jsonl"
    if not path.exists():
        return []
    return [Sample(**json.loads(line))
            for line in path.read_text().splitlines() if line.strip()]
