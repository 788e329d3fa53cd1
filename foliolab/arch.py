"""One table of what differs per architecture: kernel, compiler, QEMU, guest.

x86_64 is the host's own architecture: its guest userland (busybox, the
host tools, their libraries) is taken from the host. Any other guest
architecture is cross-built, and its userland comes from Debian's packages
for that architecture, unpacked into a sysroot in the cache (hostsetup.py),
because they cannot be installed next to the host's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from foliolab.errors import UsageError


@dataclass(frozen=True)
class Arch:
    name: str  # foliolab's name (--arch)
    linux_arch: str  # ARCH= for kbuild
    cross_compile: str  # CROSS_COMPILE= prefix, "" for native
    kernel_image: str  # path of the bootable image in the build dir
    make_target: str
    qemu_binary: str
    qemu_machine: list[str]
    console: str  # console= for the kernel command line
    cpu_tcg: str
    cpu_kvm: str  # "" when KVM is not offered for this guest
    debian_arch: str = "amd64"  # dpkg architecture of the guest
    multiarch: str = "x86_64-linux-gnu"  # Debian's library directory name
    elf_machine: int = 62  # e_machine of the guest's binaries (EM_X86_64)
    # Host packages this guest needs on top of hostsetup.APT_PACKAGES.
    host_packages: tuple[str, ...] = ()
    # Debian packages (of debian_arch) unpacked into the guest sysroot:
    # busybox, the tools copied into the image, the kselftests' libraries.
    # Empty for the host's own architecture, whose userland is the host's.
    guest_packages: tuple[str, ...] = ()
    # How much longer than an x86_64 guest this one takes for the same
    # work under TCG; the correctness suite scales its time limits by it.
    tcg_slowdown: float = 1.0
    # Kernel arguments every boot of this architecture gets.
    boot_args: tuple[str, ...] = ()

    @property
    def native(self) -> bool:
        return not self.cross_compile

    @property
    def cross_make_args(self) -> list[str]:
        """What a userland make (the selftests') is told for a guest of
        another architecture: lib.mk takes the compiler from
        CROSS_COMPILE, the mm Makefile its program list from ARCH."""
        if self.native:
            return []
        return [
            f"ARCH={self.linux_arch}",
            f"CROSS_COMPILE={self.cross_compile}",
        ]

    @property
    def guest_cc(self) -> str:
        """The C compiler for the static guest binaries."""
        return f"{self.cross_compile}gcc"

    @property
    def config_fragment(self) -> str:
        """configs/ fragment with this architecture's kernel options."""
        return f"arch-{self.name}.config"

    @property
    def kvm(self) -> bool:
        return bool(self.cpu_kvm)

    def check_accel(self, accel: str) -> None:
        """--accel kvm on a guest that only runs under TCG is bad input."""
        if accel == "kvm" and not self.kvm:
            raise UsageError(
                f"--accel kvm is not available for --arch "
                f"{self.name}: its guests run under TCG only",
                hint="use --accel tcg (or auto, which picks tcg)",
            )


ARCHES = {
    "x86_64": Arch(
        name="x86_64",
        linux_arch="x86",
        cross_compile="",
        kernel_image="arch/x86/boot/bzImage",
        make_target="bzImage",
        qemu_binary="qemu-system-x86_64",
        qemu_machine=["-M", "q35"],
        console="ttyS0",
        cpu_tcg="max",
        # -arch-capabilities: nested KVM here aborts on MSR 0x10a otherwise.
        cpu_kvm="host,-arch-capabilities",
        # Under TCG on a loaded host the IO-APIC timer check at boot can
        # see too few ticks and panic ("IO-APIC + timer doesn't work!"):
        # 3 of 8 boots at a load of 12-22 here. Skipping it changes
        # nothing after boot.
        boot_args=("no_timer_check",),
    ),
    "arm64": Arch(
        name="arm64",
        linux_arch="arm64",
        cross_compile="aarch64-linux-gnu-",
        kernel_image="arch/arm64/boot/Image",
        make_target="Image",
        qemu_binary="qemu-system-aarch64",
        # GICv3: GICv2 (virt's default) stops at 8 vCPUs. acpi=off: the
        # kernel boots from the device tree QEMU writes for -kernel, which
        # also carries the -numa layout (numa-node-id, distance-map).
        qemu_machine=["-M", "virt,gic-version=3,acpi=off"],
        console="ttyAMA0",
        cpu_tcg="max",
        # An arm64 guest on these x86 hosts: TCG only.
        cpu_kvm="",
        debian_arch="arm64",
        multiarch="aarch64-linux-gnu",
        elf_machine=183,  # EM_AARCH64
        host_packages=(
            "gcc-aarch64-linux-gnu",
            "libc6-dev-arm64-cross",
            "qemu-system-arm",
        ),
        guest_packages=(
            "busybox-static",
            "xfsprogs",
            "stress-ng",
            "libnuma-dev",
            # the mm CI's selftests (test --mm-ci): bash for
            # run_vmtests.sh, kmod for its modprobe, libcap for two tests,
            # procps' ps and pgrep and psmisc's killall for hugetlb's
            # cgroup script
            "bash",
            "kmod",
            "libcap-dev",
            "procps",
            "psmisc",
        ),
        # The vanilla debug suite's boot with the kselftests: 1410 s of
        # guest uptime here, about 660 s on x86_64 (a system call costs
        # about twice as much).
        tcg_slowdown=2.0,
    ),
}


def get_arch(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        raise UsageError(
            f"unknown --arch {name!r}",
            hint=f"choose one of: {', '.join(ARCHES)}",
        ) from None
