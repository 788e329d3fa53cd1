"""How long builds and boots take on this lab, as measured: the estimate
`compare --dry-run` prints and the ETA of a run's progress.

$FOLIOLAB_CACHE/timings.json keeps the last few wall times of every real
build (per arch and config purpose; checkout, configure and make) and of
every clean boot (per arch, workload, accelerator, pass and samples per
boot). An estimate takes their median; a kind not yet measured takes a
default, and the estimate says which ones did. A damaged file is set
aside with a warning: timings are a convenience, never a reason to fail.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from foliolab import proc, records
from foliolab.errors import DamagedRunError
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

TIMINGS = "timings.json"
VERSION = 1
KEEP = 5  # the newest measurements kept per kind

# Before the first measurement: a fresh 6.12 build with a cold ccache on
# two shared cores (the trial of 2026-11-26: 587 s).
DEFAULT_BUILD_S = 600.0
# and each next kernel of the run, built in the first one's directory: the
# trial's second build took 490 s in a directory of its own; in the first
# one's, with ccache's depend mode, the same build took 601 s of CPU
# against 855 s (2026-11-26, /work/h38build-cache, both under load), so
# 490 * 601 / 855 = 344 s. patches/6.12 changes headers 1,104 of the
# objects include: most of the second build is real compiling.
DEFAULT_NEXT_BUILD_S = 360.0
# A boot's default is its workload's declared TCG time (its workload.py,
# Workload.tcg_boot_s); KVM takes about a third of that.
KVM_FACTOR = 1 / 3
# Objects a fresh build compiles, per (arch, purpose), before this host
# has counted one (build.py's {arch}-{purpose}.objects): read from the
# lead's cache of 2026-11-26 (/root/lead-cache/build/*.objects), 6.12-7.3
# x86_64 trees.
DEFAULT_OBJECTS = {
    "x86_64/debug": 1779,
    "x86_64/perf": 1683,
    "x86_64/coverage": 1699,
}
DEFAULT_OBJECTS_ANY = 1700  # another arch or purpose: about the same
RUN_OVERHEAD_S = 15.0  # image, manifest, report
# The calibration probe (probe()): PROBE_RUNS compiles of a fixed C file
# with a kernel build's optimisation flags, the median taken. Compiling
# is what a build does, and TCG's translate-and-run is the same kind of
# single-threaded integer work, so one figure scales both defaults.
PROBE_RUNS = 3
PROBE_FLAGS = ("-O2", "-g", "-fno-strict-aliasing", "-fno-common", "-c")
# The probe's median in CPU seconds (the compiler's user + system time,
# which other work on the machine changes little, unlike its wall time:
# 1.7-2.6 s of wall for 0.58-0.67 s of CPU at load average 6) on this
# lab's machine, 2 cores shared with kernel builds, 2026-11-28: 0.62 s.
# The defaults' own machine (the trials of 2026-11-26, "both under
# load") was not probed: that the two match is an assumption, checked
# only when a calibrated estimate meets its run's real time.
REFERENCE_PROBE_S = 0.62
# A factor outside these is the probe disturbed, not the machine.
MIN_FACTOR, MAX_FACTOR = 0.25, 8.0
# An estimate above this says so before the first build and names a
# shorter run with its own estimate.
LONG_RUN_S = 30 * 60.0
# A build that compiled under this share of a fresh build's objects (the
# same commit built again, one .c file changed) is no guide to the next
# kernel of a run, which compiles most of them: it is not recorded, so the
# median is of real builds and an estimate does not fall with every no-op.
NEAR_NOOP_SHARE = 0.1


def build_key(arch: str, purpose: str) -> str:
    return f"{arch}/{purpose}"


def boot_key(
    arch: str, workload: str, accel: str, counted: bool, samples: int
) -> str:
    return (
        f"{arch}/{workload}/{accel}/{'count' if counted else 'timed'}"
        f"/{samples}"
    )


@dataclass(frozen=True)
class Calibration:
    """This machine's speed against the one the defaults were measured
    on: PROBE's seconds here and there. The defaults (DEFAULT_BUILD_S,
    each workload's tcg_boot_s) are scaled by ``factor`` until this
    machine has measured builds and boots of its own."""

    probe_s: float
    reference_s: float

    @property
    def factor(self) -> float:
        """How many times slower than the defaults' machine, bounded: a
        probe disturbed by a burst of load must not make an estimate
        absurd."""
        if self.reference_s <= 0 or self.probe_s <= 0:
            return 1.0
        return min(
            MAX_FACTOR, max(MIN_FACTOR, self.probe_s / self.reference_s)
        )


@dataclass
class Timings:
    """Seconds measured, newest last, by build_key() and boot_key(); and
    this machine's calibration, if it was probed."""

    builds: dict[str, list[float]] = field(default_factory=dict)
    boots: dict[str, list[float]] = field(default_factory=dict)
    version: int = VERSION
    calibration: Calibration | None = None

    @property
    def has_history(self) -> bool:
        """Builds or boots measured here: estimates need no probe."""
        return any(self.builds.values()) or any(self.boots.values())

    @property
    def factor(self) -> float:
        """What the defaults are scaled by on this machine."""
        return self.calibration.factor if self.calibration else 1.0

    @classmethod
    def load(cls, path: Path | None = None) -> Timings:
        path = path or cache_root() / TIMINGS
        try:
            if not path.exists() and not path.is_symlink():
                return cls()
            d = records.read_object(
                path, records.RecordKind.CACHE, ("builds", "boots")
            )
            t = cls(
                builds=_series(d["builds"]),
                boots=_series(d["boots"]),
                calibration=_calibration(d.get("calibration")),
            )
        except FileNotFoundError:
            return cls()
        except (
            DamagedRunError,
            OSError,
            ValueError,
            KeyError,
            TypeError,
        ) as e:
            log.warning(
                "%s is damaged (%s): estimates use defaults until "
                "the next build and boot rewrite it",
                path,
                e,
            )
            return cls()
        return t

    def save(self, path: Path | None = None) -> None:
        path = path or cache_root() / TIMINGS
        path.parent.mkdir(parents=True, exist_ok=True)
        records.write_whole(path, json.dumps(asdict(self), indent=1) + "\n")

    def build_s(self, arch: str, purpose: str) -> float | None:
        got = self.builds.get(build_key(arch, purpose))
        return statistics.median(got) if got else None

    def boot_s(
        self, arch: str, workload: str, accel: str, counted: bool, samples: int
    ) -> float | None:
        got = self.boots.get(boot_key(arch, workload, accel, counted, samples))
        return statistics.median(got) if got else None


