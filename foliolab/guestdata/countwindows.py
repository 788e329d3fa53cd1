"""A counting boot's counts: the plugin's output (counts.txt) parsed into
windows, and what a window gives: results.json's count metrics, a differential
profile and a ``perf stat``-like summary.

Which functions are nondeterministic is a property of repeats of one
kernel, so the report decides it (``nondeterministic_functions``, called
from countanalysis.py), not a sample. The counter that writes the counts
(the plugin, its symbol file, the roots it follows) is counting.py's.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import bootrecord

# Instruction classes that make the summary metrics, per architecture.
TLB_FLUSH_CLASSES = {
    "x86_64": ("invlpg", "invpcid", "cr3_write"),
    "arm64": ("tlbi_is", "tlbi_os", "tlbi_local", "tlbi_range", "tlbi_other"),
}
IPI_CLASSES = {"x86_64": ("apic_icr_write",), "arm64": ("sgi1r_write",)}
# The plugin follows at most this many roots (MAX_ROOTS in counter.c): a
# limit of the counts it writes, which a workload's roots are held to.
MAX_ROOTS = 8


@dataclass(frozen=True)
class SwitchTracking:
    """Whether a boot's roots followed their task across context switches
    (the plugin's ``switch_tracking`` lines). Untracked roots are per vCPU:
    a task switched out inside a root has the next task's work counted into
    it, and its own remaining work on another vCPU is lost."""

    tracked: bool
    detail: str  # where it is tracked, or why not


# Output of a plugin from before roots followed tasks (no such line).
UNTRACKED_OLD_PLUGIN = SwitchTracking(
    False,
    "the counter output has no switch_tracking line (a plugin from "
    "before roots followed tasks)",
)


@dataclass
class Window:
    """One closed window: what the guest kernel did between the markers."""

    tag: int
    seq: int
    kernel_insns: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    roots: dict[str, tuple[int, int]] = field(default_factory=dict)
    functions: dict[str, tuple[int, int]] = field(default_factory=dict)
    # root -> class -> count, inside the root and its callees
    root_classes: dict[str, dict[str, int]] = field(default_factory=dict)
    # root -> times a task was switched out inside it (untracked: none)
    root_switches: dict[str, int] = field(default_factory=dict)

    def insns(self) -> dict[str, int]:
        return {f: n for f, (n, _) in self.functions.items()}


@dataclass
class CountOutput:
    windows: list[Window]
    notes: list[str]  # the plugin's "#" lines
    switch_tracking: SwitchTracking = UNTRACKED_OLD_PLUGIN

    def tagged(self, tag: int) -> list[Window]:
        """The closed windows with ``tag``, in order."""
        return [w for w in self.windows if w.tag == tag]


def _switch_tracking(parts: list[str], have: SwitchTracking) -> SwitchTracking:
    """A ``switch_tracking on|off DETAIL`` line; once off, it stays off
    (the plugin says off later when it found nothing to instrument)."""
    if parts[1] not in ("on", "off"):
        raise ValueError(parts[1])
    now = SwitchTracking(parts[1] == "on", " ".join(parts[2:]))
    if have is not UNTRACKED_OLD_PLUGIN and not have.tracked:
        return have
    return now


def parse_counts(text: str) -> CountOutput:
    """The plugin's output; a window cut off by the guest's end is dropped
    and noted (it has no end line)."""
    out = CountOutput([], [])
    cur: Window | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            out.notes.append(line[1:].strip())
            continue
        parts = line.split()
        try:
            if parts[0] == "switch_tracking":
                out.switch_tracking = _switch_tracking(
                    parts, out.switch_tracking
                )
            elif parts[0] == "window":
                cur = Window(int(parts[1]), int(parts[2]))
            elif cur is None:
                out.notes.append(f"line {n} outside a window: {line[:80]}")
            elif parts[0] == "kernel_insns":
                cur.kernel_insns = int(parts[1])
            elif parts[0] == "class":
                cur.classes[parts[1]] = int(parts[2])
            elif parts[0] == "root":
                cur.roots[parts[1]] = (int(parts[2]), int(parts[3]))
                if len(parts) > 4:  # only while switches are tracked
                    cur.root_switches[parts[1]] = int(parts[4])
            elif parts[0] == "rootclass":
                cur.root_classes.setdefault(parts[1], {})[parts[2]] = int(
                    parts[3]
                )
            elif parts[0] == "fn":
                cur.functions[parts[1]] = (int(parts[2]), int(parts[3]))
            elif parts[0] == "end":
                out.windows.append(cur)
                cur = None
            else:
                out.notes.append(f"line {n} not understood: {line[:80]}")
        except (IndexError, ValueError):
            out.notes.append(f"line {n} malformed: {line[:80]}")
    if cur is not None:
        out.notes.append(f"window {cur.tag} #{cur.seq} was cut off")
    return out


def read_counts(path: Path) -> CountOutput:
    """A boot's counts.txt (empty if the file is missing: the boot did
    not get that far)."""
    if not path.exists() and not path.is_symlink():
        return CountOutput([], [])
    return parse_counts(
        bootrecord.record_text(path, "boot it again", errors="replace")
    )


def read_windows(path: Path, tag: int) -> list[Window]:
    """The closed windows with ``tag`` in a boot's counts.txt, in order."""
    return read_counts(path).tagged(tag)


