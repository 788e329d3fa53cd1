"""Guest image: an initramfs (newc cpio) with busybox, our static binaries,
the guest scripts and the host tools a workload needs (with their shared
libraries). Each boot appends a small second archive holding that boot's
job script; the kernel unpacks concatenated archives in order.

For the host's own architecture busybox and the tools are the host's; for
a cross-built guest they come from that architecture's Debian packages,
unpacked into a sysroot by hostsetup. Every ELF file put into an image is
checked to be for the guest's machine, so an x86 binary can never end up
in an arm64 guest.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import stat
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import hostsetup, proc, records
from foliolab.arch import Arch
from foliolab.errors import ImageError
from foliolab.kernel import source, symbols, upstream_selftests
from foliolab.paths import (
    GUEST_DIR,
    GUEST_TESTS_DIR,
    WORKLOADS_DIR,
    cache_root,
)
from foliolab.workloads import windows

log = logging.getLogger("foliolab")

# What glibc opens by name at run time, which no ELF file lists (ldd
# neither): pthread_cancel() needs libgcc_s (the mm selftest migration's
# private cases ended "libgcc_s.so.1 must be installed for pthread_cancel
# to work"). Put beside the libc the guest's programs use.
DLOPENED = ("libgcc_s.so.1",)
# Host tools copied into the guest with their shared libraries (for a
# cross guest: the same paths in its sysroot).
HOST_TOOLS = ["/usr/sbin/mkfs.xfs", "/usr/bin/stress-ng"]


class Cpio:
    """A minimal writer for the newc format the kernel's initramfs reads."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1
        self.names: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        name = name.lstrip("/")
        if name in self.names:
            return
        self.names.add(name)
        namez = name.encode() + b"\0"
        hdr = "070701" + "".join(
            f"{v:08x}"
            for v in (
                self.ino,
                mode,
                0,
                0,
                1,
                0,
                len(data),
                0,
                0,
                0,
                0,
                len(namez),
                0,
            )
        )
        self.ino += 1
        self.buf.write(hdr.encode() + namez)
        self._pad()
        self.buf.write(data)
        self._pad()

    def _pad(self) -> None:
        self.buf.write(b"\0" * (-self.buf.tell() % 4))

    def dir(self, name: str) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self._entry("/".join(parts[:i]), stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        self.buf.write(b"\0" * (-self.buf.tell() % 512))
        return self.buf.getvalue()


def shared_libs(binary: str) -> list[str]:
    """The shared libraries (and loader) ``binary`` needs, from ldd."""
    cp = proc.run(["ldd", binary], check=False)
    if cp.returncode != 0:  # static binary
        return []
    libs = []
    for line in cp.stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


@dataclass(frozen=True)
class ElfInfo:
    machine: int  # e_machine: 62 x86_64, 183 aarch64
    interp: str | None  # PT_INTERP: the dynamic loader
    needed: tuple[str, ...]  # DT_NEEDED sonames


def elf_info(data: bytes) -> ElfInfo | None:
    """Machine, loader and needed libraries of a 64-bit little-endian ELF
    file (both guest architectures); None if ``data`` is not one.

    Read here rather than with ldd, which cannot run a foreign binary.
    """
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4:6] != b"\2\1":
        return None  # not ELF, or not 64-bit little-endian
    (machine,) = struct.unpack_from("<H", data, 18)
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, interp, dyn = [], None, None
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize
        )
        if p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:  # PT_DYNAMIC
            dyn = (p_offset, p_filesz)
        elif p_type == 3:  # PT_INTERP
            interp = (
                data[p_offset : p_offset + p_filesz].rstrip(b"\0").decode()
            )
    needed_off, strtab = [], None
    if dyn:
        for off in range(dyn[0], dyn[0] + dyn[1], 16):
            tag, val = struct.unpack_from("<qQ", data, off)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                needed_off.append(val)
            elif tag == 5:  # DT_STRTAB (an address)
                strtab = next(
                    (
                        val - va + fo
                        for va, fo, sz in loads
                        if va <= val < va + sz
                    ),
                    None,
                )
    needed = []
    if strtab is not None:
        for off in needed_off:
            end = data.index(b"\0", strtab + off)
            needed.append(data[strtab + off : end].decode())
    return ElfInfo(machine, interp, tuple(needed))


