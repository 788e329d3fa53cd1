"""A small C tree with a two-patch series, built with ``gcc --coverage``
out of tree and run once, and the stand-ins for a coverage boot (the
guest's record made by lib.sh under busybox, a run directory): what
test_coverage_lines.py and test_coverage_run.py measure changed-line
coverage on without a kernel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from foliolab.coverage import gcovdata
from foliolab.coverage import run as coveragerun
from foliolab.coverage.lines import BuildFacts
from foliolab.kernel import source
from foliolab.paths import GUEST_DIR
from foliolab.series import lines as serieslines

GIT = [
    "git",
    "-c",
    "user.name=foliolab",
    "-c",
    "user.email=foliolab@example.org",
    "-c",
    "commit.gpgsign=false",
]

BASE = {
    "src/main.c": """\
#include "util.h"

int main(int argc, char **argv)
{
	int total = 0;

	total += scale(argc);
	return total > 100;
}
""",
    "src/util.c": """\
#include "util.h"

int scale(int x)
{
	int y = x * 2;

	return y;
}

int twice(int x)
{
	int t = x;

	t += x;
	return t;
}

int unused(int x)
{
	return x - 1;
}
""",
    "src/util.h": """\
int scale(int x);
int twice(int x);
int unused(int x);
""",
    "arch/arm64/fast.c": """\
int fast(void)
{
	return 1;
}
""",
    "tools/gen.c": """\
int gen(void)
{
	return 0;
}
""",
    "src/Makefile": "obj-y += main.o util.o\n",
}

# Patch 1: two hunks in util.c (one in scale(), which runs, one in
# unused(), which does not), a header inline, an #ifdef CONFIG_ARM64
# block, a line in another architecture's file.
PATCH1 = {
    "src/util.c": BASE["src/util.c"]
    .replace(
        "\tint y = x * 2;\n",
        "\tint y = x * 2;\n\tif (y > 1000)\n\t\ty = 1000;\n\t/* clamped */\n",
    )
    .replace(
        "\treturn x - 1;\n", "\tif (x > 3)\n\t\tx = 3;\n\treturn x - 1;\n"
    ),
    "src/util.h": BASE["src/util.h"]
    + """\

static inline int bump(int x)
{
	return x + 1;
}
""",
    "src/main.c": BASE["src/main.c"].replace(
        "\ttotal += scale(argc);\n",
        "\ttotal += scale(argc);\n"
        "\ttotal += bump(argc);\n"
        "#ifdef CONFIG_ARM64\n"
        "\ttotal += 7;\n"
        "#endif\n",
    ),
    "arch/arm64/fast.c": BASE["arch/arm64/fast.c"].replace(
        "\treturn 1;\n", "\tint z = 2;\n\n\treturn z;\n"
    ),
}


def patch2(files: dict[str, str]) -> dict[str, str]:
    """Patch 2 changes one of patch 1's lines, removes another, adds
    lines above patch 1's second hunk (moving it), a new C file no object
    is built from, and a line in a directory that is not profiled."""
    return {
        "src/util.c": files["src/util.c"]
        .replace("\tif (y > 1000)\n", "\tif (y >= 1000)\n")
        .replace("\t/* clamped */\n", "")
        .replace("\tt += x;\n", "\tt += x;\n\tt += 1;\n\tt *= 1;\n"),
        "src/main.c": files["src/main.c"].replace(
            "\treturn total > 100;\n",
            "\ttotal += twice(argc);\n\treturn total > 100;\n",
        ),
        "src/extra.c": "int extra(void)\n{\n\treturn 2;\n}\n",
        "tools/gen.c": files["tools/gen.c"].replace(
            "\treturn 0;\n", "\tint g = 0;\n\n\treturn g;\n"
        ),
    }


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def commit(repo: Path, files: dict[str, str], subject: str) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)


def make_tree(root: Path) -> dict:
    """In ``root``: the repository (base, patch 1, patch 2), the series
    directory made by git format-patch, and an out-of-tree build of the
    patched tree (compiled in its build directory like the kernel's O=
    build), run once with no arguments."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, BASE, "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    commit(repo, PATCH1, "util: clamp scale() and unused()")
    both = {p: (repo / p).read_text() for p in BASE}
    commit(repo, patch2(both), "util: clamp from 1000 on, count twice")
    series = root / "series"
    git(
        repo,
        "format-patch",
        "-q",
        "--cover-letter",
        "-o",
        str(series),
        f"{base}..HEAD",
    )
    (series / "series").write_text(
        "".join(p.name + "\n" for p in sorted(series.glob("000[1-9]-*.patch")))
    )
    build = root / "build"
    (build / "src").mkdir(parents=True)
    for name in ("main", "util"):
        subprocess.run(
            [
                "gcc",
                "--coverage",
                "-O0",
                "-I",
                str(repo / "src"),
                "-c",
                str(repo / "src" / f"{name}.c"),
                "-o",
                f"src/{name}.o",
            ],
            cwd=build,
            check=True,
        )
    subprocess.run(
        ["gcc", "--coverage", "-o", "prog", "src/main.o", "src/util.o"],
        cwd=build,
        check=True,
    )
    subprocess.run([str(build / "prog")], cwd=build)  # exit code is moot
    return {"repo": repo, "base": base, "series": series, "build": build}


