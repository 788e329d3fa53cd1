"""The counting pass: exact counts of the guest kernel's work from a QEMU
TCG plugin (foliolab/plugin/counter.c), for windows the guest marks.

Under TCG every time is distorted where these patches act (a TLB
invalidation or an IPI costs tens of microseconds), but the instructions
the guest kernel executes are those of its code path, as on hardware. The
plugin counts them per kernel function (System.map, booted ``nokaslr``),
the TLB-invalidating and IPI-sending instructions among them, and for a
few root functions everything the task that entered them executed until
they returned (on x86_64 across context switches: see SwitchTracking).

This module builds the plugin, prepares its symbol file, parses its output
and turns a window into metrics. Which functions are nondeterministic is a
property of repeats of one kernel, so it is decided in the report
(``nondeterministic_functions``), not here.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import hostsetup, proc
from foliolab.kernel import kconfig, symbols
from foliolab.arch import Arch
from foliolab.errors import BootError, SetupError, UsageError
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

PLUGIN_SRC = Path(__file__).resolve().parent / "plugin"
# What the plugin is written against; QEMU 9+ refuses version-1 plugins.
PLUGIN_API = 1

# Instruction classes that make the summary metrics, per architecture.
TLB_FLUSH_CLASSES = {
    "x86_64": ("invlpg", "invpcid", "cr3_write"),
    "arm64": ("tlbi_is", "tlbi_os", "tlbi_local", "tlbi_range",
              "tlbi_other"),
}
IPI_CLASSES = {"x86_64": ("apic_icr_write",), "arm64": ("sgi1r_write",)}
# The plugin follows at most this many roots (MAX_ROOTS in counter.c).
MAX_ROOTS = 8
# A counting boot's time limit is this many times the timed boot's: the
# plugin's callbacks slow TCG down (1.4x measured for pageout, more for
# kernel-heavy work).
TIMEOUT_FACTOR = 3
# Function names whose stores the plugin checks for the xAPIC ICR.
X86_IPI_FUNCTIONS = ("apic", "IPI")


@dataclass(frozen=True)
class Counter:
    """What a boot needs to count: the plugin and the kernel's symbols."""

    plugin: Path
    symbols: Path
    roots: tuple[str, ...] = ()
    io_functions: tuple[str, ...] = ()

    def with_roots(self, roots: tuple[str, ...]) -> "Counter":
        return Counter(self.plugin, self.symbols, roots, self.io_functions)

    def qemu_args(self, out: Path) -> list[str]:
        args = [f"{self.plugin}", f"symbols={self.symbols}", f"out={out}"]
        args += [f"root={r}" for r in self.roots]
        args += [f"io={f}" for f in self.io_functions]
        for a in args:
            if "," in a:
                raise BootError(f"plugin argument {a!r} has a comma, which "
                                "QEMU's -plugin option cannot carry",
                                hint="use paths without commas")
        return ["-plugin", ",".join(args)]


def check_accel(accel: str) -> None:
    """Counting needs TCG: the plugin sees only translated code."""
    if accel == "kvm":
        raise UsageError("--count needs TCG: the counter is a TCG plugin",
                         hint="drop --accel kvm (auto picks TCG with "
                              "--count)")


# A kernel text symbol as System.map spells it: a C name, and for a
# function the compiler cloned a suffix such as .isra.0 or .constprop.0.
ROOT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")


def check_root_option(roots, count: bool) -> None:
    """--root (run's and compare's) only counts with --count, and names
    a function (whether the kernels have it is known once their
    System.maps are: check_roots)."""
    if roots and not count:
        raise UsageError("--root names a function to count",
                         hint="add --count")
    for r in roots:
        if not ROOT_NAME.match(r):
            raise UsageError(f"--root {r!r} is not a kernel function name",
                             hint="give a C function name as System.map "
                                  "has it, e.g. try_to_unmap or "
                                  "shrink_folio_list.isra.0")


def build_plugin(arch: Arch) -> Path:
    """The plugin, compiled against the installed QEMU's own header."""
    header = hostsetup.qemu_plugin_header(arch.qemu_binary)
    text = header.read_text()
    m = re.search(r"#define QEMU_PLUGIN_VERSION (\d+)", text)
    if not m or int(m.group(1)) != PLUGIN_API:
        have = m.group(1) if m else "unknown"
        raise SetupError(f"the installed QEMU's plugin API is version {have};"
                         f" foliolab's counter is written for version "
                         f"{PLUGIN_API} (QEMU 7.2)",
                         hint="use Debian bookworm's QEMU 7.2")
    sources = sorted(PLUGIN_SRC.glob("*.[ch]"))
    digest = hashlib.sha256(text.encode())
    for s in sources:
        digest.update(s.read_bytes())
    out = cache_root() / "plugin" / digest.hexdigest()[:16]
    so = out / "libcounter.so"
    if so.exists():
        return so
    out.mkdir(parents=True, exist_ok=True)
    argv = ["gcc", "-O2", "-Wall", "-shared", "-fPIC", "-I", str(header.parent),
            "-o", str(so), str(PLUGIN_SRC / "counter.c")]
    cp = proc.run(argv, check=False)
    if cp.returncode != 0:
        (out / "build.log").write_text(cp.stdout + cp.stderr)
        raise SetupError("the counter plugin did not build",
                         hint=f"see {out / 'build.log'}")
    return so


