"""The run's record: a RunManifest, written when a run starts and completed
as it ends (OUT/environment.json).

What was asked (command line, kernels by the names the user gave and
their specs, workloads and their resolved parameters, machine, executor),
what the stages found (each kernel's build: commit, config hash and every
other field the build reports; the image, QEMU, the accelerator used) and
how the run ended (errors, failed boots, stopped). The report reads the
manifest; ``--resume`` checks a new request against it. Its JSON keeps the
names results.json's ``environment`` has always had (SPEC §7: add, don't
rename).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

from foliolab.bootrecord import read_json
from foliolab.errors import DamagedRunError, UsageError

MANIFEST = "environment.json"
DAMAGED = ("results.json's `environment` is a copy of it as of the run's "
           "last report; or run the comparison again")
# The kernels of a --patches run (--kernel runs name their own).
VARIANTS = ("vanilla", "patched")


def plain(value):
    """A dataclass's fields as JSON-ready values, whatever they are (paths
    and enums as their text): a record of a kernel follows the fields its
    classes have, whatever fields they gain."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name))
                for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


@dataclass
class SeriesRecord:
    """A ``SOURCE+DIR[:N]`` kernel's series and the tree it was applied to
    (the spec as given is its KernelRecord's ``spec``)."""

    directory: str                  # DIR as given
    patches: int                    # how many were applied (N, else all)
    sha: str                        # the series' digest (source.Series)
    onto: str                       # SOURCE as given: base, debian:7.3, ...
    tree: str                       # a package and version, or a clone
    commit: str                     # the commit it was applied to

    @classmethod
    def from_json(cls, d: dict | None) -> SeriesRecord | None:
        if not d:
            return None
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


@dataclass
class KernelRecord:
    """One kernel of the run, by the name the user gave it."""

    name: str
    spec: str                       # SPEC as given
    given: dict = field(default_factory=dict)   # its KernelSpec's fields
    built: dict = field(default_factory=dict)   # its build.Kernel's fields
    series: SeriesRecord | None = None          # SOURCE+DIR: what applied

    @property
    def commit(self) -> str:
        return self.built.get("commit", "")

    @property
    def config_sha(self) -> str:
        return self.built.get("config_sha", "")

    @property
    def build_hash(self) -> tuple[str, str]:
        """What makes two builds the same kernel."""
        return self.commit, self.config_sha


@dataclass
class ExecutorRecord:
    kind: str = "qemu"
    device_type: str = ""
    tags: list[str] = field(default_factory=list)
    lava_version: str = ""
    rounds_per_block: int = 0
    server: str = ""
    artifacts_url: str = ""


