"""What the robot compiles for a series: mm/, the objects of the .c files
it changes, and the files that include a header it changes.

A whole kernel per cell and prefix would take hours here; the robot
compiles what the series can break. That is all of ``mm/`` (every mm
series touches it, and its objects include mm's own headers); every
object, in the cell's config, of the directories of the .c files the
series changes; and for each header the series changes, the .c files
that include it directly, searched in the directories a change to an
mm header breaks first (mm/, kernel/, fs/, ipc/, block/, lib/, init/ and
the cell's own arch/ directory), at most MAX_INCLUDERS of those the
cell's config compiles, the architecture's own and kernel/'s first. A
file that reaches the header only through another header is compiled
when it is in mm/ or a changed file's directory (make follows the
dependencies there), not otherwise:
following every include chain of <linux/mm.h> is the whole kernel.

Which objects a config builds is kbuild's to say, not ours (a .c file
compiled on its own is compiled even when the config leaves it out, and
fails): the robot asks make, with a dry run of the top directories
(``make -n kernel/ fs/``), which objects it would compile, and keeps only
those. A header under another architecture's arch/ selects nothing on
this one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Where the includers of a changed header are looked for: the cell's own
# arch/ directory is added.
SEARCH_DIRS = ("mm", "kernel", "fs", "ipc", "block", "lib", "init")
MAX_INCLUDERS = 40
ALWAYS = "mm"


@dataclass(frozen=True)
class Selection:
    """What a series makes a cell compile, before the config has its say:
    ``dirs`` built whole by kbuild (mm/), the .c files of the changed
    files' directories (``dir_sources``: every enabled object of these
    directories) and the files that include a changed header
    (``includers``), each as a path of a .c file."""

    dirs: tuple[str, ...]
    dir_sources: tuple[str, ...]  # directories, e.g. arch/arm64/mm
    includers: tuple[str, ...]
    changed_c: tuple[str, ...]  # the changed .c files (sparse)
    # per changed header, the first file that includes it (mm/'s first):
    # what sparse checks a header in
    header_users: tuple[str, ...] = ()
    # the header each of ``includers`` was found for (same order)
    includer_headers: tuple[str, ...] = ()

    def top_dirs(self) -> tuple[str, ...]:
        """The top directories make's dry run must look into."""
        tops = {_top(d) for d in self.dir_sources}
        tops.update(_top(f) for f in self.includers)
        return tuple(sorted(tops - {ALWAYS}))


def _top(path: str) -> str:
    parts = path.split("/")
    if parts[0] == "arch" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def include_name(header: str, srcarch: str) -> tuple[str, bool] | None:
    """How a .c file names ``header`` in an #include: (name, quoted):
    ``include/linux/rmap.h`` -> ("linux/rmap.h", False); the cell's own
    ``arch/x86/include/asm/tlbflush.h`` -> ("asm/tlbflush.h", False);
    ``mm/internal.h`` -> ("internal.h", True), a file included by its
    path relative to the includer. None for another architecture's."""
    parts = header.split("/")
    if parts[0] == "include":
        rest = parts[2:] if parts[1] == "uapi" else parts[1:]
        return "/".join(rest), False
    if parts[0] == "arch":
        if len(parts) < 4 or parts[1] != srcarch:
            return None
        if parts[2] == "include":
            rest = parts[4:] if parts[3] == "uapi" else parts[3:]
            return "/".join(rest), False
    if parts[0] == "tools" or parts[0] == "scripts":
        return None
    return posixpath.basename(header), True


_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def includes(text: str) -> list[tuple[str, bool]]:
    """A file's #includes as (name, quoted)."""
    return [
        (m.group(2).strip(), m.group(1) == '"')
        for m in _INCLUDE.finditer(text)
    ]


def includes_header(
    includer: str, text: str, header: str, name: str, quoted: bool
) -> bool:
    """Whether the file ``includer`` (its ``text``) includes ``header``
    directly: <name> for a header of include/ or arch's, or "path"
    relative to the includer that comes out as the header."""
    for inc, q in includes(text):
        if not quoted:
            if inc == name:
                return True
        elif (
            q
            and posixpath.normpath(
                posixpath.join(posixpath.dirname(includer), inc)
            )
            == header
        ):
            return True
    return False


def search_dirs(srcarch: str) -> tuple[str, ...]:
    return (f"arch/{srcarch}",) + SEARCH_DIRS


def _priority(path: str, srcarch: str) -> tuple[int, str]:
    order = search_dirs(srcarch)
    top = _top(path)
    return (order.index(top) if top in order else len(order), path)


