"""One table of what differs per architecture: kernel, compiler, QEMU."""

from __future__ import annotations

from dataclasses import dataclass

from foliolab.errors import UsageError


@dataclass(frozen=True)
class Arch:
    name: str              # foliolab's name (--arch)
    linux_arch: str        # ARCH= for kbuild
    cross_compile: str     # CROSS_COMPILE= prefix, "" for native
    kernel_image: str      # path of the bootable image in the build dir
    make_target: str
    qemu_binary: str
    qemu_machine: list[str]
    console: str           # console= for the kernel command line
    cpu_tcg: str
    cpu_kvm: str


ARCHES = {
    "x86_64": Arch(
        name="x86_64", linux_arch="x86", cross_compile="",
        kernel_image="arch/x86/boot/bzImage", make_target="bzImage",
        qemu_binary="qemu-system-x86_64", qemu_machine=["-M", "q35"],
        console="ttyS0", cpu_tcg="max",
        # -arch-capabilities: nested KVM here aborts on MSR 0x10a otherwise.
        cpu_kvm="host,-arch-capabilities"),
}


def get_arch(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        raise UsageError(f"unknown --arch {name!r}",
                         hint=f"choose one of: {', '.join(ARCHES)}") from None
