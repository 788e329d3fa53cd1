"""The default executor: each boot under QEMU on this machine, in turn.

The kernel console goes to ``console.log``; the job's output and records go
to a separate virtio serial port (``results.txt``), so a kernel message can
never be parsed as a result. ``panic=-1`` plus ``-no-reboot`` make a panic
end QEMU at once, and a host-side timeout ends a hang. What QEMU
left is judged by boot/outcome.py, as every executor's boots are.

Every command that boots here (compare, attribute, run, test, check,
bisect, the KVM probe) boots through QemuExecutor's ``run``: the
measuring half's blocks, or one boot (boot/measure.py's ``boot_once``).
It is the registry's default, and its executor here (executors.HERE), so
no other module names it. Its boots take the machine's guests' lock
(locks.guests_here), as lava-local's lava-run does: one guest at a time
on this machine, whichever command runs it.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from collections.abc import Generator, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from foliolab import bootrecord, counting, locks, proc
from foliolab.errors import BootError, SetupError, UsageError
from foliolab.executors.base import (
    QEMU_HERE,
    BlockRequest,
    BootCapture,
    BootSpec,
    Detail,
    Ended,
    ExecutorRecord,
    Flag,
    NoOptions,
    Settled,
    check_numa,
)
from foliolab.kernel import image as image_mod


def qemu_argv(
    spec: BootSpec, initrd: Path, console: Path, results: Path
) -> list[str]:
    """The QEMU command line for ``spec`` (pure: no I/O). A counting boot
    writes the plugin's windows to counts.txt beside the console log."""
    a = spec.arch
    a.check_accel(spec.accel)
    if spec.counter:
        counting.check_accel(spec.accel)
    argv = [
        a.qemu_binary,
        *a.qemu_machine,
        "-nodefaults",
        "-nographic",
        "-no-reboot",
        "-monitor",
        "none",
    ]
    if spec.accel == "kvm":
        argv += ["-accel", "kvm", "-cpu", a.cpu_kvm]
    else:
        argv += ["-accel", "tcg,thread=multi", "-cpu", spec.cpu or a.cpu_tcg]
    # One socket per NUMA node: a node boundary inside a package makes the
    # scheduler's topology check WARN at boot. The same options serve
    # arm64's virt machine, which passes them on in its device tree.
    check_numa(spec)
    n = spec.numa_nodes
    argv += [
        "-smp",
        f"{spec.vcpus},sockets={n},cores={spec.vcpus // n},threads=1",
        "-m",
        f"{spec.memory_mb}M",
    ]
    if n > 1:
        per_cpu = spec.vcpus // n
        for i in range(n):
            first = i * per_cpu
            last = spec.vcpus - 1 if i == n - 1 else first + per_cpu - 1
            argv += [
                "-object",
                f"memory-backend-ram,id=m{i},size={spec.memory_mb // n}M",
                "-numa",
                f"node,nodeid={i},memdev=m{i},cpus={first}-{last}",
            ]
    # The first serial port (8250 on q35, PL011 on virt) is the console;
    # virtio-pci devices work on both machines' PCIe buses.
    argv += [
        "-chardev",
        f"file,id=con,path={console}",
        "-serial",
        "chardev:con",
        "-device",
        "virtio-serial-pci",
        "-chardev",
        f"file,id=res,path={results}",
        "-device",
        "virtserialport,chardev=res,name=foliolab.results",
    ]
    cmdline = [
        f"console={a.console}",
        "panic=-1",
        "oops=panic",
        "rdinit=/init",
        *a.boot_args,
        *spec.cmdline,
    ]
    if spec.console_results:
        cmdline.append(CONSOLE_RESULTS_ARG)
    if spec.counter:
        # System.map's addresses hold only without KASLR.
        argv += spec.counter.qemu_args(console.parent / "counts.txt")
        cmdline.append("nokaslr")
    argv += [
        "-kernel",
        str(spec.kernel),
        "-initrd",
        str(initrd),
        "-append",
        " ".join(cmdline),
    ]
    return argv


# Makes the guest init put its records on the console (see guest/init).
CONSOLE_RESULTS_ARG = "foliolab.console"


def qemu_version(binary: str) -> str:
    """QEMU's first line of --version, for the run's manifest."""
    if not shutil.which(binary):
        return "not installed"
    cp = proc.run([binary, "--version"], check=False)
    return cp.stdout.splitlines()[0] if cp.stdout else "?"


def check_cpu_model(spec: BootSpec) -> None:
    """A ``--cpu`` model QEMU does not know, or one given for KVM, is bad
    input."""
    if not spec.cpu:
        return
    if spec.accel == "kvm":
        raise UsageError(
            f"--cpu {spec.cpu} applies to TCG only; KVM guests "
            "use the host's CPU",
            hint="drop --cpu or use --accel tcg",
        )
    binary = spec.arch.qemu_binary
    if not shutil.which(binary):
        raise SetupError(
            f"{binary} is not installed: it runs the {spec.arch.name} guests",
            hint=f"run `foliolab setup --arch {spec.arch.name}`",
        )
    cp = proc.run(
        [binary, *spec.arch.qemu_machine, "-cpu", "help"],
        timeout=60,
        check=False,
        error=SetupError,
        what=f"listing the CPU models of {binary}",
    )
    known = set(cp.stdout.split())
    model = spec.cpu.split(",")[0]
    if model not in known:
        raise UsageError(
            f"{binary} has no CPU model {model!r}",
            hint=f"list them with `{binary} -cpu help`",
        )


