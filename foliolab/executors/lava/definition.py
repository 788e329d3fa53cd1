"""A LAVA job definition for a block of foliolab's boots: the YAML a lab
runs, and its check.

Every foliolab sample is already an independent boot (kernel, base ramdisk,
per-boot job archive, command line), which is what a LAVA job runs. A job
here is one interleaved block of one workload (job.py says how many
rounds); each boot is a deploy, boot and monitor test in a namespace of
its own; the guest frames its records onto the console
(guest/frame.awk), and the host reads them back from the raw console text
of LAVA's log (log.py), never from LAVA's own (lossy) copy of a
measurement.

Artifacts (kernels, the base ramdisk, each boot's job archive) go to one
directory under content names and are referenced by URL with their sha256,
for a lab's workers to fetch from wherever the user serves that directory.

LAVA's job schema comes from Debian's lava-common package (debs.py), so
jobs are checked exactly as a LAVA 2023.01 server checks them.
"""

from __future__ import annotations

import hashlib
import io
import re
import shlex
import sys
import tarfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from foliolab import records
from foliolab.errors import LavaError, UsageError
from foliolab.executors.base import (
    BlockRequest,
    BootRequest,
    BootSpec,
    check_numa,
)
from foliolab.executors.lava.debs import lava_common_dir

QEMU = "qemu"  # LAVA's QEMU device type
# LAVA's names for the guest architectures of its qemu device type
QEMU_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
BOOT_ID_ARG = "foliolab.boot"


@dataclass(frozen=True)
class Target:
    """Where the jobs run: LAVA's qemu device type, or a board booted by
    u-boot from TFTP (kernel, device tree, ramdisk)."""

    device_type: str = QEMU
    tags: tuple[str, ...] = ()
    dtb: Path | None = None  # boards: the device tree to boot with

    @property
    def is_qemu(self) -> bool:
        return self.device_type == QEMU

    def check(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.device_type):
            raise UsageError(
                f"--lava-device-type {self.device_type!r} is "
                "not a LAVA device type name",
                hint="e.g. qemu or bcm2711-rpi-4-b",
            )
        if not self.is_qemu and self.dtb is None:
            raise UsageError(
                f"a {self.device_type} board boots with a "
                "device tree, and none was given",
                hint="add --lava-dtb FILE (the board's .dtb "
                "from the kernel build)",
            )
        if self.dtb is not None and not self.dtb.is_file():
            raise UsageError(f"--lava-dtb {self.dtb}: no such file")


class Artifacts:
    """Files a job references, stored under content names in ``directory``
    and served from ``base_url`` (``file://`` for the local dispatcher)."""

    def __init__(self, directory: Path, base_url: str) -> None:
        self.directory = directory
        self.base_url = base_url.rstrip("/")
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, data: bytes) -> dict[str, Any]:
        digest = hashlib.sha256(data).hexdigest()
        path = self.directory / f"{digest[:16]}-{name}"
        if not path.exists():
            records.write_whole(path, data)
        return {"url": f"{self.base_url}/{path.name}", "sha256sum": digest}

    def add_file(self, path: Path) -> dict[str, Any]:
        return self.add(path.name, path.read_bytes())