@dataclass(frozen=True)
class CountUnit:
    """The natural unit of a workload's counts: one entry of ``root``.

    ``whole_window``: per-unit figures divide the window's counts (pageout:
    all the work of MADV_PAGEOUT per folio unmapped); otherwise they divide
    the root's own inclusive count (ksm-rmap: the work inside each walk).
    """

    name: str  # "folio", "walk"
    root: str  # its entries count the units
    whole_window: bool = True


def window_metrics(
    w: Window, arch: str, unit: CountUnit | None, roots: tuple[str, ...] = ()
) -> dict[str, float]:
    """results.json's count metrics from one window."""
    v: dict[str, float] = {"kernel_insns": w.kernel_insns}
    v["tlb_flush_insns"] = sum(
        w.classes.get(c, 0) for c in TLB_FLUSH_CLASSES[arch]
    )
    v["ipis_sent"] = sum(w.classes.get(c, 0) for c in IPI_CLASSES[arch])
    if arch == "arm64":
        v["dsb_ish_insns"] = w.classes.get("dsb_ish", 0)
    for root in roots:
        insns, entries = w.roots.get(root, (0, 0))
        v[f"{root}_insns"] = insns
        v[f"{root}_calls"] = entries
        if root in w.root_switches:
            v[f"{root}_switches"] = w.root_switches[root]
        rc = w.root_classes.get(root, {})
        v[f"{root}_tlb_flush_insns"] = sum(
            rc.get(c, 0) for c in TLB_FLUSH_CLASSES[arch]
        )
        v[f"{root}_ipis_sent"] = sum(rc.get(c, 0) for c in IPI_CLASSES[arch])
    if unit:
        insns, units = w.roots.get(unit.root, (0, 0))
        v[f"{unit.name}s_counted"] = units
        if units:
            if unit.whole_window:
                for key in ("kernel_insns", "tlb_flush_insns", "ipis_sent"):
                    v[f"{key}_per_{unit.name}"] = v[key] / units
                v[f"{unit.root}_insns_per_{unit.name}"] = insns / units
            else:
                v[f"kernel_insns_per_{unit.name}"] = insns / units
    return v


# A function whose count varies between repeats of one kernel by more than
# this share of its largest count is nondeterministic. Spin and wait loops,
# timer ticks and the page allocator's per-CPU lists vary by 15-100%; a
# function on the measured path that background work also calls once or
# twice varies by far less (memset_orig: 79 of 187 million instructions in
# pageout), and dropping it whole would drop the path itself.
NONDETERMINISTIC_SPREAD = 0.01


def nondeterministic_functions(
    runs: dict[str, list[dict[str, int]]],
    spread: float = NONDETERMINISTIC_SPREAD,
) -> set[str]:
    """Functions whose instruction count differs between repeats of one
    kernel by more than ``spread`` of its largest count: ``runs`` maps a
    kernel to the per-function counts of each of its windows. A function
    missing from a window counts 0 there. One window per kernel decides
    nothing.
    """
    flagged: set[str] = set()
    for windows in runs.values():
        if len(windows) < 2:
            continue
        names = set().union(*windows)
        for f in names:
            counts = [w.get(f, 0) for w in windows]
            if max(counts) - min(counts) > spread * max(counts):
                flagged.add(f)
    return flagged


