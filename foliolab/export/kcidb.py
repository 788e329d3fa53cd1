"""A run as KernelCI's common database reads it: a KCIDB v5.3 document
(``foliolab report DIR --kcidb FILE --origin NAME``).

Read from the run's records only, whatever command made it (compare,
test, check, check --robot, bisect, coverage): the kernels and the
tests of OUT/outcomes.json (testrecord.Outcomes, its kernels
kernelrecord.KernelRecord), and for a compare the metrics of
OUT/results.json (analysis.diff.Run, the reader `diff` uses). What maps
to what (docs/manual.md, "Results for KernelCI (KCIDB)"):

- a kernel is a checkout: its base and the patches applied, as KCIDB
  names them (``patchset_hash``; ``git_commit_hash`` only where the base
  is a git tree, whose commit is upstream's; a Debian source's commit is
  the lab's own import and is left out);
- a kernel's build is a build (architecture, config); a robot cell a
  kernel was checked in is a build of its own;
- a test outcome is a test at ``foliolab.`` + its path; a compare
  metric is a test per kernel at ``foliolab.WORKLOAD.METRIC``, DONE with
  the kernel's mean as its number.

Ids are ``ORIGIN:RUN:...`` with RUN the run's name (its directory's, or
the one given), so the same run exports to the same ids. The document
is validated with kcidb-io before it is written; one the schema refuses
is never written (ExportError, the first thing it refuses).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.analysis import diff
from foliolab.errors import (
    DamagedRunError,
    ExportError,
    SetupError,
    UsageError,
)
from foliolab.kernel import source
from foliolab.kernel import sources as kernel_sources
from foliolab.kernelrecord import KernelRecord, SeriesRecord, SpecRecord
from foliolab.testrecord import OUTCOMES, Outcomes, TestOutcome, TestStatus

MAJOR, MINOR = 5, 3
# KCIDB's origin (kcidb_io's origin_pattern): what every id starts with
ORIGIN = re.compile(r"[a-z0-9_]+")
# a part of a KCIDB test path (kcidb_io's test_path_re, one part)
PATH_PART = re.compile(r"[A-Za-z0-9_-]+")
ARCHITECTURE = re.compile(r"[a-z0-9_]*")
COMMIT = re.compile(r"[0-9a-f]{40}")
# the top of every test path foliolab sends (KCIDB's tests.yaml has no
# name for it yet: a maintainer of the catalog is asked for one)
TOP = "foliolab"
# source kinds whose commit is the tree's own (upstream's, or the
# developer's clone of it); a Debian source's is the lab's import of
# the package, which nobody else can resolve
UPSTREAM_KINDS = ("git",)
DEBIAN_KINDS = ("debian", "base")

STATUS = {
    TestStatus.PASS: "PASS",
    TestStatus.FAIL: "FAIL",
    TestStatus.SKIP: "SKIP",
    TestStatus.ERROR: "ERROR",
    TestStatus.MISS: "MISS",
    TestStatus.DONE: "DONE",
}


def check_origin(origin: str) -> None:
    """UsageError unless ``origin`` is a KCIDB origin name."""
    if not ORIGIN.fullmatch(origin):
        raise UsageError(
            f"--origin {origin!r} is not a KCIDB origin (lower-case "
            "letters, digits and _ only)",
            hint="give the name KernelCI knows your lab by, e.g. "
            "--origin foliolab",
        )


def path_part(text: str) -> str:
    """``text`` as one part of a KCIDB test path: any character but a
    letter, digit, _ or - as _."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"


def test_path(path: str) -> str:
    """An outcome's dotted path as KCIDB's, under ``foliolab.``."""
    return ".".join([TOP, *(path_part(p) for p in path.split("."))])


def metric_path(workload: str, metric: str) -> str:
    """``foliolab.WORKLOAD.METRIC`` (a sweep point's workload, e.g.
    ``pageout@size_mb=64``, as one part)."""
    return ".".join([TOP, path_part(workload), path_part(metric)])


