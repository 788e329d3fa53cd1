"""The kernel options the mm CI builds its selftest kernel with: its own
fragment (configs/mm-ci.config, read once from linux-mm/mm-ci) and then
the kernel tree's tools/testing/selftests/mm/config, read from the tree
at build time (a later fragment wins, as ``vng --build --config A
--config B`` applies them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foliolab.errors import ConfigError
from foliolab.kernel import kconfig
from foliolab.kernel import source as ksource
from foliolab.paths import CONFIGS_DIR

FRAGMENT = CONFIGS_DIR / "mm-ci.config"
TREE_CONFIG = "tools/testing/selftests/mm/config"
# How the merged options name where each came from.
FROM_MMCI = "mm-ci.config"
FROM_TREE = TREE_CONFIG


@dataclass(frozen=True)
class MmciOptions:
    """The merged options in order (later fragment's value wins), where
    each was set, and where the tree's file overrode the mm CI's."""

    options: dict[str, str]
    origin: dict[str, str]  # option -> FROM_MMCI or FROM_TREE
    overridden: dict[str, tuple[str, str]]  # option -> (mm CI's, tree's)

    def lines(self) -> list[str]:
        return [
            f"# {k} is not set" if v == "n" else f"{k}={v}"
            for k, v in self.options.items()
        ]


def mmci_fragment(path: Path = FRAGMENT) -> dict[str, str]:
    """The mm CI's options (its repeated lines once each)."""
    if not path.is_file():
        raise ConfigError(f"the mm CI's kconfig fragment {path} is missing")
    return kconfig.parse(path.read_text(), str(path))


def tree_fragment(repo: Path, commit: str) -> dict[str, str]:
    """The tree's own selftests/mm/config at ``commit``, read from git's
    objects (the checkout is not touched); {} for a tree without one."""
    cp = ksource.git(repo, "show", f"{commit}:{TREE_CONFIG}", check=False)
    if cp.returncode != 0:
        return {}
    return kconfig.parse(cp.stdout, f"{commit[:12]}:{TREE_CONFIG}")


def merged(repo: Path, commit: str, fragment: Path = FRAGMENT) -> MmciOptions:
    """The mm CI's fragment, then the tree's (its values win)."""
    options: dict[str, str] = {}
    origin: dict[str, str] = {}
    overridden: dict[str, tuple[str, str]] = {}
    mmci = mmci_fragment(fragment)
    for k, v in mmci.items():
        options[k], origin[k] = v, FROM_MMCI
    for k, v in tree_fragment(repo, commit).items():
        if k in mmci and mmci[k] != v:
            overridden[k] = (mmci[k], v)
        options.pop(k, None)  # the later fragment's place, as merge()'s
        options[k], origin[k] = v, FROM_TREE
    return MmciOptions(options, origin, overridden)