def select(
    changed: Iterable[str],
    srcarch: str,
    grep: Callable[[str, tuple[str, ...]], list[str]],
    read: Callable[[str], str],
) -> Selection:
    """The Selection of a series that changes the files ``changed`` (paths
    of the tree), on an architecture whose arch/ directory is
    ``srcarch``. ``grep(word, dirs)``: the .c files under ``dirs`` that
    hold ``word``; ``read(path)``: a file's text (both of the tree the
    series ends in)."""
    changed = sorted(set(changed))
    c_files = [f for f in changed if f.endswith(".c") and _ours(f, srcarch)]
    headers = [f for f in changed if f.endswith(".h")]
    dir_sources = sorted(
        {posixpath.dirname(f) for f in c_files}
        - {ALWAYS}
        - {d for d in _subdirs_of_always(c_files)}
    )
    includers: list[str] = []
    of: list[str] = []
    users: list[str] = []
    for h in headers:
        named = include_name(h, srcarch)
        if named is None:
            continue
        name, quoted = named
        found = []
        for f in grep(posixpath.basename(name), search_dirs(srcarch)):
            if f not in found and includes_header(f, read(f), h, name, quoted):
                found.append(f)
        found.sort(
            key=lambda f: (
                not f.startswith(ALWAYS + "/"),
                f not in c_files,
                _priority(f, srcarch),
            )
        )
        if found and found[0] not in users:
            users.append(found[0])
        found = [
            f
            for f in found
            if f not in includers and not _built_whole(f, dir_sources)
        ]
        found.sort(key=lambda f: _priority(f, srcarch))
        includers.extend(found)
        of.extend([h] * len(found))
    return Selection(
        (ALWAYS,),
        tuple(dir_sources),
        tuple(includers),
        tuple(c_files),
        tuple(users),
        tuple(of),
    )


def _ours(path: str, srcarch: str) -> bool:
    """Whether a changed file can be compiled on this architecture."""
    parts = path.split("/")
    if parts[0] == "arch":
        return len(parts) > 1 and parts[1] == srcarch
    return parts[0] not in (
        "tools",
        "scripts",
        "samples",
        "Documentation",
        "usr",
    )


def _subdirs_of_always(c_files: list[str]) -> set[str]:
    return {
        posixpath.dirname(f) for f in c_files if f.startswith(ALWAYS + "/")
    }


def _built_whole(path: str, dir_sources: list[str]) -> bool:
    return (
        path.startswith(ALWAYS + "/") or posixpath.dirname(path) in dir_sources
    )


def targets(
    sel: Selection, enabled: set[str], exists: Callable[[str], bool]
) -> list[str]:
    """make's targets for a cell: mm/ whole, then every object of
    ``enabled`` (what the config compiles, as .o paths) that is in a
    changed file's directory, then those that include a changed header,
    at most MAX_INCLUDERS a header (the config has its say first: a file
    it leaves out takes no place), for the sources that exist in the
    tree at hand."""
    out = [d + "/" for d in sel.dirs]
    for obj in sorted(enabled):
        src = obj[:-2] + ".c"
        if posixpath.dirname(obj) in sel.dir_sources and exists(src):
            out.append(obj)
    taken: dict[str, int] = {}
    headers = sel.includer_headers or ("",) * len(sel.includers)
    for src, header in zip(sel.includers, headers):
        obj = src[:-2] + ".o"
        if (
            obj in enabled
            and obj not in out
            and exists(src)
            and taken.get(header, 0) < MAX_INCLUDERS
        ):
            out.append(obj)
            taken[header] = taken.get(header, 0) + 1
    return out


_DRY_OBJ = re.compile(r"(?:^|\s)-o\s+(\S+\.o)(?:\s|$)")


def dry_run_objects(text: str, tops: tuple[str, ...]) -> set[str]:
    """The objects a ``make -n`` of the directories ``tops`` would compile
    (their ``-o X.o`` on a compiler's line), under those directories."""
    found = set()
    for line in text.splitlines():
        for m in _DRY_OBJ.finditer(line):
            obj = m.group(1)
            if any(obj.startswith(t + "/") for t in tops) and "/." not in obj:
                found.add(obj)
    return found


def sparse_sources(
    sel: Selection, compiled: Callable[[str], bool]
) -> list[str]:
    """The files sparse checks: the changed .c files the cell compiles,
    and for a changed header not in one of them, the first file that
    includes it (mm/'s first)."""
    out = [f for f in sel.changed_c if compiled(f)]
    return out + [f for f in sel.header_users if f not in out and compiled(f)]


def added_lines(patch_text: str) -> dict[str, list[str]]:
    """The lines a patch adds, per file (stripped), to name the patch a
    diagnostic of the whole series comes from."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in patch_text.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            cur = name[2:] if name.startswith("b/") else None
            if cur:
                out.setdefault(cur, [])
        elif line.startswith("diff --git "):
            cur = None
        elif cur and line.startswith("+"):
            out[cur].append(line[1:].strip())
    return out


def blame(file: str, source: str, patches: list[dict[str, list[str]]]) -> int:
    """The patch (1-based) a diagnostic of the whole series is laid to:
    the last one that adds its line's text to its file, else the last
    one that changes the file, else the last one."""
    text = source.strip()
    if text:
        for i in range(len(patches), 0, -1):
            if text in patches[i - 1].get(file, ()):
                return i
    for i in range(len(patches), 0, -1):
        if file in patches[i - 1]:
            return i
    return len(patches)
