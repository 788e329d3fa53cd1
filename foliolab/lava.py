"""LAVA jobs for foliolab's boots: write them, check them, read their logs.

Every foliolab sample is already an independent boot (kernel, base ramdisk,
per-boot job archive, command line), which is what a LAVA job runs. A job
here is one interleaved block of one workload: two rounds, each kernel
once in the given order and once reversed (ABBA for two kernels), so the
pairing the statistics rely on survives a lab that runs jobs on any device
in any order. Each boot is a deploy, boot and monitor test in a namespace
of its own; the guest frames its records onto the console
(guest/frame.awk), and the host reads them back from the raw console text
of LAVA's log, never from LAVA's own (lossy) copy of a measurement.

Artifacts (kernels, the base ramdisk, each boot's job archive) go to one
directory under content names and are referenced by URL with their sha256,
for a lab's workers to fetch from wherever the user serves that directory.

LAVA's job schema comes from Debian's lava-common package, unpacked into
foliolab's cache on first use, so jobs are checked exactly as a LAVA
2023.01 server checks them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import boot as boot_mod
from foliolab import bootrecord
from foliolab.boot import BlockRequest, BootRequest
from foliolab.bootrecord import BootResult, BootStatus
from foliolab.errors import FoliolabError, UsageError
from foliolab.paths import cache_root

LAVA_VERSION = "2023.01-2"     # Debian bookworm's lava-common
QEMU = "qemu"                  # LAVA's QEMU device type
# LAVA's names for the guest architectures of its qemu device type
QEMU_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
# Where each boot's console starts in a multi-boot log: the kernel banner.
_BANNER = "Linux version "
_CMDLINE_ID = re.compile(r"foliolab\.boot=([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")
_BEGIN_ID = re.compile(r"@@=begin ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")
BOOT_ID_ARG = "foliolab.boot"


class LavaError(FoliolabError):
    exit_code = 4


@dataclass(frozen=True)
class Target:
    """Where the jobs run: LAVA's qemu device type, or a board booted by
    u-boot from TFTP (kernel, device tree, ramdisk)."""

    device_type: str = QEMU
    tags: tuple[str, ...] = ()
    dtb: Path | None = None        # boards: the device tree to boot with

    @property
    def is_qemu(self) -> bool:
        return self.device_type == QEMU

    def check(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.device_type):
            raise UsageError(f"--lava-device-type {self.device_type!r} is "
                             "not a LAVA device type name",
                             hint="e.g. qemu or bcm2711-rpi-4-b")
        if not self.is_qemu and self.dtb is None:
            raise UsageError(f"a {self.device_type} board boots with a "
                             "device tree, and none was given",
                             hint="add --lava-dtb FILE (the board's .dtb "
                                  "from the kernel build)")
        if self.dtb is not None and not self.dtb.is_file():
            raise UsageError(f"--lava-dtb {self.dtb}: no such file")


class Artifacts:
    """Files a job references, stored under content names in ``directory``
    and served from ``base_url`` (``file://`` for the local dispatcher)."""

    def __init__(self, directory: Path, base_url: str) -> None:
        self.directory = directory
        self.base_url = base_url.rstrip("/")
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, data: bytes) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        path = self.directory / f"{digest[:16]}-{name}"
        if not path.exists():
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return {"url": f"{self.base_url}/{path.name}", "sha256sum": digest}

    def add_file(self, path: Path) -> dict:
        return self.add(path.name, path.read_bytes())


