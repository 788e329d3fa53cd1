"""Guest image: an initramfs (newc cpio) with busybox, our static binaries,
the guest scripts and the host tools a workload needs (with their shared
libraries). Each boot appends a small second archive holding that boot's
job script; the kernel unpacks concatenated archives in order.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import proc
from foliolab.arch import Arch
from foliolab.errors import ImageError
from foliolab.paths import GUEST_DIR, GUEST_TESTS_DIR, WORKLOADS_DIR, cache_root

log = logging.getLogger("foliolab")

BUSYBOX = Path("/bin/busybox")
# Host tools copied into the guest with their shared libraries.
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
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0,
            len(namez), 0))
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
    cp = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if cp.returncode != 0:      # static binary
        return []
    libs = []
    for line in cp.stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
    return libs


def build_guest_binaries(arch: Arch, src: Path) -> Path:
    """make -C SRC (workloads/ or tests/guest/) into the cache."""
    out = cache_root() / "guest-bin" / arch.name / src.name
    proc.run(["make", "-s", "-C", str(src), f"OUT={out}",
              f"CC={arch.cross_compile}gcc"],
             log_path=out.parent / f"{src.name}.log", error=ImageError,
             what=f"building guest binaries in {src.name}/")
    return out


def _executables(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return [f for f in sorted(directory.iterdir())
            if f.is_file() and os.access(f, os.X_OK)]


@dataclass
class Image:
    path: Path
    digest: str
    binaries: list[str] = field(default_factory=list)


def build_image(arch: Arch) -> Image:
    """Assemble the base initramfs; rewrite it only if its content changed.

    Workloads go to /foliolab/bin (on PATH), guest tests to
    /foliolab/tests, and the mm kselftests, when built, to
    /foliolab/kselftest with the shared libraries they need.
    """
    bindir = build_guest_binaries(arch, WORKLOADS_DIR)
    testdir = build_guest_binaries(arch, GUEST_TESTS_DIR)
    if not BUSYBOX.exists() or shared_libs(str(BUSYBOX)):
        raise ImageError(f"{BUSYBOX} is missing or not static",
                         hint="apt-get install busybox-static")
    c = Cpio()
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev",
              "tmp", "mnt", "etc", "foliolab/bin"):
        c.dir(d)
    c.file("bin/busybox", BUSYBOX.read_bytes(), 0o755)
    applets = subprocess.run([str(BUSYBOX), "--list-full"],
                             capture_output=True, text=True).stdout.split()
    for applet in applets:
        if applet != "bin/busybox":
            c.symlink(applet, "/bin/busybox")
    c.file("init", (GUEST_DIR / "init").read_bytes(), 0o755)
    c.file("foliolab/lib.sh", (GUEST_DIR / "lib.sh").read_bytes())
    for f in sorted((GUEST_DIR / "workloads").glob("*.sh")):
        c.file(f"foliolab/workloads/{f.name}", f.read_bytes())
    binaries = []
    for f in _executables(bindir):
        c.file(f"foliolab/bin/{f.name}", f.read_bytes(), 0o755)
        binaries.append(f.name)
    for f in _executables(testdir):
        c.file(f"foliolab/tests/{f.name}", f.read_bytes(), 0o755)
    for f in (GUEST_DIR / "suite").glob("*.sh"):
        c.file(f"foliolab/suite/{f.name}", f.read_bytes())
    kst = kselftest_dir(arch)
    dynamic = []
    for f in _executables(kst):
        c.file(f"foliolab/kselftest/{f.name}", f.read_bytes(), 0o755)
        dynamic.append(str(f))
    c.file("etc/passwd", b"root:x:0:0:root:/tmp:/bin/sh\n"
           b"nobody:x:65534:65534:nobody:/tmp:/bin/sh\n")
    c.file("etc/group", b"root:x:0:\nnobody:x:65534:\n")
    for tool in HOST_TOOLS:
        if not os.path.exists(tool):
            raise ImageError(f"host tool {tool} is missing",
                             hint="run `make setup`")
        c.file(tool, Path(os.path.realpath(tool)).read_bytes(), 0o755)
        dynamic.append(tool)
    for lib in sorted({lib for b in dynamic for lib in shared_libs(b)}):
        c.file(lib, Path(os.path.realpath(lib)).read_bytes(), 0o755)
    data = c.finish()
    digest = hashlib.sha256(data).hexdigest()[:12]
    path = cache_root() / "images" / f"{arch.name}-base.cpio"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or hashlib.sha256(
            path.read_bytes()).hexdigest()[:12] != digest:
        path.write_bytes(data)
    return Image(path, digest, binaries)


def kselftest_dir(arch: Arch) -> Path:
    """Where suite.build_kselftests() leaves the mm selftest binaries."""
    return cache_root() / "kselftest" / arch.name / "mm"


def job_archive(job: str, extra: list[Path] | None = None) -> bytes:
    """The per-boot archive: /foliolab/job.sh plus files added by the user."""
    c = Cpio()
    c.file("foliolab/job.sh", job.encode(), 0o755)
    for f in extra or []:
        if not f.is_file():
            raise ImageError(f"--add {f}: no such file")
        c.file(f"foliolab/bin/{f.name}", f.read_bytes(), 0o755)
    return c.finish()
