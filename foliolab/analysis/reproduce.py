"""The command that reproduces a run, and what each of its kernels was.

A report ends its headline with them: the command as it was given, with
the kernels spelled out as ``--kernel NAME=SPEC`` where it named them by
``--patches`` or by default (whose meaning is this checkout's, not the
reader's), or, for a run that recorded no command, one written from its
manifest; then each kernel as built (version, commit, series sha), as far
as the manifest has them.
"""

from __future__ import annotations

import shlex

from foliolab.manifest import RunManifest
from foliolab.workloads import find


def kernel_options(m: RunManifest) -> list[str]:
    """``--kernel NAME=SPEC`` for every kernel of the run, baseline first."""
    return [a for k in m.kernels for a in ("--kernel", f"{k.name}={k.spec}")]


def _names_kernels(argv: list[str]) -> bool:
    return any(a == "--kernel" or a.startswith("--kernel=") for a in argv)


def without_options(
    argv: list[str], valued: tuple[str, ...], flags: tuple[str, ...] = ()
) -> list[str]:
    """``argv`` without the options ``valued`` (with their value, given
    as ``--opt VALUE`` or ``--opt=VALUE``) and the ``flags``."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in valued:
            skip = True
        elif a not in flags and not a.startswith(
            tuple(f"{o}=" for o in valued)
        ):
            out.append(a)
    return out


def _changed_params(m: RunManifest) -> list[str]:
    """``--param WORKLOAD.NAME=VALUE`` for each parameter the run did not
    leave at its default."""
    out = []
    for w, values in m.params.items():
        known = find(w)
        defaults = known.params if known is not None else {}
        for k, v in values.items():
            if k not in defaults or defaults[k].default != v:
                out += ["--param", f"{w}.{k}={v}"]
    return out


def written(m: RunManifest) -> list[str]:
    """A compare command for a run that recorded none: its kernels,
    workloads, runs, machine and changed parameters, from the manifest."""
    cmd = [
        "foliolab",
        "compare",
        *kernel_options(m),
        "--workloads",
        ",".join(m.workloads),
        "--runs",
        str(m.runs),
    ]
    for option, value in (("--arch", m.arch), ("--config", m.config)):
        if value and value != "?":  # known to the manifest
            cmd += [option, value]
    if m.samples_per_boot != 1:
        cmd += ["--samples-per-boot", str(m.samples_per_boot)]
    if m.count:
        cmd.append("--count")
    for r in m.extra_roots:
        cmd += ["--root", r]
    return cmd + _changed_params(m)


def command(m: RunManifest) -> list[str]:
    """The run's command with every kernel's spec in it."""
    argv = list(m.command)
    if not argv:
        return written(m)
    if argv[1:2] != ["compare"] or _names_kernels(argv):
        return argv
    argv = without_options(argv, ("--patches",))
    return argv[:2] + kernel_options(m) + argv[2:]


def kernel_note(m: RunManifest, name: str) -> str:
    """``vanilla=base: 6.12.117, commit 9dc52e640653``: a kernel as built,
    as far as the manifest knows it ("" if it knows nothing of it)."""
    k = m.kernel(name)
    parts = [
        p
        for p in (
            k.built.release if k.built else "",
            f"commit {k.commit[:12]}" if k.commit else "",
            f"series sha {k.series_sha}" if k.series_sha else "",
            k.built.origin if k.built else "",
        )
        if p
    ]
    return f"{name}={k.spec}: {', '.join(parts)}" if parts else ""


def same_kernel(m: RunManifest) -> bool:
    """An A/A run: every kernel has the same spec and, where built, the
    same commit and config."""
    specs = {k.spec for k in m.kernels}
    builds = {k.build_hash for k in m.kernels if k.commit}
    return len(m.kernels) > 1 and len(specs) == 1 and len(builds) <= 1


def line(m: RunManifest) -> str:
    """The command, shell-quoted."""
    return shlex.join(command(m))
