"""Kernel configs: one .config per (arch, purpose), from fragments in configs/.

A purpose (``perf``, ``debug`` or ``kasan``; ``coverage`` for ``foliolab
test --coverage`` alone) is ``base.config`` plus the
architecture's ``arch-<arch>.config`` (console, firmware, options only one
architecture has) plus ``<purpose>.config`` (``kasan`` and ``coverage``:
``debug.config``, then their own; each layer followed by
``<layer>-<arch>.config`` where one exists), applied with ``make allnoconfig
KCONFIG_ALLCONFIG=...``: everything not asked for is off, which keeps the
build small. Vanilla and patched get the very same fragment. After
kconfig has run we check that every requested option survived (like
kunit's validate_config): a silently dropped option would make the
workloads measure something else.

Kernels newer than the 6.12 base get the same fragments, followed by
``since-X.Y.config`` for every X.Y up to their own version: there an
option that a later kernel renamed or removed says so by name
(``# CONFIG_X is gone: why``, and the new name set as usual), so the
check still holds every other option to what was asked.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.arch import get_arch
from foliolab.errors import ConfigError, UsageError
from foliolab.paths import CONFIGS_DIR

PURPOSES = ("perf", "debug", "kasan")
# The debug kernel with gcov (`foliolab test --coverage` only: never a
# --config of a comparison, so its kernel never gives a timed or counted
# sample).
COVERAGE = "coverage"
# The mm CI's selftest kernel (`foliolab test --mm-ci`): base and arch,
# then configs/mm-ci.config, then the tree's own
# tools/testing/selftests/mm/config (TREE_FRAGMENT, read from the tree
# being built), the order of the mm CI's `vng --build --config A --config
# B`. Never a --config of a comparison.
MMCI = "mm-ci"
TREE_FRAGMENT = "tools/testing/selftests/mm/config"
# configs/mm-ci-lab.config: what the mm CI's fragment needs here (it
# starts from virtme-ng's config, the lab from allnoconfig)
MMCI_LAB = "mm-ci-lab"
# the file of a purpose's own layer, as Fragment.origin names it
FRAGMENT_FILE = {MMCI: f"{MMCI}.config"}
# Purposes that build on another one's fragment.
_BASED_ON = {"kasan": "debug", COVERAGE: "debug"}
# Purposes that boot with the debug kernel arguments (debug_cmdline).
DEBUG_PURPOSES = ("debug", "kasan", COVERAGE)


def debug_cmdline(purpose: str) -> tuple[str, ...]:
    """Kernel arguments a purpose needs: the debug kernel checks harder."""
    if purpose in DEBUG_PURPOSES:
        return ("page_table_check=on", "panic_on_warn=1")
    return ()


_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
# An option a newer kernel no longer has: no longer asked for.
# Also an option a fragment of someone else's (configs/mm-ci.config, kept
# as its owner has it) asks for and the lab leaves out, with why.
_GONE = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is (?:gone|left out)(?::.*)?$")
GONE = "gone"
# An option the architecture cannot have (its HAVE_ARCH_ dependency is
# never selected), said in an architecture's own file: no fragment asks
# for it there, the tree's own (applied last) included. The mm CI's
# vng build drops such an option silently; here it is written down.
_NOT_ON_ARCH = re.compile(
    r"^# (CONFIG_[A-Za-z0-9_]+) is not on this architecture(?::.*)?$"
)
NOT_ON_ARCH = "not on this architecture"
_SINCE = re.compile(r"^since-(\d+)\.(\d+)\.config$")
# The pinned base's version: fragments without a since- are written for it.
BASE_VERSION = (6, 12)


def check_served(what: str, version: tuple[int, int]) -> None:
    """A kernel of ``version`` (X.Y) is one the fragments are written
    for: the base's and later (a since-X.Y.config says what a later one
    no longer has); an older kernel lacks options they ask for, found
    only by kconfig after a whole build (``what``: how the refusal names
    the kernel)."""
    if version < BASE_VERSION:
        have = ".".join(map(str, version))
        oldest = ".".join(map(str, BASE_VERSION))
        raise UsageError(
            f"{what}: Linux {have} is older than {oldest}, the oldest "
            "kernel the lab's config fragments (configs/) are written for",
            hint=f"give a kernel of {oldest} or later",
        )


def parse(text: str, source: str = "<text>") -> dict[str, str]:
    """Parse .config/fragment text into {CONFIG_X: value}; unset is 'n'."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _SET.match(line)
        if m:
            out[m.group(1)] = m.group(2)
            continue
        m = _UNSET.match(line)
        if m:
            out[m.group(1)] = "n"
            continue
        m = _GONE.match(line)
        if m:
            out[m.group(1)] = GONE
            continue
        m = _NOT_ON_ARCH.match(line)
        if m:
            out[m.group(1)] = NOT_ON_ARCH
            continue
        if line.startswith("#"):
            continue
        raise ConfigError(f"{source}:{lineno}: not a Kconfig line: {line!r}")
    return out


@dataclass(frozen=True)
class Fragment:
    purpose: str
    options: dict[str, str]
    origin: dict[str, str]  # option -> fragment file that set it
    # options this kernel's version no longer has -> the file saying so
    gone: dict[str, str] = field(default_factory=dict)
    # options the architecture cannot have -> its file saying so (also
    # in gone); check() holds them to it
    not_on_arch: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        lines = [f"# foliolab {self.purpose} config, merged from configs/"]
        for k, v in self.options.items():
            lines.append(f"# {k} is not set" if v == "n" else f"{k}={v}")
        return "\n".join(lines) + "\n"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()[:12]