def read_base(t):
    def read(path):
        cp = subprocess.run(
            [*GIT, "-C", str(t["repo"]), "show", f"{t['base']}:{path}"],
            capture_output=True,
            text=True,
        )
        return cp.stdout if cp.returncode == 0 else None

    return read


def series_lines(t) -> serieslines.SeriesLines:
    patches = sorted(t["series"].glob("000[1-9]-*.patch"))
    return serieslines.map_series(patches, read_base(t))


FACTS = BuildFacts(
    "x86_64",
    "x86",
    {"CONFIG_X86_64": "y"},
    frozenset({"src/main.c", "src/util.c"}),
    ("src",),
)


def gcov_data(t) -> gcovdata.GcovData:
    sl = series_lines(t)
    objects = gcovdata.objects_in(t["build"])
    return gcovdata.collect(objects, gcovdata.SourcePaths(t["repo"], sl.final))


def tree_and_series(t):
    head = git(t["repo"], "rev-parse", "HEAD").strip()
    onto = source.Onto("base", "test base", t["base"])
    tree = source.Tree("patched", t["repo"], head, "d", onto=onto)
    patches = tuple(sorted(t["series"].glob("000[1-9]-*.patch")))
    return tree, source.Series(t["series"], patches)


GUEST_LIB = GUEST_DIR / "lib.sh"
# what fl_gcov_ship runs: busybox's applets only, as in the guest
APPLETS = (
    "sh",
    "find",
    "mkdir",
    "cat",
    "tar",
    "gzip",
    "sha256sum",
    "cut",
    "wc",
    "base64",
    "head",
    "rm",
    "awk",
    "uname",
)


def fake_debugfs(t, root: Path) -> Path:
    """/sys/kernel/debug/gcov as the kernel lays it out: the data files
    under the build directory's absolute path, the notes as links."""
    gcov = root / "gcov"
    for gcda in t["build"].rglob("*.gcda"):
        rel = gcda.relative_to("/")
        (gcov / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(gcda, gcov / rel)
        (gcov / rel).with_suffix(".gcno").symlink_to(
            "/nonexistent/in/the/guest.gcno"
        )
    return gcov


def ship(gcov_dir: Path, tmp_path: Path) -> list[str]:
    """Run lib.sh's fl_gcov_ship under busybox with only its applets on
    PATH; the records it prints."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for applet in APPLETS:
        (bindir / applet).symlink_to(busybox)
    cp = subprocess.run(
        [str(bindir / "sh"), "-c", f". {GUEST_LIB}; fl_gcov_ship"],
        env={"PATH": str(bindir), "FL_GCOV": str(gcov_dir)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    return cp.stdout.splitlines()


def notes(t) -> dict[str, Path]:
    return gcovdata.objects_in(t["build"], ".gcno")


def record(t, tmp_path: Path) -> list[str]:
    return ship(fake_debugfs(t, tmp_path / "ship"), tmp_path / "ship")


def run_dir(t, tmp_path: Path) -> tuple[Path, coveragerun.Plan]:
    """A run directory as the suite leaves it, before the report: the
    build's notes and .config kept (coveragerun.snapshot)."""
    out = tmp_path / "run"
    out.mkdir()
    (t["build"] / ".config").write_text("CONFIG_X86_64=y\n")
    plan = coveragerun.Plan(
        series_lines(t), coveragerun.ProfilePlan(("src",)), t["repo"]
    )
    coveragerun.snapshot(t["build"], plan, out)
    return out, plan


KTAP = [
    "@@ file ktap.anon_swap",
    "KTAP version 1",
    "1..1",
    "ok 1 anon_swap.pageout_64k",
    "@@ end",
]


def boot(
    out: Path, name: str, records: list[str], exited: bool = True
) -> Path:
    d = out / name
    d.mkdir()
    (d / "results.txt").write_text(
        "\n".join(
            ["@@ boot 1.0", *KTAP, *records]
            + (["@@ exit 0"] if exited else [])
        )
        + "\n"
    )
    return d


def b64_chars(lines: list[str]) -> int:
    return len("".join(lines[2:-1]))
