"""``foliolab test --coverage``: the coverage kernel, the guest's data, the
report (docs/manual.md, "Changed-line coverage").

The kernel is the debug kernel plus configs/coverage.config (gcov's
kernel support, nothing profiled by its own config), built in its own
build directory (``<arch>-coverage-<variant>``), and profiles exactly the
directories holding the C files the series touches. Kbuild reads
``GCOV_PROFILE`` once per directory it descends into, with ``$(obj)``
naming that directory, so one make variable on the command line,
``GCOV_PROFILE=$(if $(filter mm mm/,$(obj)),y)``, turns profiling on
there and nowhere else, with no Makefile edited (a per-object
``GCOV_PROFILE_x.o := n`` still wins, as kbuild reads it first). It does
override a directory's own ``GCOV_PROFILE := n``, so a directory that
says so is left out and named. kbuild keeps each object's command line
and rebuilds an object whose flags changed, so another series' set of
directories rebuilds what differs.

Each suite boot zeroes the counters when its job starts (the data is the
suite's, not the boot's) and sends its .gcda files at the end
(gcovrecord). After the suite has written its own results, the run's
notes files (.gcno, copied from the build when it was made, so a later
build cannot change them under the data) are put beside each boot's
data, gcov reads them, the boots' counts are summed and every added
line of the series classified (coverage.py). A boot whose record is
missing or damaged is one line in the report, and the suite's results
are never touched by anything here.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.arch import Arch
from foliolab.coverage import gcovdata, gcovrecord
from foliolab.coverage import html as coverage_html
from foliolab.coverage import reasons as coveragereasons
from foliolab.coverage.lines import (
    BuildFacts,
    CoverageReport,
    LineResult,
    LineState,
    Tally,
    classify,
    other_arch,
)
from foliolab.errors import (
    BuildError,
    DamagedRunError,
    FoliolabError,
    UsageError,
)
from foliolab.guestdata import parse
from foliolab.kernel import kconfig, source, sources
from foliolab.kernel import specs as kernels
from foliolab.series.lines import (
    PatchInfo,
    SeriesGroup,
    SeriesLines,
    cover_letter,
    map_series,
    series_map,
)
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus

# Where a run keeps what its data is read against, and writes the report.
SUBDIR = "coverage"
# Top-level directories that are no part of the kernel image: never
# profiled (headers under include/ are measured through the objects that
# use them).
_NOT_KERNEL = (
    "include",
    "tools",
    "Documentation",
    "scripts",
    "samples",
    "usr",
    "LICENSES",
)
_OPTS_OUT = re.compile(r"^\s*GCOV_PROFILE\s*:?=\s*n", re.M)


@dataclass(frozen=True)
class ProfilePlan:
    dirs: tuple[str, ...]  # profiled, e.g. ("mm",)
    skipped: dict[str, str] = field(default_factory=dict)  # dir -> why


def profile_dirs(
    paths: list[str], linux_arch: str, read_file: Callable[[str], str | None]
) -> ProfilePlan:
    """The directories to profile for a series touching ``paths``: each
    directory holding a touched .c or .h file that kbuild builds for this
    architecture (``read_file(path)`` gives a file of the patched tree, or
    None). Directories left out are named with why."""
    dirs: list[str] = []
    skipped: dict[str, str] = {}
    for path in paths:
        directory, _, name = path.rpartition("/")
        if (
            not name.endswith((".c", ".h"))
            or not directory
            or directory in dirs
            or directory in skipped
        ):
            continue
        if (
            directory.split("/")[0] in _NOT_KERNEL
            or "/include" in f"/{directory}"
        ):
            continue  # headers: through their users
        if other_arch(path, linux_arch):
            skipped[directory] = "another architecture's"
            continue
        makefile = read_file(f"{directory}/Makefile") or read_file(
            f"{directory}/Kbuild"
        )
        if makefile is None:
            skipped[directory] = "no kbuild Makefile"
        elif _OPTS_OUT.search(makefile):
            skipped[directory] = (
                "its Makefile turns gcov off (GCOV_PROFILE := n)"
            )
        else:
            dirs.append(directory)
    return ProfilePlan(tuple(sorted(dirs)), skipped)


def make_vars(dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The make variable that profiles ``dirs`` and nothing else (make
    expands it in each directory's own make, where $(obj) is that
    directory; both spellings, with and without the slash)."""
    names = " ".join(f"{d} {d}/" for d in dirs)
    return (f"GCOV_PROFILE=$(if $(filter {names},$(obj)),y)",)