MACHINE_NAMES = {62: "x86_64", 183: "arm64"}


def check_machine(data: bytes, arch: Arch, what: str) -> None:
    """ImageError if ``data`` is an ELF file for another machine."""
    info = elf_info(data)
    if info and info.machine != arch.elf_machine:
        name = MACHINE_NAMES.get(info.machine, f"machine {info.machine}")
        raise ImageError(
            f"{what} is an {name} binary, not for the {arch.name} guest",
            hint=f"build it for {arch.name} (e.g. {arch.guest_cc} -static)",
        )


def in_root(root: Path, guest_path: str) -> Path | None:
    """The file ``guest_path`` names inside ``root``, following symlinks
    as the guest would (absolute targets stay inside ``root``)."""
    p = root / guest_path.lstrip("/")
    for _ in range(40):
        if not p.is_symlink():
            return p if p.is_file() else None
        target = os.readlink(p)
        p = (
            root / target.lstrip("/")
            if target.startswith("/")
            else p.parent / target
        )
    return None


def cross_libs(
    binaries: list[Path], root: Path, arch: Arch
) -> dict[str, Path]:
    """{guest path: file in root} of the loaders and shared libraries that
    ``binaries`` need, transitively, looked up in ``root`` the way the
    guest's loader will (no ld.so.cache in the image: its default dirs).
    """
    dirs = [
        f"/lib/{arch.multiarch}",
        f"/usr/lib/{arch.multiarch}",
        "/lib",
        "/usr/lib",
    ]
    out: dict[str, Path] = {}
    todo = [(str(b), Path(b)) for b in binaries]
    while todo:
        name, path = todo.pop()
        info = elf_info(path.read_bytes())
        if info is None:
            continue
        wants = [(info.interp, [info.interp])] if info.interp else []
        wants += [(so, [f"{d}/{so}" for d in dirs]) for so in info.needed]
        for so, candidates in wants:
            for guest in candidates:
                if guest in out:
                    break
                host = in_root(root, guest)
                if host:
                    out[guest] = host
                    todo.append((guest, host))
                    break
            else:
                raise ImageError(
                    f"{name} needs {so}, which is not in the "
                    f"{arch.name} sysroot {root}",
                    hint=f"remove {root} to have it unpacked again",
                )
    return out


def guest_libraries(arch: Arch, binaries: list[str]) -> dict[str, Path]:
    """{guest path: file} of the loader and shared libraries
    ``binaries`` need (ldd on the host's own; read from the ELF files
    and the guest sysroot for another architecture, where ldd cannot
    run them), and DLOPENED beside their libc."""
    if arch.native:
        libs = {
            lib: Path(os.path.realpath(lib))
            for b in binaries
            for lib in shared_libs(b)
        }
        root = Path("/")
    else:
        root = guest_root(arch)
        libs = cross_libs([Path(b) for b in binaries], root, arch)
    libc_dirs = {
        str(Path(g).parent) for g in libs if Path(g).name.startswith("libc.")
    }
    for name in DLOPENED:
        found = [
            (f"{d}/{name}", f)
            for d in sorted(libc_dirs)
            if (f := in_root(root, f"{d}/{name}")) is not None
        ]
        if not found and not arch.native:
            raise ImageError(
                f"{name} (dlopen()ed by glibc) is not beside the "
                f"{arch.name} guest's libc in {root}",
                hint=f"remove {root} to have it unpacked again",
            )
        for guest_path, f in found:
            libs[guest_path] = Path(os.path.realpath(f))
    return libs


def guest_root(arch: Arch) -> Path:
    """Where busybox and the host tools for the guest come from."""
    return Path("/") if arch.native else hostsetup.guest_sysroot(arch)


def guest_tool(arch: Arch, tool: str) -> Path | None:
    """The file to copy to ``tool``'s path in the guest, if there is one.

    The sysroot is not usr-merged like the host: Debian's xfsprogs puts
    mkfs.xfs in /sbin, so /usr/sbin/mkfs.xfs is looked for there too.
    """
    if arch.native:
        return Path(os.path.realpath(tool)) if os.path.exists(tool) else None
    root = guest_root(arch)
    return in_root(root, tool) or (
        in_root(root, tool[len("/usr") :])
        if tool.startswith("/usr/")
        else None
    )