def text_symbols(system_map: str) -> list[tuple[int, str]]:
    """Sorted (address, name) of the text symbols in a System.map."""
    out = []
    for line in system_map.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            try:
                out.append((int(parts[0], 16), parts[2]))
            except ValueError:
                continue
    out.sort()
    return out


def _system_map(build_dir: Path) -> tuple[str, dict[str, str]]:
    """The System.map of the kernel in ``build_dir``, and {its name: the
    lab's name} for the functions its version renamed (symbols.RENAMES
    for the version its .config names)."""
    system_map = build_dir / "System.map"
    if not system_map.exists():
        raise SetupError(f"no System.map in {build_dir}: counting needs the "
                         "kernel's symbols", hint="rebuild the kernel")
    config = build_dir / ".config"
    return system_map.read_text(), symbols.lab_names(kconfig.version_of(
        config.read_text() if config.exists() else ""))


def map_functions(build_dir: Path) -> set[str]:
    """The function names, by the lab's names, of the kernel whose
    System.map (and .config) are in ``build_dir``; nothing written."""
    text, renamed = _system_map(build_dir)
    return {renamed.get(n, n) for _, n in text_symbols(text)}


def symbol_file(build_dir: Path) -> Path:
    """The plugin's symbol file for the kernel built in ``build_dir``.

    A function a newer kernel renamed is written under the lab's name
    (symbols.RENAMES for the version its .config names), so roots, counts
    and metric keys are the same for every kernel of a run.
    """
    text, renamed = _system_map(build_dir)
    out = build_dir / "counter-symbols.txt"
    key = hashlib.sha256(f"{text}\0{sorted(renamed.items())}".encode()
                         ).hexdigest()
    stamp = build_dir / "counter-symbols.sha256"
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    out.write_text("".join(f"{a:x} {renamed.get(n, n)}\n"
                           for a, n in text_symbols(text)))
    stamp.write_text(key)
    return out


def functions_in(symbols: Path) -> set[str]:
    """The function names of a symbol file (symbol_file())."""
    return {line.split()[1] for line in symbols.read_text().splitlines()
            if len(line.split()) == 2}


def missing_functions(symbols: Path, names: tuple[str, ...]) -> list[str]:
    """The names that are no text symbol of the kernel."""
    have = functions_in(symbols)
    return [n for n in names if n not in have]


def check_roots(workloads, functions: dict[str, set[str]],
                given: tuple[str, ...] = ()) -> None:
    """Every counting root exists in at least one kernel of the run
    (``functions``: each kernel's, by the lab's names, symbols.RENAMES
    applied; ``given``: the --root options, named as such): a root none of
    them has would count nothing on every kernel, and its rows would
    compare zeros. A root only some kernels have is counted where it
    exists."""
    kernels = ", ".join(functions)
    for root in given:
        if not any(root in have for have in functions.values()):
            raise UsageError(f"--root {root}: no kernel of the run has this "
                             f"function ({kernels})",
                             hint="check its spelling in System.map (a "
                                  "static function may carry a suffix "
                                  "such as .isra.0)")
    for w in workloads:
        roots = tuple(w.count_roots) + ((w.count_unit.root,)
                                        if w.count_unit else ())
        for root in dict.fromkeys(roots):
            if not any(root in have for have in functions.values()):
                raise UsageError(
                    f"workload {w.name}: counting root {root} is a function "
                    f"of none of the kernels ({kernels})",
                    hint="add its new name to symbols.RENAMES, or count "
                         "another root")


def counter_for(arch: Arch, build_dir: Path, plugin: Path | None = None
                ) -> Counter:
    """What counting a boot of the kernel in ``build_dir`` needs;
    ``plugin``: built already (else built, which may fetch QEMU's
    source)."""
    io = X86_IPI_FUNCTIONS if arch.name == "x86_64" else ()
    symbols_path = symbol_file(build_dir)
    return Counter(plugin or build_plugin(arch), symbols_path,
                   io_functions=io)


@dataclass(frozen=True)
class SwitchTracking:
    """Whether a boot's roots followed their task across context switches
    (the plugin's ``switch_tracking`` lines). Untracked roots are per vCPU:
    a task switched out inside a root has the next task's work counted into
    it, and its own remaining work on another vCPU is lost."""

    tracked: bool
    detail: str                # where it is tracked, or why not


# Output of a plugin from before roots followed tasks (no such line).
UNTRACKED_OLD_PLUGIN = SwitchTracking(
    False, "the counter output has no switch_tracking line (a plugin from "
           "before roots followed tasks)")