def job_tar(job: str, boot_id: str) -> bytes:
    """A boot's job archive as the tar LAVA lays over the ramdisk:
    /foliolab/job.sh and the boot's name (fixed times: equal jobs give
    equal archives, stored once)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data, mode in (("foliolab", None, 0o755),
                                 ("foliolab/job.sh", job.encode(), 0o755),
                                 ("foliolab/boot-id",
                                  (boot_id + "\n").encode(), 0o644)):
            info = tarfile.TarInfo(name)
            info.mode = mode
            info.mtime = 0
            if data is None:
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def kernel_args(boot: BootRequest, target: Target) -> list[str]:
    """The kernel command line of a boot under LAVA. A panic must end the
    job as a completed job with the panic in its log, not as an
    infrastructure error: a board stays in the panic (panic=0) for the
    monitor to see its end; QEMU reboots after a second and, with
    -no-reboot, exits, so the next boot of the block has the CPUs."""
    args = [f"console={boot.spec.arch.console}"] if target.is_qemu else []
    args += ["panic=1" if target.is_qemu else "panic=0", "oops=panic",
             "rdinit=/init", *boot.spec.cmdline]
    if target.is_qemu:
        # a board's arguments are one per job (see block_job); its boots
        # are named by their job archives instead
        args.append(f"{BOOT_ID_ARG}={boot.boot_id}")
    return args


# The monitor of each boot: from init's start (or a panic before it) to
# the end of the framed records, or the end of a panic: a board (panic=0)
# prints "---[ end Kernel panic", QEMU's guest (panic=1) only "Rebooting
# in 1 seconds.." before QEMU exits; the monitor must end on that line,
# or the exit closes its connection and LAVA fails the job there. Its
# pattern only gives LAVA's results a test case per boot; foliolab reads
# the console.
START = r"Run /init as init process|Kernel panic - not syncing"
END = r"@@=end [0-9]+|---\[ end Kernel panic|Rebooting in [0-9]+ seconds"
PATTERN = (r"@@= [0-9]+ [0-9]+ [0-9a-f]{8} @@ (?P<test_case_id>exit) "
           r"(?P<measurement>[0-9]+)[\r\n]")


# Over a boot's own limit, for booting the kernel (and u-boot, TFTP).
BOOT_MARGIN = 600
# LAVA's schema limit on a job's name
JOB_NAME_MAX = 200


def _timeout(seconds: float) -> dict:
    return {"minutes": max(1, int(-(-seconds // 60)))}


def block_job(block: BlockRequest, target: Target, artifacts: Artifacts,
              base_ramdisk: Path) -> dict:
    """The LAVA job (as YAML-ready data) that runs ``block`` on ``target``.
    Its boots share one machine shape (a block is one workload)."""
    first = block.boots[0].spec
    arch = first.arch
    boot_mod.check_numa(first)
    ramdisk = artifacts.add_file(base_ramdisk)
    dtb = artifacts.add_file(target.dtb) if target.dtb else None
    kernels: dict[Path, dict] = {}
    actions = []
    for i, boot in enumerate(block.boots):
        ns = f"boot{i:02d}"
        kernel = boot.spec.kernel
        if kernel not in kernels:
            kernels[kernel] = artifacts.add(
                f"{kernel.parent.name}-{kernel.name}", kernel.read_bytes())
        overlay = {**artifacts.add(f"job-{boot.boot_id.replace('/', '-')}"
                                   ".tar", job_tar(boot.job, boot.boot_id)),
                   "format": "tar", "path": "/"}
        initrd = {**ramdisk, "format": "cpio.newc",
                  "overlays": {"foliolab": overlay}}
        args = " ".join(kernel_args(boot, target))
        if target.is_qemu:
            deploy = {"to": "tmpfs", "images": {
                "kernel": {**kernels[kernel],
                           "image_arg": f'-kernel {{kernel}} -append "{args}"'},
                "ramdisk": {**initrd, "image_arg": "-initrd {ramdisk}"}}}
            boot_action = {"method": "qemu", "media": "tmpfs"}
        else:
            deploy = {"to": "tftp",
                      "kernel": {**kernels[kernel], "type": "image"},
                      "dtb": dtb,
                      "ramdisk": {**initrd, "header": "u-boot"}}
            boot_action = {"method": "u-boot", "commands": "ramdisk"}
        limit = _timeout(boot.spec.timeout)
        actions += [
            {"deploy": {"namespace": ns, "timeout": {"minutes": 10},
                        **deploy}},
            # the boot's timeout is also its connection's, which the
            # monitor waits on: shorter than the test's own limit, a long
            # boot would stop being watched without an error, and the next
            # boot would start beside it
            {"boot": {"namespace": ns,
                      "timeout": _timeout(boot.spec.timeout + BOOT_MARGIN),
                      **boot_action}},
            {"test": {"namespace": ns, "timeout": limit, "monitors": [{
                "name": f"foliolab-{i:02d}", "start": START, "end": END,
                "pattern": PATTERN}]}},
        ]
    limits = [b.spec.timeout for b in block.boots]
    total = sum(limits) + 15 * 60 * len(block.boots)
    job: dict = {
        "job_name": (f"foliolab {block.name}: " + " ".join(
            b.boot_id.split("/")[1] for b in block.boots))[:JOB_NAME_MAX],
        "device_type": target.device_type,
        "visibility": "public",
        "priority": "medium",
        "timeouts": {"job": _timeout(total),
                     "action": {"minutes": 15 + max(
                         _timeout(t)["minutes"] for t in limits)},
                     "connection": _timeout(BOOT_MARGIN)},
        "metadata": {"foliolab.block": block.name,
                     "foliolab.workload": block.workload,
                     "foliolab.boots": ",".join(b.boot_id
                                                for b in block.boots)},
        "actions": actions,
    }
    if target.tags:
        job["tags"] = list(target.tags)
    if not target.is_qemu:
        # u-boot takes the kernel arguments from the device's template and
        # the job's context: one set for the block, which is one workload
        args = {" ".join(kernel_args(b, target)) for b in block.boots}
        if len(args) > 1:
            raise LavaError(f"block {block.name}: its boots differ in "
                            "kernel arguments, which a board job cannot give",
                            hint="a foliolab bug: please report it")
        job["context"] = {"extra_kernel_args": args.pop()}
        return job
    # LAVA's qemu template gives -nographic, -m, -monitor and a user-mode
    # NIC (always); the rest of the machine foliolab boots is added here.
    # Its amd64 branch ignores the machine and cpu keys, so x86 passes
    # them as options; arm64's branch takes them from the context.
    n = first.numa_nodes
    extra = [f"-smp {first.vcpus},sockets={n},"
             f"cores={first.vcpus // n},threads=1", "-no-reboot"]
    context: dict = {"arch": QEMU_ARCH[arch.name],
                     "memory": first.memory_mb}
    machine = arch.qemu_machine[-1]
    cpu = first.cpu or (arch.cpu_kvm if first.accel == "kvm"
                        else arch.cpu_tcg)
    if arch.name == "x86_64":
        extra += [f"-machine {machine}", f"-cpu {cpu}"]
    else:
        context.update(machine=machine, cpu=cpu)
    for j in range(n if n > 1 else 0):
        extra += [f"-object memory-backend-ram,id=m{j},"
                  f"size={first.memory_mb // n}M",
                  f"-numa node,nodeid={j},memdev=m{j},"
                  f"cpus={j * first.vcpus // n}-"
                  f"{(j + 1) * first.vcpus // n - 1}"]
    context["extra_options"] = extra
    job["context"] = context
    return job


def write_job(path: Path, job: dict) -> None:
    import yaml
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job, sort_keys=False, width=1000))


# ---- LAVA's own schema ------------------------------------------------------

def unpack_debs(packages: tuple[str, ...], into: Path) -> None:
    """Debian's ``packages`` at LAVA_VERSION, fetched with apt-get download
    and unpacked (dpkg-deb -x) into ``into``, which appears only whole."""
    tmp = into.with_name(into.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    debs = tmp / "debs"
    debs.mkdir(parents=True)
    try:
        subprocess.run(["apt-get", "download", "-q",
                        *(f"{p}={LAVA_VERSION}" for p in packages)],
                       cwd=debs, check=True, capture_output=True, text=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)],
                           check=True, capture_output=True, text=True)
    except (subprocess.CalledProcessError, OSError) as e:
        detail = (getattr(e, "stderr", "") or str(e)).strip().splitlines()
        raise LavaError(f"cannot fetch {', '.join(packages)} {LAVA_VERSION}: "
                        f"{(detail or ['?'])[-1]}",
                        hint="apt-get needs Debian bookworm's sources "
                             "(apt-get update)") from e
    shutil.rmtree(debs)
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)


def lava_common_dir() -> Path:
    """Debian's lava-common, unpacked into the cache (on first use)."""
    root = cache_root() / "lava" / LAVA_VERSION / "lava-common"
    pkg = root / "usr" / "lib" / "python3" / "dist-packages"
    if not (pkg / "lava_common" / "schemas").is_dir():
        unpack_debs(("lava-common",), root)
    return pkg


