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
from foliolab import counting, parse
from foliolab.boot import BootSpec
from foliolab.build import Kernel
from foliolab.counting import Counter
from foliolab.ui import Progress
from foliolab.workloads import COUNTING, Workload

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
    # A counting pass's sample: its plugin output (relative to the run
    # directory) and which of the workload's windows in it is this one.
    counts: str = ""
    count_window: int = -1
    cpu_s: float | None = None    # QEMU's CPU time for the whole boot

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
    # variant -> its counter: adds a counting boot after each timed one
    counters: dict[str, Counter] | None = None


@dataclass
class RunResult:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def boot_order(pair: int) -> tuple[str, str]:
    return VARIANTS if pair % 2 == 0 else VARIANTS[::-1]


def count_values(w: Workload, arch: str, derived: dict[str, float],
                 window: counting.Window | None,
                 reasons: list[str]) -> dict[str, float]:
    """A counting sample's metrics from its window of the plugin output
    (and the timed metrics it was derived with, for per-page figures)."""
    if window is None:
        reasons.append(f"no counting window {w.window} in counts.txt")
        return {}
    v = counting.window_metrics(window, arch, w.count_unit, w.count_roots)
    swapped = derived.get("pswpout")
    if w.count_unit is None and swapped:
        v["ipis_sent_per_swapout"] = v["ipis_sent"] / swapped
        v["tlb_flush_insns_per_swapout"] = v["tlb_flush_insns"] / swapped
        # what reclaim itself sent, without the workload's own IPIs
        for root in w.count_roots:
            v[f"{root}_ipis_per_swapout"] = v[f"{root}_ipis_sent"] / swapped
    if w.count_unit and not window.roots.get(w.count_unit.root, (0, 0))[1]:
        reasons.append(f"{w.count_unit.root} was never entered in the "
                       "window (no units to count per)")
    return v


def samples_from_boot(w: Workload, params: dict[str, str], variant: str,
                      first_run: int, res: boot_mod.BootResult,
                      expected: int, counted: str = "",
                      out: Path | None = None) -> list[Sample]:
    """Turn one boot's output into samples; a bad boot invalidates them all.

    ``counted``: the guest arch of a counting boot, whose samples carry
    the counts of their windows instead of the timed metrics.
    """
    g = parse.parse_records(res.records)
    counts_path = res.console.parent / "counts.txt"
    windows = counting.read_windows(counts_path, w.window) if counted else []
    out_samples = []
    for i in range(expected):
        gs = g.samples[i] if i < len(g.samples) else parse.GuestSample()
        d = w.derive(gs, {**params, COUNTING: "1"} if counted else params)
        reasons = list(d.invalid)
        if counted:
            # Only what holds the setup (validity) and the counts: times
            # from a boot slowed by the plugin mean nothing.
            d.values = count_values(w, counted, d.values,
                                    windows[i] if i < len(windows) else None,
                                    reasons)
        if not res.clean:
            reasons.insert(0, f"boot {res.describe()} "
                              f"(console: {res.console})")
        elif g.exit_code not in (0, None):
            reasons.append(f"job exited {g.exit_code}")
        if i >= len(g.samples):
            reasons.append("sample missing from guest output")
        rel = ""
        if counted:
            rel = str(counts_path.relative_to(out) if out else counts_path)
        out_samples.append(Sample(w.name, variant, first_run + i, d.values,
                                  not reasons, reasons, res.status,
                                  str(res.console.parent), g.boot_s,
                                  round(res.elapsed, 2), rel,
                                  i if counted else -1, res.cpu_s))
    return out_samples


def run_workloads(req: RunRequest) -> RunResult:
    result = RunResult()
    req.out.mkdir(parents=True, exist_ok=True)
    k = max(1, req.samples_per_boot)
    pairs = math.ceil(req.runs / k)
    # Each timed boot is followed by its counting boot, if asked for: the
    # plugin slows QEMU, so it never runs in a boot that is timed.
    passes = ("timed", "count") if req.counters else ("timed",)
    for w in req.workloads:
        params = w.resolve(req.params.get(w.name, {}))
        fails = {(v, p): 0 for v in VARIANTS for p in passes}
        progress = Progress(f"run {w.name}", pairs * 2 * len(passes))
        for pair in range(pairs):
            n = min(k, req.runs - pair * k)
            for variant in boot_order(pair):
                for what in passes:
                    if fails[variant, what] < MAX_BOOT_FAILURES:
                        fails[variant, what] = _boot_samples(
                            req, w, params, variant, what, pair, n, result,
                            fails[variant, what])
                    progress.step()
        progress.finish()
    return result


def _boot_samples(req: RunRequest, w: Workload, params: dict[str, str],
                  variant: str, what: str, pair: int, n: int,
                  result: RunResult, failed: int) -> int:
    """One boot of ``variant`` for ``n`` samples, appended to the results
    at once; returns the variant's count of failed boots in a row."""
    k = max(1, req.samples_per_boot)
    counted = what == "count"
    fault = req.fault if variant == req.fault_variant else ""
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
    msg = (f"{w.name} {variant} {what} boot {pair}: {res.describe()}; "
           f"console log: {res.console}")
    result.failures.append(msg)
    log.warning("%s", msg)
    if failed == MAX_BOOT_FAILURES:
        result.failures.append(f"{w.name} {variant} ({what}): gave up after "
                               f"{MAX_BOOT_FAILURES} failed boots in a row")
    return failed


def load_samples(out: Path) -> list[Sample]:
    path = out / "samples.jsonl"
    if not path.exists():
        return []
    return [Sample(**json.loads(line))
            for line in path.read_text().splitlines() if line.strip()]
