"""What the base's stable history changed in the files a series touches,
and which patches of the series undo it.

Stable updates remove code on purpose (a fix that turned out wrong, a
feature that was unsafe), and a series written against an older tree, or
ported from upstream, can bring that code back without anyone noticing.
This module compares an older tree (``--since``, see sincespec.py) with
the series' base, file by file, and reads the series one patch at a time
on top of the files the earlier patches left:

- **restored**: a hunk adds C tokens that the stable update removed from
  the same function (same file, same function name; file scope with file
  scope) and that are nowhere else in the base's version of it;
- **touches**: a hunk changes a function the stable update changed.

Tokens, not lines, so that a re-wrapped or re-indented line and a changed
comment still match. See ``SHINGLE`` and ``substantial`` for what counts.
"""

from __future__ import annotations

import enum
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Sequence

from foliolab import proc
from foliolab.errors import HistoryError, PatchApplyError, SourceError
from foliolab.kernel import source
from foliolab.series import csource, unidiff
from foliolab.series.csource import FunctionMap, Token
from foliolab.series.sincespec import Snapshot

# A match is made of shingles: runs of this many consecutive tokens. Eight
# is more than any statement that means nothing on its own ("return
# false;" is 3 tokens, "} else {" 3, "spin_unlock(ptl);" 5, "goto out;" 3),
# so such code never matches by itself, and still less than one call with
# its arguments (the removed "if (unmap_huge_pmd_locked(vma, pvmw.address,
# pvmw.pmd, folio)) goto walk_done;" is 21), so a restored call does.
SHINGLE = 8
# ... and a stretch of matching tokens must name at least this many
# distinct identifiers (keywords and NULL/true/false do not count), one of
# them called: "if (!ret) return ret;" is 8 tokens but one name, and an
# argument list shared by two different calls ("(vma, addr, pmd, folio))
# goto done;") calls nothing. Names carry what code does; a call is the
# action that was removed.
MIN_NAMES = 3

Shingle = tuple[str, ...]


class Kind(enum.Enum):
    RESTORED = "restored"
    TOUCHES = "touches"


@dataclass(frozen=True)
class LineRange:
    first: int
    last: int

    def __str__(self) -> str:
        return (
            str(self.first)
            if self.last <= self.first
            else f"{self.first}-{self.last}"
        )


@dataclass(frozen=True)
class StableChange:
    """One hunk of the stable update, as lines of the older tree."""

    path: str
    old_start: int  # first removed line; for an addition, the
    old_count: int  # line it follows (old_count 0)
    removed: tuple[str, ...]
    added: tuple[str, ...]
    functions: tuple[str, ...]  # older tree's names of removed lines, base's
    # names of added lines

    def where(self) -> str:
        if not self.old_count:
            return f"{self.old_start} (after)"
        return str(
            LineRange(self.old_start, self.old_start + self.old_count - 1)
        )

    def text(self, width: int) -> str:
        """The removed text (the added text of an addition), whitespace
        collapsed, cut to ``width`` characters."""
        sign, lines = "-", self.removed
        if not lines:
            sign, lines = "+", self.added
        flat = " ".join(" ".join(lines).split())
        if len(flat) > width:
            flat = flat[: width - 3] + "..."
        return f'{sign}"{flat}"'


@dataclass
class FileHistory:
    """One file's stable changes, and the shingles they took out of each
    function (None: file scope) that the base's function no longer has."""

    path: str
    changes: list[StableChange]
    gone: dict[str | None, dict[Shingle, StableChange]]

    def changed(self, function: str) -> list[StableChange]:
        return [c for c in self.changes if function in c.functions]


def shingles(run: Sequence[Token]) -> Iterator[tuple[int, Shingle]]:
    texts = [t.text for t in run]
    for i in range(len(texts) - SHINGLE + 1):
        yield i, tuple(texts[i : i + SHINGLE])


def runs(
    toks: list[Token], keep: Callable[[Token], bool], functions: FunctionMap
) -> Iterator[list[Token]]:
    """Maximal runs of consecutive tokens that ``keep`` takes, split where
    the function changes."""
    run: list[Token] = []
    for t in toks:
        if keep(t) and (
            not run
            or functions.name_at(t.line) == functions.name_at(run[0].line)
        ):
            run.append(t)
            continue
        if run:
            yield run
        run = [t] if keep(t) else []
    if run:
        yield run