def validate(job: dict) -> None:
    """Check ``job`` against LAVA's schema, as a server does on submit."""
    pkg = str(lava_common_dir())
    if pkg not in sys.path:
        sys.path.append(pkg)
    from lava_common.schemas import validate as lava_validate
    from voluptuous import Invalid
    try:
        lava_validate(job, strict=True)
    except Invalid as e:
        raise LavaError(f"LAVA refuses job {job.get('job_name')!r}: {e}",
                        hint="a foliolab bug: please report it") from e


# ---- reading LAVA's logs -------------------------------------------------------

@dataclass
class ConsoleLine:
    text: str
    at: dt.datetime | None = None    # LAVA's timestamp, when it has one
    # LAVA's namespace of a line it logged late, as "feedback": the
    # console of an earlier boot's connection, read when the job ends
    late_from: str = ""


@dataclass
class BootLog:
    """One boot's part of a job's console."""

    lines: list[ConsoleLine] = field(default_factory=list)
    boot_id: str = ""               # from its kernel command line

    @property
    def elapsed(self) -> float | None:
        times = [x.at for x in self.lines if x.at and not x.late_from]
        return (times[-1] - times[0]).total_seconds() if times else None

    def console(self) -> bytes:
        return "".join(x.text + "\n" for x in self.lines).encode(
            "utf-8", "replace")