def patchset_hash(patch_sha256: Sequence[str]) -> str:
    """KCIDB's patchset hash: the sha256 of each patch's sha256 (hex, a
    newline after each), in order; "" for no patches (the schema's
    ``sha256sum *.patch | cut -c-64 | sha256sum | cut -c-64``)."""
    if not patch_sha256:
        return ""
    return hashlib.sha256(
        "".join(f"{h}\n" for h in patch_sha256).encode()
    ).hexdigest()


def _reread_series(series: SeriesRecord) -> list[str] | None:
    """A series record from before patches' hashes were kept: its
    applied patches' sha256s read again from its directory (as given,
    from where the command runs), if they are still the patches the run
    applied (the same digest); else None."""
    try:
        got = kernel_sources.input_class(series.directory)
        read = got.parse(series.directory).read()
        applied = source.Series(read.directory, read.patches[: series.patches])
        if applied.digest != series.sha:
            return None
        return [
            hashlib.sha256(p.read_bytes()).hexdigest() for p in applied.patches
        ]
    except (UsageError, OSError):
        return None


def _base_spec(k: KernelRecord) -> SpecRecord | None:
    """The spec of the tree under the kernel's patches (itself when it
    has none); None when the record does not say."""
    given = k.given
    while given is not None and given.kind == "series":
        given = given.onto
    return given


def _base_kind(k: KernelRecord) -> str:
    """The kind of source under the kernel's patches (git, debian, base,
    image), "" when the record does not say."""
    base = _base_spec(k)
    if base is not None:
        return base.kind
    if k.series is not None:  # base+DIR: its series record names it
        text = k.series.onto
    elif k.given is None:  # a bisect's commit: its spec alone
        text = k.spec
    else:
        return ""
    found = kernel_sources.source_class(text)
    return found.kind if found is not None else ""


def _kernel_patchset(k: KernelRecord) -> tuple[str | None, str]:
    """(patchset_hash, why it is unknown): None with a reason when the
    record does not say which patches were applied."""
    if k.series is not None:
        if k.series.patches == 0:
            return "", ""
        hashes = k.series.patch_sha256 or _reread_series(k.series)
        if hashes is None or len(hashes) < k.series.patches:
            return None, (
                f"kernel {k.name}: the patches of {k.series.directory} are "
                "not kept in its record, and the folder is not as the run "
                "applied it; its checkout has no patchset_hash"
            )
        return patchset_hash(hashes[: k.series.patches]), ""
    if k.given is not None and k.given.kind == "series":
        return None, (
            f"kernel {k.name}: its series was not applied in this run; "
            "its checkout has no patchset_hash"
        )
    return "", ""  # the source alone: no patches


def _timestamp(value: object) -> str:
    """An ISO time with its zone as KCIDB takes it, "" for anything
    else (KCIDB refuses a time without a zone)."""
    if not isinstance(value, str):
        return ""
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return ""
    return when.isoformat() if when.tzinfo is not None else ""


def _plain_misc(values: dict[str, Any]) -> dict[str, Any]:
    """A misc object without empty values (KCIDB takes no null)."""
    return {k: v for k, v in values.items() if v not in (None, "", [], {})}


@dataclass(frozen=True)
class Exported:
    """What an export wrote: how many of each object, and what of the
    run could not be sent (one line each)."""

    path: Path
    checkouts: int
    builds: int
    tests: int
    left_out: tuple[str, ...]

    def line(self) -> str:
        return (
            f"{self.path}: KCIDB {MAJOR}.{MINOR}, {self.checkouts} "
            f"checkout(s), {self.builds} build(s), {self.tests} test(s)"
        )