def root_semantics(arch: str) -> str:
    """What a root counts on ``arch``, for the run's manifest (each boot's
    counts.txt says whether its kernel let the plugin do it)."""
    if arch == "x86_64":
        return ("the entering task's own work until the root returns, "
                "across context switches (parked at __switch_to_asm's push "
                "%rbp, resumed at its pop %rbp)")
    return ("per vCPU: a task switched out inside a root has the next "
            "task's work counted into it (no switch tracking on " + arch
            + ")")


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
    notes: list[str]           # the plugin's "#" lines
    switch_tracking: SwitchTracking = UNTRACKED_OLD_PLUGIN

    def tagged(self, tag: int) -> list[Window]:
        """The closed windows with ``tag``, in order."""
        return [w for w in self.windows if w.tag == tag]


def _switch_tracking(parts: list[str], have: SwitchTracking
                     ) -> SwitchTracking:
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
                out.switch_tracking = _switch_tracking(parts,
                                                       out.switch_tracking)
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
                if len(parts) > 4:      # only while switches are tracked
                    cur.root_switches[parts[1]] = int(parts[4])
            elif parts[0] == "rootclass":
                cur.root_classes.setdefault(parts[1], {})[parts[2]] = \
                    int(parts[3])
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
    if not path.exists():
        return CountOutput([], [])
    return parse_counts(path.read_text())


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

    name: str                  # "folio", "walk"
    root: str                  # its entries count the units
    whole_window: bool = True


def window_metrics(w: Window, arch: str, unit: CountUnit | None,
                   roots: tuple[str, ...] = ()) -> dict[str, float]:
    """SPEC §7's count metrics from one window."""
    v: dict[str, float] = {"kernel_insns": w.kernel_insns}
    v["tlb_flush_insns"] = sum(w.classes.get(c, 0)
                               for c in TLB_FLUSH_CLASSES[arch])
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
        v[f"{root}_tlb_flush_insns"] = sum(rc.get(c, 0)
                                           for c in TLB_FLUSH_CLASSES[arch])
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


def nondeterministic_functions(runs: dict[str, list[dict[str, int]]],
                               spread: float = NONDETERMINISTIC_SPREAD
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


def deterministic_insns(w_insns: dict[str, int], total: int,
                        flagged: set[str]) -> int:
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


def differential_profile(windows: dict[str, list[Window]], base: str,
                         other: str, flagged: set[str] = frozenset(),
                         top: int = 10) -> list[ProfileRow]:
    """The ``top`` functions whose mean self instruction count per window
    changed most between kernel ``base`` and kernel ``other`` (think
    ``perf diff``, but exact). A function missing from a window counts 0
    there, so one that exists on one side only shows its whole count."""
    if not windows.get(base) or not windows.get(other):
        return []
    names = set()
    for ws in windows.values():
        for w in ws:
            names.update(w.functions)
    rows = []
    for f in names:
        insns, calls = {}, {}
        for kernel in (base, other):
            ws = windows[kernel]
            insns[kernel] = sum(w.functions.get(f, (0, 0))[0]
                                for w in ws) / len(ws)
            calls[kernel] = sum(w.functions.get(f, (0, 0))[1]
                                for w in ws) / len(ws)
        rows.append(ProfileRow(f, insns, calls, f in flagged))
    rows.sort(key=lambda r: (-abs(r.delta(base, other)), r.function))
    return [r for r in rows[:top] if r.delta(base, other)]


def stat_lines(w: Window, arch: str, top: int = 25,
               tracking: SwitchTracking = UNTRACKED_OLD_PLUGIN) -> list[str]:
    """A ``perf stat``-like summary of one window, exact: the totals, the
    instruction classes, the roots (and whether they followed their task
    across switches), then the ``top`` functions by self instructions."""
    v = window_metrics(w, arch, None)
    lines = [f"{w.kernel_insns:>16,}  kernel_insns"]
    tlb = ", ".join(f"{c} {w.classes.get(c, 0):,}"
                    for c in TLB_FLUSH_CLASSES[arch])
    lines.append(f"{v['tlb_flush_insns']:>16,}  tlb_flush_insns ({tlb})")
    lines.append(f"{v['ipis_sent']:>16,}  ipis_sent "
                 f"({', '.join(IPI_CLASSES[arch])})")
    for name, n in sorted(w.classes.items()):
        if n and name not in TLB_FLUSH_CLASSES[arch] + IPI_CLASSES[arch]:
            lines.append(f"{n:>16,}  {name}")
    for name, (insns, calls) in w.roots.items():
        switched = (f"switched out inside {w.root_switches.get(name, 0):,}"
                    " times" if tracking.tracked else "per vCPU")
        lines.append(f"{insns:>16,}  {name} and its callees "
                     f"({calls:,} calls, {switched})")
    if w.roots and not tracking.tracked:
        lines.append(f"{'':>16}  roots not switch-tracked: "
                     f"{tracking.detail}")
    ranked = sorted(w.functions.items(), key=lambda kv: -kv[1][0])[:top]
    if ranked:
        lines += ["", f"  top {len(ranked)} kernel functions by self "
                      "instructions:",
                  f"{'insns':>16}  {'%':>6}  {'calls':>10}  function"]
        for name, (insns, calls) in ranked:
            pct = 100.0 * insns / w.kernel_insns if w.kernel_insns else 0.0
            lines.append(f"{insns:>16,}  {pct:6.2f}  {calls:>10,}  {name}")
    return lines
