"""A user's own workload: a folder outside the checkout, given where a
workload name is (``--workloads ./mywl``), holding a declaration
(``workload.toml``) and the program the guest runs once per sample (a
``#!/bin/sh`` script or a static binary).

The declaration names the program, its parameters (type, default, range)
and its metrics (unit, better direction, lead or not); load() checks all
of it and makes the same model.Workload the built-in folders declare,
whose job writes the program into the guest (model.GuestFile) and runs
it between the counter snapshots every sample takes. Its samples are
derived from the program's ``@@ metric NAME VALUE`` lines: a metric it
does not declare, or a lead metric missing, makes the sample invalid.

A run keeps a copy of each user folder it ran in its run directory
(``OUT/workloads/NAME/``, keep()), and reading the run loads them again
(load_kept()), so `report OUT` needs neither the folder nor its path.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from foliolab.errors import DamagedRunError, UsageError
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import common_checks
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    GuestFile,
    Metric,
    Param,
    Workload,
)

DECLARATION = "workload.toml"
# Where a run directory keeps the user folders it ran (keep()).
KEPT = "workloads"
# Where the guest gets a user workload's program; the script that runs
# it goes where the job sources every workload's script.
GUEST_HOME = "/foliolab/user"
GUEST_SCRIPTS = "/foliolab/workloads"  # job() sources <script>.sh here

# A workload's name is a word of lowercase letters, digits and dashes:
# it is a directory name, and --param NAME.PARAM splits at the last dot.
_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}\Z")
# A parameter becomes the guest's FL_<NAME> (upper case).
_PARAM = re.compile(r"[a-z][a-z0-9_]{0,39}\Z")
# A metric key as results.json holds it; dots and dashes allowed for
# the names the kernel test robot gives (stress-ng.vm.ops_per_sec).
# The program's file name: it goes into the guest's shell lines as it is.
_FILE = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,79}\Z")
_METRIC = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,79}\Z")

_TOP_KEYS = {
    "name",
    "description",
    "script",
    "memory_mb",
    "timeout_s",
    "params",
    "metrics",
}
_PARAM_KEYS = {"type", "default", "min", "max", "choices", "help"}
_PARAM_TYPES = ("integer", "flag", "choice", "word")
_METRIC_KEYS = {"better", "unit", "lead", "label"}
_DIRECTIONS = ("lower", "higher", NO_DIRECTION)
# The guest's shell is busybox's: a script must ask for /bin/sh.
_SHEBANGS = (b"#!/bin/sh\n", b"#!/bin/sh ", b"#! /bin/sh\n", b"#! /bin/sh ")
_ELF = b"\x7fELF"


@dataclass(frozen=True)
class UserWorkload:
    """A loaded folder: the Workload, and the two files it was made of
    (what a run directory keeps)."""

    workload: Workload
    folder: Path
    declaration: bytes
    script_name: str
    script: bytes

    @property
    def is_elf(self) -> bool:
        """The program is a binary (for the caller's machine check)."""
        return self.script.startswith(_ELF)


# Every user workload loaded in this process, by name: find() and
# get_workloads() consult it after the built-in ones.
_LOADED: dict[str, UserWorkload] = {}


def looks_like_path(token: str) -> bool:
    """A --workloads entry is a folder if it has a slash (``./mywl``,
    ``~/wl/x``); a built-in workload's name never has one."""
    return "/" in token


def loaded(name: str) -> UserWorkload | None:
    return _LOADED.get(name)


def _refuse(folder: Path, what: str, hint: str) -> UsageError:
    return UsageError(f"workload folder {folder}: {what}", hint=hint)


def load(folder: Path, builtin: set[str]) -> UserWorkload:
    """The folder's workload, checked, and registered under its name;
    UsageError (one line) for anything wrong with it. ``builtin``: the
    names it may not take."""
    return register(read(folder, builtin))


def read(folder: Path, builtin: set[str]) -> UserWorkload:
    """The folder's workload, checked (not registered)."""
    if not folder.is_dir():
        raise UsageError(
            f"workload folder {folder}: "
            + ("not a directory" if folder.exists() else "no such folder"),
            hint=f"give a folder holding {DECLARATION} and its script",
        )
    path = folder / DECLARATION
    if not path.is_file():
        raise _refuse(
            folder,
            f"no {DECLARATION}",
            hint="write one (docs/manual.md, 'Your own workload')",
        )
    return parse(folder, path.read_bytes(), builtin)


def parse(folder: Path, declaration: bytes, builtin: set[str]) -> UserWorkload:
    """The workload ``declaration`` (the text of ``folder``'s
    workload.toml) declares, with its script read from ``folder``."""
    try:
        d = tomllib.loads(declaration.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise _refuse(
            folder, f"{DECLARATION} is not TOML ({e})", "fix its syntax"
        ) from None
    _known_keys(folder, d, _TOP_KEYS, DECLARATION)
    name = d.get("name", folder.resolve().name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise _refuse(
            folder,
            f"name {name!r} is not a workload name",
            "give name = lowercase letters, digits and dashes, "
            "starting with a letter",
        )
    if name in builtin:
        raise _refuse(
            folder,
            f"name {name!r} is a built-in workload's",
            "give the folder's workload another name (name = ...)",
        )
    script_name, script = _script(folder, d)
    params = {
        p: _param(folder, p, spec)
        for p, spec in _table(folder, d, "params").items()
    }
    metrics = tuple(
        _metric(folder, m, spec)
        for m, spec in _table(folder, d, "metrics").items()
    )
    if not any(m.primary for m in metrics):
        raise _refuse(
            folder,
            "no lead metric",
            "mark the metric(s) a comparison is about with lead = true",
        )
    description = d.get("description", "")
    if not isinstance(description, str):
        raise _refuse(folder, "description is not text", "quote it")
    program = f"{GUEST_HOME}/{name}/{script_name}"
    w = Workload(
        name=name,
        # not the folder: the run directory's copy is loaded too
        title=f"user workload: {description or name}",
        script=f"user-{name}",
        params=params,
        metrics=metrics,
        derive=_derive_for(metrics),
        memory_mb=_int(folder, d, "memory_mb", 3072, 256, 65536),
        timeout=float(_int(folder, d, "timeout_s", 300, 10, 86400)),
        guest_files=(
            GuestFile(program, script, 0o755),
            GuestFile(
                f"{GUEST_SCRIPTS}/user-{name}.sh",
                _runner(name, program).encode(),
            ),
        ),
    )
    return UserWorkload(w, folder, declaration, script_name, script)


def _runner(name: str, program: str) -> str:
    """The guest script that runs the program once per sample, between
    the counter snapshots every workload takes, in /tmp; a non-zero exit
    makes the sample invalid."""
    return (
        f"# user workload {name}: {program} once per sample\n"
        "fl_sample() {\n"
        "\tfl_fault\n"
        "\tfl_snap before\n"
        f"\t(cd /tmp && {program}) ||\n"
        f'\t\tfl_invalid "{program} exited with $?"\n'
        "\tfl_snap after\n"
        "}\n"
    )


def _derive_for(
    metrics: tuple[Metric, ...],
) -> Callable[[GuestSample, dict[str, str]], Derived]:
    """The derive function of a workload declaring ``metrics``: the
    program's metrics as they are; an undeclared one, or a lead metric
    missing, makes the sample invalid (as a built-in's unmet setup)."""
    declared = {m.key for m in metrics}
    lead = [m.key for m in metrics if m.primary]

    def derive(s: GuestSample, params: dict[str, str]) -> Derived:
        d = Derived()
        common_checks(s, d, need_swap=False)
        for key, value in s.metrics.items():
            if key in declared:
                d.values[key] = value
            else:
                d.invalid.append(f"metric {key} is not declared")
        d.invalid += [
            f"no lead metric {k}" for k in lead if k not in s.metrics
        ]
        return d

    return derive


def register(uw: UserWorkload) -> UserWorkload:
    """``uw`` under its name for find(); the same folder loaded again is
    the one already there, another folder of that name is refused."""
    w = uw.workload
    had = _LOADED.get(w.name)
    if had is None:
        _LOADED[w.name] = uw
        return uw
    if (had.declaration, had.script) == (uw.declaration, uw.script):
        return had
    raise UsageError(
        f"two workload folders are named {w.name}: {had.folder} and "
        f"{uw.folder}, and they differ",
        hint="give one of them another name (name = ... in its "
        f"{DECLARATION}); a run resumed needs the folder it started with",
    )


def keep(out: Path, names: list[str]) -> None:
    """Copy each user workload among ``names`` into the run directory
    ``out`` (OUT/workloads/NAME/), for reading the run later."""
    for name in names:
        uw = _LOADED.get(name.partition("@")[0])
        if uw is None:
            continue
        home = out / KEPT / uw.workload.name
        home.mkdir(parents=True, exist_ok=True)
        (home / DECLARATION).write_bytes(uw.declaration)
        script = home / uw.script_name
        script.write_bytes(uw.script)
        script.chmod(0o755)


def load_kept(out: Path, builtin: set[str]) -> None:
    """Register the user workloads a run directory kept (keep()); a kept
    folder that no longer loads is a damaged run, named."""
    for home in sorted((out / KEPT).glob("*/")):
        try:
            uw = read(home, builtin)
        except UsageError as e:
            raise DamagedRunError(
                f"{out}: the kept workload folder does not load ({e})",
                hint=f"copy the workload's folder back to {home}",
            ) from None
        register(uw)  # refused if the command line's differs


def _known_keys(
    folder: Path, d: dict[str, Any], known: set[str], where: str
) -> None:
    unknown = sorted(set(d) - known)
    if unknown:
        raise _refuse(
            folder,
            f"unknown key(s) in {where}: {', '.join(unknown)}",
            f"known: {', '.join(sorted(known))}",
        )


def _table(folder: Path, d: dict[str, Any], key: str) -> dict[str, Any]:
    table = d.get(key, {})
    if not isinstance(table, dict) or not all(
        isinstance(v, dict) for v in table.values()
    ):
        raise _refuse(
            folder,
            f"{key} is not a table of tables",
            f"declare each as [{key}.NAME] with its keys",
        )
    return table


def _int(
    folder: Path, d: dict[str, Any], key: str, default: int, lo: int, hi: int
) -> int:
    value = d.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _refuse(folder, f"{key} is not an integer", f"give {key} = N")
    if not lo <= value <= hi:
        raise _refuse(
            folder, f"{key} = {value} is out of range", f"give {lo} to {hi}"
        )
    return value


def _script(folder: Path, d: dict[str, Any]) -> tuple[str, bytes]:
    """The program's file name and bytes, checked to run in the guest."""
    name = d.get("script")
    if not isinstance(name, str) or not name:
        raise _refuse(
            folder,
            f"no script named in {DECLARATION}",
            'give script = "FILE", a file of the folder',
        )
    if not _FILE.match(name):
        raise _refuse(
            folder,
            f"script {name!r} is not a file name in the folder",
            "put the script in the folder and give its name (letters, "
            "digits, _ . + -)",
        )
    path = folder / name
    if not path.is_file():
        raise _refuse(
            folder, f"script {name} not found", f"put {name} in {folder}"
        )
    if not os.access(path, os.X_OK):
        raise _refuse(
            folder, f"script {name} is not executable", f"chmod +x {path}"
        )
    data = path.read_bytes()
    if not data.startswith(_SHEBANGS) and not data.startswith(_ELF):
        raise _refuse(
            folder,
            f"script {name} is neither a #!/bin/sh script nor a binary",
            "the guest runs busybox's sh: start it with #!/bin/sh, or "
            "give a static binary",
        )
    return name, data


def _param(folder: Path, name: str, spec: dict[str, Any]) -> Param:
    where = f"params.{name}"
    if not _PARAM.match(name):
        raise _refuse(
            folder,
            f"parameter name {name!r} is not lowercase letters, digits and _",
            "rename it: the guest reads it as FL_" + name.upper(),
        )
    _known_keys(folder, spec, _PARAM_KEYS, where)
    kind = spec.get("type", "")
    if kind not in _PARAM_TYPES:
        raise _refuse(
            folder,
            f"{where} has type {kind!r}",
            f"give type = one of {', '.join(_PARAM_TYPES)}",
        )
    help_ = spec.get("help", "")
    if "default" not in spec:
        raise _refuse(folder, f"{where} has no default", "give default = ...")
    default = spec["default"]
    if isinstance(default, bool) or not isinstance(default, (int, str)):
        raise _refuse(
            folder,
            f"{where}: default {default!r} is neither text nor an integer",
            'give default = N or default = "WORD"',
        )
    extra = sorted(
        k
        for k in ("min", "max", "choices")
        if k in spec
        and (kind, k) not in {("integer", "min"), ("integer", "max")}
        and (kind, k) != ("choice", "choices")
    )
    if extra:
        raise _refuse(
            folder,
            f"{where}: a {kind} parameter has no {', '.join(extra)}",
            "drop them, or change its type",
        )
    if kind == "integer":
        lo, hi = spec.get("min"), spec.get("max")
        if not all(
            isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi)
        ):
            raise _refuse(
                folder,
                f"{where}: an integer parameter needs integer min and max",
                "give min = N and max = N",
            )
        assert isinstance(lo, int) and isinstance(hi, int)
        if not 0 <= lo <= hi:
            raise _refuse(
                folder,
                f"{where}: min {lo} and max {hi} are no range",
                "give 0 <= min <= max",
            )
        param = Param.integer(str(default), help_, lo, hi)
    elif kind == "flag":
        param = Param.flag(str(default), help_)
    elif kind == "choice":
        choices = spec.get("choices")
        words = Param("", "")  # a choice must be a word: it goes to sh
        if (
            not isinstance(choices, list)
            or not choices
            or not all(
                isinstance(c, str) and words.check(c) is None for c in choices
            )
        ):
            raise _refuse(
                folder,
                f"{where}: a choice parameter needs choices, a list of words",
                'give choices = ["a", "b"] (letters, digits, one . or -)',
            )
        param = Param(str(default), help_, choices=tuple(choices))
    else:
        param = Param(str(default), help_)
    wrong = param.check(str(default))
    if wrong:
        raise _refuse(
            folder,
            f"{where}: default {default!r} is out of its range",
            f"give {wrong}",
        )
    return param


def _metric(folder: Path, key: str, spec: dict[str, Any]) -> Metric:
    where = f"metrics.{key}"
    if not _METRIC.match(key):
        raise _refuse(
            folder,
            f"metric name {key!r} is not letters, digits, _ . and -",
            "rename it",
        )
    _known_keys(folder, spec, _METRIC_KEYS, where)
    better = spec.get("better")
    if better not in _DIRECTIONS:
        raise _refuse(
            folder,
            f"{where} has no direction"
            if better is None
            else f"{where}: better = {better!r}",
            f'give better = "lower", "higher" or "{NO_DIRECTION}"',
        )
    unit, label = spec.get("unit", ""), spec.get("label", key)
    lead = spec.get("lead", False)
    if not isinstance(unit, str) or not isinstance(label, str):
        raise _refuse(folder, f"{where}: unit or label not text", "quote it")
    if not isinstance(lead, bool):
        raise _refuse(
            folder, f"{where}: lead is not true or false", "give lead = true"
        )
    return Metric(key, unit, better, label, primary=lead)