def log_records(text: str) -> list[dict]:
    """The records of a LAVA log: one per line, as lava-run writes them
    (JSON objects, one per line) or as a server's log download has them
    (the same objects as YAML list items, "- {...}"). Empty for a plain
    console capture."""
    out = []
    for line in text.splitlines():
        body = line[2:] if line.startswith("- {") else line
        if not body.startswith("{"):
            continue
        rec = _log_record(body)
        if rec is not None and "lvl" in rec:
            out.append(rec)
    return out


def console_lines(text: str) -> list[ConsoleLine]:
    """The guest console in a LAVA log: its ``lvl: target`` records, or the
    whole text when it is a plain console capture."""
    records = log_records(text)
    if records:
        # LAVA logs a boot's console as "target" while it watches that
        # boot; what it reads from an earlier boot's connection later (at
        # the latest when the job ends) is "feedback" with the boot's
        # namespace: often the very line the monitor ended on, @@=end
        return [ConsoleLine(r["msg"], _time(r.get("dt")),
                            r.get("ns", "") if r["lvl"] == "feedback" else "")
                for r in records
                if isinstance(r.get("msg"), str) and (
                    r.get("lvl") == "target" or (r.get("lvl") == "feedback"
                                                 and r.get("ns")))]
    return [ConsoleLine(line.rstrip("\r")) for line in text.splitlines()]


def job_outcome(text: str) -> str:
    """How LAVA says the job of a log ended: "" when it completed, else its
    error ("Infrastructure: ...", "Job: ...", "Test: ...")."""
    for rec in log_records(text):
        msg = rec.get("msg")
        if (rec.get("lvl") == "results" and isinstance(msg, dict)
                and msg.get("definition") == "lava"
                and msg.get("case") == "job"):
            if msg.get("result") == "pass":
                return ""
            return (f"{msg.get('error_type', '?')}: "
                    f"{msg.get('error_msg', 'no message')}")
    return "the log has no end of job (cut short?)"


def _log_record(text: str) -> dict | None:
    try:
        rec = json.loads(text)      # lava-run writes JSON-compatible YAML
    except ValueError:
        import yaml
        try:
            rec = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    return rec if isinstance(rec, dict) else None


