"""The run's record: a RunManifest, written when a run starts and completed
as it ends (OUT/environment.json).

What was asked (command line, kernels by the names the user gave and
their specs, workloads and their resolved parameters, machine, executor),
what the stages found (each kernel's build: commit, config hash and every
other field the build reports; the image, QEMU, the accelerator used) and
how the run ended (errors, failed boots, stopped). The report reads the
manifest; ``--resume`` checks a new request against it. Its JSON keeps the
names results.json's ``environment`` has always had (results.json's
format: add, don't rename).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from foliolab import records, workloads
from foliolab.bootrecord import read_json
from foliolab.errors import DamagedRunError, UsageError
from foliolab.executors import read_record
from foliolab.executors.base import ExecutorRecord
from foliolab.kernelrecord import (
    BuildRecord,
    KernelRecord,
    SeriesRecord,
    SpecRecord,
    check_json,
    known_fields,
    plain,
)

MANIFEST = "environment.json"
DAMAGED = (
    "results.json's `environment` is a copy of it as of the run's "
    "last report; or run the comparison again"
)
# The kernels of a --patches run (--kernel runs name their own).
VARIANTS = ("vanilla", "patched")

T = TypeVar("T")


@dataclass
class HostRecord:
    """The machine the run started on."""

    kernel: str = ""  # its kernel release
    cpus: int | None = None
    machine: str = ""  # x86_64, aarch64


@dataclass
class CountRecord:
    """How a --count run counted (the same for all its kernels)."""

    plugin: str = ""  # the counter plugin's path
    plugin_api: int = 0
    mode: str = ""
    roots: str = ""  # what a root counts on this arch
    cmdline: str = ""  # what counting adds to the kernel's


def _typed(cls: type[T], d: dict[str, Any] | None) -> T | None:
    """A record of ``cls`` from its JSON, None for none; a key it does not
    know (a later version's) is passed over."""
    return cls(**known_fields(cls, d)[0]) if d else None


# What a manifest from before a field existed reads as, for the fields
# a new manifest always has.
OLD_MANIFEST = {
    "command": [],
    "foliolab": "?",
    "started": "",
    "arch": "?",
    "accel": "?",
    "vcpus": 0,
    "cpu": "?",
    "numa_nodes": 1,
    "config": "?",
    "base_package": "",
    "base_version": "",
    "patches_label": "?",
    "runs": 0,
    "samples_per_boot": 1,
    "workloads": [],
    "params": {},
    "memory_mb": {},
    "numa_nodes_per_workload": {},
}


@dataclass
class RunManifest:
    command: list[str]
    foliolab: str
    started: str
    host: HostRecord
    arch: str
    accel: str  # asked for (auto, tcg, kvm), then used
    vcpus: int
    cpu: str
    numa_nodes: int
    config: str
    base_package: str
    base_version: str
    patches_label: str
    kernels: list[KernelRecord]  # in boot order; the first the baseline
    runs: int
    samples_per_boot: int
    workloads: list[str]
    params: dict[str, dict[str, str]]
    memory_mb: dict[str, int]
    numa_nodes_per_workload: dict[str, int]
    fault_injection: str | None = None
    records_on: str = "port"
    executor: ExecutorRecord = field(default_factory=ExecutorRecord)
    count: CountRecord | None = None
    qemu: str = ""
    image: str = ""
    patches: list[str] = field(default_factory=list)
    attribution: dict[str, int] = field(default_factory=dict)
    # --root: functions counted in every workload besides its own roots
    extra_roots: list[str] = field(default_factory=list)
    timeout: float | None = None
    monitors: bool = False  # vmstat/interrupts sampled (monitors.py)
    # --sweep: workload -> parameter -> its values, in the order swept
    # (each point is a workload of its own in ``workloads``)
    sweeps: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # the vCPUs of the points of a vCPU sweep (the others: ``vcpus``)
    vcpus_per_workload: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    stopped: str = ""  # the signal that stopped the run
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
        return self.executor.accel_label(self.accel)

    def to_json(self) -> dict[str, Any]:
        # the fields in their order, the executor's record as its class
        # writes it
        d: dict[str, Any] = {
            f.name: self.executor.to_json()
            if f.name == "executor"
            else plain(getattr(self, f.name))
            for f in dataclasses.fields(self)
        }
        d.pop("kernels")
        d["command_line"] = d.pop("command")
        for key in ("sweeps", "vcpus_per_workload"):
            if not d[key]:  # a run without a sweep reads as before them
                del d[key]
        d["accel"] = self.accel_label
        d["kernels"] = self.names
        d["kernel_specs"] = {k.name: k.spec for k in self.kernels}
        d["kernel_records"] = [k.to_json() for k in self.kernels]
        if any(k.built for k in self.kernels):
            d["commits"] = {k.name: k.commit for k in self.kernels}
            d["config_sha"] = {k.name: k.config_sha for k in self.kernels}
            d["build_seconds"] = {
                k.name: round(k.built.elapsed if k.built else 0.0, 1)
                for k in self.kernels
            }
        return d

    def write(self, out: Path) -> None:
        # a user's workload folder is part of what was asked: its copy
        # lets the run be read and resumed without it
        workloads.keep_user_workloads(out, self.workloads)
        records.write_whole(
            out / MANIFEST, json.dumps(self.to_json(), indent=1) + "\n"
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunManifest:
        """A manifest from its JSON, of this version or an older one (runs
        from before --kernel, before the manifest had its records): each
        field from its own key, typed; what an old manifest lacks as
        OLD_MANIFEST says."""
        fields, _ = known_fields(cls, d)
        accel = d.get("accel", "?")
        return cls(
            **{
                **OLD_MANIFEST,
                **fields,
                "command": d.get("command_line", []),
                "accel": "lava" if accel.startswith("lava ") else accel,
                "host": _typed(HostRecord, d.get("host")) or HostRecord(),
                "kernels": _kernel_records(d),
                "executor": read_record(d.get("executor")),
                "count": _typed(CountRecord, d.get("count")),
                "attribution": d.get("attribution") or {},
            }
        )

    @classmethod
    def read(cls, out: Path) -> RunManifest:
        """OUT/environment.json; DamagedRunError naming the file and what
        is wrong with it (never a traceback)."""
        path = out / MANIFEST
        if not path.exists():
            if not any((out / "raw").glob("*/*/job.json")):
                raise UsageError(
                    f"{out} holds no foliolab results",
                    hint="give the --out directory of a compare run",
                )
            raise DamagedRunError(
                f"{path}: missing, though {out / 'raw'} holds the run's "
                "boots: what was asked (kernels, workloads, parameters) is "
                "not known",
                hint="copy the run's environment.json back, or run it again",
            )
        d = read_json(path, ("workloads",), DAMAGED)
        check_fields(path, d)
        workloads.load_kept(out)  # the user workloads it ran, by name
        try:
            return cls.from_json(d)
        except (TypeError, AttributeError, KeyError, ValueError) as e:
            raise DamagedRunError(
                f"{path}: a field has the wrong form ({e})", hint=DAMAGED
            ) from None


def check_fields(
    path: Path, d: dict[str, Any], hint: str = DAMAGED, where: str = ""
) -> None:
    """The manifest's fields that a report counts or lists, each of its
    type (a string of kernels would list its letters, -1 runs would be
    printed as they are): DamagedRunError naming the field. Also the
    copy of it in results.json (``where``: "environment"), which diff
    prints."""
    f = records.Fields(path, d, hint, where)
    f.strings("workloads", default=False)
    for key in ("kernels", "command_line", "errors", "failures", "patches"):
        f.strings(key)
    for key in ("runs", "samples_per_boot", "numa_nodes"):
        if key in d:
            f.integer(key, minimum=1 if key != "runs" or d[key] else 0)
    if "vcpus" in d:
        f.integer("vcpus", minimum=0)
    for key in ("started", "finished", "stopped", "arch", "config"):
        f.string(key, "")
    f.optional_number("timeout", minimum=0)
    for key in ("memory_mb", "numa_nodes_per_workload", "vcpus_per_workload"):
        for w, n in f.object(key).items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                f.wrong(f"{key}.{w}", "a whole number", n)
    for key in ("cpu", "qemu", "host_line", "base_version", "patches_label"):
        if d.get(key) is not None:
            f.string(key)
    for key in ("kernel_specs", "commits", "config_sha"):
        for name, v in f.object(key).items():
            if not isinstance(v, str):
                f.wrong(f"{key}.{name}", "text", v)
    for w, given in f.object("params").items():
        if not isinstance(given, dict) or not all(
            isinstance(v, str) for v in given.values()
        ):
            f.wrong(f"params.{w}", "an object of texts", given)
    for i, k in enumerate(f.objects("kernel_records")):
        check_json(path, k, DAMAGED, f"kernel_records[{i}]")


def _kernel_records(d: dict[str, Any]) -> list[KernelRecord]:
    """The kernels of a manifest's JSON: from their records, or for a run
    from before them, from the names, specs and commits beside them."""
    names = list(d.get("kernels") or VARIANTS)
    specs, commits = d.get("kernel_specs", {}), d.get("commits", {})
    shas = d.get("config_sha", {})
    records = {r["name"]: r for r in d.get("kernel_records", [])}
    out = []
    for n in names:
        r = records.get(n, {})
        built = r.get("built") or (
            {"commit": commits[n], "config_sha": shas.get(n, "")}
            if n in commits
            else None
        )
        out.append(
            KernelRecord(
                n,
                specs.get(n, "?"),
                SpecRecord.from_json(r.get("given")),
                BuildRecord.from_json(built),
                SeriesRecord.from_json(r.get("series")),
            )
        )
    return out
