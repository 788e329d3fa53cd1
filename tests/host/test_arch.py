"""The per-architecture table: what each guest is built and booted with."""

import pytest

from foliolab.arch import ARCHES, get_arch
from foliolab.errors import UsageError


def test_arm64_entry():
    a = get_arch("arm64")
    assert (a.linux_arch, a.cross_compile) == ("arm64", "aarch64-linux-gnu-")
    assert (a.kernel_image, a.make_target) == (
        "arch/arm64/boot/Image",
        "Image",
    )
    assert a.qemu_binary == "qemu-system-aarch64"
    assert a.qemu_machine[0] == "-M"
    assert a.qemu_machine[1].split(",")[0] == "virt"
    assert a.cpu_tcg == "max" and a.console == "ttyAMA0"
    assert not a.kvm and not a.native
    assert a.guest_cc == "aarch64-linux-gnu-gcc"
    assert a.elf_machine == 183 and a.multiarch == "aarch64-linux-gnu"
    assert a.config_fragment == "arch-arm64.config"
    assert {"gcc-aarch64-linux-gnu", "qemu-system-arm"} <= set(a.host_packages)
    assert "busybox-static" in a.guest_packages


def test_x86_64_entry_is_native_and_needs_nothing_more():
    a = get_arch("x86_64")
    assert a.native and a.kvm and a.guest_cc == "gcc"
    assert a.elf_machine == 62
    assert a.host_packages == () and a.guest_packages == ()


def test_unknown_arch_names_the_choices():
    with pytest.raises(UsageError) as e:
        get_arch("riscv64")
    assert e.value.one_line() == (
        "unknown --arch 'riscv64'; choose one of: x86_64, arm64"
    )


def test_check_accel():
    for accel in ("tcg", "auto"):
        ARCHES["arm64"].check_accel(accel)
    ARCHES["x86_64"].check_accel("kvm")
    with pytest.raises(UsageError, match="TCG only"):
        ARCHES["arm64"].check_accel("kvm")
