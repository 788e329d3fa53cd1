"""A measured run's request, and what each of its stages needs of it.

The command line asks for a run as one flat ``Request``; the orchestrator
turns it, once (``Request.stages``), into these inputs, and each stage is
handed its own:

    source -> build      KernelsWanted   (kernel/: trees, store, build)
    image                the arch alone  (kernel/image.py)
    boot                 MachineShape    (the BootSpec every boot varies)
    plan -> capture -> samples
                         BootPlan        (measure.py, through the executor)
    executor             ExecutorOptions (executors/)
    statistics, report   the run directory alone (report.write_report)

so that a stage's signature says what it depends on, and a new option
reaches the stages that read it and no other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from foliolab.arch import Arch, get_arch
from foliolab.boot.measure import PlannedBoot, plan
from foliolab.executors import ExecutorOptions
from foliolab.executors.base import BootSpec
from foliolab.kernel.kconfig import debug_cmdline
from foliolab.kernel.specs import KernelSpec, describe, from_patches
from foliolab.workloads.model import Workload


@dataclass(frozen=True)
class KernelsWanted:
    """The kernels to have built (or found kept), baseline first, for
    one arch and config fragment."""

    specs: tuple[KernelSpec, ...]
    arch: Arch
    config: str  # the fragment: perf, debug, ...
    label: str  # how the manifest names the set
    # --patches (no --kernel): the series whose patch names the manifest
    # lists; None otherwise
    patches: Path | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.specs)

    @property
    def baseline(self) -> KernelSpec:
        return self.specs[0]


@dataclass(frozen=True)
class MachineShape:
    """The guest machine every boot of the run shares (a workload then
    sets its memory, NUMA nodes, time limit and kernel arguments)."""

    arch: Arch
    accel: str  # as asked: auto, tcg or kvm
    vcpus: int
    numa_nodes: int
    cpu: str  # TCG CPU model; "" = the arch's
    config: str  # its fragment's kernel arguments
    console_results: bool  # records framed on the console

    def boot_spec(self, kernel: Path, accel: str) -> BootSpec:
        """The machine booting ``kernel`` with the accelerator chosen
        (``accel`` resolved: tcg or kvm)."""
        return BootSpec(
            self.arch,
            kernel,
            vcpus=self.vcpus,
            numa_nodes=self.numa_nodes,
            cpu=self.cpu,
            accel=accel,
            cmdline=debug_cmdline(self.config),
            console_results=self.console_results,
        )


@dataclass(frozen=True)
class BootPlan:
    """Which boots, in which order, and where their results go."""

    workloads: tuple[Workload, ...]
    params: dict[str, dict[str, str]]
    kernels: tuple[str, ...]  # names, baseline first
    runs: int
    samples_per_boot: int
    out: Path
    count: bool = False  # a counting boot after each timed one
    roots: tuple[str, ...] = ()  # --root, counted in every workload
    timeout: float | None = None  # per boot; default the workload's
    fault: str = ""  # injected into all but the baseline
    monitors: bool = False
    resume: bool = False  # keep the boots that have a boot.json
    replace: bool = False  # --force: an earlier run in ``out`` is deleted

    def boots(self, counted: bool) -> list[PlannedBoot]:
        """Every boot in boot order (with its counting boot if
        ``counted``)."""
        return plan(
            list(self.workloads),
            self.params,
            self.kernels,
            self.runs,
            self.samples_per_boot,
            counted=counted,
        )

    @property
    def samples(self) -> int:
        return self.runs * len(self.kernels) * len(self.workloads)


@dataclass(frozen=True)
class RunStages:
    """A run's request as its stages' inputs, and what the manifest keeps
    of the command beside them."""

    kernels: KernelsWanted
    machine: MachineShape
    plan: BootPlan
    executor: ExecutorOptions
    command: tuple[str, ...] = ()  # as typed, for the manifest
    attribution: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False  # say the plan, run nothing


@dataclass
class Request:
    """A measured run, as the command line asks for it: every option in
    one place, which ``stages`` turns into each stage's input."""

    workloads: list[Workload]
    params: dict[str, dict[str, str]]
    runs: int
    patches: Path | None  # None: A/A (vanilla vs vanilla)
    arch: str
    out: Path
    config: str = "perf"
    accel: str = "auto"
    vcpus: int = 2
    numa_nodes: int = 1
    cpu: str = ""  # TCG CPU model; "" = the arch's default
    samples_per_boot: int = 1
    fault: str = ""
    timeout: float | None = None  # per-boot limit; default: the workload's
    count: bool = False  # add a counting boot per sample
    # --root: counted in every workload (``workloads`` already count them)
    roots: tuple[str, ...] = ()
    # --kernel NAME=SPEC, baseline first; empty: --patches' two kernels
    kernels: list[KernelSpec] = field(default_factory=list)
    attribution: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False  # print the plan, run nothing
    records_on: str = "port"  # "port" or "console" (as on a board)
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    resume: bool = False  # finish the run in ``out``
    force: bool = False  # replace a run already in ``out``
    command: list[str] = field(default_factory=list)
    monitors: bool = False  # sample vmstat/interrupts each second

    @property
    def console_results(self) -> bool:
        # a LAVA job has no results port: its records are on the console
        return (
            self.records_on == "console"
            or not self.executor.executor.results_port
        )

    @property
    def specs(self) -> list[KernelSpec]:
        """The kernels to compare: ``--kernel``s, else ``--patches``' two."""
        return self.kernels or from_patches(self.patches)

    def stages(self) -> RunStages:
        """The request, once, as each stage's own input: what the kernels,
        the machine, the plan of boots and the executor are given."""
        arch = get_arch(self.arch)
        specs = tuple(self.specs)
        label = (
            describe(list(specs))
            if self.kernels
            else "none (vanilla vs vanilla)"
            if self.patches is None
            else str(self.patches)
        )
        return RunStages(
            kernels=KernelsWanted(
                specs,
                arch,
                self.config,
                label,
                None if self.kernels else self.patches,
            ),
            machine=MachineShape(
                arch,
                self.accel,
                self.vcpus,
                self.numa_nodes,
                self.cpu,
                self.config,
                self.console_results,
            ),
            plan=BootPlan(
                tuple(self.workloads),
                self.params,
                tuple(k.name for k in specs),
                self.runs,
                self.samples_per_boot,
                self.out,
                count=self.count,
                roots=self.roots,
                timeout=self.timeout,
                fault=self.fault,
                monitors=self.monitors,
                resume=self.resume,
                replace=self.force,
            ),
            executor=self.executor,
            command=tuple(self.command),
            attribution=dict(self.attribution),
            dry_run=self.dry_run,
        )
