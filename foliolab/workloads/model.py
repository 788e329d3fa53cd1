"""What a workload is, as data: its parameters, metrics, guest script and
derive function (a guest sample -> metric values and validity verdicts),
and the counting pass's metrics every workload shares.

Each workload's own definition is in its folder (``NAME/workload.py``).
Metric keys are part of the results format (SPEC §7): add, don't rename.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from foliolab.counting import MAX_ROOTS
from foliolab.countwindows import CountUnit
from foliolab.errors import UsageError
from foliolab.parse import GuestSample


# The better direction of a metric that has none: an amount the workload
# sets or a tally of outcomes, reported as a change, never as better or
# worse (results.json's `better` is "lower" or "higher" for the others).
NO_DIRECTION = "none"


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    better: str          # "lower" | "higher" | NO_DIRECTION
    label: str
    primary: bool = True  # primary metrics lead the report
    counted: bool = False  # from the counting pass (compare --count) only

    @property
    def is_rate(self) -> bool:
        """Rates are averaged harmonically, everything else arithmetically."""
        return self.unit.endswith("/s")


@dataclass(frozen=True)
class Param:
    """A workload parameter, passed to the guest as FL_NAME. Its type is
    checked before anything is built: ``choices`` (the only values
    allowed), else an integer in ``[lo, hi]`` when ``lo`` is set, else a
    word (letters, digits, one dot or dash)."""

    default: str
    help: str
    choices: tuple[str, ...] = ()
    lo: int | None = None
    hi: int | None = None

    def check(self, value: str) -> str | None:
        """None if ``value`` is allowed, else what is wrong with it."""
        if self.choices:
            return (None if value in self.choices else
                    "one of: " + ", ".join(self.choices))
        if self.lo is not None:
            bounds = f"an integer from {self.lo} to {self.hi}"
            # digits only: int() would also take "1_000" or " 12"
            if not value.isdigit() or not value.isascii():
                return bounds
            return None if self.lo <= int(value) <= self.hi else bounds
        ok = value.replace(".", "", 1).replace("-", "", 1).isalnum()
        return None if ok else "letters, digits and at most one . or -"

    @property
    def kind(self) -> str:
        """What values it takes, as check() decides: for a listing."""
        if self.choices:
            return "one of " + ",".join(self.choices)
        if self.lo is not None:
            return f"integer {self.lo}..{self.hi}"
        return "word"

    @classmethod
    def integer(cls, default: str, help: str, lo: int, hi: int) -> Param:
        """An integer parameter with its bounds."""
        return cls(default, help, lo=lo, hi=hi)

    @classmethod
    def flag(cls, default: str, help: str) -> Param:
        """A 0/1 switch."""
        return cls(default, help, choices=("0", "1"))


@dataclass
class Derived:
    values: dict[str, float] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)


# A workload's counted metrics of its own, from (the window's counted
# metrics, the sample's timed ones, the roots counted): dirty-tlb's per
# page swapped out.
CountedExtra = Callable[[dict[str, float], dict[str, float],
                         tuple[str, ...]], dict[str, float]]


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    script: str                          # NAME/<script>.sh, in the guest
                                         # /foliolab/workloads/<script>.sh
    params: dict[str, Param]
    metrics: tuple[Metric, ...]
    derive: Callable[[GuestSample, dict[str, str]], Derived]
    memory_mb: int = 3072
    numa_nodes: int = 1
    timeout: float = 300.0
    cmdline: tuple[str, ...] = ()        # extra kernel arguments
    not_measurable: str = ""             # stated in the report
    # The counting pass (--count): the tag of the guest's window
    # (windows.Window), the functions counted inclusively, the unit
    # per-unit counts are given in, and counted metrics of the workload's
    # own (CountedExtra).
    window: int = -1
    count_roots: tuple[str, ...] = ()
    count_unit: CountUnit | None = None
    count_extra: CountedExtra | None = None
    # Expected guest time of one boot of one sample under TCG, timed and
    # counting (--count): the ETA's and the dry run's figure on a host
    # that has not measured this workload yet (timings.py). Each entry
    # below says where its figures come from.
    tcg_boot_s: float = 45.0
    tcg_count_boot_s: float = 56.0

    def metric(self, key: str) -> Metric:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    def nodes(self, requested: int) -> int:
        """NUMA nodes to boot with: what it needs, or more if asked."""
        return max(self.numa_nodes, requested)

    def resolve(self, overrides: dict[str, str]) -> dict[str, str]:
        """Defaults overlaid with ``overrides``; unknown names are errors."""
        out = {k: p.default for k, p in self.params.items()}
        for k, v in overrides.items():
            if k not in self.params:
                raise UsageError(
                    f"workload {self.name} has no parameter {k!r}",
                    hint=f"known: {', '.join(self.params)}")
            wrong = self.params[k].check(v)
            if wrong:
                raise UsageError(f"bad value {v!r} for {self.name}.{k}",
                                 hint=f"give {wrong}")
            out[k] = v
        return out

    def job(self, params: dict[str, str], samples: int, fault: str = "",
            count: bool = False, monitors: bool = False) -> str:
        lines = [f"export FL_{k.upper()}={v}" for k, v in params.items()]
        lines += [f"export FL_FAULT={fault}",
                  f"export FL_COUNT={1 if count else 0}",
                  # lib.sh never starts them in a counting boot
                  f"export FL_MONITORS={1 if monitors else 0}",
                  ". /foliolab/lib.sh",
                  f". /foliolab/workloads/{self.script}.sh",
                  f"fl_samples {samples}"]
        return "\n".join(lines) + "\n"


# Set in the parameters a counting boot's sample is derived with, so a
# derive function knows that the tracers and profilers were left off.
COUNTING = "_counting"


def count_metrics(unit: CountUnit | None, roots: tuple[str, ...] = (),
                  extra: tuple[Metric, ...] = ()) -> tuple[Metric, ...]:
    """The counting pass's metrics (SPEC §7 keys), exact instruction counts
    of the guest kernel in the workload's window."""
    out = [
        Metric("kernel_insns_deterministic", "insns", "lower",
               "counted: kernel instructions, deterministic functions"),
        Metric("kernel_insns", "insns", "lower",
               "counted: kernel instructions in the window", primary=False),
        Metric("nondeterministic_pct", "%", "lower",
               "counted: share of the window in functions whose count "
               "varies between repeats", primary=False),
        Metric("tlb_flush_insns", "insns", "lower",
               "counted: TLB invalidation instructions", primary=False),
        Metric("ipis_sent", "IPIs", "lower", "counted: IPIs sent",
               primary=False),
        Metric("dsb_ish_insns", "insns", "lower",
               "counted: dsb ish (arm64)", primary=False),
    ]
    if unit and unit.whole_window:
        u = unit.name
        out += [Metric(f"kernel_insns_per_{u}", "insns", "lower",
                       f"counted: kernel instructions per {u}"),
                Metric(f"{unit.root}_insns_per_{u}", "insns", "lower",
                       f"counted: {unit.root} (callees included) per {u}"),
                Metric(f"tlb_flush_insns_per_{u}", "insns", "lower",
                       f"counted: TLB invalidations per {u}", primary=False),
                Metric(f"ipis_sent_per_{u}", "IPIs", "lower",
                       f"counted: IPIs sent per {u}", primary=False)]
    elif unit:
        out.append(Metric(f"kernel_insns_per_{unit.name}", "insns", "lower",
                          f"counted: kernel instructions in {unit.root} "
                          f"per {unit.name}"))
    if unit:
        out.append(Metric(f"{unit.name}s_counted", unit.name + "s",
                          NO_DIRECTION,
                          f"counted: {unit.root} calls", primary=False))
    out += root_metrics(roots)
    return tuple(replace(m, counted=True) for m in (*out, *extra))


