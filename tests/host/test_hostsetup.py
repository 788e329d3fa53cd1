"""Host setup for cross guests: dependency closure and first-use install."""

import os

import pytest

from foliolab import hostsetup
from foliolab.arch import ARCHES
from foliolab.errors import SetupError


def test_a_debian_systems_own_files_are_not_a_guest_dependency():
    # bash depends on base-files, which pre-depends on the virtual awk
    assert hostsetup.runtime_depends(
        "base-files (>= 2.1.12), debianutils (>= 5.6-0.1)"
    ) == ["debianutils"]


def test_runtime_depends_first_alternative_no_any_no_dev():
    assert hostsetup.runtime_depends(
        "libnuma1 (= 2.0.16-1), libc6-dev | libc-dev, python3:any, "
        "libgbm1 (>= 8.1~0) | libfoo, libx:arm64"
    ) == ["libnuma1", "libgbm1", "libx"]
    assert hostsetup.runtime_depends("") == []


def test_parse_stanzas():
    text = (
        "Package: a\nVersion: 1\nDepends: b,\n c\n\n"
        "Package: b\nArchitecture: all\n"
    )
    assert hostsetup.parse_stanzas(text) == [
        {"Package": "a", "Version": "1", "Depends": "b,\nc"},
        {"Package": "b", "Architecture": "all"},
    ]


def fake_archive(packages):
    """apt-cache show: name:arm64 finds arch packages, a bare name the
    Architecture: all ones, like apt does for a foreign architecture."""
    asked = []

    def show(names):
        asked.append(list(names))
        out = {}
        for n in names:
            name, _, arch = n.partition(":")
            s = packages.get(name)
            if s and (arch == "arm64") == (s.get("Architecture") != "all"):
                out[name] = dict(s, Package=name)
        return out

    return show, asked


def test_package_closure_follows_depends_once():
    show, asked = fake_archive(
        {
            "stress-ng": {
                "Architecture": "arm64",
                "Depends": "libc6 (>= 2.36), libx11-6",
            },
            "libx11-6": {
                "Architecture": "arm64",
                "Depends": "libc6, libx11-data",
            },
            "libx11-data": {"Architecture": "all"},
            "libc6": {
                "Architecture": "arm64",
                "Pre-Depends": "libgcc-s1",
                "Depends": "libc6",
            },
            "libgcc-s1": {"Architecture": "arm64"},
            "busybox-static": {"Architecture": "arm64"},
        }
    )
    got = hostsetup.package_closure(
        ["busybox-static", "stress-ng"], "arm64", show
    )
    assert got == {
        "busybox-static": "busybox-static:arm64",
        "stress-ng": "stress-ng:arm64",
        "libc6": "libc6:arm64",
        "libx11-6": "libx11-6:arm64",
        "libgcc-s1": "libgcc-s1:arm64",
        "libx11-data": "libx11-data",
    }
    flat = [n for batch in asked for n in batch]
    assert flat.count("libc6:arm64") == 1


def test_package_closure_names_what_it_cannot_find():
    show, _ = fake_archive(
        {"a": {"Architecture": "arm64", "Depends": "virtual-thing"}}
    )
    with pytest.raises(SetupError, match="no arm64 package virtual-thing"):
        hostsetup.package_closure(["a"], "arm64", show)


def test_x86_users_pay_nothing(monkeypatch):
    monkeypatch.setattr(
        hostsetup,
        "ensure_packages",
        lambda *a: pytest.fail("installed packages"),
    )
    monkeypatch.setattr(
        hostsetup,
        "ensure_guest_sysroot",
        lambda *a: pytest.fail("made a sysroot"),
    )
    hostsetup.ensure_arch(ARCHES["x86_64"])
    assert not [
        p for p in hostsetup.APT_PACKAGES if "aarch64" in p or "arm" in p
    ]


def test_arm64_first_use_installs_its_packages(monkeypatch):
    done = []
    monkeypatch.setattr(
        hostsetup, "ensure_packages", lambda specs: done.append(("apt", specs))
    )
    monkeypatch.setattr(
        hostsetup,
        "ensure_guest_sysroot",
        lambda arch: done.append(("sysroot", arch.name)),
    )
    hostsetup.ensure_arch(ARCHES["arm64"])
    assert done == [
        (
            "apt",
            [
                "gcc-aarch64-linux-gnu",
                "libc6-dev-arm64-cross",
                "qemu-system-arm",
            ],
        ),
        ("sysroot", "arm64"),
    ]


def test_sysroot_is_not_redone_when_present(tmp_cache, monkeypatch):
    a64 = ARCHES["arm64"]
    root = hostsetup.guest_sysroot(a64)
    assert root == tmp_cache / "sysroot" / "arm64"
    root.mkdir(parents=True)
    (root / "packages").write_text(
        hostsetup.sysroot_head(a64) + "\nbusybox.deb\n"
    )
    monkeypatch.setattr(
        hostsetup, "ensure_foreign_arch", lambda *a: pytest.fail("touched apt")
    )
    assert hostsetup.ensure_guest_sysroot(a64) == root


def test_a_sysroot_of_an_earlier_layout_is_unpacked_again(
    tmp_cache, monkeypatch
):
    a64 = ARCHES["arm64"]
    root = hostsetup.guest_sysroot(a64)
    root.mkdir(parents=True)
    (root / "packages").write_text(
        "roots: " + " ".join(a64.guest_packages) + "\nbusybox.deb\n"
    )

    class Redone(Exception):
        pass

    def foreign(*a):
        raise Redone

    monkeypatch.setattr(hostsetup, "ensure_foreign_arch", foreign)
    with pytest.raises(Redone):
        hostsetup.ensure_guest_sysroot(a64)


def test_absolute_symlinks_are_pointed_into_the_sysroot(tmp_path):
    # libcap-dev's /usr/lib/<triplet>/libcap.so -> /lib/<triplet>/libcap.so.2
    # would name the host's file for a cross linker given -L in the sysroot
    lib = tmp_path / "lib" / "aarch64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libcap.so.2.66").write_bytes(b"ELF")
    dev = tmp_path / "usr" / "lib" / "aarch64-linux-gnu"
    dev.mkdir(parents=True)
    (dev / "libcap.so").symlink_to("/lib/aarch64-linux-gnu/libcap.so.2.66")
    (lib / "libcap.so.2").symlink_to("libcap.so.2.66")  # relative: kept
    hostsetup.relative_symlinks(tmp_path)
    assert (dev / "libcap.so").read_bytes() == b"ELF"
    assert not os.readlink(dev / "libcap.so").startswith("/")
    assert os.readlink(lib / "libcap.so.2") == "libcap.so.2.66"
    # a link to a directory, and one whose target climbs with ".."
    (tmp_path / "lib64").symlink_to("/lib/aarch64-linux-gnu")
    (dev / "up").symlink_to("/../../lib/aarch64-linux-gnu/libcap.so.2.66")
    hostsetup.relative_symlinks(tmp_path)
    assert (tmp_path / "lib64").resolve() == lib.resolve()
    assert (dev / "up").resolve() == (lib / "libcap.so.2.66").resolve()