@dataclass
class RunManifest:
    command: list[str]
    foliolab: str
    started: str
    host: dict
    arch: str
    accel: str                      # asked for (auto, tcg, kvm), then used
    vcpus: int
    cpu: str
    numa_nodes: int
    config: str
    base_package: str
    base_version: str
    patches_label: str
    kernels: list[KernelRecord]     # in boot order; the first the baseline
    runs: int
    samples_per_boot: int
    workloads: list[str]
    params: dict[str, dict[str, str]]
    memory_mb: dict[str, int]
    numa_nodes_per_workload: dict[str, int]
    fault_injection: str | None = None
    records_on: str = "port"
    executor: ExecutorRecord = field(default_factory=ExecutorRecord)
    count: dict | None = None
    qemu: str = ""
    image: str = ""
    patches: list[str] = field(default_factory=list)
    attribution: dict[str, int] = field(default_factory=dict)
    # --root: functions counted in every workload besides its own roots
    extra_roots: list[str] = field(default_factory=list)
    timeout: float | None = None
    monitors: bool = False          # vmstat/interrupts sampled (monitors.py)
    errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    stopped: str = ""               # the signal that stopped the run
    resumed: list[list[str]] = field(default_factory=list)  # by commands
    finished: str = ""

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.kernels]

    def kernel(self, name: str) -> KernelRecord:
        return next(k for k in self.kernels if k.name == name)

    @property
    def accel_label(self) -> str:
        """The accelerator as the report names it."""
        if self.executor.kind == "lava":
            return f"lava {self.executor.device_type}"
        return self.accel

    def to_json(self) -> dict:
        d = plain(self)
        d.pop("kernels")
        d["command_line"] = d.pop("command")
        d["accel"] = self.accel_label
        d["kernels"] = self.names
        d["kernel_specs"] = {k.name: k.spec for k in self.kernels}
        d["kernel_records"] = [plain(k) for k in self.kernels]
        if any(k.built for k in self.kernels):
            d["commits"] = {k.name: k.commit for k in self.kernels}
            d["config_sha"] = {k.name: k.config_sha for k in self.kernels}
            d["build_seconds"] = {k.name: round(k.built.get("elapsed", 0.0),
                                                1) for k in self.kernels}
        return d

    def write(self, out: Path) -> None:
        tmp = out / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        tmp.replace(out / MANIFEST)

    @classmethod
    def from_json(cls, d: dict) -> RunManifest:
        """A manifest from its JSON, of this version or an older one (runs
        from before --kernel, before the manifest had its records)."""
        names = list(d.get("kernels") or VARIANTS)
        specs, commits = d.get("kernel_specs", {}), d.get("commits", {})
        shas = d.get("config_sha", {})
        records = {r["name"]: r for r in d.get("kernel_records", [])}
        kernels = [KernelRecord(
            n, specs.get(n, "?"), records.get(n, {}).get("given", {}),
            records.get(n, {}).get("built") or (
                {"commit": commits[n], "config_sha": shas.get(n, "")}
                if n in commits else {}),
            SeriesRecord.from_json(records.get(n, {}).get("series")))
            for n in names]
        ex = d.get("executor") or {}
        fields = {f.name for f in dataclasses.fields(ExecutorRecord)}
        executor = ExecutorRecord(**{k: v for k, v in ex.items()
                                     if k in fields})
        accel = d.get("accel", "?")
        if accel.startswith("lava "):
            accel = "lava"
        return cls(
            command=d.get("command_line", []), foliolab=d.get("foliolab", "?"),
            started=d.get("started", ""), host=d.get("host", {}),
            arch=d.get("arch", "?"), accel=accel, vcpus=d.get("vcpus", 0),
            cpu=d.get("cpu", "?"), numa_nodes=d.get("numa_nodes", 1),
            config=d.get("config", "?"),
            base_package=d.get("base_package", ""),
            base_version=d.get("base_version", ""),
            patches_label=d.get("patches_label", "?"), kernels=kernels,
            runs=d.get("runs", 0),
            samples_per_boot=d.get("samples_per_boot", 1),
            workloads=d.get("workloads", []), params=d.get("params", {}),
            memory_mb=d.get("memory_mb", {}),
            numa_nodes_per_workload=d.get("numa_nodes_per_workload", {}),
            fault_injection=d.get("fault_injection"),
            records_on=d.get("records_on", "port"), executor=executor,
            count=d.get("count"), qemu=d.get("qemu", "?"),
            image=d.get("image", ""), patches=d.get("patches", []),
            attribution=d.get("attribution", {}) or {},
            extra_roots=d.get("extra_roots", []),
            timeout=d.get("timeout"), monitors=d.get("monitors", False),
            errors=d.get("errors", []),
            failures=d.get("failures", []), stopped=d.get("stopped", ""),
            resumed=d.get("resumed", []),
            finished=d.get("finished", ""))

    @classmethod
    def read(cls, out: Path) -> RunManifest:
        """OUT/environment.json; DamagedRunError naming the file and what
        is wrong with it (never a traceback)."""
        path = out / MANIFEST
        if not path.exists():
            if not any((out / "raw").glob("*/*/job.json")):
                raise UsageError(f"{out} holds no foliolab results",
                                 hint="give the --out directory of a "
                                      "compare run")
            raise DamagedRunError(
                f"{path}: missing, though {out / 'raw'} holds the run's "
                "boots: what was asked (kernels, workloads, parameters) is "
                "not known", hint="copy the run's environment.json back, or "
                                  "run it again")
        d = read_json(path, ("workloads",), DAMAGED)
        try:
            return cls.from_json(d)
        except (TypeError, AttributeError, KeyError) as e:
            raise DamagedRunError(f"{path}: a field has the wrong form "
                                  f"({e})", hint=DAMAGED) from None
