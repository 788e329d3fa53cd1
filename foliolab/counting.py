"""The counting pass: exact counts of the guest kernel's work from a QEMU
TCG plugin (foliolab/plugin/counter.c), for windows the guest marks.

Under TCG every time is distorted where these patches act (a TLB
invalidation or an IPI costs tens of microseconds), but the instructions
the guest kernel executes are those of its code path, as on hardware. The
plugin counts them per kernel function (System.map, booted ``nokaslr``),
the TLB-invalidating and IPI-sending instructions among them, and for a
few root functions everything the task that entered them executed until
they returned (on x86_64 across context switches: see
countwindows.SwitchTracking).

This module sets a count up: it builds the plugin (against the
installed QEMU's own plugin header, fetched from Debian's source
package), prepares its symbol file and checks the roots it is to follow.
What the plugin writes is read in countwindows.py.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from foliolab import proc
from foliolab.arch import Arch
from foliolab.errors import BootError, SetupError, UsageError
from foliolab.kernel import kconfig, symbols
from foliolab.paths import cache_root
from foliolab.workloads.model import Workload

log = logging.getLogger("foliolab")

PLUGIN_SRC = Path(__file__).resolve().parent / "plugin"
# What the plugin is written against; QEMU 9+ refuses version-1 plugins.
PLUGIN_API = 1

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
                raise BootError(
                    f"plugin argument {a!r} has a comma, which "
                    "QEMU's -plugin option cannot carry",
                    hint="use paths without commas",
                )
        return ["-plugin", ",".join(args)]


def check_accel(accel: str) -> None:
    """Counting needs TCG: the plugin sees only translated code."""
    if accel == "kvm":
        raise UsageError(
            "--count needs TCG: the counter is a TCG plugin",
            hint="drop --accel kvm (auto picks TCG with --count)",
        )


# A kernel text symbol as System.map spells it: a C name, and for a
# function the compiler cloned a suffix such as .isra.0 or .constprop.0.
ROOT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")


def check_root_option(roots: Sequence[str], count: bool) -> None:
    """--root (run's and compare's) only counts with --count, and names
    a function (whether the kernels have it is known once their
    System.maps are: check_roots)."""
    if roots and not count:
        raise UsageError(
            "--root names a function to count", hint="add --count"
        )
    for r in roots:
        if not ROOT_NAME.match(r):
            raise UsageError(
                f"--root {r!r} is not a kernel function name",
                hint="give a C function name as System.map "
                "has it, e.g. try_to_unmap or "
                "shrink_folio_list.isra.0",
            )


def installed_source_version(binary: str) -> tuple[str, str]:
    """(source package, source version) of the Debian package owning
    ``binary`` (a binNMU's binary version has a +bN the source lacks)."""
    path = shutil.which(binary)
    if not path:
        raise SetupError(
            f"{binary} is not installed", hint="run `foliolab setup`"
        )
    cp = proc.run(["dpkg-query", "-S", os.path.realpath(path)], check=False)
    if cp.returncode != 0:
        raise SetupError(
            f"{path} does not come from a Debian package, so "
            "its plugin header cannot be fetched",
            hint="use Debian's QEMU 7.2 (foliolab setup)",
        )
    package = cp.stdout.split(":")[0].strip()
    cp = proc.run(
        [
            "dpkg-query",
            "-W",
            "-f",
            "${source:Package} ${source:Version}",
            package,
        ],
        error=SetupError,
    )
    source, version = cp.stdout.split()
    return source, version


def qemu_plugin_header(binary: str) -> Path:
    """QEMU's ``qemu-plugin.h`` for the installed ``binary``'s exact version.

    No Debian binary package ships it, so it is taken from the source
    package of the same version, fetched with a private apt configuration
    (deb-src twins of the host's own Debian sources, lists in the cache):
    the host's apt sources are never changed. Cached per version.
    """
    source, version = installed_source_version(binary)
    out = cache_root() / "qemu-plugin" / version.replace(":", "_")
    header = out / "qemu-plugin.h"
    if header.exists():
        return header
    work = out / "apt"
    parts = work / "sources.list.d"
    lists = work / "lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    parts.mkdir(parents=True, exist_ok=True)
    (work / "empty.list").write_text("")
    found = False
    for f in Path("/etc/apt/sources.list.d").glob("*.sources"):
        text = f.read_text()
        if "Types:" in text:
            (parts / f.name).write_text(
                re.sub(r"^Types:.*$", "Types: deb-src", text, flags=re.M)
            )
            found = True
    if not found:
        raise SetupError(
            "no deb822 Debian sources in /etc/apt/sources.list.d"
            " to fetch QEMU's source package from",
            hint="add a Debian source or put qemu-plugin.h of "
            f"QEMU {version} at {header}",
        )
    opts = [
        "-o",
        f"Dir::Etc::SourceList={work / 'empty.list'}",
        "-o",
        f"Dir::Etc::SourceParts={parts}",
        "-o",
        f"Dir::State::Lists={lists}",
        "-o",
        "APT::Sandbox::User=root",
    ]
    log.info(
        "Fetching qemu-plugin.h from Debian's %s %s source package",
        source,
        version,
    )
    for argv in (
        ["apt-get", "-q", *opts, "update"],
        [
            "apt-get",
            "-q",
            *opts,
            "source",
            "--download-only",
            f"{source}={version}",
        ],
    ):
        cp = proc.run(argv, cwd=work, check=False)
        if cp.returncode != 0:
            tail = (cp.stderr.strip().splitlines() or ["?"])[-1]
            raise SetupError(
                f"could not fetch {source} {version}'s source "
                f"for qemu-plugin.h: {tail}",
                hint="check the Debian mirror",
            )
    tarballs = sorted(work.glob(f"{source}_*.orig.tar.*"))
    if not tarballs:
        raise SetupError(f"no orig tarball of {source} {version} in {work}")
    cp = proc.run(
        [
            "tar",
            "-xf",
            tarballs[0],
            "-C",
            work,
            "--wildcards",
            "*/include/qemu/qemu-plugin.h",
        ],
        check=False,
    )
    got = sorted(work.glob("*/include/qemu/qemu-plugin.h"))
    if cp.returncode != 0 or not got:
        raise SetupError(
            f"{tarballs[0].name} has no include/qemu/qemu-plugin.h",
            hint="QEMU built without plugin support?",
        )
    shutil.copy(got[0], header)
    shutil.rmtree(work)
    return header


def build_plugin(arch: Arch) -> Path:
    """The plugin, compiled against the installed QEMU's own header."""
    header = qemu_plugin_header(arch.qemu_binary)
    text = header.read_text()
    m = re.search(r"#define QEMU_PLUGIN_VERSION (\d+)", text)
    if not m or int(m.group(1)) != PLUGIN_API:
        have = m.group(1) if m else "unknown"
        raise SetupError(
            f"the installed QEMU's plugin API is version {have};"
            f" foliolab's counter is written for version "
            f"{PLUGIN_API} (QEMU 7.2)",
            hint="use Debian bookworm's QEMU 7.2",
        )
    sources = sorted(PLUGIN_SRC.glob("*.[ch]"))
    digest = hashlib.sha256(text.encode())
    for s in sources:
        digest.update(s.read_bytes())
    out = cache_root() / "plugin" / digest.hexdigest()[:16]
    so = out / "libcounter.so"
    if so.exists():
        return so
    out.mkdir(parents=True, exist_ok=True)
    argv = [
        "gcc",
        "-O2",
        "-Wall",
        "-shared",
        "-fPIC",
        "-I",
        str(header.parent),
        "-o",
        str(so),
        str(PLUGIN_SRC / "counter.c"),
    ]
    cp = proc.run(argv, check=False)
    if cp.returncode != 0:
        (out / "build.log").write_text(cp.stdout + cp.stderr)
        raise SetupError(
            "the counter plugin did not build", hint=f"see {out / 'build.log'}"
        )
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
        raise SetupError(
            f"no System.map in {build_dir}: counting needs the "
            "kernel's symbols",
            hint="rebuild the kernel",
        )
    config = build_dir / ".config"
    return system_map.read_text(), symbols.lab_names(
        kconfig.version_of(config.read_text() if config.exists() else "")
    )


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
    key = hashlib.sha256(
        f"{text}\0{sorted(renamed.items())}".encode()
    ).hexdigest()
    stamp = build_dir / "counter-symbols.sha256"
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    out.write_text(
        "".join(f"{a:x} {renamed.get(n, n)}\n" for a, n in text_symbols(text))
    )
    stamp.write_text(key)
    return out


def functions_in(symbols: Path) -> set[str]:
    """The function names of a symbol file (symbol_file())."""
    return {
        line.split()[1]
        for line in symbols.read_text().splitlines()
        if len(line.split()) == 2
    }


def missing_functions(symbols: Path, names: tuple[str, ...]) -> list[str]:
    """The names that are no text symbol of the kernel."""
    have = functions_in(symbols)
    return [n for n in names if n not in have]


def check_roots(
    workloads: Iterable[Workload],
    functions: dict[str, set[str]],
    given: tuple[str, ...] = (),
) -> None:
    """Every counting root exists in at least one kernel of the run
    (``functions``: each kernel's, by the lab's names, symbols.RENAMES
    applied; ``given``: the --root options, named as such): a root none of
    them has would count nothing on every kernel, and its rows would
    compare zeros. A root only some kernels have is counted where it
    exists."""
    kernels = ", ".join(functions)
    for root in given:
        if not any(root in have for have in functions.values()):
            raise UsageError(
                f"--root {root}: no kernel of the run has this "
                f"function ({kernels})",
                hint="check its spelling in System.map (a "
                "static function may carry a suffix "
                "such as .isra.0)",
            )
    for w in workloads:
        roots = tuple(w.count_roots) + (
            (w.count_unit.root,) if w.count_unit else ()
        )
        for root in dict.fromkeys(roots):
            if not any(root in have for have in functions.values()):
                raise UsageError(
                    f"workload {w.name}: counting root {root} is a function "
                    f"of none of the kernels ({kernels})",
                    hint="add its new name to symbols.RENAMES, or count "
                    "another root",
                )


def counter_for(
    arch: Arch, build_dir: Path, plugin: Path | None = None
) -> Counter:
    """What counting a boot of the kernel in ``build_dir`` needs;
    ``plugin``: built already (else built, which may fetch QEMU's
    source)."""
    io = X86_IPI_FUNCTIONS if arch.name == "x86_64" else ()
    symbols_path = symbol_file(build_dir)
    return Counter(plugin or build_plugin(arch), symbols_path, io_functions=io)


def root_semantics(arch: str) -> str:
    """What a root counts on ``arch``, for the run's manifest (each boot's
    counts.txt says whether its kernel let the plugin do it)."""
    if arch == "x86_64":
        return (
            "the entering task's own work until the root returns, "
            "across context switches (parked at __switch_to_asm's push "
            "%rbp, resumed at its pop %rbp)"
        )
    return (
        "per vCPU: a task switched out inside a root has the next "
        "task's work counted into it (no switch tracking on " + arch + ")"
    )
