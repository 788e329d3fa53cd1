"""Line counts from gcc's coverage files, read with gcov's JSON output.

``gcov --json-format --stdout X.gcda`` (gcc 12) reads X.gcda and the
X.gcno beside it and prints, for the object's source and every header
whose code it holds, each executable line with its count and function,
and each function with its first and last line. Nothing is written next
to the data. gcov is run once per data file: its stderr then says which
file was bad. gcov does not fail on everything bad: a data file that is
not one still gives every line a count of 0 (exit 2), a stamp that does
not match the notes file exits 5, a missing one is "assuming not
executed" with exit 0. Any of these, or any word on stderr, makes that
object's data damaged, one line in ``problems``, and its lines are never
counted as not run on its word.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab import proc


@dataclass(frozen=True)
class FunctionRange:
    name: str
    start: int  # first line (the signature)
    end: int  # the closing brace's line


@dataclass
class FileCoverage:
    """One source file's lines as gcov counted them (summed over every
    object whose code holds them, e.g. a header's inline functions)."""

    path: str  # relative to the tree
    counts: dict[int, int] = field(default_factory=dict)
    functions: dict[tuple[str, int], FunctionRange] = field(
        default_factory=dict
    )
    line_function: dict[int, str] = field(default_factory=dict)

    def function_at(self, line: int) -> str | None:
        """The function a line is in: gcov's own word for an executable
        line, else the innermost function range holding it."""
        if line in self.line_function:
            return self.line_function[line]
        best: FunctionRange | None = None
        for f in self.functions.values():
            if f.start <= line <= f.end and (
                best is None or f.end - f.start < best.end - best.start
            ):
                best = f
        return best.name if best else None

    def add(self, other: FileCoverage) -> None:
        for n, c in other.counts.items():
            self.counts[n] = self.counts.get(n, 0) + c
        self.functions.update(other.functions)
        for n, name in other.line_function.items():
            self.line_function.setdefault(n, name)


@dataclass
class GcovData:
    """What the data files of one or more boots say."""

    files: dict[str, FileCoverage] = field(default_factory=dict)
    # objects (by their source, "mm/rmap.c") whose data was read whole
    objects: set[str] = field(default_factory=set)
    # objects whose data was missing or damaged, with why (one line)
    bad: dict[str, str] = field(default_factory=dict)

    def add(self, other: GcovData) -> None:
        """Sum ``other`` (another boot's data) into this one. An object
        read whole in either boot has data; it stays bad only if it was
        bad in every boot that sent it."""
        for path, fc in other.files.items():
            self.files.setdefault(path, FileCoverage(path)).add(fc)
        self.objects |= other.objects
        for obj, why in other.bad.items():
            self.bad.setdefault(obj, why)
        for obj in self.objects:
            self.bad.pop(obj, None)


class SourcePaths:
    """Turns the source names gcov reports into paths in the tree.

    gcov names a file as the compiler was given it: absolute, or relative
    to the directory it compiled in (the kernel's build directory for
    ``O=`` builds). A name under ``root`` is taken relative to it; one
    that is not (a tree since moved) is matched by its ending against the
    paths wanted.
    """

    def __init__(self, root: Path, wanted: Iterable[str]) -> None:
        self.root = os.path.realpath(root)
        self.wanted = set(wanted)

    def relative(self, name: str, cwd: str) -> str | None:
        full = os.path.normpath(os.path.join(cwd, name))
        real = os.path.realpath(full) if os.path.exists(full) else full
        for candidate in (real, full):
            rel = os.path.relpath(candidate, self.root)
            if not rel.startswith(".."):
                return rel
        for w in self.wanted:
            if full.endswith("/" + w):
                return w
        return None


def read_gcda(
    gcda: Path, paths: SourcePaths, gcov: str = "gcov"
) -> tuple[list[FileCoverage], str]:
    """The counts of one data file (its notes file beside it), for the
    files ``paths`` wants, and "" ; or ([], why the data is not to be
    trusted)."""
    if not gcda.is_file():
        return [], "no data file"
    if not gcda.with_suffix(".gcno").exists():
        return [], "no notes file (.gcno) beside it"
    cp = proc.run(
        [gcov, "--json-format", "--stdout", str(gcda)],
        cwd=gcda.parent,
        check=False,
    )
    err = " ".join(
        line for line in cp.stderr.splitlines() if not _source_mtime_note(line)
    )
    err = " ".join(err.split())
    if cp.returncode != 0 or err:
        return [], f"gcov: {err or f'exit {cp.returncode}'}"
    try:
        doc = json.loads(cp.stdout)
    except ValueError as e:
        return [], f"gcov printed no JSON ({e})"
    return parse_json(doc, paths), ""


def _source_mtime_note(line: str) -> bool:
    """gcov's note that a source file's mtime is later than the notes
    file's. It compares only the two mtimes, and the counts are by line of
    the source the object was built from: the lines mapped onto them are
    read from git at the built commit (coveragerun.plan_for), never from
    the build checkout, which other kernels' builds may have moved on since
    (a coverage run's mapping comes half an hour after its build)."""
    return (
        "source file is newer than notes file" in line
        or "the message is displayed only once per source file" in line
    )


def parse_json(doc: dict[str, Any], paths: SourcePaths) -> list[FileCoverage]:
    """gcov's JSON document, for the files ``paths`` wants (every file
    when it wants none)."""
    cwd = doc.get("current_working_directory", "")
    out = []
    for f in doc.get("files", []):
        rel = paths.relative(f.get("file", ""), cwd)
        if rel is None or (paths.wanted and rel not in paths.wanted):
            continue
        fc = FileCoverage(rel)
        for line in f.get("lines", []):
            n = int(line["line_number"])
            fc.counts[n] = fc.counts.get(n, 0) + int(line["count"])
            if line.get("function_name"):
                fc.line_function.setdefault(n, line["function_name"])
        for fn in f.get("functions", []):
            r = FunctionRange(
                fn.get("demangled_name") or fn["name"],
                int(fn["start_line"]),
                int(fn["end_line"]),
            )
            fc.functions[(r.name, r.start)] = r
        out.append(fc)
    return out


def collect(
    objects: dict[str, Path], paths: SourcePaths, gcov: str = "gcov"
) -> GcovData:
    """Read every object's data file: ``objects`` maps an object's source
    ("mm/rmap.c") to its .gcda, with its .gcno beside it."""
    data = GcovData()
    for source, gcda in sorted(objects.items()):
        files, why = read_gcda(gcda, paths, gcov)
        if why:
            data.bad[source] = why
            continue
        data.objects.add(source)
        for fc in files:
            data.files.setdefault(fc.path, FileCoverage(fc.path)).add(fc)
    return data


def objects_in(directory: Path, suffix: str = ".gcda") -> dict[str, Path]:
    """{source "mm/rmap.c": DIR/mm/rmap.gcda} for every data (or notes)
    file under ``directory``, named by the C source it was built from."""
    return {
        str(p.relative_to(directory).with_suffix(".c")): p
        for p in sorted(directory.rglob(f"*{suffix}"))
    }
