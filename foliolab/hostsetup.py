"""Host packages: install on first use what the lab needs from Debian.

The kernel base is pinned to one Debian version of linux-source-6.12 so
every machine builds the same tree; bump BASE_VERSION (and rebase the
series) in one commit when the archive drops it.

A cross-built guest (--arch arm64) needs more, and only its users pay for
it: the cross compiler and QEMU for that architecture, and the guest's own
userland (busybox, mkfs.xfs, stress-ng, libnuma and their libraries), which
cannot be installed next to the host's (busybox-static:arm64 replaces
busybox-static, and installing stress-ng's libraries for arm64 would
upgrade host packages). Those .debs are downloaded and unpacked into a
sysroot in the cache instead; dpkg only learns the foreign architecture.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from foliolab import proc
from foliolab.arch import Arch
from foliolab.errors import SetupError
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

BASE_PACKAGE = "linux-source-6.12"
BASE_VERSION = "6.12.117-1~deb12u1"

# Packages for building kernels and guest binaries, booting, and the tools
# copied into the guest image.
APT_PACKAGES = [
    f"{BASE_PACKAGE}={BASE_VERSION}",
    "build-essential",
    "bc",
    "bison",
    "flex",
    "libelf-dev",
    "libssl-dev",
    "cpio",
    "xz-utils",
    "kmod",
    "rsync",
    "ccache",
    "qemu-system-x86",
    "busybox-static",
    "xfsprogs",
    "stress-ng",
    "libnuma-dev",
    "libcap-dev",
    # test --mm-ci's host tests (tools/testing/radix-tree, vma: -lurcu)
    "liburcu-dev",
    # test --mm-ci's guest: ps, pgrep and killall for hugetlb's cgroup
    # script (suite/mmci/guest.py, TOOLS); kmod is above, bash everywhere
    "procps",
    "psmisc",
]

# What `foliolab setup` adds for the reports: the headless browser the
# report.html test opens the page in (tests/host/test_report_html.py).
REPORT_PACKAGES = ["chromium"]


def installed_version(package: str) -> str | None:
    cp = proc.run(
        ["dpkg-query", "-W", "-f", "${Status}\t${Version}", package],
        check=False,
    )
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
    """Install whatever of ``specs`` is missing; one-line error if we
    cannot."""
    missing = missing_packages(specs)
    if not missing:
        return
    names = " ".join(missing)
    if os.geteuid() != 0:
        raise SetupError(
            f"missing host packages: {names}",
            hint=f"run as root or: sudo apt-get install {names}",
        )
    log.info("Installing host packages: %s", names)
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    for argv in (
        ["apt-get", "update", "-qq"],
        [
            "apt-get",
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            *missing,
        ],
    ):
        cp = proc.run(argv, env=env, check=False)
        if cp.returncode != 0:
            tail = (cp.stderr.strip().splitlines() or ["?"])[-1]
            raise SetupError(
                f"could not install host packages {names}: {tail}",
                hint="check the Debian mirror and that the pinned "
                f"{BASE_PACKAGE}={BASE_VERSION} is still in it",
            )
    still = missing_packages(specs)
    if still:
        raise SetupError(f"apt-get did not install {' '.join(still)}")


def ensure_arch(arch: Arch) -> None:
    """Everything a guest of ``arch`` needs beyond the base packages.

    Nothing for the host's own architecture. Cheap when all is there, so
    every stage that needs it calls it (first use sets it up).
    """
    if arch.native:
        return
    ensure_packages(list(arch.host_packages))
    ensure_guest_sysroot(arch)


def guest_sysroot(arch: Arch) -> Path:
    """The unpacked Debian packages of a cross guest (see ensure_arch)."""
    return cache_root() / "sysroot" / arch.name


def ensure_foreign_arch(debian_arch: str) -> None:
    """dpkg --add-architecture, so apt can download that architecture."""
    cp = proc.run(["dpkg", "--print-foreign-architectures"], check=False)
    if debian_arch in cp.stdout.split():
        return
    if os.geteuid() != 0:
        raise SetupError(
            f"dpkg does not know the {debian_arch} architecture",
            hint=f"as root: dpkg --add-architecture {debian_arch}"
            " && apt-get update",
        )
    log.info("Adding the %s architecture to dpkg", debian_arch)
    proc.run(["dpkg", "--add-architecture", debian_arch], error=SetupError)
    proc.run(
        ["apt-get", "update", "-qq"], error=SetupError, what="apt-get update"
    )


_ALT = re.compile(r"^\s*([a-z0-9][a-z0-9+.-]*)(:[a-z0-9]+)?\s*(\(.*\))?\s*$")


# Dependencies of a Debian system, not of a program run in the guest:
# base-files (/etc/os-release and the like; bash depends on it, and it
# pre-depends on the virtual awk)
NOT_RUNTIME = ("base-files",)


def runtime_depends(field: str) -> list[str]:
    """Packages a Depends/Pre-Depends field needs at run time in the guest.

    The first alternative of each clause. Left out: ``:any`` dependencies
    (interpreters for the package's scripts, e.g. xfsprogs' python3:any)
    -dev packages (libnuma-dev's libc6-dev: the cross toolchain has its
    own libc headers) and NOT_RUNTIME. Versions are not checked: the
    sysroot takes each package's candidate version, one consistent set
    from one archive.
    """
    out = []
    for clause in field.split(","):
        first = clause.split("|")[0].strip()
        if not first:
            continue
        m = _ALT.match(first)
        if not m:
            raise SetupError(f"cannot read the dependency {first!r}")
        name, qual = m.group(1), m.group(2)
        if (
            qual == ":any"
            or name.endswith(("-dev", "-dev-bin"))
            or name in NOT_RUNTIME
        ):
            continue
        out.append(name)
    return out


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """apt-cache show output: one {field: value} per package stanza."""
    stanzas: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                stanzas.append(cur)
            cur, key = {}, None
        elif line[0] in " \t" and key:
            cur[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            cur[key] = value.strip()
    if cur:
        stanzas.append(cur)
    return stanzas


def _apt_show(names: list[str]) -> dict[str, dict[str, str]]:
    cp = proc.run(
        ["apt-cache", "show", "--no-all-versions", *names], check=False
    )
    return {
        s["Package"]: s for s in parse_stanzas(cp.stdout) if "Package" in s
    }


def package_closure(
    roots: list[str],
    debian_arch: str,
    show: Callable[[list[str]], dict[str, dict[str, str]]] = _apt_show,
) -> dict[str, str]:
    """``roots`` and their run-time dependencies: {name: apt name}.

    The apt name is ``name:ARCH``, or the bare name for an
    ``Architecture: all`` package (apt knows those only without a
    qualifier). ``show`` is apt-cache show (a stub in the unit tests).
    """
    found: dict[str, str] = {}
    todo = list(dict.fromkeys(roots))
    while todo:
        stanzas = show([f"{n}:{debian_arch}" for n in todo])
        missing = [n for n in todo if n not in stanzas]
        if missing:
            stanzas.update(
                {
                    n: s
                    for n, s in show(missing).items()
                    if s.get("Architecture") == "all"
                }
            )
        nxt = []
        for name in todo:
            s = stanzas.get(name)
            if s is None:
                raise SetupError(
                    f"no {debian_arch} package {name} in the "
                    "apt lists (virtual, or not in the archive)",
                    hint="apt-get update, or check the Debian mirror",
                )
            arch_all = s.get("Architecture") == "all"
            found[name] = name if arch_all else f"{name}:{debian_arch}"
            for field in ("Pre-Depends", "Depends"):
                nxt += runtime_depends(s.get(field, ""))
        todo = [n for n in dict.fromkeys(nxt) if n not in found]
    return found


# How a sysroot is laid out; it is unpacked again when this changes
# (2: absolute symlinks made relative)
SYSROOT_LAYOUT = 2


def sysroot_cflags(arch: Arch) -> str:
    """Compiler flags for a guest program of another architecture that
    links a library of the sysroot (libnuma, libcap): its headers after
    the cross compiler's own (-idirafter: they never shadow its libc's),
    its libraries, and where their own dependencies are. "" for the
    host's architecture."""
    if arch.native:
        return ""
    root = guest_sysroot(arch)
    usr_lib = root / "usr" / "lib" / arch.multiarch
    lib = root / "lib" / arch.multiarch
    return (
        f"-idirafter {root}/usr/include -L{usr_lib}"
        f" -Wl,-rpath-link,{usr_lib} -Wl,-rpath-link,{lib}"
    )


