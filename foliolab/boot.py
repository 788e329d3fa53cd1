"""Boot a kernel in QEMU and collect what the guest reports.

The kernel console goes to ``console.log``; the job's output and records go
to a separate virtio serial port (``results.txt``), so a kernel message can
never be parsed as a result. ``panic=-1`` plus ``-no-reboot`` make a panic
end QEMU at once, and a host-side timeout ends a hang. The console is then
scanned for panics, oopses, WARNs, BUGs and "Bad page" reports.
"""

from __future__ import annotations

import logging
import re
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from foliolab import bootrecord, parse
from foliolab import image as image_mod
from foliolab.arch import Arch
from foliolab.bootrecord import BootResult, BootStatus  # noqa: F401
from foliolab import counting, kconfig
from foliolab.counting import Counter
from foliolab.errors import BootError, UsageError
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")

# Console lines that make a boot a failure, with the name we report.
KERNEL_ISSUES = [
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("oops", re.compile(r"\bOops: |general protection fault|"
                        r"BUG: unable to handle")),
    ("bug", re.compile(r"\bBUG: |kernel BUG at ")),
    ("warning", re.compile(r"\bWARNING: ")),
    ("bad-page", re.compile(r"\bBad page (state|map)\b")),
    ("stall", re.compile(r"rcu: INFO: .*stall|soft lockup|hung_task")),
    # The kernel noticing corrupted swap counts or an endless fault loop.
    ("swap-corruption", re.compile(r"Bad swap (file|offset) entry|"
                                   r"Unused swap (file|offset) entry|"
                                   r"swap_dup: Bad swap")),
    ("fault-loop", re.compile(r"VM_FAULT_OOM leaked out")),
]


@dataclass(frozen=True)
class BootSpec:
    """How to boot: machine shape and kernel arguments."""

    arch: Arch
    kernel: Path
    accel: str = "tcg"             # "tcg" or "kvm"
    vcpus: int = 2
    memory_mb: int = 3072
    numa_nodes: int = 1
    timeout: float = 300.0
    cmdline: tuple[str, ...] = ()
    cpu: str = ""                  # TCG CPU model; "" = the arch's default
    counter: Counter | None = None  # count with the plugin (TCG only)
    # The records on the console, framed, as on a board or in a LAVA job
    # (guest/frame.awk), instead of on the results port.
    console_results: bool = False


@dataclass(frozen=True)
class BootRequest:
    """One boot the measuring half asks an executor for."""

    boot_id: str                   # WORKLOAD/NAME: its directory under raw/
    spec: BootSpec
    job: str                       # the guest's job script
    rundir: Path


@dataclass(frozen=True)
class BlockRequest:
    """Boots an executor runs together, in this order: one boot under
    QEMU here, or a workload's interleaved rounds as one LAVA job (so a
    lab that runs jobs anywhere, in any order, keeps the pairing)."""

    name: str                      # e.g. pageout-0
    workload: str
    boots: tuple[BootRequest, ...]


def check_numa(spec: BootSpec) -> None:
    """The machine's vCPUs and memory must split evenly into its nodes."""
    n = spec.numa_nodes
    if n > 1 and (spec.vcpus % n or spec.memory_mb % n):
        raise BootError(f"cannot split {spec.vcpus} vCPUs and "
                        f"{spec.memory_mb} MiB into {n} NUMA nodes",
                        hint="use vCPU and memory counts divisible by the "
                             "node count")


