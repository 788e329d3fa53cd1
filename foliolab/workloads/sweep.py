"""Sweeps (``compare --sweep``): a workload run at several values of one
of its parameters, or of the guest's vCPUs, each value a point of its own.

A point is a Workload of its own, named ``NAME@PARAM=VALUE`` (two swept
parameters: ``NAME@P=V,Q=W``, every combination a point): it has its own
boots under raw/<point>/, its own samples and statistics, it is
interleaved across the kernels like any workload and kept by --resume.
So everything that plans, keeps and derives workloads does the same for
points, unchanged; only the growth analysis (analysis/growth.py) reads a
sweep's points together, from the fields a point carries (``sweep_of``,
``point``, ``vcpus``), never from its name.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from foliolab.errors import UsageError
from foliolab.workloads.model import MACHINE_VCPUS, Workload

# A sweep point's name: the workload, then its swept values.
POINT_MARK = "@"
# Points one workload may be swept to (the product of its sweeps): a
# bound that keeps a dry run of any accepted sweep answering at once.
MAX_POINTS = 64


@dataclass(frozen=True)
class Sweep:
    """One ``--sweep``: a parameter of one workload and its values."""

    workload: str
    param: str  # the workload's parameter, or MACHINE_VCPUS
    values: tuple[str, ...]


def parse_sweeps(
    items: list[str],
    workloads: list[Workload],
    params: dict[str, dict[str, str]],
    numa_nodes: int,
    max_vcpus: int,
) -> list[Sweep]:
    """``--sweep [WORKLOAD.]PARAM=V1,V2,...``: without WORKLOAD, every
    selected workload that has PARAM (``vcpus``: every one). Each value
    is checked as --param checks it (vCPUs: 1..max_vcpus, and a multiple
    of the workload's NUMA nodes), before anything is built."""
    out: list[Sweep] = []
    for item in items:
        key, sep, text = item.partition("=")
        wname, dot, pname = key.rpartition(".")
        values = tuple(v.strip() for v in text.split(","))
        if not sep or not pname or not text:
            raise UsageError(
                f"--sweep {item!r} is not [WORKLOAD.]PARAM=V1,V2,...",
                hint="e.g. --sweep pageout.folio_kb=16,64,256 or "
                "--sweep vcpus=2,4,8",
            )
        if dot and not any(w.name == wname for w in workloads):
            raise UsageError(
                f"--sweep {item!r}: workload {wname!r} is not being run",
                hint="add it to --workloads, or sweep a workload that is",
            )
        targets = [
            w
            for w in workloads
            if (not dot or w.name == wname)
            and (pname == MACHINE_VCPUS or pname in w.params)
        ]
        if not targets:
            raise UsageError(
                f"--sweep {item!r}: no selected workload has a "
                f"parameter {pname!r}",
                hint="`foliolab workloads` lists each one's parameters",
            )
        if len(values) < 2 or len(set(values)) != len(values):
            raise UsageError(
                f"--sweep {item!r}: a sweep needs two different values "
                "or more",
                hint="for one value, give --param instead",
            )
        for w in targets:
            _check_values(w, pname, values, params, numa_nodes, max_vcpus)
            if any(s.workload == w.name and s.param == pname for s in out):
                raise UsageError(
                    f"--sweep sweeps {w.name}.{pname} twice",
                    hint="give each parameter's values in one --sweep",
                )
            out.append(Sweep(w.name, pname, values))
    for w in workloads:
        n = 1
        for s in out:
            n *= len(s.values) if s.workload == w.name else 1
        if n > MAX_POINTS:
            raise UsageError(
                f"--sweep makes {n} points of {w.name}; at most {MAX_POINTS}",
                hint="sweep fewer values, or one parameter at a time",
            )
    return out


def _check_values(
    w: Workload,
    pname: str,
    values: tuple[str, ...],
    params: dict[str, dict[str, str]],
    numa_nodes: int,
    max_vcpus: int,
) -> None:
    if pname in params.get(w.name, {}):
        raise UsageError(
            f"--param and --sweep both set {w.name}.{pname}",
            hint="give the parameter's values in --sweep alone",
        )
    for v in values:
        if pname == MACHINE_VCPUS:
            nodes = w.nodes(numa_nodes)
            ok = v.isdigit() and v.isascii() and 1 <= int(v) <= max_vcpus
            if not ok:
                raise UsageError(
                    f"--sweep: bad vCPU count {v!r} for {w.name}",
                    hint=f"give integers from 1 to {max_vcpus}",
                )
            if int(v) % nodes:
                raise UsageError(
                    f"--sweep: {v} vCPUs cannot be split into {w.name}'s "
                    f"{nodes} NUMA nodes",
                    hint=f"give vCPU counts divisible by {nodes}",
                )
            continue
        wrong = w.params[pname].check(v)
        if wrong:
            raise UsageError(
                f"--sweep: bad value {v!r} for {w.name}.{pname}",
                hint=f"give {wrong}",
            )


def point(
    w: Workload,
    values: tuple[tuple[str, str], ...],
    fixed: dict[str, str] | None = None,
) -> Workload:
    """``w`` at one point of its sweeps: its swept parameters' defaults
    set to the point's values, and those that follow the vCPUs (unless
    ``fixed`` by --param) to theirs."""
    given = dict(values)
    vcpus = int(given.pop(MACHINE_VCPUS, "0"))
    following = (
        w.follow_vcpus(vcpus) if vcpus and w.follow_vcpus is not None else {}
    )
    settings = {
        **{k: v for k, v in following.items() if k not in (fixed or {})},
        **given,
    }
    params = dict(w.params)
    for k, v in settings.items():
        params[k] = replace(params[k], default=v)
    return replace(
        w,
        name=point_name(w.name, values),
        params=params,
        sweep_of=w.name,
        point=values,
        vcpus=vcpus,
    )


def point_name(workload: str, values: tuple[tuple[str, str], ...]) -> str:
    """``pageout@folio_kb=16``: a point's name, its run directory's."""
    return workload + POINT_MARK + ",".join(f"{k}={v}" for k, v in values)


def parse_point_name(name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A point's name as (workload, values); ("name", ()) for a name
    that is not a point's."""
    base, mark, spec = name.partition(POINT_MARK)
    if not mark:
        return name, ()
    pairs = []
    for item in spec.split(","):
        k, _, v = item.partition("=")
        pairs.append((k, v))
    return base, tuple(pairs)


def expand(
    workloads: list[Workload],
    params: dict[str, dict[str, str]],
    sweeps: list[Sweep],
) -> tuple[list[Workload], dict[str, dict[str, str]]]:
    """The run's workloads with each swept one replaced by its points (in
    the order of its sweeps' values, the first sweep outermost), and the
    --param overrides of each point (its workload's)."""
    out: list[Workload] = []
    out_params: dict[str, dict[str, str]] = {}
    for w in workloads:
        mine = [s for s in sweeps if s.workload == w.name]
        if not mine:
            out.append(w)
            out_params[w.name] = params.get(w.name, {})
            continue
        for combo in itertools.product(*(s.values for s in mine)):
            values = tuple((s.param, v) for s, v in zip(mine, combo))
            p = point(w, values, params.get(w.name, {}))
            out.append(p)
            out_params[p.name] = params.get(w.name, {})
    return out, out_params