def _calibration(d: object) -> Calibration | None:
    """timings.json's ``calibration`` (a key added: files without it have
    none)."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise TypeError("calibration is not an object")
    return Calibration(_seconds(d["probe_s"]), _seconds(d["reference_s"]))


def _seconds(x: object) -> float:
    """A time of timings.json: a finite number of seconds, not negative
    (float() would take "nan" and "inf" from a string)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{x!r} is not a number")
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{x!r} is not a time")
    return float(x)


def _series(d: object) -> dict[str, list[float]]:
    if not isinstance(d, dict):
        raise TypeError("not an object")
    return {str(k): [_seconds(x) for x in v][-KEEP:] for k, v in d.items()}


def _add(series: dict[str, list[float]], key: str, seconds: float) -> None:
    series[key] = (series.get(key, []) + [round(seconds, 1)])[-KEEP:]


def is_real_build(compiled: int, fresh_objects: int) -> bool:
    """Whether a build that compiled ``compiled`` objects, where a fresh
    one compiles ``fresh_objects``, tells how long the next build takes."""
    return compiled >= NEAR_NOOP_SHARE * fresh_objects


def record_build(arch: str, purpose: str, seconds: float) -> None:
    t = Timings.load()
    _add(t.builds, build_key(arch, purpose), seconds)
    _save(t)


def record_boot(
    arch: str,
    workload: str,
    accel: str,
    counted: bool,
    samples: int,
    seconds: float,
) -> None:
    t = Timings.load()
    _add(t.boots, boot_key(arch, workload, accel, counted, samples), seconds)
    _save(t)