def _time(value) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def split_boots(lines: list[ConsoleLine]) -> list[BootLog]:
    """A job's console cut into its boots at each kernel banner; what comes
    before the first (firmware, LAVA) goes with the first. Each boot is
    named by the foliolab.boot= of its kernel command line, if shown."""
    boots: list[BootLog] = []
    pre: list[ConsoleLine] = []
    late: list[ConsoleLine] = []
    for line in lines:
        if line.late_from:
            late.append(line)
        elif _BANNER in line.text:
            boots.append(BootLog(pre + [line]))
            pre = []
        elif boots:
            boots[-1].lines.append(line)
        else:
            pre.append(line)
    for line in late:
        # the job's namespaces are its boots in order: boot00, boot01, ...
        m = re.fullmatch(r"boot(\d+)", line.late_from)
        if m and int(m.group(1)) < len(boots):
            boots[int(m.group(1))].lines.append(line)
    for b in boots:
        for line in b.lines:
            # the command line (qemu) or the records' begin line (boards)
            m = _CMDLINE_ID.search(line.text) or _BEGIN_ID.search(line.text)
            if m:
                b.boot_id = m.group(1)
                break
    return boots


def boot_result(part: BootLog, rundir: Path, source: str,
                executor: str) -> BootResult:
    """One boot's console from a LAVA log into its directory, as a boot
    under QEMU would have left it: console.log, the records recovered from
    the console, boot.json."""
    rundir.mkdir(parents=True, exist_ok=True)
    console = rundir / "console.log"
    results = rundir / "results.txt"
    raw = part.console()
    console.write_bytes(raw)
    records, kernel_text, lost = boot_mod.records_from_console(raw)
    results.write_text(records)
    issues = boot_mod.scan_console(kernel_text)
    code = boot_mod.exit_code_of(records)
    status = boot_mod.status_of(issues, code, lost)
    res = BootResult(status, code, issues, console, results,
                     part.elapsed or 0.0, records.splitlines(), None,
                     {"executor": executor, "log": source})
    bootrecord.write_boot(res)
    return res


def not_run(rundir: Path, why: str, source: str,
            executor: str) -> BootResult:
    """A boot of a job that ended before it (its log has no console of
    it): recorded as such, never as a sample."""
    rundir.mkdir(parents=True, exist_ok=True)
    console = rundir / "console.log"
    console.write_bytes(b"")
    results = rundir / "results.txt"
    results.write_text("")
    res = BootResult(BootStatus.NOT_RUN, None, [f"lava: {why}"], console,
                     results, 0.0, [], None,
                     {"executor": executor, "log": source})
    bootrecord.write_boot(res)
    return res


def block_results(text: str, boot_ids: list[str], rundirs: list[Path],
                  source: str, executor: str) -> list[BootResult]:
    """The boots of one job from its log, in the job's order. A log whose
    boots are not the job's, in its order, is refused (LavaError); boots
    after the last one the log shows did not run."""
    parts = split_boots(console_lines(text))
    if len(parts) > len(boot_ids):
        raise LavaError(f"{source}: {len(parts)} boots in a job of "
                        f"{len(boot_ids)}",
                        hint="a log holds one exported job's boots")
    out = []
    for k, part in enumerate(parts):
        if part.boot_id and part.boot_id != boot_ids[k]:
            raise LavaError(f"{source}: its boot {k + 1} is {part.boot_id}, "
                            f"the job has {boot_ids[k]} there",
                            hint="a log holds one exported job's boots in "
                                 "their order")
        out.append(boot_result(part, rundirs[k], source, executor))
    why = job_outcome(text)
    if why and out and out[-1].status is BootStatus.NO_EXIT:
        # the boot the job ended in: LAVA says why (its time limit, or an
        # error of the lab's)
        last = out[-1]
        last.issues.append(f"lava: {why}")
        if "timed out" in why:
            last.status = BootStatus.TIMEOUT
        bootrecord.write_boot(last)
    why = why or "the job completed without this boot"
    out += [not_run(d, why, source, executor)
            for d in rundirs[len(parts):]]
    return out