@dataclass
class Plan:
    """What a coverage run needs, known before anything is built."""

    lines: SeriesLines
    profile: ProfilePlan
    source_root: Path  # where the tree is compiled from
    groups: list[SeriesGroup] = field(default_factory=list)  # series map
    problems: list[str] = field(default_factory=list)
    # the series' coverage-reasons, read (and checked) before the build
    reasons: coveragereasons.Reasons | None = None


def _git_text(repo: Path, commit: str, path: str) -> str | None:
    cp = source.git(repo, "show", f"{commit}:{path}", check=False)
    return cp.stdout if cp.returncode == 0 else None


def plan_for(tree: source.Tree, series: source.Series, arch: Arch) -> Plan:
    """The series' added lines (placed on the base it was applied to) and
    the directories to profile; a UsageError when there is nothing to
    measure."""
    if not series.patches or tree.onto is None:
        raise UsageError(
            "--coverage reports a series' added lines, and "
            f"the {tree.variant} kernel has no series",
            hint="give --patches DIR or --kernel NAME=base+DIR[:N]",
        )
    assert tree.onto is not None  # a tree with a series: checked above
    onto = tree.onto
    lines = map_series(
        series.patches, lambda p: _git_text(tree.path, onto.commit, p)
    )
    problems = [
        f"{p}: the series applied in memory differs from the "
        "built tree; its line numbers may be off"
        for p, text in lines.final.items()
        if _git_text(tree.path, tree.commit, p)
        not in ("\n".join(text) + "\n", "\n".join(text))
    ]
    profile = profile_dirs(
        lines.touched,
        arch.linux_arch,
        lambda p: _git_text(tree.path, tree.commit, p),
    )
    if not profile.dirs:
        raise UsageError(
            "--coverage: the series touches no C file of a "
            f"directory built for {arch.name}",
            hint="; ".join(f"{d}: {w}" for d, w in profile.skipped.items())
            or None,
        )
    letter = cover_letter(series.directory)
    groups = series_map(letter.read_text(errors="replace")) if letter else []
    problems += [
        f"{d}/ not profiled: {why}" for d, why in profile.skipped.items()
    ]
    reasons = coveragereasons.read(
        series.directory,
        shown_path(series.directory / coveragereasons.FILE_NAME),
    )
    return Plan(lines, profile, tree.path, groups, problems, reasons)


