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


@dataclass(frozen=True)
class Boot:
    """One boot of a block: what the measuring half would boot in QEMU."""

    boot_id: str                   # WORKLOAD/NAME, its directory under raw/
    kernel: Path                   # the kernel image
    job: str                       # the job script (guest /foliolab/job.sh)
    cmdline: tuple[str, ...]       # kernel arguments foliolab adds
    timeout: float                 # seconds


@dataclass(frozen=True)
class Block:
    """One job: a workload's interleaved rounds, in boot order."""

    name: str                      # e.g. pageout-0
    workload: str
    boots: tuple[Boot, ...]
    memory_mb: int
    vcpus: int
    numa_nodes: int = 1


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


def kernel_args(boot: Boot, target: Target, console: str) -> list[str]:
    """The kernel command line of a boot under LAVA. A panic must end the
    job as a completed job with the panic in its log, not as an
    infrastructure error: a board stays in the panic (panic=0) for the
    monitor to see its end; QEMU reboots after a second and, with
    -no-reboot, exits, so the next boot of the block has the CPUs."""
    args = [f"console={console}"] if target.is_qemu else []
    args += ["panic=1" if target.is_qemu else "panic=0", "oops=panic",
             "rdinit=/init", *boot.cmdline]
    if target.is_qemu:
        # a board's arguments are one per job (see block_job); its boots
        # are named by their job archives instead
        args.append(f"{BOOT_ID_ARG}={boot.boot_id}")
    return args


# The monitor of each boot: from init's start (or a panic before it) to
# the end of the framed records (or the end of a panic). Its pattern only
# gives LAVA's results a test case per boot; foliolab reads the console.
START = r"Run /init as init process|Kernel panic - not syncing"
END = r"@@=end [0-9]+|---\[ end Kernel panic"
PATTERN = (r"@@= [0-9]+ [0-9]+ [0-9a-f]{8} @@ (?P<test_case_id>exit) "
           r"(?P<measurement>[0-9]+)[\r\n]")