def qemu_argv(spec: BootSpec, initrd: Path, console: Path,
              results: Path) -> list[str]:
    """The QEMU command line for ``spec`` (pure: no I/O). A counting boot
    writes the plugin's windows to counts.txt beside the console log."""
    a = spec.arch
    a.check_accel(spec.accel)
    if spec.counter:
        counting.check_accel(spec.accel)
    argv = [a.qemu_binary, *a.qemu_machine, "-nodefaults", "-nographic",
            "-no-reboot", "-monitor", "none"]
    if spec.accel == "kvm":
        argv += ["-accel", "kvm", "-cpu", a.cpu_kvm]
    else:
        argv += ["-accel", "tcg,thread=multi", "-cpu", spec.cpu or a.cpu_tcg]
    # One socket per NUMA node: a node boundary inside a package makes the
    # scheduler's topology check WARN at boot. The same options serve
    # arm64's virt machine, which passes them on in its device tree.
    check_numa(spec)
    n = spec.numa_nodes
    argv += ["-smp", f"{spec.vcpus},sockets={n},cores={spec.vcpus // n},"
                     "threads=1", "-m", f"{spec.memory_mb}M"]
    if n > 1:
        per_cpu = spec.vcpus // n
        for i in range(n):
            first = i * per_cpu
            last = spec.vcpus - 1 if i == n - 1 else first + per_cpu - 1
            argv += ["-object", f"memory-backend-ram,id=m{i},"
                                f"size={spec.memory_mb // n}M",
                     "-numa", f"node,nodeid={i},memdev=m{i},"
                              f"cpus={first}-{last}"]
    # The first serial port (8250 on q35, PL011 on virt) is the console;
    # virtio-pci devices work on both machines' PCIe buses.
    argv += ["-chardev", f"file,id=con,path={console}",
             "-serial", "chardev:con",
             "-device", "virtio-serial-pci",
             "-chardev", f"file,id=res,path={results}",
             "-device", "virtserialport,chardev=res,name=foliolab.results"]
    cmdline = [f"console={a.console}", "panic=-1", "oops=panic",
               "rdinit=/init", *spec.cmdline]
    if spec.console_results:
        cmdline.append(CONSOLE_RESULTS_ARG)
    if spec.counter:
        # System.map's addresses hold only without KASLR.
        argv += spec.counter.qemu_args(console.parent / "counts.txt")
        cmdline.append("nokaslr")
    argv += ["-kernel", str(spec.kernel), "-initrd", str(initrd),
             "-append", " ".join(cmdline)]
    return argv


# Makes the guest init put its records on the console (see guest/init).
CONSOLE_RESULTS_ARG = "foliolab.console"


def records_from_console(console: bytes) -> tuple[str, str, list[str]]:
    """A console that carried the records: (the records as the results
    port would have had them, the kernel's own text to scan for issues,
    what was lost on the way)."""
    stream = parse.console_records(console)
    records = "".join(line + "\n" for line in stream.lines)
    return records, stream.kernel_text, stream.problems()


def status_of(issues: list[str], exit_code: int | None, lost: list[str],
              timed_out: bool = False, no_output: bool = False
              ) -> BootStatus:
    """How a boot ended, from what its console and records show; a record
    lost on the console is added to ``issues`` of a boot that ran to its
    end (its samples are doubtful)."""
    if timed_out:
        return BootStatus.TIMEOUT
    if any(i.startswith("panic") for i in issues):
        return BootStatus.PANIC
    if exit_code is not None:
        issues += [f"console-records: {x}" for x in lost]
        return BootStatus.OK
    if no_output:
        return BootStatus.QEMU_ERROR
    return BootStatus.NO_EXIT