def deterministic_insns(
    w_insns: dict[str, int], total: int, flagged: set[str]
) -> int:
    """The window's kernel instructions outside the flagged functions."""
    return total - sum(n for f, n in w_insns.items() if f in flagged)


@dataclass(frozen=True)
class ProfileRow:
    """One kernel function in a differential profile: its mean self
    instructions and entries per window, per kernel."""

    function: str
    insns: dict[str, float]
    calls: dict[str, float]
    nondeterministic: bool

    def delta(self, base: str, other: str) -> float:
        return self.insns.get(other, 0.0) - self.insns.get(base, 0.0)


def differential_profile(
    windows: dict[str, list[Window]],
    base: str,
    other: str,
    flagged: Set[str] = frozenset(),
    top: int = 10,
) -> list[ProfileRow]:
    """The ``top`` functions whose mean self instruction count per window
    changed most between kernel ``base`` and kernel ``other`` (think
    ``perf diff``, but exact). A function missing from a window counts 0
    there, so one that exists on one side only shows its whole count."""
    if not windows.get(base) or not windows.get(other):
        return []
    names: set[str] = set()
    for ws in windows.values():
        for w in ws:
            names.update(w.functions)
    rows = []
    for f in names:
        insns, calls = {}, {}
        for kernel in (base, other):
            ws = windows[kernel]
            insns[kernel] = sum(
                w.functions.get(f, (0, 0))[0] for w in ws
            ) / len(ws)
            calls[kernel] = sum(
                w.functions.get(f, (0, 0))[1] for w in ws
            ) / len(ws)
        rows.append(ProfileRow(f, insns, calls, f in flagged))
    rows.sort(key=lambda r: (-abs(r.delta(base, other)), r.function))
    return [r for r in rows[:top] if r.delta(base, other)]


def stat_lines(
    w: Window,
    arch: str,
    top: int = 25,
    tracking: SwitchTracking = UNTRACKED_OLD_PLUGIN,
) -> list[str]:
    """A ``perf stat``-like summary of one window, exact: the totals, the
    instruction classes, the roots (and whether they followed their task
    across switches), then the ``top`` functions by self instructions."""
    v = window_metrics(w, arch, None)
    lines = [f"{w.kernel_insns:>16,}  kernel_insns"]
    tlb = ", ".join(
        f"{c} {w.classes.get(c, 0):,}" for c in TLB_FLUSH_CLASSES[arch]
    )
    lines.append(f"{v['tlb_flush_insns']:>16,}  tlb_flush_insns ({tlb})")
    lines.append(
        f"{v['ipis_sent']:>16,}  ipis_sent ({', '.join(IPI_CLASSES[arch])})"
    )
    for name, n in sorted(w.classes.items()):
        if n and name not in TLB_FLUSH_CLASSES[arch] + IPI_CLASSES[arch]:
            lines.append(f"{n:>16,}  {name}")
    for name, (insns, calls) in w.roots.items():
        switched = (
            f"switched out inside {w.root_switches.get(name, 0):,} times"
            if tracking.tracked
            else "per vCPU"
        )
        lines.append(
            f"{insns:>16,}  {name} and its callees "
            f"({calls:,} calls, {switched})"
        )
    if w.roots and not tracking.tracked:
        lines.append(f"{'':>16}  roots not switch-tracked: {tracking.detail}")
    ranked = sorted(w.functions.items(), key=lambda kv: -kv[1][0])[:top]
    if ranked:
        lines += [
            "",
            f"  top {len(ranked)} kernel functions by self instructions:",
            f"{'insns':>16}  {'%':>6}  {'calls':>10}  function",
        ]
        for name, (insns, calls) in ranked:
            pct = 100.0 * insns / w.kernel_insns if w.kernel_insns else 0.0
            lines.append(f"{insns:>16,}  {pct:6.2f}  {calls:>10,}  {name}")
    return lines