def _save(t: Timings) -> None:
    try:
        t.save()
    except OSError as e:
        log.warning("timings not kept: %s", e)


@dataclass(frozen=True)
class PlannedBootTime:
    """What the estimate needs of one planned boot."""

    workload: str
    counted: bool
    samples: int
    declared_s: float = 45.0  # its workload's, one sample, TCG
    declared_count_s: float = 56.0  # the same, a counting boot


@dataclass
class Estimate:
    """A run's expected wall time, and what it was estimated from."""

    builds: int
    build_s: float
    boots: int
    boot_s: float
    defaults: list[str] = field(default_factory=list)  # kinds not measured
    # the defaults scaled by this machine's probe (Calibration), if any
    calibration: Calibration | None = None

    @property
    def total_s(self) -> float:
        return self.build_s + self.boot_s + RUN_OVERHEAD_S

    @property
    def long(self) -> bool:
        return self.total_s > LONG_RUN_S

    def line(self) -> str:
        source = "from this lab's measured times"
        if self.defaults:
            c = self.calibration
            scaled = (
                f", scaled x{c.factor:.2f} by this machine's probe "
                f"({c.probe_s:.2f} s against {c.reference_s:.2f} s)"
                if c is not None
                else ", another machine's (no compiler to probe this one)"
            )
            source = (
                "defaults for "
                + ", ".join(self.defaults)
                + " (not measured here yet)"
                + scaled
            )
        return (
            f"# estimate: {clock(self.total_s)} wall time ({self.builds} "
            f"build(s) {clock(self.build_s)}, {self.boots} boot(s) "
            f"{clock(self.boot_s)}), {source}"
        )


def clock(seconds: float) -> str:
    """``3725`` -> ``1:02:05``; ``65`` -> ``1:05``."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def default_objects(arch: str, purpose: str) -> int:
    """The object total a fresh build of ``arch``/``purpose`` is shown
    against before this host has counted one."""
    return DEFAULT_OBJECTS.get(build_key(arch, purpose), DEFAULT_OBJECTS_ANY)


def declared_seconds(accel: str, b: PlannedBootTime) -> float:
    """``b``'s time as its workload declares it, for ``accel``."""
    one = b.declared_count_s if b.counted else b.declared_s
    return one * b.samples * (KVM_FACTOR if accel == "kvm" else 1.0)


def boot_seconds(
    t: Timings, arch: str, accel: str, b: PlannedBootTime
) -> tuple[float, bool]:
    """(seconds, measured?) of one boot, from its own workload only: its
    kind's median; else the one-sample kind's, times the samples; else
    its declared time, scaled by how this host's boots of the same
    workload (another pass or sample count) compared with theirs; else
    its declared time. Never another workload's times: their speeds
    differ (khugepaged 87 s a boot, pageout 10 s)."""
    got = t.boot_s(arch, b.workload, accel, b.counted, b.samples)
    if got is not None:
        return got, True
    one = t.boot_s(arch, b.workload, accel, b.counted, 1)
    if one is not None:
        return one * b.samples, True
    declared = declared_seconds(accel, b)
    prefix = boot_key(arch, b.workload, accel, False, 1).rsplit("/", 2)[0]
    ratios: list[float] = []
    for key, times in t.boots.items():
        kind, _, samples = key[len(prefix) + 1 :].partition("/")
        if (
            not key.startswith(prefix + "/")
            or not times
            or not samples.isdigit()
        ):
            continue
        mine = replace(b, counted=kind == "count", samples=int(samples))
        ratios.append(statistics.median(times) / declared_seconds(accel, mine))
    if ratios:
        return declared * statistics.median(ratios), True
    return declared * t.factor, False