def root_metrics(roots: tuple[str, ...]) -> list[Metric]:
    """What the counting pass reports of each root: its instructions with
    everything it calls, its calls, how often its task was switched out
    inside it, and the TLB invalidations and IPIs made inside it."""
    out = []
    for r in roots:
        out += [Metric(f"{r}_insns", "insns", "lower",
                       f"counted: {r} (callees included)", primary=False),
                Metric(f"{r}_calls", "calls", "lower",
                       f"counted: {r} calls", primary=False),
                Metric(f"{r}_switches", "switches", "lower",
                       f"counted: times {r}'s task was switched out inside "
                       "it (its count spans them)", primary=False),
                Metric(f"{r}_tlb_flush_insns", "insns", "lower",
                       f"counted: TLB invalidations inside {r}",
                       primary=False),
                Metric(f"{r}_ipis_sent", "IPIs", "lower",
                       f"counted: IPIs sent inside {r}", primary=False)]
    return [replace(m, counted=True) for m in out]


def with_roots(w: Workload, roots: tuple[str, ...]) -> Workload:
    """``w`` also counting ``roots`` (compare's --root), each reported as
    its own roots are; more than the counter follows is a usage error."""
    new = tuple(r for r in dict.fromkeys(roots) if r not in w.count_roots)
    if not new:
        return w
    followed = set(w.count_roots + new) | (
        {w.count_unit.root} if w.count_unit else set())
    if len(followed) > MAX_ROOTS:
        raise UsageError(f"{w.name} would count {len(followed)} roots with "
                         f"--root; the counter follows at most {MAX_ROOTS}",
                         hint=f"{w.name} counts {', '.join(w.count_roots)} "
                              "already: drop some --root options")
    return replace(w, count_roots=w.count_roots + new,
                   metrics=w.metrics + tuple(root_metrics(new)))

