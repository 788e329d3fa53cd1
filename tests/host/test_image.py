import os
import struct
import subprocess
from pathlib import Path

import pytest

from foliolab.arch import ARCHES
from foliolab.errors import ImageError
from foliolab.kernel import image


def test_cpio_is_readable_by_cpio(tmp_path):
    c = image.Cpio()
    c.file("foliolab/bin/tool", b"#!/bin/sh\n", 0o755)
    c.symlink("bin/sh", "/bin/busybox")
    c.file("foliolab/bin/tool", b"duplicate ignored")
    data = c.finish()
    assert len(data) % 512 == 0
    cp = subprocess.run(
        ["cpio", "-t", "--quiet"], input=data, capture_output=True
    )
    assert cp.returncode == 0
    names = cp.stdout.decode().split()
    assert names == [
        "foliolab",
        "foliolab/bin",
        "foliolab/bin/tool",
        "bin",
        "bin/sh",
    ]
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], input=data, cwd=out, check=True)
    assert (out / "foliolab/bin/tool").read_bytes() == b"#!/bin/sh\n"
    assert (out / "bin/sh").is_symlink()


def test_job_archive_holds_job_and_added_files(tmp_path):
    extra = tmp_path / "mytool"
    extra.write_bytes(b"\x7fELF")
    data = image.job_archive("echo hi\n", [extra])
    names = (
        subprocess.run(
            ["cpio", "-t", "--quiet"], input=data, capture_output=True
        )
        .stdout.decode()
        .split()
    )
    assert "foliolab/job.sh" in names and "foliolab/bin/mytool" in names


def test_shared_libs_of_a_dynamic_tool():
    libs = image.shared_libs("/bin/ls")
    assert any("libc.so" in lib for lib in libs)
    assert any("ld-linux" in lib for lib in libs)


# --- ELF reading and the per-architecture checks -------------------------


def make_elf(
    machine: int, interp: str | None = None, needed: tuple[str, ...] = ()
) -> bytes:
    """A minimal 64-bit little-endian ELF file: header, program headers
    (PT_LOAD of the whole file, PT_INTERP, PT_DYNAMIC), strings, dynamic."""
    base = 0x400000
    nph = 1 + bool(interp) + bool(needed)
    phoff = 64
    strings_off = phoff + nph * 56
    strtab = b"\0"
    interp_off = None
    if interp:
        interp_off = strings_off + len(strtab)
        strtab += interp.encode() + b"\0"
    name_offs = []
    dynstr_off = strings_off + len(strtab)
    dynstr = b"\0"
    for so in needed:
        name_offs.append(len(dynstr))
        dynstr += so.encode() + b"\0"
    blob = strtab + dynstr
    dyn_off = strings_off + len(blob)
    dyn_off += -dyn_off % 8
    dyn = b"".join(struct.pack("<qQ", 1, o) for o in name_offs)
    dyn += struct.pack("<qQ", 5, base + dynstr_off) + struct.pack("<qQ", 0, 0)
    size = dyn_off + len(dyn)
    hdr = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    hdr += struct.pack(
        "<HHIQQQIHHHHHH",
        2,
        machine,
        1,
        base,
        phoff,
        0,
        0,
        64,
        56,
        nph,
        64,
        0,
        0,
    )
    ph = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    if interp:
        ph += struct.pack(
            "<IIQQQQQQ",
            3,
            4,
            interp_off,
            base + interp_off,
            base + interp_off,
            len(interp) + 1,
            len(interp) + 1,
            1,
        )
    if needed:
        ph += struct.pack(
            "<IIQQQQQQ",
            2,
            6,
            dyn_off,
            base + dyn_off,
            base + dyn_off,
            len(dyn),
            len(dyn),
            8,
        )
    out = hdr + ph + blob
    return out + bytes(dyn_off - len(out)) + (dyn if needed else b"")