def build_guest_binaries(arch: Arch, src: Path) -> Path:
    """make -C SRC (foliolab/workloads/ or tests/guest/) into the cache,
    per arch.

    The guest tests build on the kselftest harness of the kernel tree
    (the base tree: the series does not touch tools/)."""
    # One output directory per checkout: two checkouts on one cache (a
    # worktree beside main, 2026-11-26) rebuilt each other's thptask, and
    # an image could take the other's binary made between make and put().
    out = (
        cache_root()
        / "guest-bin"
        / arch.name
        / f"{src.name}-{_checkout_tag(src)}"
    )
    tools = source.base_repo() / "tools"
    if src == GUEST_TESTS_DIR and not tools.is_dir():
        tools = source.prepare_base() / "tools"
    selftests = tools / "testing" / "selftests"
    # PYTHON: the workloads' Makefile generates fl_windows.h with it
    proc.run(
        [
            "make",
            "-s",
            "-C",
            str(src),
            f"OUT={out}",
            f"CC={arch.guest_cc}",
            f"SELFTESTS={selftests}",
            f"PYTHON={sys.executable}",
        ],
        log_path=out.parent / f"{src.name}.log",
        error=ImageError,
        what=f"building guest binaries in {src.name}/ for {arch.name}",
    )
    return out


def _checkout_tag(src: Path) -> str:
    return hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:8]


def workload_scripts() -> dict[str, Path]:
    """Each workload folder's guest script by its path in the guest,
    /foliolab/workloads/<script>.sh (the name job.sh sources)."""
    scripts = sorted(WORKLOADS_DIR.glob("*/*.sh"), key=lambda f: f.name)
    return {f"foliolab/workloads/{f.name}": f for f in scripts}