class _Document:
    """The document as it is put together: the run's ids and objects."""

    def __init__(
        self, origin: str, run: str, kernels: Sequence[KernelRecord]
    ) -> None:
        self.kernels = {k.name: k for k in kernels}
        self.origin = origin
        self.prefix = f"{origin}:{run}"
        self.checkouts: list[dict[str, Any]] = []
        self.builds: dict[str, dict[str, Any]] = {}
        self.tests: list[dict[str, Any]] = []
        self.test_ids: set[str] = set()
        self.left_out: list[str] = []

    def checkout_id(self, kernel: str) -> str:
        return f"{self.prefix}:{kernel}"

    def kernel_build_id(self, kernel: str) -> str:
        return f"{self.checkout_id(kernel)}:build"

    def kernel_build(self, kernel: str) -> str:
        """The id of the kernel's own build, made on first need (a
        robot's kernel has none: its cells are its builds)."""
        build_id = self.kernel_build_id(kernel)
        if build_id not in self.builds:
            self.add_kernel_build(self.kernels[kernel])
        return build_id

    def add_checkout(self, k: KernelRecord) -> None:
        c: dict[str, Any] = {"id": self.checkout_id(k.name)}
        c["origin"] = self.origin
        kind = _base_kind(k)
        if kind in DEBIAN_KINDS:
            c["tree_name"] = "debian"
        if kind in UPSTREAM_KINDS:
            commit = k.series.commit if k.series is not None else k.commit
            if COMMIT.fullmatch(commit):
                c["git_commit_hash"] = commit
        hash_, why = _kernel_patchset(k)
        if hash_ is not None:
            c["patchset_hash"] = hash_
        else:
            self.left_out.append(why)
        tree = k.series.tree if k.series is not None else ""
        built = k.built
        c["comment"] = f"{k.name}: {k.spec}" + (f" on {tree}" if tree else "")
        if built is not None:
            c["valid"] = True
        c["misc"] = _plain_misc(
            {
                "kernel": k.name,
                "spec": k.spec,
                "series": k.series.directory if k.series else "",
                "patches": k.series.patches if k.series else None,
                "series_sha": k.series_sha,
                "tree": tree,
                "package": built.origin if built else "",
                # the lab's commit of the tree it built (with the series)
                "lab_commit": k.commit,
            }
        )
        self.checkouts.append(c)

    def add_kernel_build(self, k: KernelRecord) -> None:
        b: dict[str, Any] = {
            "id": self.kernel_build_id(k.name),
            "checkout_id": self.checkout_id(k.name),
            "origin": self.origin,
        }
        built = k.built
        if built is None:
            b["comment"] = "no build recorded (a prebuilt image, or not built)"
            self.builds[b["id"]] = b
            return
        if built.arch and ARCHITECTURE.fullmatch(built.arch):
            b["architecture"] = built.arch
        if built.purpose:
            b["config_name"] = built.purpose
        compiler = built.more.get("compiler")
        if isinstance(compiler, str) and compiler:
            b["compiler"] = compiler
        if built.elapsed > 0 and math.isfinite(built.elapsed):
            b["duration"] = round(built.elapsed, 3)
        b["status"] = "PASS"
        b["misc"] = _plain_misc(
            {
                "config_sha": built.config_sha,
                "release": built.release,
                "commit": built.commit,
            }
        )
        self.builds[b["id"]] = b

    def cell_build_id(self, t: TestOutcome) -> str:
        """A robot test's build: its kernel in its cell (made on first
        sight, PASS once a test shows the cell built)."""
        cell = str(t.misc["cell"])
        build_id = f"{self.checkout_id(t.kernel)}:robot:{cell}"
        b = self.builds.get(build_id)
        if b is None:
            b = {
                "id": build_id,
                "checkout_id": self.checkout_id(t.kernel),
                "origin": self.origin,
                "config_name": str(t.misc.get("config", cell)),
                "comment": f"check --robot cell {cell}",
                "misc": {"cell": cell},
            }
            arch = t.misc.get("arch")
            if isinstance(arch, str) and ARCHITECTURE.fullmatch(arch):
                b["architecture"] = arch
            self.builds[build_id] = b
        if t.status in (TestStatus.PASS, TestStatus.FAIL):
            b["status"] = "PASS"
        return build_id

    def test_id(self, kernel: str, path: str) -> str:
        """``ORIGIN:RUN:KERNEL:PATH``, and #2, #3... for a path the kernel
        has more than once."""
        base = f"{self.checkout_id(kernel)}:{path}"
        found, n = base, 1
        while found in self.test_ids:
            n += 1
            found = f"{base}#{n}"
        self.test_ids.add(found)
        return found

    def add_outcome(self, t: TestOutcome, robot: bool) -> None:
        if not t.kernel:
            self.left_out.append(
                f"test {t.path}: {t.status.value} on no kernel of the run "
                "(KCIDB's test needs a build)"
            )
            return
        path = test_path(t.path)
        build_id = (
            self.cell_build_id(t)
            if robot and isinstance(t.misc.get("cell"), str)
            else self.kernel_build(t.kernel)
        )
        d: dict[str, Any] = {
            "id": self.test_id(t.kernel, path),
            "build_id": build_id,
            "origin": self.origin,
            "path": path,
            "status": STATUS[t.status],
        }
        if t.duration_s is not None:
            d["duration"] = round(t.duration_s, 3)
        misc = {**t.misc, "log": t.log}
        if path != f"{TOP}.{t.path}":
            misc["foliolab_path"] = t.path
        d["misc"] = _plain_misc(misc)
        if not d["misc"]:
            del d["misc"]
        self.tests.append(d)

    def add_metric(
        self,
        kernel: str,
        row: diff.Ratio,
        mean: float | None,
        kernels: set[str],
        compared: bool,
    ) -> None:
        """A compare metric of one kernel: DONE with its mean (MISS when
        it has none); ``compared``: the row's own kernel (its ratio to
        the baseline in misc), else the baseline."""
        path = metric_path(row.workload, row.metric)
        if kernel not in kernels:
            self.left_out.append(
                f"metric {row.workload}.{row.metric}: kernel {kernel} is "
                "not one of the run's records"
            )
            return
        d: dict[str, Any] = {
            "id": self.test_id(kernel, path),
            "build_id": self.kernel_build(kernel),
            "origin": self.origin,
            "path": path,
        }
        if mean is not None and math.isfinite(mean):
            d["status"] = "DONE"
            d["number"] = {"value": mean}
            if row.unit:
                d["number"]["unit"] = row.unit
        else:
            d["status"] = "MISS"
        misc: dict[str, Any] = {"primary": row.primary}
        if compared:
            misc.update(
                ratio=row.ratio,
                ci_low=row.ci_low,
                ci_high=row.ci_high,
                significant=row.significant,
                exact=row.exact,
            )
        d["misc"] = _plain_misc(
            {
                k: v
                for k, v in misc.items()
                if not (isinstance(v, float) and not math.isfinite(v))
            }
        )
        self.tests.append(d)

    def data(self) -> dict[str, Any]:
        return {
            "version": {"major": MAJOR, "minor": MINOR},
            "checkouts": self.checkouts,
            "builds": list(self.builds.values()),
            "tests": self.tests,
        }