def check_cpu_model(spec: BootSpec) -> None:
    """A ``--cpu`` model QEMU does not know, or one given for KVM, is bad input."""
    if not spec.cpu:
        return
    if spec.accel == "kvm":
        raise UsageError(f"--cpu {spec.cpu} applies to TCG only; KVM guests "
                         "use the host's CPU", hint="drop --cpu or use "
                         "--accel tcg")
    binary = spec.arch.qemu_binary
    try:
        cp = subprocess.run([binary, *spec.arch.qemu_machine, "-cpu", "help"],
                            capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BootError(f"cannot list the CPU models of {binary}: {e}",
                        hint="run `foliolab setup` to install QEMU") from e
    known = set(cp.stdout.split())
    model = spec.cpu.split(",")[0]
    if model not in known:
        raise UsageError(f"{binary} has no CPU model {model!r}",
                         hint=f"list them with `{binary} -cpu help`")


def scan_console(text: str) -> list[str]:
    """Names of the kernel issues in a console log, first line of each."""
    found = []
    for name, rx in KERNEL_ISSUES:
        for line in text.splitlines():
            if rx.search(line):
                found.append(f"{name}: {line.strip()[:120]}")
                break
    return found


def exit_code_of(records_text: str) -> int | None:
    """The job's exit code from its ``@@ exit`` record (parse reads the
    record grammar, here as everywhere)."""
    return parse.parse_records(records_text.splitlines()).exit_code


def boot(spec: BootSpec, base_image: Path, job: str, rundir: Path,
         extra: list[Path] | None = None) -> BootResult:
    """Boot once, run ``job`` in the guest, keep every log in ``rundir``."""
    rundir.mkdir(parents=True, exist_ok=True)
    console = rundir / "console.log"
    results = rundir / "results.txt"
    for f in (console, results, rundir / "counts.txt"):
        f.unlink(missing_ok=True)
    initrd = rundir / "initrd.cpio"
    initrd.write_bytes(base_image.read_bytes() +
                       image_mod.job_archive(job, extra, spec.arch))
    argv = qemu_argv(spec, initrd, console, results)
    (rundir / "qemu.cmd").write_text(shlex.join(argv) + "\n")
    log.debug("$ %s", shlex.join(argv))
    host = bootrecord.host_state()
    t0 = time.monotonic()
    # One QEMU at a time, so the children's CPU time is this boot's.
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stderr_path = rundir / "qemu.stderr"
    with open(stderr_path, "w") as err:
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                 stdout=err, stderr=err)
        except FileNotFoundError as e:
            raise BootError(f"{spec.arch.qemu_binary} not found",
                            hint="run `make setup`") from e
        try:
            rc = p.wait(timeout=spec.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
            timed_out = True
    elapsed = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    initrd.unlink(missing_ok=True)
    raw = console.read_bytes() if console.exists() else b""
    lost: list[str] = []
    if spec.console_results:
        results_text, console_text, lost = records_from_console(raw)
        results.write_text(results_text)
    else:
        console_text = raw.decode(errors="replace")
        results_text = (results.read_text(errors="replace")
                        if results.exists() else "")
    issues = scan_console(console_text)
    code = exit_code_of(results_text)
    status = status_of(issues, code, lost, timed_out,
                       no_output=rc != 0 and not console_text)
    if status is BootStatus.QEMU_ERROR:
        issues.append("qemu: " + (stderr_path.read_text().strip()
                                  .splitlines() or ["?"])[-1][:160])
    result = BootResult(status, code, issues, console, results, elapsed,
                        results_text.splitlines(), round(cpu_s, 2),
                        bootrecord.host_during(host))
    bootrecord.write_boot(result)
    return result


def probe_kvm(spec: BootSpec, base_image: Path, limit: float = 20.0) -> bool:
    """True if a KVM boot of ``spec`` finishes within ``limit`` seconds.

    Nested KVM can exist and still be unusably slow (minutes to decompress
    the kernel), so /dev/kvm alone decides nothing. The answer is cached
    per kernel image for a day.
    """
    if not spec.arch.kvm or not Path("/dev/kvm").exists():
        return False
    stamp = cache_root() / "kvm-probe"
    key = f"{spec.kernel.stat().st_mtime_ns}"
    if stamp.exists() and time.time() - stamp.stat().st_mtime < 86400:
        have_key, _, answer = stamp.read_text().partition(" ")
        if have_key == key:
            return answer.strip() == "yes"
    probe = replace(spec, accel="kvm", timeout=limit, vcpus=1, numa_nodes=1,
                    memory_mb=512)
    res = boot(probe, base_image, "true\n", cache_root() / "kvm-probe.d")
    ok = res.clean and res.exit_code == 0
    stamp.write_text(f"{key} {'yes' if ok else 'no'}\n")
    log.info("KVM probe: %s in %.1f s -> using %s", res.describe(),
             res.elapsed, "kvm" if ok else "tcg")
    return ok


def debug_cmdline(purpose: str) -> tuple[str, ...]:
    """Kernel arguments a purpose needs: the debug kernel checks harder."""
    if purpose in kconfig.DEBUG_PURPOSES:
        return ("page_table_check=on", "panic_on_warn=1")
    return ()