def present(
    toks: list[Token], functions: FunctionMap
) -> dict[str | None, set[Shingle]]:
    """Every shingle of a file, by the function it is in."""
    out: dict[str | None, set[Shingle]] = {}
    for run in runs(toks, lambda t: True, functions):
        name = functions.name_at(run[0].line)
        out.setdefault(name, set()).update(s for _, s in shingles(run))
    return out


def substantial(stretch: Sequence[Token]) -> bool:
    names = {t.text for t in stretch if t.is_name}
    called = any(
        t.is_name and nxt.text == "(" for t, nxt in zip(stretch, stretch[1:])
    )
    return len(stretch) >= SHINGLE and len(names) >= MIN_NAMES and called


def diff_hunks(old: list[str], new: list[str]) -> list[unidiff.Hunk]:
    """The line changes from ``old`` to ``new``, no context, as git's
    histogram diff finds them (what a kernel developer reads)."""
    with tempfile.TemporaryDirectory(prefix="foliolab-since-") as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        a.write_text("".join(line + "\n" for line in old))
        b.write_text("".join(line + "\n" for line in new))
        cp = proc.run(
            [
                "git",
                "diff",
                "--no-index",
                "--no-color",
                "--no-ext-diff",
                "--histogram",
                "-U0",
                a,
                b,
            ],
            check=False,
            error=SourceError,
        )
    if cp.returncode not in (0, 1):
        raise SourceError(f"git diff --no-index failed: {cp.stderr.strip()}")
    files = unidiff.parse(cp.stdout)
    return list(files[0].hunks) if files else []


def file_history(path: str, old: list[str], base: list[str]) -> FileHistory:
    old_fns, base_fns = FunctionMap(old), FunctionMap(base)
    changes = [
        stable_change(path, h, old, base, old_fns, base_fns)
        for h in diff_hunks(old, base)
    ]
    return FileHistory(
        path, changes, gone_shingles(changes, old, old_fns, base, base_fns)
    )


def stable_change(
    path: str,
    h: unidiff.Hunk,
    old: list[str],
    base: list[str],
    old_fns: FunctionMap,
    base_fns: FunctionMap,
) -> StableChange:
    removed = range(h.old_start, h.old_start + h.old_len)
    added = range(h.new_start, h.new_start + h.new_len)
    names = {old_fns.name_at(n) for n in removed}
    names |= {base_fns.name_at(n) for n in added}
    return StableChange(
        path,
        h.old_start,
        h.old_len,
        tuple(old[n - 1] for n in removed),
        tuple(base[n - 1] for n in added),
        tuple(sorted(n for n in names if n)),
    )


def gone_shingles(
    changes: list[StableChange],
    old: list[str],
    old_fns: FunctionMap,
    base: list[str],
    base_fns: FunctionMap,
) -> dict[str | None, dict[Shingle, StableChange]]:
    """The shingles of the removed lines that the base's version of their
    function no longer has anywhere (code that only moved within it, or
    was re-wrapped, is not gone), each with the change that removed it."""
    owner = {
        n: c
        for c in changes
        for n in range(c.old_start, c.old_start + c.old_count)
    }
    kept = present(csource.tokens("\n".join(base)), base_fns)
    gone: dict[str | None, dict[Shingle, StableChange]] = {}
    old_toks = csource.tokens("\n".join(old))
    for run in runs(old_toks, lambda t: t.line in owner, old_fns):
        name = old_fns.name_at(run[0].line)
        for i, s in shingles(run):
            if s not in kept.get(name, ()):
                gone.setdefault(name, {}).setdefault(s, owner[run[i].line])
    return gone


@dataclass(frozen=True)
class Finding:
    patch: str  # the patch's number, e.g. 0016
    path: str
    function: str | None
    kind: Kind
    lines: tuple[LineRange, ...]  # the hunks, after the patch
    changes: tuple[StableChange, ...]
    since: str  # the older tree's label

    def line(self) -> str:
        """patch, file, function, kind, the patch's lines (in the tree
        after it), then the stable changes as lines of the older tree
        with their text: a restored line whole, a touched function's
        changes cut short, since there may be many."""
        fn = f"{self.function}()" if self.function else "(file scope)"
        where = ",".join(str(r) for r in self.lines)
        width = 80 if self.kind is Kind.RESTORED else 36
        stable = ", ".join(
            f":{c.where()} {c.text(width)}" for c in self.changes
        )
        return (
            f"{self.patch} {self.path} {fn} {self.kind.value} "
            f"+{where} <- {self.since} {self.path}{stable}"
        )


@dataclass(frozen=True)
class _Key:
    kind: Kind
    path: str
    function: str | None