def _metrics(doc: _Document, results: diff.Run, kernels: set[str]) -> None:
    """Every metric of the run's summary, per kernel: the baseline's
    mean once, each other kernel's from its row."""
    baseline = results.kernels[0] if results.kernels else ""
    seen: set[tuple[str, str]] = set()
    for row in results.rows:
        if (row.workload, row.metric) not in seen:
            seen.add((row.workload, row.metric))
            doc.add_metric(baseline, row, row.baseline_mean, kernels, False)
        doc.add_metric(row.kernel, row, row.kernel_mean, kernels, True)


def document(
    outcomes: Outcomes, results: diff.Run | None, origin: str, run: str
) -> tuple[dict[str, Any], list[str]]:
    """The KCIDB document of a run (not validated yet), and what of the
    run it leaves out (one line each)."""
    doc = _Document(origin, run, outcomes.kernels)
    robot = outcomes.command == "check"
    for k in outcomes.kernels:
        doc.add_checkout(k)
    for k in outcomes.kernels:
        if k.built is not None:
            doc.add_kernel_build(k)
    for t in outcomes.tests:
        doc.add_outcome(t, robot)
    if results is not None:
        _metrics(doc, results, {k.name for k in outcomes.kernels})
        started = _timestamp(results.environment.get("started"))
        if started:  # the compare's start: when its trees were made
            for c in doc.checkouts:
                c["start_time"] = started
    return doc.data(), doc.left_out


