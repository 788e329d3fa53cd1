"""Kernel configs: one .config per (arch, purpose), from fragments in configs/.

A purpose (``perf``, ``debug`` or ``kasan``) is ``base.config`` plus the
architecture's ``arch-<arch>.config`` (console, firmware, options only one
architecture has) plus ``<purpose>.config`` (``kasan``: ``debug.config``,
then ``kasan.config``), applied with ``make allnoconfig
KCONFIG_ALLCONFIG=...``: everything not asked for is off, which keeps the
build small. Vanilla and patched get the very same fragment. After
kconfig has run we check that every requested option survived (like
kunit's validate_config): a silently dropped option would make the
workloads measure something else.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from foliolab.arch import get_arch
from foliolab.errors import ConfigError, UsageError
from foliolab.paths import CONFIGS_DIR

PURPOSES = ("perf", "debug", "kasan")
# Purposes that build on another one's fragment.
_BASED_ON = {"kasan": "debug"}
# Purposes that boot with the debug kernel arguments (boot.debug_cmdline).
DEBUG_PURPOSES = ("debug", "kasan")
_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


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
        if line.startswith("#"):
            continue
        raise ConfigError(f"{source}:{lineno}: not a Kconfig line: {line!r}")
    return out


@dataclass(frozen=True)
class Fragment:
    purpose: str
    options: dict[str, str]
    origin: dict[str, str]    # option -> fragment file that set it

    def text(self) -> str:
        lines = [f"# foliolab {self.purpose} config, merged from configs/"]
        for k, v in self.options.items():
            lines.append(f"# {k} is not set" if v == "n" else f"{k}={v}")
        return "\n".join(lines) + "\n"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()[:12]


def fragment_files(purpose: str, arch: str,
                   configs_dir: Path = CONFIGS_DIR) -> list[Path]:
    """The fragments of (purpose, arch) in the order they are applied."""
    if purpose not in PURPOSES:
        raise UsageError(f"unknown --config {purpose!r}",
                         hint=f"choose one of: {', '.join(PURPOSES)}")
    below = [configs_dir / f"{_BASED_ON[purpose]}.config"] \
        if purpose in _BASED_ON else []
    return [configs_dir / "base.config",
            configs_dir / get_arch(arch).config_fragment,
            *below,
            configs_dir / f"{purpose}.config"]


def merge(purpose: str, arch: str, configs_dir: Path = CONFIGS_DIR,
          extra: list[Path] | None = None) -> Fragment:
    """base + arch-<arch> + <purpose> (+ extra files), later files win."""
    files = fragment_files(purpose, arch, configs_dir) + (extra or [])
    options: dict[str, str] = {}
    origin: dict[str, str] = {}
    for f in files:
        if not f.exists():
            raise ConfigError(f"config fragment {f} is missing")
        for k, v in parse(f.read_text(), str(f)).items():
            options.pop(k, None)        # keep later files' order
            options[k] = v
            origin[k] = f.name
    return Fragment(purpose, options, origin)


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
    missing = dropped(fragment, config_path.read_text())
    if missing:
        raise ConfigError(
            f"kconfig dropped {len(missing)} requested option(s), first: "
            f"{missing[0]}", hint="add the missing dependency to configs/",
            log_path=config_path)