def _executables(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [
        f
        for f in sorted(directory.iterdir())
        if f.is_file() and os.access(f, os.X_OK)
    ]


@dataclass
class Image:
    path: Path
    digest: str
    binaries: list[str] = field(default_factory=list)


def build_image(arch: Arch, kselftests: Path | None = None) -> Image:
    """Assemble the base initramfs; rewrite it only if its content changed.

    Workloads go to /foliolab/bin (on PATH), guest tests to
    /foliolab/tests, and the mm kselftests, when built, to
    /foliolab/kselftest with the shared libraries they need (7.3's, when
    built, to /foliolab/upstream).
    """
    hostsetup.ensure_arch(arch)
    bindir = build_guest_binaries(arch, WORKLOADS_DIR)
    testdir = build_guest_binaries(arch, GUEST_TESTS_DIR)
    root = guest_root(arch)
    busybox = root / "bin" / "busybox"
    if not busybox.exists() or not _static(busybox, arch):
        raise ImageError(
            f"{busybox} is missing or not static",
            hint="apt-get install busybox-static"
            if arch.native
            else f"remove {root} to have it unpacked again",
        )
    c = Cpio()

    def put(name: str, src: Path, mode: int = 0o755) -> None:
        data = src.read_bytes()
        check_machine(data, arch, str(src))
        c.file(name, data, mode)

    for d in (
        "bin",
        "sbin",
        "usr/bin",
        "usr/sbin",
        "proc",
        "sys",
        "dev",
        "tmp",
        "mnt",
        "etc",
        "foliolab/bin",
    ):
        c.dir(d)
    put("bin/busybox", busybox)
    if arch.native:
        applets = proc.run(
            [busybox, "--list-full"], check=False
        ).stdout.split()
        for applet in applets:
            if applet != "bin/busybox":
                c.symlink(applet, "/bin/busybox")
    else:
        # The host cannot run this busybox to list its applets: /init makes
        # their links at boot (busybox --install -s) when /bin/mount is not
        # there yet. /bin/sh is needed before that, for /init itself.
        c.symlink("bin/sh", "/bin/busybox")
    c.file("init", (GUEST_DIR / "init").read_bytes(), 0o755)
    c.file("foliolab/lib.sh", (GUEST_DIR / "lib.sh").read_bytes())
    c.file("foliolab/ksyms", symbols.guest_table().encode())
    c.file("foliolab/frame.awk", (GUEST_DIR / "frame.awk").read_bytes())
    c.file("foliolab/windows.sh", windows.shell().encode())
    for guest, f in workload_scripts().items():
        c.file(guest, f.read_bytes())
    binaries = []
    for f in _executables(bindir):
        put(f"foliolab/bin/{f.name}", f)
        binaries.append(f.name)
    for f in _executables(testdir):
        put(f"foliolab/tests/{f.name}", f)
    for f in (GUEST_DIR / "suite").glob("*.sh"):
        c.file(f"foliolab/suite/{f.name}", f.read_bytes())
    dynamic: list[Path] = []
    for f in _executables(kselftests) if kselftests else ():
        put(f"foliolab/kselftest/{f.name}", f)
        dynamic.append(f)
    # upstream 7.3's mm selftests (upstream_selftests.py): static
    for f in _executables(upstream_selftests.bin_dir(arch)):
        put(f"foliolab/{upstream_selftests.GUEST_DIR}/{f.name}", f)
    c.file(
        "etc/passwd",
        b"root:x:0:0:root:/tmp:/bin/sh\n"
        b"nobody:x:65534:65534:nobody:/tmp:/bin/sh\n",
    )
    c.file("etc/group", b"root:x:0:\nnobody:x:65534:\n")
    for tool in HOST_TOOLS:
        src = guest_tool(arch, tool)
        if src is None and arch.native:
            raise ImageError(
                f"host tool {tool} is missing", hint="run `make setup`"
            )
        if src is None:
            raise ImageError(
                f"{tool} is missing from the sysroot {root}",
                hint=f"remove {root} to have it unpacked again",
            )
        put(tool, src)
        dynamic.append(Path(tool) if arch.native else src)
    for guest, src in sorted(
        guest_libraries(arch, [str(b) for b in dynamic]).items()
    ):
        put(guest, src)
    data = c.finish()
    digest = hashlib.sha256(data).hexdigest()[:12]
    return Image(_store_image(arch, data, digest), digest, binaries)


# An image no run has used for this long is removed when another is stored.
IMAGE_KEEP_S = 2 * 24 * 3600


def _store_image(arch: Arch, data: bytes, digest: str) -> Path:
    """The image's file, named by its content and never rewritten: every
    boot of a run reads the image again, and one file per arch rewritten
    by another command (a worktree's run beside main's, 2026-11-26) gave
    the run's later boots the other command's guest side."""
    images = cache_root() / "images"
    images.mkdir(parents=True, exist_ok=True)
    path = images / f"{arch.name}-base-{digest}.cpio"
    if path.exists():
        os.utime(path)  # in use: not old
    else:
        records.write_whole(path, data)
        now = path.stat().st_mtime
        for old in images.glob(f"{arch.name}-base*.cpio"):
            if now - old.stat().st_mtime > IMAGE_KEEP_S:
                old.unlink(missing_ok=True)
    return path


def _static(binary: Path, arch: Arch) -> bool:
    if arch.native:
        return not shared_libs(str(binary))
    info = elf_info(binary.read_bytes())
    return info is not None and not info.interp and not info.needed


def kselftest_dir(arch: Arch, commit: str) -> Path:
    """Where suite.build_kselftests() leaves the mm selftests of the tree
    at ``commit``: one directory per commit, because two suites of
    different kernels on one cache (6.12 and 7.3, 2026-11-26) shared one,
    and the 6.12 kernel booted 7.3's selftests, built in between."""
    return cache_root() / "kselftest" / arch.name / commit[:12] / "mm"


def job_archive(
    job: str, extra: list[Path] | None = None, arch: Arch | None = None
) -> bytes:
    """The per-boot archive: /foliolab/job.sh plus files added by the user
    (which must be for ``arch``'s machine, when given)."""
    c = Cpio()
    c.file("foliolab/job.sh", job.encode(), 0o755)
    for f in extra or []:
        if not f.is_file():
            raise ImageError(f"--add {f}: no such file")
        data = f.read_bytes()
        if arch:
            check_machine(data, arch, f"--add {f}")
        c.file(f"foliolab/bin/{f.name}", data, 0o755)
    return c.finish()
