"""The accelerator a run boots with, chosen before its boots: ``auto``
is KVM only where a short probe boot is fast.

The probe is a boot like any other, judged (boot_once), run by the
executor that boots QEMU here (the registry's HERE, made by
make_executor as any executor is), so it lives above the executors: an
executor's ``settle`` is given the accelerator already chosen.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from foliolab import executors
from foliolab.boot.measure import boot_once
from foliolab.executors.base import (
    BootRequest,
    BootSpec,
    ExecutorClass,
    Settled,
)
from foliolab.paths import cache_root

log = logging.getLogger("foliolab")


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
    probe = replace(
        spec, accel="kvm", timeout=limit, vcpus=1, numa_nodes=1, memory_mb=512
    )
    rundir = cache_root() / "kvm-probe.d"
    # the question is this machine's, whoever runs the run's boots
    here = executors.make_executor(
        executors.ExecutorOptions.of(executors.HERE), rundir
    )
    res = boot_once(
        here,
        BootRequest("probe/kvm", probe, "true\n", rundir),
        base_image,
    )
    ok = res.clean and res.exit_code == 0
    stamp.write_text(f"{key} {'yes' if ok else 'no'}\n")
    log.info(
        "KVM probe: %s in %.1f s -> using %s",
        res.describe(),
        res.elapsed,
        "kvm" if ok else "tcg",
    )
    return ok


def choose_accel(
    want: str, spec: BootSpec, image_path: Path, count: bool = False
) -> str:
    """The accelerator a run boots with: ``auto`` is KVM only where a
    short probe boot is fast."""
    spec.arch.check_accel(want)
    if want in ("tcg", "kvm"):
        return want
    if spec.cpu or count:
        return "tcg"  # a CPU model, or counting, is a TCG choice
    if not spec.arch.kvm:
        return "tcg"
    return "kvm" if probe_kvm(spec, image_path) else "tcg"


def settle(
    cls: ExecutorClass,
    want: str,
    spec: BootSpec,
    image: Path,
    count: bool,
) -> Settled:
    """``cls``'s accelerator and emulator for the run's boots: an
    executor that boots here is given the accelerator chosen here."""
    if cls.kind.boots_here:
        want = choose_accel(want, spec, image, count)
    return cls.settle(want, spec, image, count)