def test_elf_info_of_a_host_binary():
    info = image.elf_info(Path("/bin/ls").read_bytes())
    assert info.machine == 62
    assert info.interp and "ld-linux-x86-64" in info.interp
    assert "libc.so.6" in info.needed


def test_elf_info_of_a_synthetic_arm64_binary():
    info = image.elf_info(
        make_elf(
            183, "/lib/ld-linux-aarch64.so.1", ("libnuma.so.1", "libc.so.6")
        )
    )
    assert info == image.ElfInfo(
        183, "/lib/ld-linux-aarch64.so.1", ("libnuma.so.1", "libc.so.6")
    )
    assert image.elf_info(make_elf(183)) == image.ElfInfo(183, None, ())
    assert image.elf_info(b"#!/bin/sh\n") is None


def test_an_x86_binary_never_goes_into_an_arm64_image(tmp_path):
    x86 = Path("/bin/ls").read_bytes()
    image.check_machine(x86, ARCHES["x86_64"], "ls")
    with pytest.raises(
        ImageError, match="ls is an x86_64 binary, not for the arm64 guest"
    ):
        image.check_machine(x86, ARCHES["arm64"], "ls")
    image.check_machine(make_elf(183), ARCHES["arm64"], "a64")
    image.check_machine(b"#!/bin/sh\n", ARCHES["arm64"], "script")
    tool = tmp_path / "mytool"
    tool.write_bytes(x86)
    with pytest.raises(ImageError, match="--add .*mytool is an x86_64"):
        image.job_archive("mytool\n", [tool], ARCHES["arm64"])
    assert image.job_archive("mytool\n", [tool], ARCHES["x86_64"])


def test_cross_libs_resolve_in_the_sysroot(tmp_path):
    root = tmp_path / "sysroot"
    libdir = root / "lib/aarch64-linux-gnu"
    libdir.mkdir(parents=True)
    usrlib = root / "usr/lib/aarch64-linux-gnu"
    usrlib.mkdir(parents=True)
    (libdir / "ld-linux-aarch64.so.1").write_bytes(make_elf(183))
    (root / "lib/ld-linux-aarch64.so.1").symlink_to(
        "aarch64-linux-gnu/ld-linux-aarch64.so.1"
    )
    (libdir / "libc.so.6").write_bytes(make_elf(183))
    (usrlib / "libnuma.so.1.0.0").write_bytes(
        make_elf(183, None, ("libc.so.6",))
    )
    (usrlib / "libnuma.so.1").symlink_to("libnuma.so.1.0.0")
    binary = tmp_path / "ksm_tests"
    binary.write_bytes(
        make_elf(
            183, "/lib/ld-linux-aarch64.so.1", ("libnuma.so.1", "libc.so.6")
        )
    )
    libs = image.cross_libs([binary], root, ARCHES["arm64"])
    assert libs == {
        "/lib/ld-linux-aarch64.so.1": libdir / "ld-linux-aarch64.so.1",
        "/lib/aarch64-linux-gnu/libc.so.6": libdir / "libc.so.6",
        "/usr/lib/aarch64-linux-gnu/libnuma.so.1": usrlib / "libnuma.so.1.0.0",
    }
    binary.write_bytes(make_elf(183, None, ("libmissing.so.2",)))
    with pytest.raises(ImageError, match="needs libmissing.so.2"):
        image.cross_libs([binary], root, ARCHES["arm64"])


