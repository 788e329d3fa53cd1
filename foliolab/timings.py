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
import statistics
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

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
# A counting boot against its timed one, when a workload has measured one
# kind only: the pageout fixture (tests/host/data/run-pageout-aa), 9.5 s
# counting against 7.5 s timed.
COUNT_FACTOR = 1.26
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


@dataclass
class Timings:
    """Seconds measured, newest last, by build_key() and boot_key()."""

    builds: dict[str, list[float]] = field(default_factory=dict)
    boots: dict[str, list[float]] = field(default_factory=dict)
    version: int = VERSION

    @classmethod
    def load(cls, path: Path | None = None) -> Timings:
        path = path or cache_root() / TIMINGS
        try:
            d = json.loads(path.read_text())
            t = cls(builds=_series(d["builds"]), boots=_series(d["boots"]))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, KeyError, TypeError) as e:
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
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        tmp.replace(path)

    def build_s(self, arch: str, purpose: str) -> float | None:
        got = self.builds.get(build_key(arch, purpose))
        return statistics.median(got) if got else None

    def boot_s(
        self, arch: str, workload: str, accel: str, counted: bool, samples: int
    ) -> float | None:
        got = self.boots.get(boot_key(arch, workload, accel, counted, samples))
        return statistics.median(got) if got else None


def _series(d: object) -> dict[str, list[float]]:
    if not isinstance(d, dict):
        raise TypeError("not an object")
    return {str(k): [float(x) for x in v][-KEEP:] for k, v in d.items()}


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

    @property
    def total_s(self) -> float:
        return self.build_s + self.boot_s + RUN_OVERHEAD_S

    def line(self) -> str:
        source = "from this lab's measured times"
        if self.defaults:
            source = (
                "defaults for "
                + ", ".join(self.defaults)
                + " (not measured here yet)"
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
    return declared, False


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
        build_seconds(build_one, builds),
        len(boots),
        boot_total,
        defaults,
    )


def build_seconds(measured: float | None, builds: int) -> float:
    """``builds`` builds: each the measured median, else the first a
    fresh build (DEFAULT_BUILD_S) and the rest incremental builds in its
    directory (DEFAULT_NEXT_BUILD_S)."""
    if measured is not None:
        return builds * measured
    return (
        DEFAULT_BUILD_S + (builds - 1) * DEFAULT_NEXT_BUILD_S
        if builds
        else 0.0
    )