def first_refusal(data: dict[str, Any]) -> str | None:
    """The first thing KCIDB's v5.3 schema refuses in ``data`` (where,
    and what), None when it takes it (kcidb-io, offline)."""
    try:
        import jsonschema
        from kcidb_io import schema
    except ImportError as e:
        raise SetupError(
            f"kcidb-io is not installed ({e})",
            hint="install the project's requirements: make",
        ) from None
    validator = schema.V5_3
    try:
        validator.validate_exactly(data)
    except jsonschema.exceptions.ValidationError as e:
        where = "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}"
            for p in e.absolute_path
        ).lstrip(".")
        what = " ".join(str(e.message).split())
        if len(what) > 200:
            what = what[:197] + "..."
        return f"{where or 'the document'}: {what}"
    return None


def write_document(data: dict[str, Any], path: Path, force: bool) -> None:
    """Validate ``data``, then write it to ``path`` whole (beside, then
    renamed over); a refused document is never written (ExportError),
    nor one over an existing file unless ``force``."""
    refused_file(path, force)
    why = first_refusal(data)
    if why is not None:
        raise ExportError(
            f"KCIDB {MAJOR}.{MINOR} refuses the document, first at {why}",
            hint=f"nothing was written to {path}",
        )
    records.write_whole(
        path, json.dumps(data, indent=1, allow_nan=False) + "\n"
    )


def refused_file(path: Path, force: bool) -> None:
    """UsageError for an output that is there (unless ``force``) or
    cannot be made."""
    if path.exists() and not force:
        raise UsageError(
            f"{path} is there already",
            hint="give another file, or --force to replace it",
        )
    if path.is_dir():
        raise UsageError(f"{path} is a directory", hint="give a file name")
    if not path.parent.is_dir():
        raise UsageError(
            f"{path.parent}: no such directory",
            hint="give a file in an existing directory",
        )


def read_records(records: Path) -> tuple[Outcomes, diff.Run | None]:
    """A run's outcomes, and a compare's results.json; DamagedRunError
    or UsageError (with what to run) when the run lacks them."""
    if not (records / OUTCOMES).is_file():
        if (records / "environment.json").is_file():
            raise UsageError(
                f"{records} holds no {OUTCOMES} (a run from before it was "
                "written)",
                hint=f"write the report elsewhere and export from there: "
                f"foliolab report {records} --out DIR --kcidb FILE",
            )
        raise DamagedRunError(
            f"{records / OUTCOMES}: missing",
            hint="give the --out directory of a compare, test, check "
            "or bisect run",
        )
    outcomes = Outcomes.read(records)
    if not outcomes.finished:
        # the rows of a stopped run: real, but not the run's answer (a
        # wrapper or kernel it never reached would read as never tried)
        raise UsageError(
            f"{records}: the run did not finish; its {OUTCOMES} holds "
            f"the {len(outcomes.tests)} row(s) it had when it stopped",
            hint="run the command again to its end, then export it",
        )
    if outcomes.command != "compare":
        return outcomes, None
    if not (records / "results.json").is_file():
        raise UsageError(
            f"{records} holds no results.json",
            hint=f"write it elsewhere and export from there: foliolab "
            f"report {records} --out DIR --kcidb FILE",
        )
    return outcomes, diff.Run.load(records)


def export(
    records: Path, out: Path, origin: str, run: str, force: bool = False
) -> Exported:
    """Write the run whose records are in ``records`` as a KCIDB v5.3
    document to ``out`` (validated first: one the schema refuses is
    never written)."""
    check_origin(origin)
    refused_file(out, force)
    outcomes, results = read_records(records)
    data, left_out = document(outcomes, results, origin, run)
    write_document(data, out, force)
    return Exported(
        out,
        len(data["checkouts"]),
        len(data["builds"]),
        len(data["tests"]),
        tuple(left_out),
    )