def test_the_library_glibc_opens_by_name_goes_beside_libc(
    tmp_path, monkeypatch
):
    # pthread_cancel() dlopen()s libgcc_s: no ELF file names it, so a
    # guest built from DT_NEEDED alone lacked it (the mm selftest
    # migration's private cases aborted, in the suite and the mm CI's)
    native = image.guest_libraries(ARCHES["x86_64"], ["/bin/true"])
    libc = next(g for g in native if Path(g).name == "libc.so.6")
    assert str(Path(libc).parent / "libgcc_s.so.1") in native
    root = tmp_path / "sysroot"
    libdir = root / "lib/aarch64-linux-gnu"
    libdir.mkdir(parents=True)
    (root / "lib/ld-linux-aarch64.so.1").write_bytes(make_elf(183))
    (libdir / "libc.so.6").write_bytes(make_elf(183))
    (libdir / "libgcc_s.so.1").write_bytes(make_elf(183))
    binary = tmp_path / "migration"
    binary.write_bytes(
        make_elf(183, "/lib/ld-linux-aarch64.so.1", ("libc.so.6",))
    )
    monkeypatch.setattr(image, "guest_root", lambda arch: root)
    cross = image.guest_libraries(ARCHES["arm64"], [str(binary)])
    assert cross["/lib/aarch64-linux-gnu/libgcc_s.so.1"] == libdir / (
        "libgcc_s.so.1"
    )
    (libdir / "libgcc_s.so.1").unlink()
    with pytest.raises(ImageError, match="libgcc_s.so.1"):
        image.guest_libraries(ARCHES["arm64"], [str(binary)])


def test_in_root_keeps_absolute_symlinks_inside(tmp_path):
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin/mkfs.xfs").write_bytes(b"x")
    (tmp_path / "usr/sbin").mkdir(parents=True)
    (tmp_path / "usr/sbin/mkfs").symlink_to("/sbin/mkfs.xfs")
    assert (
        image.in_root(tmp_path, "/usr/sbin/mkfs") == tmp_path / "sbin/mkfs.xfs"
    )
    assert image.in_root(tmp_path, "/nope") is None


def test_cross_guest_tools_come_from_the_sysroot(tmp_cache):
    from foliolab import hostsetup

    a64 = ARCHES["arm64"]
    root = hostsetup.guest_sysroot(a64)
    (root / "sbin").mkdir(parents=True)
    (root / "sbin/mkfs.xfs").write_bytes(make_elf(183))
    assert image.guest_root(a64) == root
    # Debian's xfsprogs is not usr-merged: /usr/sbin/mkfs.xfs is /sbin's.
    assert (
        image.guest_tool(a64, "/usr/sbin/mkfs.xfs") == root / "sbin/mkfs.xfs"
    )
    assert image.guest_tool(a64, "/usr/bin/stress-ng") is None
    assert image.guest_root(ARCHES["x86_64"]) == Path("/")


def test_guest_binaries_are_built_per_arch_with_its_compiler(
    tmp_cache, monkeypatch
):
    calls = []
    monkeypatch.setattr(
        image.proc, "run", lambda argv, **kw: calls.append(argv)
    )
    out = image.build_guest_binaries(ARCHES["arm64"], Path("/src/workloads"))
    assert out.parent == tmp_cache / "guest-bin" / "arm64"
    assert out.name.startswith("workloads-")
    assert "CC=aarch64-linux-gnu-gcc" in calls[0]
    out = image.build_guest_binaries(ARCHES["x86_64"], Path("/src/workloads"))
    assert out.parent == tmp_cache / "guest-bin" / "x86_64"
    assert "CC=gcc" in calls[1]
    # another checkout's programs are built apart
    other = image.build_guest_binaries(
        ARCHES["x86_64"], Path("/other/workloads")
    )
    assert other.parent == out.parent and other != out


def test_an_image_is_never_rewritten_under_a_run_that_boots_it(
    tmp_cache, monkeypatch
):
    """Each boot reads the image again: a second command storing another
    image must leave the first one's file as it was."""
    first = image._store_image(ARCHES["x86_64"], b"guest one", "1" * 12)
    second = image._store_image(ARCHES["x86_64"], b"guest two", "2" * 12)
    assert first != second
    assert first.read_bytes() == b"guest one"
    assert (
        image._store_image(ARCHES["x86_64"], b"guest one", "1" * 12) == first
    )
    # one no run has used for IMAGE_KEEP_S goes when another is stored
    os.utime(first, (1, 1))
    image._store_image(ARCHES["x86_64"], b"guest three", "3" * 12)
    assert not first.exists() and second.exists()
