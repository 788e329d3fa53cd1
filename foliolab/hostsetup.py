"""Host packages: install on first use what the lab needs from Debian.

The kernel base is pinned to one Debian version of linux-source-6.12 so
every machine builds the same tree; bump BASE_VERSION (and rebase the
series) in one commit when the archive drops it.
"""

from __future__ import annotations

import logging
import os
import subprocess

from foliolab.errors import SetupError

log = logging.getLogger("foliolab")

BASE_PACKAGE = "linux-source-6.12"
BASE_VERSION = "6.12.117-1~deb12u1"

# Packages for building kernels and guest binaries, booting, and the tools
# copied into the guest image.
APT_PACKAGES = [
    f"{BASE_PACKAGE}={BASE_VERSION}",
    "build-essential", "bc", "bison", "flex", "libelf-dev", "libssl-dev",
    "cpio", "xz-utils", "kmod", "rsync", "ccache",
    "qemu-system-x86", "busybox-static", "xfsprogs", "stress-ng",
    "libnuma-dev", "libcap-dev",
]


def _package_name(spec: str) -> str:
    return spec.split("=", 1)[0]


def installed_version(package: str) -> str | None:
    cp = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}",
                         package], capture_output=True, text=True)
    if cp.returncode != 0:
        return None
    status, _, version = cp.stdout.partition("\t")
    return version if status.endswith(" installed") else None


def missing_packages(specs: list[str]) -> list[str]:
    missing = []
    for spec in specs:
        name, _, want = spec.partition("=")
        have = installed_version(name)
        if have is None or (want and have != want):
            missing.append(spec)
    return missing


def ensure_packages(specs: list[str] = APT_PACKAGES) -> None:
    """Install whatever of ``specs`` is missing; one-line error if we cannot."""
    missing = missing_packages(specs)
    if not missing:
        return
    names = " ".join(missing)
    if os.geteuid() != 0:
        raise SetupError(f"missing host packages: {names}",
                         hint=f"run as root or: sudo apt-get install {names}")
    log.info("Installing host packages: %s", names)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                  *missing]):
        cp = subprocess.run(argv, env=env, capture_output=True, text=True)
        if cp.returncode != 0:
            tail = (cp.stderr.strip().splitlines() or ["?"])[-1]
            raise SetupError(
                f"could not install host packages {names}: {tail}",
                hint="check the Debian mirror and that the pinned "
                     f"{BASE_PACKAGE}={BASE_VERSION} is still in it")
    still = missing_packages(specs)
    if still:
        raise SetupError(f"apt-get did not install {' '.join(still)}")