def version_fragments(
    version: tuple[int, int], configs_dir: Path = CONFIGS_DIR
) -> list[Path]:
    """``since-X.Y.config`` for every X.Y up to ``version``, oldest first."""
    found = []
    for f in configs_dir.glob("since-*.config"):
        m = _SINCE.match(f.name)
        if m and (int(m.group(1)), int(m.group(2))) <= version:
            found.append(((int(m.group(1)), int(m.group(2))), f))
    return [f for _, f in sorted(found)]


def fragment_files(
    purpose: str,
    arch: str,
    configs_dir: Path = CONFIGS_DIR,
    version: tuple[int, int] = BASE_VERSION,
) -> list[Path]:
    """The fragments of (purpose, arch) for a kernel of ``version``, in
    the order they are applied."""
    if purpose not in PURPOSES + (COVERAGE, MMCI):
        raise UsageError(
            f"unknown --config {purpose!r}",
            hint=f"choose one of: {', '.join(PURPOSES)}",
        )
    layers = [_BASED_ON[purpose]] if purpose in _BASED_ON else []
    layers.append(purpose)
    if purpose == MMCI:
        layers.append(MMCI_LAB)
    files = [
        configs_dir / "base.config",
        configs_dir / get_arch(arch).config_fragment,
    ]
    for layer in layers:
        files.append(configs_dir / f"{layer}.config")
        # What a purpose needs that only one architecture spells this way
        # (x86's MEMORY_FAILURE needs X86_MCE, which its perf kernel
        # leaves off): optional, so most purposes have none.
        own = configs_dir / f"{layer}-{arch}.config"
        if own.exists():
            files.append(own)
    return files + version_fragments(version, configs_dir)


def merge(
    purpose: str,
    arch: str,
    configs_dir: Path = CONFIGS_DIR,
    extra: list[Path] | None = None,
    version: tuple[int, int] = BASE_VERSION,
    tree_options: dict[str, str] | None = None,
) -> Fragment:
    """base + arch-<arch> + <purpose> + since-X.Y (+ extra files, then
    ``tree_options``: the tree's own fragment, TREE_FRAGMENT), later
    files win; an option a later file calls gone is no longer asked for."""
    files = fragment_files(purpose, arch, configs_dir, version) + (extra or [])
    options: dict[str, str] = {}
    origin: dict[str, str] = {}
    gone: dict[str, str] = {}
    layers: list[tuple[str, dict[str, str]]] = []
    for f in files:
        if not f.exists():
            raise ConfigError(f"config fragment {f} is missing")
        layers.append((f.name, parse(f.read_text(), str(f))))
    if tree_options:
        layers.append((TREE_FRAGMENT, tree_options))
    not_here: dict[str, str] = {}
    for name, layer in layers:
        for k, v in layer.items():
            options.pop(k, None)  # keep later files' order
            if v == NOT_ON_ARCH and not _arch_file(name, arch):
                raise ConfigError(
                    f"{name}: {k} 'is not on this architecture' in a "
                    "file every architecture reads",
                    hint=f"say it in configs/*-{arch}.config",
                )
            if v in (GONE, NOT_ON_ARCH):
                (gone if v == GONE else not_here)[k] = name
                continue
            options[k] = v
            origin[k] = name
    for k, name in not_here.items():
        options.pop(k, None)
        origin.pop(k, None)
        gone[k] = name
    return Fragment(purpose, options, origin, gone, not_here)


def _arch_file(name: str, arch: str) -> bool:
    """A fragment only ``arch`` reads (arch-ARCH.config,
    LAYER-ARCH.config)."""
    return name.endswith(f"-{arch}.config")


_CONFIG_HEADER = re.compile(
    r"^# Linux/\S+ (\d+)\.(\d+)\S* Kernel Configuration$", re.M
)


def version_of(config_text: str) -> tuple[int, int]:
    """(VERSION, PATCHLEVEL) from a .config's header comment; the base's
    when it has none."""
    m = _CONFIG_HEADER.search(config_text)
    return (int(m.group(1)), int(m.group(2))) if m else BASE_VERSION


def dropped(fragment: Fragment, config_text: str) -> list[str]:
    """Requested options that the final .config does not have as asked."""
    final = parse(config_text, ".config")
    missing = []
    for k, want in fragment.options.items():
        have = final.get(k, "n")
        if have != want:
            missing.append(f"{k}={want} ({fragment.origin[k]}; got {have})")
    return missing


def check(fragment: Fragment, config_path: Path) -> None:
    text = config_path.read_text()
    final = parse(text, ".config")
    # an option said not to be on the architecture that kconfig offers
    # after all (set, or "is not set": either way in the .config): the
    # claim is stale, and the option left off for nothing
    stale = [k for k in fragment.not_on_arch if k in final]
    if stale:
        raise ConfigError(
            f"{fragment.not_on_arch[stale[0]]} says {stale[0]} is not on "
            "this architecture, but kconfig offers it",
            hint="remove that line, so the option is asked for again",
            log_path=config_path,
        )
    missing = dropped(fragment, text)
    if missing:
        raise ConfigError(
            f"kconfig dropped {len(missing)} requested option(s), first: "
            f"{missing[0]}",
            hint="add the missing dependency to configs/",
            log_path=config_path,
        )