def sysroot_head(arch: Arch) -> str:
    """The first line of a sysroot's ``packages`` file: what it holds."""
    return f"roots: {' '.join(arch.guest_packages)} (layout {SYSROOT_LAYOUT})"


def relative_symlinks(root: Path) -> None:
    """Point each absolute symlink under ``root`` into ``root``: a
    package's /usr/lib/.../libcap.so -> /lib/.../libcap.so.2.66 names the
    host's file, where a cross linker given -L in the sysroot would look
    (and find nothing)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            link = Path(dirpath) / name
            if not link.is_symlink():
                continue
            target = os.readlink(link)
            if target.startswith("/"):
                # normpath: a "/.." cannot climb out of the root
                there = root / os.path.normpath(target).lstrip("/")
                link.unlink()
                link.symlink_to(os.path.relpath(there, link.parent))


def ensure_guest_sysroot(arch: Arch) -> Path:
    """Download and unpack ``arch.guest_packages`` with their dependencies.

    Done once: redone only when the package list changes or the sysroot
    is gone (remove it to pick up a Debian point release; its ``packages``
    file lists the .debs it holds).
    """
    root = guest_sysroot(arch)
    stamp = root / "packages"
    head = sysroot_head(arch)
    if stamp.exists() and stamp.read_text().splitlines()[:1] == [head]:
        return root
    ensure_foreign_arch(arch.debian_arch)
    closure = package_closure(list(arch.guest_packages), arch.debian_arch)
    log.info(
        "Unpacking %d %s packages into %s",
        len(closure),
        arch.debian_arch,
        root,
    )
    debs = root.parent / f"{arch.name}-debs"
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir(parents=True)
    proc.run(
        ["apt-get", "download", "-qq", *sorted(closure.values())],
        cwd=debs,
        error=SetupError,
        what=f"apt-get download of the {arch.name} guest packages",
    )
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    got = sorted(debs.glob("*.deb"))
    for deb in got:
        proc.run(
            ["dpkg-deb", "-x", deb, root],
            error=SetupError,
            what=f"dpkg-deb -x {deb.name}",
        )
    relative_symlinks(root)
    stamp.write_text(head + "\n" + "".join(f"{d.name}\n" for d in got))
    shutil.rmtree(debs, ignore_errors=True)
    return root