def _timeout(seconds: float) -> dict:
    return {"minutes": max(1, int(-(-seconds // 60)))}


def block_job(block: Block, target: Target, artifacts: Artifacts,
              base_ramdisk: Path, arch: str, console: str,
              cpu: str = "max") -> dict:
    """The LAVA job (as YAML-ready data) that runs ``block`` on ``target``."""
    ramdisk = artifacts.add_file(base_ramdisk)
    dtb = artifacts.add_file(target.dtb) if target.dtb else None
    kernels: dict[Path, dict] = {}
    actions = []
    for i, boot in enumerate(block.boots):
        ns = f"boot{i:02d}"
        if boot.kernel not in kernels:
            kernels[boot.kernel] = artifacts.add(
                f"{boot.kernel.parent.name}-{boot.kernel.name}",
                boot.kernel.read_bytes())
        overlay = {**artifacts.add(f"job-{boot.boot_id.replace('/', '-')}"
                                   ".tar", job_tar(boot.job, boot.boot_id)),
                   "format": "tar", "path": "/"}
        initrd = {**ramdisk, "format": "cpio.newc",
                  "overlays": {"foliolab": overlay}}
        args = " ".join(kernel_args(boot, target, console))
        if target.is_qemu:
            deploy = {"to": "tmpfs", "images": {
                "kernel": {**kernels[boot.kernel],
                           "image_arg": f'-kernel {{kernel}} -append "{args}"'},
                "ramdisk": {**initrd, "image_arg": "-initrd {ramdisk}"}}}
            boot_action = {"method": "qemu", "media": "tmpfs"}
        else:
            deploy = {"to": "tftp",
                      "kernel": {**kernels[boot.kernel], "type": "image"},
                      "dtb": dtb,
                      "ramdisk": {**initrd, "header": "u-boot"}}
            boot_action = {"method": "u-boot", "commands": "ramdisk"}
        limit = _timeout(boot.timeout)
        actions += [
            {"deploy": {"namespace": ns, "timeout": {"minutes": 10},
                        **deploy}},
            {"boot": {"namespace": ns, "timeout": {"minutes": 5},
                      **boot_action}},
            {"test": {"namespace": ns, "timeout": limit, "monitors": [{
                "name": f"foliolab-{i:02d}", "start": START, "end": END,
                "pattern": PATTERN}]}},
        ]
    total = sum(b.timeout for b in block.boots) + 15 * 60 * len(block.boots)
    job: dict = {
        "job_name": f"foliolab {block.name}: "
                    + " ".join(b.boot_id.split("/")[1] for b in block.boots),
        "device_type": target.device_type,
        "visibility": "public",
        "priority": "medium",
        "timeouts": {"job": _timeout(total),
                     "action": {"minutes": 15 + max(
                         _timeout(b.timeout)["minutes"]
                         for b in block.boots)},
                     "connection": {"minutes": 2}},
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
        args = {" ".join(kernel_args(b, target, console))
                for b in block.boots}
        if len(args) > 1:
            raise LavaError(f"block {block.name}: its boots differ in "
                            "kernel arguments, which a board job cannot give",
                            hint="a foliolab bug: please report it")
        job["context"] = {"extra_kernel_args": args.pop()}
    if target.is_qemu:
        n = block.numa_nodes
        extra = [f"-smp {block.vcpus},sockets={n},"
                 f"cores={block.vcpus // n},threads=1", "-no-reboot"]
        if arch == "x86_64":
            extra.append(f"-cpu {cpu}")   # the amd64 template ignores cpu
        for j in range(n if n > 1 else 0):
            extra += [f"-object memory-backend-ram,id=m{j},"
                      f"size={block.memory_mb // n}M",
                      f"-numa node,nodeid={j},memdev=m{j},"
                      f"cpus={j * block.vcpus // n}-"
                      f"{(j + 1) * block.vcpus // n - 1}"]
        job["context"] = {"arch": QEMU_ARCH[arch],
                          "memory": block.memory_mb,
                          "extra_options": extra}
    return job


def write_job(path: Path, job: dict) -> None:
    import yaml
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job, sort_keys=False, width=1000))


# ---- LAVA's own schema ------------------------------------------------------

def lava_common_dir() -> Path:
    """Debian's lava-common, unpacked into the cache (on first use)."""
    root = cache_root() / "lava" / LAVA_VERSION
    pkg = root / "usr" / "lib" / "python3" / "dist-packages"
    if (pkg / "lava_common" / "schemas").is_dir():
        return pkg
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        subprocess.run(["apt-get", "download", "-q",
                        f"lava-common={LAVA_VERSION}"], cwd=tmp, check=True,
                       capture_output=True, text=True)
        (deb,) = tmp.glob("lava-common_*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True,
                       capture_output=True, text=True)
    except (subprocess.CalledProcessError, ValueError, OSError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        raise LavaError(f"cannot fetch lava-common {LAVA_VERSION}: "
                        f"{detail.strip().splitlines()[-1:]}",
                        hint="apt-get needs Debian bookworm's sources "
                             "(apt-get update)") from e
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
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


@dataclass
class BootLog:
    """One boot's part of a job's console."""

    lines: list[ConsoleLine] = field(default_factory=list)
    boot_id: str = ""               # from its kernel command line

    @property
    def elapsed(self) -> float | None:
        times = [x.at for x in self.lines if x.at]
        return (times[-1] - times[0]).total_seconds() if times else None

    def console(self) -> bytes:
        return "".join(x.text + "\n" for x in self.lines).encode(
            "utf-8", "replace")


def console_lines(text: str) -> list[ConsoleLine]:
    """The guest console in a LAVA log: its ``lvl: target`` records (the
    YAML log lava-run writes and a server's log download), or the whole
    text when it is a plain console capture."""
    out = []
    yaml_log = False
    for line in text.splitlines():
        if not line.startswith("- {"):
            continue
        rec = _log_record(line[2:])
        if rec is None:
            continue
        yaml_log = True
        if rec.get("lvl") == "target" and isinstance(rec.get("msg"), str):
            out.append(ConsoleLine(rec["msg"], _time(rec.get("dt"))))
    if yaml_log:
        return out
    return [ConsoleLine(line.rstrip("\r")) for line in text.splitlines()]


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
    for line in lines:
        if _BANNER in line.text:
            boots.append(BootLog(pre + [line]))
            pre = []
        elif boots:
            boots[-1].lines.append(line)
        else:
            pre.append(line)
    for b in boots:
        for line in b.lines:
            # the command line (qemu) or the records' begin line (boards)
            m = _CMDLINE_ID.search(line.text) or _BEGIN_ID.search(line.text)
            if m:
                b.boot_id = m.group(1)
                break
    return boots