def job_tar(job: str, boot_id: str) -> bytes:
    """A boot's job archive as the tar LAVA lays over the ramdisk:
    /foliolab/job.sh and the boot's name (fixed times: equal jobs give
    equal archives, stored once)."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT
    ) as tf:
        for name, data, mode in (
            ("foliolab", None, 0o755),
            ("foliolab/job.sh", job.encode(), 0o755),
            ("foliolab/boot-id", (boot_id + "\n").encode(), 0o644),
        ):
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
    args += [
        "panic=1" if target.is_qemu else "panic=0",
        "oops=panic",
        "rdinit=/init",
        *boot.spec.arch.boot_args,
        *boot.spec.cmdline,
    ]
    if boot.spec.counter:
        # the plugin's symbols (System.map's addresses) hold only
        # without KASLR, as for a counting boot under QEMU here
        args.append("nokaslr")
    if target.is_qemu:
        # a board's arguments are one per job (see block_job); its boots
        # are named by their job archives instead
        args.append(f"{BOOT_ID_ARG}={boot.boot_id}")
    return args


# A counting boot's counts, in its run directory as under QEMU here,
# where derive and the commands read them.
COUNTS = "counts.txt"


def counting_args(boot: BootRequest) -> str:
    """The QEMU options that load foliolab's counting plugin into a
    boot's QEMU, its counts written to the boot's run directory ("" for a
    boot that does not count).

    They go in the boot's own kernel ``image_arg``, not in the job's
    context: a job is a block of boots sharing one context (its
    ``extra_options``), and each boot's QEMU command line is LAVA's
    device options plus that boot's namespace's image arguments, so each
    boot's plugin writes a file of its own. The paths are this machine's:
    only a dispatcher here (lava-local) can run such a job."""
    counter = boot.spec.counter
    if counter is None:
        return ""
    counter = replace(
        counter,
        plugin=counter.plugin.resolve(),
        symbols=counter.symbols.resolve(),
    )
    return shlex.join(counter.qemu_args(boot.rundir.resolve() / COUNTS))


# The monitor of each boot: from init's start (or a panic before it) to
# the end of the framed records, or the end of a panic: a board (panic=0)
# prints "---[ end Kernel panic", QEMU's guest (panic=1) only "Rebooting
# in 1 seconds.." before QEMU exits; the monitor must end on that line,
# or the exit closes its connection and LAVA fails the job there. Its
# pattern only gives LAVA's results a test case per boot; foliolab reads
# the console.
START = r"Run /init as init process|Kernel panic - not syncing"
END = r"@@=end [0-9]+|---\[ end Kernel panic|Rebooting in [0-9]+ seconds"
PATTERN = (
    r"@@= [0-9]+ [0-9]+ [0-9a-f]{8} @@ (?P<test_case_id>exit) "
    r"(?P<measurement>[0-9]+)[\r\n]"
)


# Over a boot's own limit, for booting the kernel (and u-boot, TFTP).
BOOT_MARGIN = 600
# LAVA's schema limit on a job's name
JOB_NAME_MAX = 200


def _timeout(seconds: float) -> dict[str, Any]:
    return {"minutes": max(1, int(-(-seconds // 60)))}


def block_job(
    block: BlockRequest,
    target: Target,
    artifacts: Artifacts,
    base_ramdisk: Path,
) -> dict[str, Any]:
    """The LAVA job (as YAML-ready data) that runs ``block`` on ``target``.
    Its boots share one machine shape (a block is one workload): the job's
    head, each boot's deploy, boot and test, and the machine's context."""
    first = block.boots[0].spec
    check_numa(first)
    files = _JobFiles(
        artifacts,
        artifacts.add_file(base_ramdisk),
        artifacts.add_file(target.dtb) if target.dtb else None,
    )
    job = _job_head(block, target)
    job["actions"] = [
        action
        for i, boot in enumerate(block.boots)
        for action in _boot_actions(i, boot, target, files)
    ]
    if target.tags:
        job["tags"] = list(target.tags)
    job["context"] = (
        _qemu_context(first)
        if target.is_qemu
        else _board_context(block, target)
    )
    return job


@dataclass
class _JobFiles:
    """What a block's boots fetch: the base ramdisk and a board's device
    tree, added once, and each kernel once however many boots run it."""

    artifacts: Artifacts
    ramdisk: dict[str, Any]
    dtb: dict[str, Any] | None
    kernels: dict[Path, dict[str, Any]] = field(default_factory=dict)

    def kernel(self, image: Path) -> dict[str, Any]:
        if image not in self.kernels:
            self.kernels[image] = self.artifacts.add(
                f"{image.parent.name}-{image.name}", image.read_bytes()
            )
        return self.kernels[image]

    def initrd(self, boot: BootRequest) -> dict[str, Any]:
        """The base ramdisk with the boot's job (its workload, parameters
        and id) laid over it."""
        overlay = {
            **self.artifacts.add(
                f"job-{boot.boot_id.replace('/', '-')}.tar",
                job_tar(boot.job, boot.boot_id),
            ),
            "format": "tar",
            "path": "/",
        }
        return {
            **self.ramdisk,
            "format": "cpio.newc",
            "overlays": {"foliolab": overlay},
        }


def _job_head(block: BlockRequest, target: Target) -> dict[str, Any]:
    """The job's name, device, timeouts and the metadata that ties its log
    back to the block's boots."""
    limits = [b.spec.timeout for b in block.boots]
    total = sum(limits) + 15 * 60 * len(block.boots)
    return {
        "job_name": (
            f"foliolab {block.name}: "
            + " ".join(b.boot_id.split("/")[1] for b in block.boots)
        )[:JOB_NAME_MAX],
        "device_type": target.device_type,
        "visibility": "public",
        "priority": "medium",
        "timeouts": {
            "job": _timeout(total),
            "action": {
                "minutes": 15 + max(_timeout(t)["minutes"] for t in limits)
            },
            "connection": _timeout(BOOT_MARGIN),
        },
        "metadata": {
            "foliolab.block": block.name,
            "foliolab.workload": block.workload,
            "foliolab.boots": ",".join(b.boot_id for b in block.boots),
        },
    }