def estimate(
    t: Timings,
    arch: str,
    purpose: str,
    accel: str,
    builds: int,
    boots: list[PlannedBootTime],
) -> Estimate:
    """The wall time of ``builds`` builds and ``boots``."""
    defaults = []
    build_one = t.build_s(arch, purpose)
    if build_one is None and builds:
        defaults.append(f"builds ({arch}/{purpose})")
    boot_total = 0.0
    for b in boots:
        s, measured = boot_seconds(t, arch, accel, b)
        boot_total += s
        kind = f"{b.workload} {'counting ' if b.counted else ''}boots"
        if not measured and kind not in defaults:
            defaults.append(kind)
    return Estimate(
        builds,
        build_seconds(build_one, builds, t.factor),
        len(boots),
        boot_total,
        defaults,
        t.calibration if defaults else None,
    )


def build_seconds(
    measured: float | None, builds: int, factor: float = 1.0
) -> float:
    """``builds`` builds: each the measured median, else the first a
    fresh build (DEFAULT_BUILD_S) and the rest incremental builds in its
    directory (DEFAULT_NEXT_BUILD_S), scaled by this machine's
    ``factor``."""
    if measured is not None:
        return builds * measured
    return (
        (DEFAULT_BUILD_S + (builds - 1) * DEFAULT_NEXT_BUILD_S) * factor
        if builds
        else 0.0
    )


def probe_source() -> str:
    """The probe's C file: fixed, so every machine compiles the same
    work; a few hundred functions of loops, switches and inlining, the
    shape of kernel code to an optimiser."""
    parts = ["struct item { unsigned long key, val; struct item *next; };"]
    for i in range(PROBE_FUNCTIONS):
        parts.append(
            f"static inline unsigned long mix{i}(unsigned long x)\n"
            f"{{ return (x ^ (x >> {i % 13 + 1})) * {2 * i + 0x9E37}UL; }}\n"
            f"unsigned long walk{i}(struct item *it, unsigned long seed)\n"
            "{\n\tunsigned long acc = seed;\n"
            "\tfor (; it; it = it->next) {\n"
            f"\t\tswitch ((it->key + {i}) & 7) {{\n"
            f"\t\tcase 0: acc += mix{i}(it->val); break;\n"
            "\t\tcase 1: acc ^= it->val << 3; break;\n"
            f"\t\tcase 2: acc -= mix{i}(acc); break;\n"
            "\t\tcase 3: it->val = acc; break;\n"
            f"\t\tdefault: acc = mix{i}(acc + it->key);\n"
            "\t\t}\n\t}\n\treturn acc;\n}\n"
        )
    return "\n".join(parts) + "\n"


PROBE_FUNCTIONS = 120

# (argv, cwd) -> the CPU seconds it took; a test gives a fake one
Runner = Callable[[list[str], Path], float]


def _timed_run(argv: list[str], cwd: Path) -> float:
    """The CPU seconds ``argv`` took (user + system): the machine's
    speed, not how busy it is at the moment."""
    before = proc.children_cpu_s()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return proc.children_cpu_s() - before


def probe(runner: Runner = _timed_run) -> Calibration | None:
    """Compile the probe PROBE_RUNS times (a few seconds); None if there
    is no compiler or it fails (the estimate then says it uses another
    machine's defaults)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    with tempfile.TemporaryDirectory(prefix="foliolab-probe-") as d:
        src = Path(d) / "probe.c"
        src.write_text(probe_source())
        try:
            times = [
                runner([cc, *PROBE_FLAGS, "-o", "probe.o", "probe.c"], Path(d))
                for _ in range(PROBE_RUNS)
            ]
        except (OSError, subprocess.CalledProcessError) as e:
            log.info("calibration probe failed: %s", e)
            return None
    return Calibration(round(statistics.median(times), 3), REFERENCE_PROBE_S)


def calibrated(t: Timings, keep: bool, runner: Runner = _timed_run) -> Timings:
    """``t`` with this machine's calibration: none needed where it has
    measured builds or boots, the one kept from an earlier probe, else
    a probe now (kept in timings.json if ``keep``: a dry run changes
    nothing on the host)."""
    if t.has_history or t.calibration is not None:
        return t
    c = probe(runner)
    if c is None:
        return t
    t = replace(t, calibration=c)
    if keep:
        _save(t)
    return t