@dataclass
class _PatchFindings:
    """One patch's findings while its hunks are read: one per kind, file
    and function, with every hunk's lines and every change it meets."""

    patch: str
    since: str
    lines: dict[_Key, list[LineRange]] = field(default_factory=dict)
    changes: dict[_Key, list[StableChange]] = field(default_factory=dict)

    def add(
        self, key: _Key, where: LineRange, changes: list[StableChange]
    ) -> None:
        have = self.lines.setdefault(key, [])
        if where not in have:
            have.append(where)
        met = self.changes.setdefault(key, [])
        met.extend(c for c in changes if c not in met)

    def findings(self) -> list[Finding]:
        """Restorations first, each kind in the order of the hunks."""
        out = []
        for key, lines in self.lines.items():
            changes = sorted(self.changes[key], key=lambda c: c.old_start)
            out.append(
                Finding(
                    self.patch,
                    key.path,
                    key.function,
                    key.kind,
                    tuple(lines),
                    tuple(changes),
                    self.since,
                )
            )
        return sorted(out, key=lambda f: f.kind is not Kind.RESTORED)


class _FileAfterPatch:
    """A file before and after one patch's diff of it; tokens and
    functions are found only for a file the stable update changed."""

    def __init__(self, before: list[str], diff: unidiff.FileDiff) -> None:
        self.before = before
        self.applied = unidiff.apply(before, diff)

    @cached_property
    def before_fns(self) -> FunctionMap:
        return FunctionMap(self.before)

    @cached_property
    def after_fns(self) -> FunctionMap:
        return FunctionMap(self.applied.lines)

    @cached_property
    def after_toks(self) -> list[Token]:
        return csource.tokens("\n".join(self.applied.lines))

    @cached_property
    def _before_shingles(self) -> dict[str | None, set[Shingle]]:
        return present(csource.tokens("\n".join(self.before)), self.before_fns)

    def before_has(self, function: str | None, s: Shingle) -> bool:
        return s in self._before_shingles.get(function, ())


def restorations(
    history: FileHistory,
    f: _FileAfterPatch,
    hunk: Sequence[unidiff.PlacedLine],
) -> Iterator[tuple[str | None, LineRange, list[StableChange]]]:
    """The stretches of the hunk's added tokens that bring back what the
    stable update took out of the same function (and the patch's tree
    did not have before it)."""
    added = {p.new_no for p in hunk if p.kind == "+"}
    for run in runs(f.after_toks, lambda t: t.line in added, f.after_fns):
        name = f.after_fns.name_at(run[0].line)
        table = history.gone.get(name)
        if not table:
            continue
        source_of: list[StableChange | None] = [None] * len(run)
        for i, s in shingles(run):
            change = table.get(s)
            if change and not f.before_has(name, s):
                for k in range(i, i + SHINGLE):
                    source_of[k] = source_of[k] or change
        for a, b in _stretches(source_of):
            if substantial(run[a:b]):
                # a stretch holds changes only (no None)
                found = [c for c in dict.fromkeys(source_of[a:b]) if c]
                yield name, LineRange(run[a].line, run[b - 1].line), found


def _stretches(
    marks: list[StableChange | None],
) -> Iterator[tuple[int, int]]:
    """[a, b) of every maximal run of truthy marks."""
    a = None
    for i, m in enumerate(marks + [None]):
        if m and a is None:
            a = i
        elif not m and a is not None:
            yield a, i
            a = None


def touches(
    history: FileHistory,
    f: _FileAfterPatch,
    hunk: Sequence[unidiff.PlacedLine],
) -> Iterator[tuple[str, LineRange, list[StableChange]]]:
    """The functions the hunk changes that the stable update changed, with
    the lines it changes in each (after the patch; a removed line counts
    as the line that follows it)."""
    lines: dict[str, list[int]] = {}
    for p, at in zip(hunk, _positions_after(hunk)):
        if p.kind == "-":
            assert p.old_no is not None  # a removed line has its old number
            name = f.before_fns.name_at(p.old_no)
        elif p.kind == "+":
            assert p.new_no is not None  # an added line has its new number
            name = f.after_fns.name_at(p.new_no)
        else:
            continue
        if name:
            lines.setdefault(name, []).append(at)
    for name in sorted(lines):
        changed = history.changed(name)
        if changed:
            yield name, LineRange(min(lines[name]), max(lines[name])), changed


