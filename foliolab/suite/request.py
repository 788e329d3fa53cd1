"""What `foliolab test` asks of the suite, as one value: commands/test.py
builds it from the command line (as commands/measure.py builds compare's
stages.Request), run.py builds, boots and judges from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from foliolab.arch import Arch
from foliolab.coverage import run as coveragerun
from foliolab.executors import ExecutorOptions
from foliolab.kernel import source
from foliolab.kernel import upstream_selftests as upstream_mod
from foliolab.kernel.specs import KernelSpec
from foliolab.suite.plan import KSELFTESTS, StressPlan


@dataclass(frozen=True)
class SuiteRequest:
    """One suite run: the tree's kernel built with ``purpose``'s config
    and booted once per MGLRU setting of ``lru_gens`` by ``executor``, the
    results in ``out``."""

    tree: source.Tree
    arch: Arch
    out: Path
    lru_gens: tuple[str, ...] = ("y", "n")  # MGLRU on (y), off (n)
    # the mm kselftests (names of plan.KSELFTESTS) the first boot runs
    kselftests: tuple[str, ...] = tuple(KSELFTESTS)
    # the kselftests' results written as vanilla's (tests/*.json)
    record_baseline: bool = False
    accel: str = "tcg"
    count: bool = False  # each guest test's kernel work counted
    append: tuple[str, ...] = ()  # extra kernel arguments
    purpose: str = "debug"  # the config: debug, kasan or coverage
    stress: StressPlan = field(default_factory=StressPlan)
    # just these guest programs or PROGRAM.CASEs (checked: check_only),
    # each run ``repeat`` times (to chase a flaky case)
    only: tuple[str, ...] = ()
    repeat: int = 1
    # upstream 7.3's mm selftests to run too, in every boot
    upstream: upstream_mod.Plan | None = None
    # the series' lines to measure, on the coverage kernel (``purpose``
    # kconfig.COVERAGE), reported after the suite's own results
    coverage: coveragerun.Plan | None = None
    # who runs the boots (--executor and its flags)
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    # the spec that names the tree's kernel (--kernel, or --variant as
    # vanilla=base, patched=base+DIR), for the run's record of it
    kernel: KernelSpec | None = None