def capture(
    spec: BootSpec,
    base_image: Path,
    job: str,
    rundir: Path,
    extra: list[Path] | None = None,
) -> BootCapture:
    """Boot once under QEMU, run ``job`` in the guest; what QEMU left
    (console, results port, times) as a capture for outcome.judge."""
    rundir.mkdir(parents=True, exist_ok=True)
    console = rundir / "console.log"
    results = rundir / "results.txt"
    for f in (console, results, rundir / "counts.txt"):
        f.unlink(missing_ok=True)
    initrd = rundir / "initrd.cpio"
    initrd.write_bytes(
        base_image.read_bytes() + image_mod.job_archive(job, extra, spec.arch)
    )
    argv = qemu_argv(spec, initrd, console, results)
    (rundir / "qemu.cmd").write_text(shlex.join(argv) + "\n")
    stderr_path = rundir / "qemu.stderr"
    try:
        # the machine's one guest at a time, whichever command boots it;
        # the host is read, and the timeout counts, once its turn came
        with locks.guests_here() as waited:
            host = bootrecord.host_state()
            done = proc.run_until(
                argv,
                output=stderr_path,
                timeout=spec.timeout,
                error=BootError,
            )
            during = bootrecord.host_during(host, waited)
    finally:
        initrd.unlink(missing_ok=True)
    raw = console.read_bytes() if console.exists() else b""
    ended = Ended.TIMEOUT if done.timed_out else Ended.EXITED
    if not done.timed_out and done.returncode != 0 and not raw:
        ended = Ended.QEMU_ERROR
    error = (
        stderr_path.read_text(errors="replace").strip().splitlines() or ["?"]
    )[-1][:160]
    port = (
        None
        if spec.console_results
        else results.read_text(errors="replace")
        if results.exists()
        else ""
    )
    return BootCapture(
        rundir,
        ended,
        raw,
        port,
        done.elapsed,
        done.cpu_s,
        during,
        error=error,
    )


class QemuExecutor:
    # QEMU here is also what a manifest without an executor ran (base.py)
    kind = QEMU_HERE
    summary = "QEMU here"
    chosen_by_flag = True
    rounds_per_block = 0
    flags: ClassVar[tuple[Flag, ...]] = ()  # the machine's options are every
    # booting command's (cli.py)
    results_port = True  # the records on a port of their own
    carries_files = True  # `run --add`'s files go in the boot's initrd

    @classmethod
    def options(cls, args: argparse.Namespace) -> NoOptions:
        return NoOptions()

    @classmethod
    def check(cls, opts: NoOptions, count: bool) -> None:
        """Nothing more to check than the machine (orchestrate.check)."""

    @classmethod
    def make(cls, opts: NoOptions, out: Path) -> QemuExecutor:
        return cls()

    @classmethod
    def record(cls, opts: NoOptions) -> ExecutorRecord:
        return ExecutorRecord(cls.kind)  # no details: QEMU here is the
        # default every report assumes

    @classmethod
    def read_details(cls, d: dict[str, Any]) -> dict[str, Detail]:
        return {}

    @classmethod
    def report_note(cls, rec: ExecutorRecord) -> str:
        return ""  # the report's emulator line names this machine's QEMU

    @classmethod
    def dry_run_note(cls, opts: NoOptions) -> str:
        return ""  # the dry run's QEMU lines are its boots

    @classmethod
    def settle(
        cls, want: str, spec: BootSpec, image: Path, count: bool
    ) -> Settled:
        """The accelerator (``want``: tcg or kvm, ``auto`` already
        chosen by the KVM probe, boot/accel.py) and the QEMU that will run
        the boots."""
        spec.arch.check_accel(want)
        return Settled(
            want,
            qemu_version(spec.arch.qemu_binary),
            replace(spec, accel=want),
        )

    @classmethod
    def check_machine(cls, spec: BootSpec) -> None:
        """The machine's options (``--cpu``) checked, before anything is
        built."""
        check_cpu_model(spec)

    @classmethod
    def boot_argv(cls, spec: BootSpec, rundir: Path) -> list[str]:
        """The command line a boot in ``rundir`` runs (a dry run's line)."""
        return qemu_argv(
            spec,
            rundir / "initrd.cpio",
            rundir / "console.log",
            rundir / "results.txt",
        )

    def run(
        self, image: Path, blocks: Iterable[BlockRequest]
    ) -> Generator[tuple[BlockRequest, list[BootCapture]], None, None]:
        for block in blocks:
            yield (
                block,
                [
                    capture(b.spec, image, b.job, b.rundir, list(b.extra))
                    for b in block.boots
                ],
            )