def shown_path(path: Path) -> str:
    """``path`` as a report names it: relative to the working directory
    when it lies under it (patches/6.12/coverage-reasons)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def snapshot(build_dir: Path, plan: Plan, out: Path) -> None:
    """Keep the coverage build's notes files of the profiled directories
    and its .config in the run: the data of this run's boots is read
    against them, whatever the build directory holds later. A build that
    made none did not profile (BuildError with its log)."""
    dest = out / SUBDIR
    shutil.rmtree(dest / "notes", ignore_errors=True)
    found = 0
    for d in plan.profile.dirs:
        for gcno in sorted((build_dir / d).glob("*.gcno")):
            target = dest / "notes" / d / gcno.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(gcno, target)
            found += 1
    if not found:
        raise BuildError(
            "the coverage build made no .gcno files in "
            f"{', '.join(plan.profile.dirs)}: nothing was "
            "profiled",
            log_path=build_dir / "build.log",
        )
    shutil.copy2(build_dir / ".config", dest / "config")
    (dest / "plan.json").write_text(
        json.dumps(
            {
                "profiled_dirs": list(plan.profile.dirs),
                "skipped": plan.profile.skipped,
                "build_dir": str(build_dir),
                "source_root": str(plan.source_root),
                "notes": found,
            },
            indent=1,
        )
        + "\n"
    )


def facts_of(out: Path, plan: Plan, arch: Arch) -> BuildFacts:
    dest = out / SUBDIR
    config = dest / "config"
    notes = gcovdata.objects_in(dest / "notes", ".gcno")
    return BuildFacts(
        arch.name,
        arch.linux_arch,
        kconfig.parse(config.read_text(), str(config))
        if config.exists()
        else {},
        frozenset(notes),
        plan.profile.dirs,
    )


def boot_data(
    boot_dir: Path,
    notes: dict[str, Path],
    dest: Path,
    paths: gcovdata.SourcePaths,
    gcov: str,
) -> tuple[gcovdata.GcovData, list[str]]:
    """One boot's counts, from the coverage record in its results.txt,
    and the guest's data files that match no notes file of the build;
    CoverageRecordError when the record is missing or damaged."""
    results = boot_dir / "results.txt"
    records = (
        results.read_text(errors="replace").splitlines()
        if results.exists()
        else []
    )
    text = None
    for sample in parse.parse_records(records).samples:
        text = sample.files.get(gcovrecord.RECORD, text)
    files = gcovrecord.unpack(gcovrecord.decode(text))
    shutil.rmtree(dest, ignore_errors=True)
    placed, unmatched = gcovrecord.place(files, notes, dest)
    data = gcovdata.collect(placed, paths, gcov)
    for source_name in set(notes) - set(placed):
        data.bad[source_name] = "no data file from the guest"
    return data, unmatched


def finish(
    out: Path, boot_dirs: list[Path], plan: Plan, arch: Arch
) -> CoverageReport:
    """Read every boot's data, classify the series' lines, write
    coverage.txt, coverage.json and coverage.html in ``out``."""
    dest = out / SUBDIR
    notes = gcovdata.objects_in(dest / "notes", ".gcno")
    paths = gcovdata.SourcePaths(plan.source_root, plan.lines.final)
    gcov = gcov_tool(arch)
    merged: gcovdata.GcovData | None = None
    boots: list[str] = []
    problems = list(plan.problems)
    for boot_dir in boot_dirs:
        try:
            data, unmatched = boot_data(
                boot_dir, notes, dest / boot_dir.name, paths, gcov
            )
        except gcovrecord.CoverageRecordError as e:
            problems.append(f"boot {boot_dir.name}: {e.message}")
            continue
        except OSError as e:  # its files unreadable: this boot only
            problems.append(
                f"boot {boot_dir.name}: coverage data unreadable ({e})"
            )
            continue
        boots.append(boot_dir.name)
        if unmatched:  # profiled where the build kept no notes file
            problems.append(
                f"boot {boot_dir.name}: {len(unmatched)} data "
                "file(s) match no notes file of the build, "
                f"first {unmatched[0]}"
            )
        if merged is None:
            merged = data
        else:
            merged.add(data)
    if merged is not None:
        problems += [
            f"{src}: {why}" for src, why in sorted(merged.bad.items())
        ]
    facts = facts_of(out, plan, arch)
    results, stale = coveragereasons.apply(
        classify(plan.lines, merged, facts), plan.reasons
    )
    rep = CoverageReport(
        plan.lines.patches,
        results,
        facts,
        plan.groups,
        plan.lines.superseded,
        boots,
        problems,
        str(plan.reasons.path) if plan.reasons else "",
        stale,
    )
    write(rep, out)
    return rep


def write(rep: CoverageReport, out: Path) -> None:
    (out / "coverage.txt").write_text(rep.text())
    (out / "coverage.json").write_text(
        json.dumps(rep.to_json(), indent=1) + "\n"
    )
    (out / "coverage.html").write_text(coverage_html.render(rep))


def summary_line(rep: CoverageReport) -> str:
    """The line ``foliolab test`` prints at the end."""
    t = Tally.of(rep.results)
    pct = f"{t.percent:.1f}%" if t.percent is not None else "-"
    more = ""
    if rep.reasons_file and t.executable > t.ran:
        more += (
            f"; never ran {t.executable - t.ran}: reason given "
            f"{t.reason_given}, no reason {t.no_reason}"
        )
    if rep.stale:
        more += f"; {len(rep.stale)} stale reason(s)"
    if rep.problems:
        more += f"; {len(rep.problems)} problem(s), see the report"
    return (
        f"# coverage: {t.ran} of {t.executable} executable added lines "
        f"ran ({pct}), {t.added} added{more}"
    )


def read_report(run: Path) -> CoverageReport:
    """The CoverageReport of run/coverage.json, read through the one
    reader; a damaged one named (file and field), exit 11."""
    path = run / "coverage.json"
    hint = "run `foliolab test --coverage` again"
    doc = records.read_object(
        path,
        records.RecordKind.COVERAGE,
        ("patches", "arch", "profiled_dirs", "boots", "problems"),
        hint,
    )
    f = records.Fields(path, doc, hint)
    for i, p in enumerate(f.objects("patches", default=False)):
        pf = records.Fields(path, p, hint, f"patches[{i}]")
        pf.integer("number", minimum=0)
        for j, r in enumerate(pf.objects("lines", default=False)):
            rf = records.Fields(path, r, hint, f"patches[{i}].lines[{j}]")
            rf.integer("line", minimum=0)
            rf.optional_integer("count")
            for key in ("path", "text", "state"):
                rf.string(key)
    try:
        return report_from_json(doc)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise DamagedRunError(f"{path}: {e!r}", hint=hint) from None


def report_from_json(doc: dict[str, Any]) -> CoverageReport:
    """A CoverageReport again from the coverage.json a run wrote, its
    reasons taken off (to give it the series' reasons as they are now)."""
    patches, results, superseded = [], [], {}
    for p in doc["patches"]:
        patches.append(PatchInfo(p["number"], p["name"], p["subject"]))
        if p.get("superseded"):
            superseded[p["number"]] = p["superseded"]
        results += [
            LineResult(
                p["number"],
                r["path"],
                r["line"],
                r["text"],
                LineState(r["state"]),
                r["count"],
                r["function"],
                r["why"],
            )
            for r in p["lines"]
        ]
    results.sort(key=lambda r: (r.path, r.line))  # as classify() gives
    groups = [
        SeriesGroup(g["label"], g["patches"][0], g["patches"][-1])
        for g in doc.get("groups", [])
    ]
    facts = BuildFacts(
        doc["arch"], "", {}, frozenset(), tuple(doc["profiled_dirs"])
    )
    return CoverageReport(
        patches,
        results,
        facts,
        groups,
        superseded,
        doc["boots"],
        doc["problems"],
    )


def reason_again(run: Path, series: Path, out: Path) -> CoverageReport:
    """A run's coverage report written again into ``out`` with the
    series' reasons as they are now (the counts are the run's, read from
    its coverage.json): ``foliolab coverage-reasons``."""
    if not (run / "coverage.json").exists():
        raise UsageError(
            f"{run}: no coverage report to read (no coverage.json)",
            hint="give the output directory of a `foliolab "
            "test --coverage` run",
        )
    rep = read_report(run)
    shown = shown_path(series / coveragereasons.FILE_NAME)
    reasons = coveragereasons.read(series, shown)
    rep.results, rep.stale = coveragereasons.apply(rep.results, reasons)
    rep.reasons_file = str(reasons.path) if reasons else ""
    out.mkdir(parents=True, exist_ok=True)
    write(rep, out)
    return rep


def finish_safely(
    out: Path, boot_dirs: list[Path], plan: Plan, arch: Arch
) -> str:
    """finish(), for the end of a suite: whatever goes wrong is one line
    (in coverage.txt too), and the suite's results stay as written."""
    try:
        return summary_line(finish(out, boot_dirs, plan, arch))
    except (FoliolabError, OSError, ValueError) as e:
        line = f"# coverage: no report: {e}"
        try:
            # an earlier run's report in this directory is not this one's
            # (the run's outcomes read it: with_coverage)
            (out / "coverage.json").unlink(missing_ok=True)
            (out / "coverage.txt").write_text(line[2:] + "\n")
        except OSError:
            pass  # the line is printed all the same
        return line


def tests(rep: CoverageReport, kernel: str) -> list[TestOutcome]:
    """The report's figures as tests of the run: one per patch of the
    series (path ``coverage.<its number>``), done, with its executable
    added lines, how many of them ran and the percent as misc."""
    rows = []
    for p in rep.patches:
        t = Tally.of(rep.of_patch(p.number))
        misc: dict[str, str | int | float] = {
            "patch": p.name,
            "added": t.added,
            "executable": t.executable,
            "ran": t.ran,
        }
        if t.percent is not None:  # no executable line: no percent
            misc["percent"] = round(t.percent, 1)
        rows.append(
            TestOutcome(
                f"coverage.{p.number}",
                TestStatus.DONE,
                kernel,
                log="coverage.txt",
                misc=misc,
            )
        )
    return rows


def with_coverage(
    outcomes: Outcomes, out: Path, plan: Plan | None
) -> Outcomes:
    """A suite's outcomes with its coverage report's tests (``plan``: the
    run measured coverage), on the suite's kernel; read from the
    coverage.json the run wrote (none if it could write no report)."""
    if plan is None or not (out / "coverage.json").is_file():
        return outcomes
    rep = read_report(out)
    kernel = outcomes.kernels[0].name if outcomes.kernels else ""
    return Outcomes(
        outcomes.command,
        outcomes.kernels,
        [*outcomes.tests, *tests(rep, kernel)],
    )


def check_request(count: bool, config: str, arch: Arch) -> None:
    """``foliolab test --coverage``'s options, before anything is built:
    its own kernel, never counted, and gcov for the guest's compiler
    there (it comes with gcc: build-essential, or the cross compiler's
    package)."""
    if count:
        raise UsageError(
            "--coverage and --count do not mix: the coverage "
            "kernel's gcov counters would be counted as its "
            "work",
            hint="run them separately",
        )
    if config != "debug":
        raise UsageError(
            "--coverage builds its own kernel (the debug config with gcov)",
            hint="leave out --config",
        )
    if shutil.which(gcov_tool(arch)) is None:
        raise UsageError(
            "--coverage needs gcov", hint="it comes with gcc; run `make setup`"
        )


def gcov_tool(arch: Arch) -> str:
    """The gcov of the compiler that built the guest's kernel; the host's
    for a cross build whose toolchain is not installed yet (Debian's
    cross gcc is the same gcc 12, and the files' format is the gcc
    version's, not the target's)."""
    cross = f"{arch.cross_compile}gcov"
    return cross if shutil.which(cross) else "gcov"


def suite_series(
    kernel: str | None, variant: str, patches: Path | None
) -> source.Series:
    """The series ``foliolab test`` applies: ``--kernel``'s
    (NAME=SOURCE+DIR[:N]) or ``--patches``' for the patched variant; the
    empty series for any other kernel (plan_for() refuses it)."""
    if kernel:
        return kernels.parse_kernel(kernel).series()
    return sources.read_patches(patches if variant == "patched" else None)