def _positions_after(hunk: Sequence[unidiff.PlacedLine]) -> list[int]:
    """Each line's line after the patch; for a removed line, that of the
    next line the patch keeps or adds."""
    out: list[int] = []
    following = None
    for p in reversed(hunk):
        if p.new_no is not None:
            following = p.new_no
        out.append(
            p.new_no
            if p.new_no is not None
            else following
            if following is not None
            else (p.old_no or 1)
        )
    return out[::-1]


def patch_number(patch: Path, index: int) -> str:
    """0016 of 0016-mm-rmap-....patch; the series index otherwise."""
    head = patch.name.split("-", 1)[0]
    return head if head.isdigit() else f"{index:04d}"


@dataclass(frozen=True)
class HistoryReport:
    since: Snapshot
    base: Snapshot
    touched: int  # files the series touches
    changed: int  # ... that the stable update changed
    changes: int  # stable changes in them
    findings: tuple[Finding, ...]

    def restored(self) -> list[Finding]:
        return [f for f in self.findings if f.kind is Kind.RESTORED]

    def lines(self) -> list[str]:
        head = (
            f"history: {self.since.label} -> {self.base.label}: "
            f"{self.changes} stable changes in {self.changed} of the "
            f"{self.touched} files the series touches"
        )
        n = len(self.restored())
        tail = f"history: {n} restored, {len(self.findings) - n} touches"
        return [head, *(f.line() for f in self.findings), tail]

    def raise_if_restored(self) -> None:
        patches = list(dict.fromkeys(f.patch for f in self.restored()))
        if patches:
            raise HistoryError(
                f"patch {', '.join(patches)} restores code that the stable "
                f"update from {self.since.label} to the base removed",
                hint="see the restored lines above; if that is meant, say "
                "why in the patch's message",
            )


def patch_diffs(
    series: source.Series,
) -> list[tuple[Path, list[unidiff.FileDiff]]]:
    """Each patch with the files it changes."""
    return [(p, unidiff.parse(p.read_text())) for p in series.patches]


def histories(
    paths: list[str], since: Snapshot, base: Snapshot
) -> dict[str, FileHistory]:
    out = {}
    for path in paths:
        old, new = since.read(path), base.read(path)
        if old is None and new is None or old == new:
            continue
        h = file_history(path, old or [], new or [])
        if h.changes:
            out[path] = h
    return out


def check_series(
    series: source.Series, since: Snapshot, base: Snapshot
) -> HistoryReport:
    """Every patch of the series against the stable changes from
    ``since`` to ``base`` in the files the series touches."""
    patches = patch_diffs(series)
    paths = sorted(
        {
            p
            for _, diffs in patches
            for d in diffs
            for p in (d.old_path, d.new_path)
            if p
        }
    )
    history = histories(paths, since, base)
    files: dict[str, list[str]] = {}
    findings: list[Finding] = []
    for index, (patch, diffs) in enumerate(patches, 1):
        found = _PatchFindings(patch_number(patch, index), since.label)
        for diff in diffs:
            f = _apply(patch, diff, files, base)
            if diff.path in history:
                _read_hunks(found, history[diff.path], f)
        findings.extend(found.findings())
    return HistoryReport(
        since,
        base,
        len(paths),
        len(history),
        sum(len(h.changes) for h in history.values()),
        tuple(findings),
    )


def _apply(
    patch: Path,
    diff: unidiff.FileDiff,
    files: dict[str, list[str]],
    base: Snapshot,
) -> _FileAfterPatch:
    """The patch's diff of one file, on what the patches before it left."""
    if diff.old_path is None:
        before = []
    elif diff.old_path in files:
        before = files[diff.old_path]
    else:
        before = base.read(diff.old_path) or []
    try:
        f = _FileAfterPatch(before, diff)
    except unidiff.HunkMismatch as e:
        raise PatchApplyError(
            f"patch {patch.name} does not apply to {diff.path} "
            f"({e.hunk.header}) after the patches before it",
            hint="run `foliolab check` without --history-only for git "
            "am's own report",
        ) from None
    if diff.old_path and diff.old_path != diff.new_path:
        files[diff.old_path] = []
    if diff.new_path:
        files[diff.new_path] = f.applied.lines
    return f


def _read_hunks(
    found: _PatchFindings, history: FileHistory, f: _FileAfterPatch
) -> None:
    for hunk in f.applied.hunks:
        for name, where, changes in restorations(history, f, hunk):
            found.add(_Key(Kind.RESTORED, history.path, name), where, changes)
        for name, where, changes in touches(history, f, hunk):
            found.add(_Key(Kind.TOUCHES, history.path, name), where, changes)
