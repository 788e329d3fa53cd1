import stat
from dataclasses import replace
from pathlib import Path

import pytest

from foliolab.arch import ARCHES, get_arch
from foliolab.errors import SetupError, UsageError
from foliolab.executors import qemu
from foliolab.executors.base import BootRequest
from foliolab.kernel import kconfig

X86 = ARCHES["x86_64"]


def spec(**kw):
    return qemu.BootSpec(X86, Path("/k/bzImage"), **kw)


def test_qemu_argv_tcg_default():
    argv = qemu.qemu_argv(spec(), Path("i"), Path("c"), Path("r"))
    assert argv[0] == "qemu-system-x86_64"
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert "-no-reboot" in argv
    append = argv[argv.index("-append") + 1]
    assert "panic=-1" in append and "console=ttyS0" in append
    assert "virtserialport,chardev=res,name=foliolab.results" in argv
    assert "-numa" not in argv


def test_qemu_argv_kvm_and_numa():
    argv = qemu.qemu_argv(
        spec(accel="kvm", vcpus=4, memory_mb=4096, numa_nodes=2),
        Path("i"),
        Path("c"),
        Path("r"),
    )
    assert argv[argv.index("-cpu") + 1] == "host,-arch-capabilities"
    nodes = [argv[i + 1] for i, a in enumerate(argv) if a == "-numa"]
    assert nodes == [
        "node,nodeid=0,memdev=m0,cpus=0-1",
        "node,nodeid=1,memdev=m1,cpus=2-3",
    ]
    assert "memory-backend-ram,id=m1,size=2048M" in argv


def test_qemu_argv_cpu_model():
    argv = qemu.qemu_argv(spec(), Path("i"), Path("c"), Path("r"))
    assert argv[argv.index("-cpu") + 1] == "max"
    argv = qemu.qemu_argv(
        spec(cpu="Skylake-Server"), Path("i"), Path("c"), Path("r")
    )
    assert argv[argv.index("-cpu") + 1] == "Skylake-Server"


def test_cpu_model_with_kvm_is_bad_input():
    with pytest.raises(UsageError, match="TCG only"):
        qemu.check_cpu_model(spec(accel="kvm", cpu="max"))


def test_cpu_model_checked_against_qemu(tmp_path):
    arch = fake_qemu(
        tmp_path,
        'printf "Available CPUs:\\n  a64fx\\n  max\\n  neoverse-n1\\n"\n',
    )

    def spec_(**kw):
        return qemu.BootSpec(arch, Path("/k/bzImage"), **kw)

    qemu.check_cpu_model(spec_(cpu="neoverse-n1"))
    qemu.check_cpu_model(spec_(cpu="max,sve=off"))
    with pytest.raises(UsageError, match="no CPU model 'cortex-z9'"):
        qemu.check_cpu_model(spec_(cpu="cortex-z9"))
    qemu.check_cpu_model(spec())  # no model given: nothing to check


def test_a_cpu_model_without_its_qemu_is_host_setup(tmp_path):
    arch = replace(get_arch("arm64"), qemu_binary=str(tmp_path / "nope"))
    with pytest.raises(SetupError, match="--arch arm64"):
        qemu.check_cpu_model(
            qemu.BootSpec(arch, Path("/k"), cpu="neoverse-n1")
        )


def test_qemu_argv_bad_numa():
    with pytest.raises(UsageError, match="NUMA"):
        qemu.qemu_argv(
            spec(vcpus=1, numa_nodes=2), Path("i"), Path("c"), Path("r")
        )


def test_unknown_arch():
    with pytest.raises(UsageError, match="unknown --arch 'sparc'"):
        get_arch("sparc")


ARM64 = ARCHES["arm64"]


def arm64_argv(**kw):
    return qemu.qemu_argv(
        qemu.BootSpec(ARM64, Path("/k/Image"), **kw),
        Path("i"),
        Path("c"),
        Path("r"),
    )


def test_arm64_argv_virt_tcg_max_pl011():
    argv = arm64_argv()
    assert argv[0] == "qemu-system-aarch64"
    machine = argv[argv.index("-M") + 1].split(",")
    assert machine[0] == "virt" and "gic-version=3" in machine
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert argv[argv.index("-cpu") + 1] == "max"
    assert not [a for a in argv if "kvm" in a]
    append = argv[argv.index("-append") + 1].split()
    assert "console=ttyAMA0" in append and "panic=-1" in append
    assert argv[argv.index("-kernel") + 1] == "/k/Image"
    assert "virtio-serial-pci" in argv
    assert "virtserialport,chardev=res,name=foliolab.results" in argv