def _boot_actions(
    i: int, boot: BootRequest, target: Target, files: _JobFiles
) -> list[dict[str, Any]]:
    """One boot's deploy, boot and test, in a namespace of its own."""
    ns = f"boot{i:02d}"
    kernel, initrd = files.kernel(boot.spec.kernel), files.initrd(boot)
    if target.is_qemu:
        args = " ".join(kernel_args(boot, target))
        image_arg = f'-kernel {{kernel}} -append "{args}"'
        if boot.spec.counter:
            image_arg += " " + counting_args(boot)
        deploy: dict[str, Any] = {
            "to": "tmpfs",
            "images": {
                "kernel": {**kernel, "image_arg": image_arg},
                "ramdisk": {**initrd, "image_arg": "-initrd {ramdisk}"},
            },
        }
        boot_action = {"method": "qemu", "media": "tmpfs"}
    else:
        if boot.spec.counter:
            raise LavaError(
                f"boot {boot.boot_id} counts, which a board cannot",
                hint="a foliolab bug: please report it",
            )
        deploy = {
            "to": "tftp",
            "kernel": {**kernel, "type": "image"},
            "dtb": files.dtb,
            "ramdisk": {**initrd, "header": "u-boot"},
        }
        boot_action = {"method": "u-boot", "commands": "ramdisk"}
    return [
        {"deploy": {"namespace": ns, "timeout": {"minutes": 10}, **deploy}},
        # the boot's timeout is also its connection's, which the monitor
        # waits on: shorter than the test's own limit, a long boot would
        # stop being watched without an error, and the next boot would
        # start beside it
        {
            "boot": {
                "namespace": ns,
                "timeout": _timeout(boot.spec.timeout + BOOT_MARGIN),
                **boot_action,
            }
        },
        {
            "test": {
                "namespace": ns,
                "timeout": _timeout(boot.spec.timeout),
                "monitors": [
                    {
                        "name": f"foliolab-{i:02d}",
                        "start": START,
                        "end": END,
                        "pattern": PATTERN,
                    }
                ],
            }
        },
    ]


def _board_context(block: BlockRequest, target: Target) -> dict[str, Any]:
    """u-boot takes the kernel arguments from the device's template and
    the job's context: one set for the block, which is one workload."""
    args = {" ".join(kernel_args(b, target)) for b in block.boots}
    if len(args) > 1:
        raise LavaError(
            f"block {block.name}: its boots differ in "
            "kernel arguments, which a board job cannot give",
            hint="a foliolab bug: please report it",
        )
    return {"extra_kernel_args": args.pop()}


def _qemu_context(first: BootSpec) -> dict[str, Any]:
    """LAVA's qemu template gives -nographic, -m, -monitor and a user-mode
    NIC (always); the rest of the machine foliolab boots is added here.
    Its amd64 branch ignores the machine and cpu keys, so x86 passes them
    as options; arm64's branch takes them from the context."""
    arch, n = first.arch, first.numa_nodes
    extra = [
        f"-smp {first.vcpus},sockets={n},cores={first.vcpus // n},threads=1",
        "-no-reboot",
    ]
    context: dict[str, Any] = {
        "arch": QEMU_ARCH[arch.name],
        "memory": first.memory_mb,
    }
    machine = arch.qemu_machine[-1]
    cpu = first.cpu or (arch.cpu_kvm if first.accel == "kvm" else arch.cpu_tcg)
    if arch.name == "x86_64":
        extra += [f"-machine {machine}", f"-cpu {cpu}"]
    else:
        context.update(machine=machine, cpu=cpu)
    for j in range(n if n > 1 else 0):
        extra += [
            f"-object memory-backend-ram,id=m{j},size={first.memory_mb // n}M",
            f"-numa node,nodeid={j},memdev=m{j},"
            f"cpus={j * first.vcpus // n}-"
            f"{(j + 1) * first.vcpus // n - 1}",
        ]
    context["extra_options"] = extra
    return context


def write_job(path: Path, job: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job, sort_keys=False, width=1000))


def validate(job: dict[str, Any]) -> None:
    """Check ``job`` against LAVA's schema, as a server does on submit."""
    pkg = str(lava_common_dir())
    if pkg not in sys.path:
        sys.path.append(pkg)
    from lava_common.schemas import validate as lava_validate
    from voluptuous import Invalid

    try:
        lava_validate(job, strict=True)
    except Invalid as e:
        raise LavaError(
            f"LAVA refuses job {job.get('job_name')!r}: {e}",
            hint="a foliolab bug: please report it",
        ) from e
