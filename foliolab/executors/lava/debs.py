"""Debian's LAVA packages, fetched and unpacked into foliolab's cache.

LAVA is not installed with dpkg: its packages would pull about 150 others
(upgrades of systemd and perl among them). ``apt-get download`` and
``dpkg-deb -x`` put exactly the ones foliolab needs under the cache, for
the job schema (lava-common) and the local dispatcher (local.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from foliolab import proc
from foliolab.errors import LavaError
from foliolab.paths import cache_root

LAVA_VERSION = "2023.01-2"  # Debian bookworm's lava-common


def unpack_debs(packages: tuple[str, ...], into: Path) -> None:
    """Debian's ``packages`` at LAVA_VERSION, fetched with apt-get download
    and unpacked (dpkg-deb -x) into ``into``, which appears only whole."""
    tmp = into.with_name(into.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    debs = tmp / "debs"
    debs.mkdir(parents=True)
    hint = "apt-get needs Debian bookworm's sources (apt-get update)"
    what = f"fetching {', '.join(packages)} {LAVA_VERSION}"
    try:
        proc.run(
            [
                "apt-get",
                "download",
                "-q",
                *(f"{p}={LAVA_VERSION}" for p in packages),
            ],
            cwd=debs,
            error=LavaError,
            what=what,
        )
        for deb in sorted(debs.glob("*.deb")):
            proc.run(["dpkg-deb", "-x", deb, tmp], error=LavaError, what=what)
    except LavaError as e:
        raise LavaError(e.message, hint=hint) from e
    shutil.rmtree(debs)
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)


def lava_common_dir() -> Path:
    """Debian's lava-common, unpacked into the cache (on first use)."""
    root = cache_root() / "lava" / LAVA_VERSION / "lava-common"
    pkg = root / "usr" / "lib" / "python3" / "dist-packages"
    if not (pkg / "lava_common" / "schemas").is_dir():
        unpack_debs(("lava-common",), root)
    return pkg