def test_arm64_argv_numa_like_x86():
    kw = dict(vcpus=4, memory_mb=4096, numa_nodes=2)
    a64 = arm64_argv(**kw)
    x86 = qemu.qemu_argv(spec(**kw), Path("i"), Path("c"), Path("r"))

    def after(argv: list[str]) -> list[str]:
        return argv[argv.index("-smp") : argv.index("-chardev")]

    assert after(a64) == after(x86)
    assert "node,nodeid=1,memdev=m1,cpus=2-3" in a64


def test_arm64_with_kvm_is_a_usage_error():
    with pytest.raises(
        UsageError, match="--accel kvm is not available for --arch arm64"
    ):
        arm64_argv(accel="kvm")


def test_arm64_never_probes_kvm(tmp_path, tmp_cache):
    from foliolab.boot.accel import choose_accel, probe_kvm

    s = qemu.BootSpec(ARM64, tmp_path / "no-kernel")
    assert probe_kvm(s, tmp_path / "no-image") is False
    assert choose_accel("auto", s, tmp_path / "no-image") == "tcg"
    with pytest.raises(UsageError):
        choose_accel("kvm", s, tmp_path / "no-image")


def _qemu_devices(binary, machine, cpu):
    import shutil
    import subprocess

    if not shutil.which(binary):
        pytest.skip(f"{binary} is not installed")
    out = subprocess.run(
        [binary, *machine, "-cpu", cpu, "-device", "help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return {
        line.split('"')[1]
        for line in out.splitlines()
        if line.startswith("name ")
    }


@pytest.mark.parametrize("name", sorted(ARCHES))
def test_every_device_exists_in_that_arch_binary(name):
    """-device help only lists devices; nothing is booted."""
    a = ARCHES[name]
    argv = qemu.qemu_argv(
        qemu.BootSpec(a, Path("/k")), Path("i"), Path("c"), Path("r")
    )
    used = {
        argv[i + 1].split(",")[0] for i, x in enumerate(argv) if x == "-device"
    }
    assert used
    assert used <= _qemu_devices(a.qemu_binary, a.qemu_machine, a.cpu_tcg)


def fake_qemu(tmp_path, body: str):
    """An Arch whose QEMU is a shell script: exercises boot() without QEMU."""
    script = tmp_path / "fake-qemu"
    script.write_text(
        "#!/bin/sh\n"
        'for a; do case $prev in -chardev) eval "$(echo $a | '
        "sed -n 's/^file,id=\\(con\\|res\\),path=\\(.*\\)/"
        "\\1=\\2/p')\";; esac; prev=$a; done\n" + body
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return replace(X86, qemu_binary=str(script))


@pytest.fixture(autouse=True)
def private_cache(tmp_cache):
    """A fake QEMU's boot takes the machine's guests' lock in a cache of
    its own, so it never waits for the real guests of this machine."""
    return tmp_cache


def run_fake(tmp_path, body, timeout=10):
    arch = fake_qemu(tmp_path, body)
    img = tmp_path / "base.cpio"
    img.write_bytes(b"")
    s = qemu.BootSpec(arch, tmp_path / "k", timeout=timeout)
    from foliolab.boot.measure import boot_once

    return boot_once(
        qemu.QemuExecutor(),
        BootRequest("run", s, "true\n", tmp_path / "run"),
        img,
    )


def test_boot_ok(tmp_path):
    res = run_fake(
        tmp_path,
        'echo "[ 1.0] Linux" > $con\n'
        'printf "@@ boot 1.0\\nhi\\n@@ exit 3\\n" > $res\n',
    )
    assert res.status == "ok" and res.exit_code == 3 and res.clean
    assert res.records == ["@@ boot 1.0", "hi", "@@ exit 3"]
    assert not (tmp_path / "run" / "initrd.cpio").exists()
    assert (tmp_path / "run" / "qemu.cmd").exists()


def test_boot_panic_keeps_console(tmp_path):
    res = run_fake(tmp_path, 'echo "Kernel panic - not syncing: x" > $con\n')
    assert res.status == "panic" and not res.clean
    assert "Kernel panic" in res.console.read_text()


def test_boot_warning_is_not_clean(tmp_path):
    res = run_fake(
        tmp_path,
        'echo "WARNING: CPU: 0 at mm/x.c:1" > $con\necho "@@ exit 0" > $res\n',
    )
    assert res.status == "ok" and not res.clean
    assert res.issues[0].startswith("warning:")


def test_boot_hang_times_out(tmp_path):
    res = run_fake(tmp_path, "echo booting > $con\nsleep 30\n", timeout=1)
    assert res.status == "timeout" and not res.clean
    assert res.elapsed < 10


def test_boot_no_exit_record(tmp_path):
    res = run_fake(tmp_path, 'echo "[ 1.0] Linux" > $con\n')
    assert res.status == "no-exit"


def test_debug_cmdline():
    assert "panic_on_warn=1" in kconfig.debug_cmdline("debug")
    assert kconfig.debug_cmdline("perf") == ()
