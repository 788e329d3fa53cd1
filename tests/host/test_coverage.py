"""Changed-line coverage (foliolab/coverage.py and around): a small C tree
with a two-patch series, built on the host with ``gcc --coverage`` and
run once, so that some added lines run and some do not; the mapper and
the classifier must give exact counts. Then the guest's record (the
busybox script that ships the .gcda files) and what a damaged or missing
record does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from foliolab import (coverage, coveragerun, gcovdata, gcovrecord, ifdefs,
                      parse, serieslines)
from foliolab.arch import get_arch
from foliolab.coverage import BuildFacts, LineState

GIT = ["git", "-c", "user.name=foliolab", "-c",
       "user.email=foliolab@example.org", "-c", "commit.gpgsign=false"]

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
    "src/util.c": BASE["src/util.c"].replace(
        "\tint y = x * 2;\n",
        "\tint y = x * 2;\n"
        "\tif (y > 1000)\n"
        "\t\ty = 1000;\n"
        "\t/* clamped */\n").replace(
        "\treturn x - 1;\n",
        "\tif (x > 3)\n"
        "\t\tx = 3;\n"
        "\treturn x - 1;\n"),
    "src/util.h": BASE["src/util.h"] + """\

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
        "#endif\n"),
    "arch/arm64/fast.c": BASE["arch/arm64/fast.c"].replace(
        "\treturn 1;\n", "\tint z = 2;\n\n\treturn z;\n"),
}


def _patch2(files: dict[str, str]) -> dict[str, str]:
    """Patch 2 changes one of patch 1's lines, removes another, adds
    lines above patch 1's second hunk (moving it), a new C file no object
    is built from, and a line in a directory that is not profiled."""
    return {
        "src/util.c": files["src/util.c"].replace(
            "\tif (y > 1000)\n", "\tif (y >= 1000)\n").replace(
            "\t/* clamped */\n", "").replace(
            "\tt += x;\n", "\tt += x;\n\tt += 1;\n\tt *= 1;\n"),
        "src/main.c": files["src/main.c"].replace(
            "\treturn total > 100;\n",
            "\ttotal += twice(argc);\n\treturn total > 100;\n"),
        "src/extra.c": "int extra(void)\n{\n\treturn 2;\n}\n",
        "tools/gen.c": files["tools/gen.c"].replace(
            "\treturn 0;\n", "\tint g = 0;\n\n\treturn g;\n"),
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def _commit(repo: Path, files: dict[str, str], subject: str) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The repository (base, patch 1, patch 2), the series directory
    made by git format-patch, and an out-of-tree build of the patched
    tree (compiled in its build directory like the kernel's O= build),
    run once with no arguments."""
    root = tmp_path_factory.mktemp("covtree")
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, BASE, "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    _commit(repo, PATCH1, "util: clamp scale() and unused()")
    both = {p: (repo / p).read_text() for p in BASE}
    _commit(repo, _patch2(both), "util: clamp from 1000 on, count twice")
    series = root / "series"
    _git(repo, "format-patch", "-q", "--cover-letter", "-o", str(series),
         f"{base}..HEAD")
    (series / "series").write_text("".join(
        p.name + "\n" for p in sorted(series.glob("000[1-9]-*.patch"))))
    build = root / "build"
    (build / "src").mkdir(parents=True)
    for name in ("main", "util"):
        subprocess.run(["gcc", "--coverage", "-O0", "-I", str(repo / "src"),
                        "-c", str(repo / "src" / f"{name}.c"), "-o",
                        f"src/{name}.o"], cwd=build, check=True)
    subprocess.run(["gcc", "--coverage", "-o", "prog", "src/main.o",
                    "src/util.o"], cwd=build, check=True)
    subprocess.run([str(build / "prog")], cwd=build)   # exit code is moot
    return {"repo": repo, "base": base, "series": series, "build": build}


def _read_base(t):
    def read(path):
        cp = subprocess.run([*GIT, "-C", str(t["repo"]), "show",
                             f"{t['base']}:{path}"], capture_output=True,
                            text=True)
        return cp.stdout if cp.returncode == 0 else None
    return read


def _lines(t) -> serieslines.SeriesLines:
    patches = sorted(t["series"].glob("000[1-9]-*.patch"))
    return serieslines.map_series(patches, _read_base(t))


FACTS = BuildFacts("x86_64", "x86", {"CONFIG_X86_64": "y"},
                   frozenset({"src/main.c", "src/util.c"}), ("src",))


def test_mapper_places_each_patch_line_in_the_final_tree(tree):
    sl = _lines(tree)
    assert [p.subject for p in sl.patches] == [
        "util: clamp scale() and unused()",
        "util: clamp from 1000 on, count twice"]
    # the in-memory result is the tree git made
    for path, text in sl.final.items():
        assert "\n".join(text) + "\n" == (tree["repo"] / path).read_text()
    got = {(a.patch, a.path, a.line, a.text) for a in sl.lines}
    assert got == {
        (1, "src/util.c", 7, "\t\ty = 1000;"),
        # patch 1 left these at 23-24; patch 2 removed a line above them
        # and added two
        (1, "src/util.c", 24, "\tif (x > 3)"),
        (1, "src/util.c", 25, "\t\tx = 3;"),
        (1, "src/util.h", 4, ""),
        (1, "src/util.h", 5, "static inline int bump(int x)"),
        (1, "src/util.h", 6, "{"),
        (1, "src/util.h", 7, "\treturn x + 1;"),
        (1, "src/util.h", 8, "}"),
        (1, "src/main.c", 8, "\ttotal += bump(argc);"),
        (1, "src/main.c", 9, "#ifdef CONFIG_ARM64"),
        (1, "src/main.c", 10, "\ttotal += 7;"),
        (1, "src/main.c", 11, "#endif"),
        (1, "arch/arm64/fast.c", 3, "\tint z = 2;"),
        (1, "arch/arm64/fast.c", 4, ""),
        (1, "arch/arm64/fast.c", 5, "\treturn z;"),
        (2, "src/util.c", 6, "\tif (y >= 1000)"),     # patch 1's, changed
        (2, "src/util.c", 17, "\tt += 1;"),
        (2, "src/util.c", 18, "\tt *= 1;"),
        (2, "src/main.c", 12, "\ttotal += twice(argc);"),
        (2, "src/extra.c", 1, "int extra(void)"),
        (2, "src/extra.c", 2, "{"),
        (2, "src/extra.c", 3, "\treturn 2;"),
        (2, "src/extra.c", 4, "}"),
        (2, "tools/gen.c", 3, "\tint g = 0;"),
        (2, "tools/gen.c", 4, ""),
        (2, "tools/gen.c", 5, "\treturn g;"),
    }
    # patch 1's "if (y > 1000)" (changed) and "/* clamped */" (removed)
    assert sl.superseded == {1: 2}
    assert sorted(sl.touched) == ["arch/arm64/fast.c", "src/extra.c",
                                  "src/main.c", "src/util.c", "src/util.h",
                                  "tools/gen.c"]


def _data(t) -> gcovdata.GcovData:
    sl = _lines(t)
    objects = gcovdata.objects_in(t["build"])
    return gcovdata.collect(objects, gcovdata.SourcePaths(t["repo"],
                                                          sl.final))


def test_classify_gives_exact_counts_per_patch(tree):
    sl = _lines(tree)
    data = _data(tree)
    assert data.objects == {"src/main.c", "src/util.c"} and not data.bad
    results = coverage.classify(sl, data, FACTS)
    rep = coverage.CoverageReport(sl.patches, results, FACTS,
                                  superseded=sl.superseded)
    p1 = coverage.Tally.of(rep.of_patch(1))
    by = {(r.path, r.line): r for r in results}
    # patch 1: 15 lines; ran: bump()'s signature and return, the call;
    # never ran: the clamp's assignment and both lines in unused()
    assert (p1.added, p1.executable, p1.ran) == (15, 6, 3)
    assert p1.states[LineState.NEVER_RAN] == 3
    assert p1.states[LineState.NOT_EXECUTABLE] == 5
    assert p1.states[LineState.NOT_BUILT] == 4
    never = [(r.where, r.function) for r in rep.of_patch(1)
             if r.state is LineState.NEVER_RAN]
    assert never == [("src/util.c:7", "scale"), ("src/util.c:24", "unused"),
                     ("src/util.c:25", "unused")]
    assert by[("src/main.c", 8)].count == 1
    assert by[("src/util.h", 7)].state is LineState.RAN
    assert by[("src/util.h", 7)].function == "bump"
    assert by[("src/main.c", 10)].why == \
        "not built for x86_64: #ifdef CONFIG_ARM64 in src/main.c"
    assert p1.apart == {"not built for x86_64: arch/arm64/fast.c": 3,
                        "not built for x86_64: #ifdef CONFIG_ARM64 in "
                        "src/main.c": 1}
    # patch 2: 11 lines; the changed clamp test, t += 1, t *= 1 and the
    # call of twice() ran; extra.c is built by no object, tools/ is not
    # profiled
    p2 = coverage.Tally.of(rep.of_patch(2))
    assert (p2.added, p2.executable, p2.ran) == (11, 4, 4)
    assert p2.percent == 100.0
    assert p2.apart == {
        "not built for x86_64: src/extra.c (this config compiles no "
        "object from it)": 4,
        "not profiled: tools/gen.c (its directory is not profiled)": 3}
    total = coverage.Tally.of(results)
    assert (total.added, total.executable, total.ran) == (26, 10, 7)
    assert total.percent == 70.0


def test_reports_text_json_html(tree, tmp_path):
    sl = _lines(tree)
    letter = sorted(tree["series"].glob("0000-*.patch"))[0]
    letter.write_text(letter.read_text().replace(
        "*** BLURB HERE ***",
        "Series map\n----------\n\n  0001       S1.  The clamp.\n"
        "             0001  sub-line, not an entry\n"
        "  0002       Prerequisites of S1 and S2: more\n"))
    groups = serieslines.series_map(letter.read_text())
    assert [(g.label, g.first, g.last) for g in groups] == [
        ("S1", 1, 1), ("Prerequisites of S1 and S2", 2, 2)]
    rep = coverage.CoverageReport(
        sl.patches, coverage.classify(sl, _data(tree), FACTS), FACTS,
        groups, sl.superseded, ["mglru-y"], [])
    coveragerun.write(rep, tmp_path)
    text = (tmp_path / "coverage.txt").read_text()
    assert "Totals: added 26, executable 10, ran 7 (70.0%)" in text
    assert "src/util.c:24  unused  | if (x > 3)" in text
    assert "not built for x86_64: arch/arm64/fast.c (3 lines)" in text
    assert "(2 of its added line(s) a later patch changed or removed" in text
    assert "never-ran" in text and "Legend" in text
    doc = json.loads((tmp_path / "coverage.json").read_text())
    assert doc["totals"]["ran"] == 7 and doc["totals"]["executable"] == 10
    assert [g["label"] for g in doc["groups"]] == \
        ["S1", "Prerequisites of S1 and S2"]
    assert doc["patches"][0]["totals"]["never-ran"] == 3
    html = (tmp_path / "coverage.html").read_text()
    assert html.count('<tr class="never-ran"') == 3
    assert html.count('<tr class="ran"') == 7
    assert "Legend" in html and "<script" not in html


def test_ifdefs_decide_config_conditions_only():
    cfg = {"CONFIG_X86_64": "y", "CONFIG_KSM": "m", "CONFIG_NR": "4"}
    src = ["#ifdef CONFIG_ARM64", "a", "#elif defined(CONFIG_X86_64)", "b",
           "#else", "c", "#endif",
           "#if IS_ENABLED(CONFIG_KSM) && !defined(CONFIG_ARM64)", "d",
           "#endif",
           "#if FOO_LOCAL > 2", "e", "#else", "f", "#endif",
           "#ifndef CONFIG_X86_64", "g", "#endif",
           "#if CONFIG_NR == 4 || defined(CONFIG_ARM64)", "h", "#else", "i",
           "#endif"]
    assert ifdefs.excluded_lines(src, cfg) == {
        2: "#ifdef CONFIG_ARM64", 6: "#else of #ifdef CONFIG_ARM64",
        17: "#ifndef CONFIG_X86_64",
        22: "#else of #if CONFIG_NR == 4 || defined(CONFIG_ARM64)"}


def test_profile_dirs_from_the_series_paths():
    makefiles = {"mm/Makefile": "obj-y += rmap.o\n",
                 "arch/x86/mm/Makefile": "obj-y += tlb.o\n",
                 "arch/x86/boot/Makefile": "GCOV_PROFILE := n\n"}
    plan = coveragerun.profile_dirs(
        ["mm/rmap.c", "mm/internal.h", "include/linux/mm.h",
         "arch/arm64/mm/contpte.c", "arch/x86/mm/tlb.c",
         "arch/x86/boot/main.c", "tools/testing/selftests/mm/cow.c",
         "arch/x86/include/asm/tlbflush.h"],
        "x86", makefiles.get)
    assert plan.dirs == ("arch/x86/mm", "mm")
    assert plan.skipped == {
        "arch/arm64/mm": "another architecture's",
        "arch/x86/boot": "its Makefile turns gcov off (GCOV_PROFILE := n)"}
    assert coveragerun.make_vars(plan.dirs) == (
        "GCOV_PROFILE=$(if $(filter arch/x86/mm arch/x86/mm/ mm mm/,"
        "$(obj)),y)",)


# ---- the guest's record and what the host does with it ----------------------

GUEST_LIB = Path(coveragerun.__file__).parent / "guest" / "lib.sh"
# what fl_gcov_ship runs: busybox's applets only, as in the guest
APPLETS = ("sh", "find", "mkdir", "cat", "tar", "gzip", "sha256sum", "cut",
           "wc", "base64", "head", "rm", "awk", "uname")


def _fake_debugfs(t, root: Path) -> Path:
    """/sys/kernel/debug/gcov as the kernel lays it out: the data files
    under the build directory's absolute path, the notes as links."""
    gcov = root / "gcov"
    for gcda in t["build"].rglob("*.gcda"):
        rel = gcda.relative_to("/")
        (gcov / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(gcda, gcov / rel)
        (gcov / rel).with_suffix(".gcno").symlink_to(
            "/nonexistent/in/the/guest.gcno")
    return gcov


def _ship(gcov_dir: Path, tmp_path: Path) -> list[str]:
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
        capture_output=True, text=True, cwd=tmp_path, check=True)
    return cp.stdout.splitlines()


def _notes(t) -> dict[str, Path]:
    return gcovdata.objects_in(t["build"], ".gcno")


def test_guest_script_ships_the_data_the_host_reads(tree, tmp_path):
    records = _ship(_fake_debugfs(tree, tmp_path), tmp_path)
    files = parse.parse_records(records).samples[0].files
    assert records[0] == "@@ file coverage.gcda"
    archive = gcovrecord.decode(files[gcovrecord.RECORD])
    guest = gcovrecord.unpack(archive)
    assert sorted(p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1]
                  for p in guest) == ["src/main.gcda", "src/util.gcda"]
    placed, unmatched = gcovrecord.place(guest, _notes(tree),
                                         tmp_path / "boot")
    assert sorted(placed) == ["src/main.c", "src/util.c"] and not unmatched
    sl = _lines(tree)
    shipped = gcovdata.collect(placed, gcovdata.SourcePaths(tree["repo"],
                                                            sl.final))
    direct = _data(tree)
    assert not shipped.bad
    assert {p: f.counts for p, f in shipped.files.items()} == \
        {p: f.counts for p, f in direct.files.items()}


def test_guest_script_without_gcov_says_so_in_one_line(tmp_path):
    records = _ship(tmp_path / "no-such-dir", tmp_path)
    text = parse.parse_records(records).samples[0].files[gcovrecord.RECORD]
    with pytest.raises(gcovrecord.CoverageRecordError) as e:
        gcovrecord.decode(text)
    assert str(e.value) == ("the guest sent no coverage data: no "
                            f"{tmp_path}/no-such-dir in this kernel "
                            "(CONFIG_GCOV_KERNEL?)")


def _record(t, tmp_path: Path) -> list[str]:
    return _ship(_fake_debugfs(t, tmp_path / "ship"), tmp_path / "ship")


def _run_dir(t, tmp_path: Path) -> tuple[Path, coveragerun.Plan]:
    """A run directory as the suite leaves it, before the report: the
    build's notes and .config kept (coveragerun.snapshot)."""
    out = tmp_path / "run"
    out.mkdir()
    (t["build"] / ".config").write_text("CONFIG_X86_64=y\n")
    plan = coveragerun.Plan(_lines(t), coveragerun.ProfilePlan(("src",)),
                            t["repo"])
    coveragerun.snapshot(t["build"], plan, out)
    return out, plan


KTAP = ["@@ file ktap.anon_swap", "KTAP version 1", "1..1",
        "ok 1 anon_swap.pageout_64k", "@@ end"]


def _boot(out: Path, name: str, records: list[str],
          exited: bool = True) -> Path:
    d = out / name
    d.mkdir()
    (d / "results.txt").write_text("\n".join(
        ["@@ boot 1.0", *KTAP, *records] + (["@@ exit 0"] if exited
                                           else [])) + "\n")
    return d


def test_damaged_or_missing_record_is_one_line_rest_whole(tree, tmp_path):
    (tmp_path / "ship").mkdir()
    good = _record(tree, tmp_path)
    out, plan = _run_dir(tree, tmp_path)
    # a base64 line changed on the way: the digest no longer holds
    damaged = list(good)
    damaged[3] = damaged[3][:10] + ("A" if damaged[3][10] != "A" else "B") \
        + damaged[3][11:]
    cut = good[:4]                  # the guest died while sending it
    boots = [_boot(out, "mglru-y", good), _boot(out, "mglru-n", damaged),
             _boot(out, "cut", cut, exited=False), _boot(out, "none", [])]
    arch = get_arch("x86_64")
    rep = coveragerun.finish(out, boots, plan, arch)
    assert rep.boots == ["mglru-y"]
    assert rep.problems == [
        "boot mglru-n: coverage record damaged: its sha256 does not match",
        f"boot cut: coverage record cut off: {len(cut[2] + cut[3])} of "
        f"{_chars(good)} base64 characters ({good[1].split()[2]} bytes)",
        "boot none: no coverage record: the guest sent none (the boot "
        "ended before the suite did?)"]
    # the good boot's counts, whole
    total = coverage.Tally.of(rep.results)
    assert (total.added, total.executable, total.ran) == (26, 10, 7)
    text = (out / "coverage.txt").read_text()
    assert "problem: boot mglru-n: coverage record damaged" in text
    # and the suite's own results of the damaged boot are all there
    from foliolab import suite
    from foliolab.bootrecord import BootResult
    res = BootResult("ok", 0, [], boots[1] / "console.log",
                     boots[1] / "results.txt", 1.0,
                     (boots[1] / "results.txt").read_text().splitlines())
    assert [(c.name, c.status) for c in suite.judge_boot("n", res).checks] \
        == [("anon_swap.pageout_64k", "pass")]


def _chars(lines: list[str]) -> int:
    return len("".join(lines[2:-1]))


def test_no_usable_record_at_all_is_no_data_never_never_ran(tree, tmp_path):
    out, plan = _run_dir(tree, tmp_path)
    boot = _boot(out, "mglru-y", [])
    rep = coveragerun.finish(out, [boot], plan, get_arch("x86_64"))
    t = coverage.Tally.of(rep.results)
    assert (t.executable, t.ran) == (0, 0)
    # what the build says holds without data: 8 not built (another
    # architecture's file, the #ifdef, a file with no object), 3 not
    # profiled; the other 15 lines have no data
    assert t.states[LineState.NOT_BUILT] == 8
    assert t.states[LineState.NOT_PROFILED] == 3
    assert t.states[LineState.NO_DATA] == 15
    assert coveragerun.summary_line(rep) == (
        "# coverage: 0 of 0 executable added lines ran (-), 26 added; "
        "1 problem(s), see the report")


def test_one_damaged_data_file_is_no_data_for_its_lines_only(tree,
                                                             tmp_path):
    (tmp_path / "ship").mkdir()
    records = _record(tree, tmp_path)
    out, plan = _run_dir(tree, tmp_path)
    boot = _boot(out, "mglru-y", records)
    # what gcov says of a file that is not gcda: every count 0, exit 2
    (out / "coverage" / "notes" / "src" / "util.gcno").write_bytes(
        b"not a notes file")
    rep = coveragerun.finish(out, [boot], plan, get_arch("x86_64"))
    assert rep.problems[0].startswith("src/util.c: gcov: ")
    util = [r for r in rep.results if r.path == "src/util.c"]
    assert {r.state for r in util} == {LineState.NO_DATA}
    assert len(util) == 6
    main = {r.line: r.state for r in rep.results if r.path == "src/main.c"}
    assert main[8] is LineState.RAN and main[12] is LineState.RAN


def test_a_build_without_notes_files_did_not_profile(tree, tmp_path):
    plan = coveragerun.Plan(_lines(tree), coveragerun.ProfilePlan(("mm",)),
                            tree["repo"])
    with pytest.raises(coveragerun.BuildError) as e:
        coveragerun.snapshot(tree["build"], plan, tmp_path)
    assert "made no .gcno files in mm: nothing was profiled" in str(e.value)


def test_finish_safely_keeps_any_failure_to_one_line(tree, tmp_path):
    plan = coveragerun.Plan(_lines(tree), coveragerun.ProfilePlan(("src",)),
                            tree["repo"])
    out = tmp_path / "run"
    out.mkdir()
    # a boot whose results cannot be read is that boot's one line
    (out / "mglru-y" / "results.txt").mkdir(parents=True)
    rep = coveragerun.finish(out, [out / "mglru-y"], plan,
                             get_arch("x86_64"))
    assert len(rep.problems) == 1 and \
        rep.problems[0].startswith("boot mglru-y: coverage data unreadable")
    # a report that cannot be written is one line, and no exception
    (out / "coverage.txt").unlink()
    (out / "coverage.txt").mkdir()
    line = coveragerun.finish_safely(out, [out / "mglru-y"], plan,
                                     get_arch("x86_64"))
    assert line.startswith("# coverage: no report: ")
    assert "\n" not in line


# ---- the kernel's side, as far as it goes without building one --------------

def test_coverage_config_is_debug_plus_gcov_and_no_comparison_purpose():
    from foliolab import kconfig
    files = [f.name for f in kconfig.fragment_files("coverage", "x86_64")]
    assert files == ["base.config", "arch-x86_64.config", "debug.config",
                     "coverage.config"]
    opts = kconfig.merge("coverage", "x86_64").options
    assert opts["CONFIG_GCOV_KERNEL"] == "y"
    assert opts["CONFIG_GCOV_PROFILE_ALL"] == "n"
    assert opts["CONFIG_DEBUG_VM"] == "y" and opts["CONFIG_DEBUG_FS"] == "y"
    # never a --config of compare, run, attribute ...: no timed or
    # counted sample comes from a coverage kernel
    assert "coverage" not in kconfig.PURPOSES
    from foliolab import boot
    assert boot.debug_cmdline("coverage") == boot.debug_cmdline("debug")


def test_cli_refuses_coverage_with_count_or_another_config():
    from foliolab.errors import UsageError
    x86 = get_arch("x86_64")
    with pytest.raises(UsageError, match="--coverage and --count do not mix"):
        coveragerun.check_request(True, "debug", x86)
    with pytest.raises(UsageError, match="builds its own kernel"):
        coveragerun.check_request(False, "kasan", x86)
    coveragerun.check_request(False, "debug", x86)      # gcov is here
    from foliolab.cli import build_parser
    args = build_parser().parse_args(["test", "--coverage"])
    assert args.coverage and args.config == "debug"


def test_build_passes_the_profiling_variable_to_make(tmp_path, tmp_cache,
                                                     monkeypatch):
    from foliolab import build, kconfig, source, timings
    argvs = []
    monkeypatch.setattr(build.hostsetup, "ensure_arch", lambda arch: None)
    monkeypatch.setattr(source, "checkout", lambda tree: None)
    monkeypatch.setattr(build, "configure", lambda tree, arch, purpose, out:
                        out.mkdir(parents=True) or out / ".config")
    monkeypatch.setattr(build, "_run_make",
                        lambda argv, *a: argvs.append(argv) or 0)
    monkeypatch.setattr(kconfig, "check", lambda *a: None)
    monkeypatch.setattr(timings, "record_build", lambda *a: None)
    monkeypatch.setattr(build, "config_digest", lambda p: "x")
    tree = source.Tree("patched", tmp_path, "c0ffee", "d")
    monkeypatch.setattr(source.Tree, "version", lambda self: (6, 12))
    k = build.build_kernel(tree, get_arch("x86_64"), "coverage",
                           make_vars=coveragerun.make_vars(("mm",)))
    assert k.build_dir.name == "x86_64-coverage-patched"
    assert argvs[0][-2:] == ["GCOV_PROFILE=$(if $(filter mm mm/,$(obj)),y)",
                             "bzImage"]


def _tree_and_series(t):
    from foliolab import source
    head = _git(t["repo"], "rev-parse", "HEAD").strip()
    onto = source.Onto("base", "test base", t["base"])
    tree = source.Tree("patched", t["repo"], head, "d", onto=onto)
    patches = tuple(sorted(t["series"].glob("000[1-9]-*.patch")))
    return tree, source.Series(t["series"], patches)


def test_plan_for_the_series_of_the_tree(tree):
    from foliolab import source
    from foliolab.errors import UsageError
    t, series = _tree_and_series(tree)
    plan = coveragerun.plan_for(t, series, get_arch("x86_64"))
    assert plan.profile.dirs == ("src",)
    assert plan.problems == ["arch/arm64/ not profiled: another "
                             "architecture's"]
    assert len(plan.lines.lines) == 26
    with pytest.raises(UsageError, match="has no series"):
        coveragerun.plan_for(t, source.Series(Path("/dev/null"), ()),
                             get_arch("x86_64"))


def test_run_suite_with_coverage_reports_after_the_suite(tree, tmp_path,
                                                         monkeypatch):
    """run_suite with the build and the boots stood in for: the profiling
    variable reaches the build, the job turns coverage on, the suite's
    results are written as ever, and the coverage report follows; a boot
    whose record is missing is one line of it."""
    from foliolab import build, suite
    from foliolab.bootrecord import BootResult
    (tmp_path / "ship").mkdir()
    record = _record(tree, tmp_path)
    t, series = _tree_and_series(tree)
    arch = get_arch("x86_64")
    plan = coveragerun.plan_for(t, series, arch)
    (tree["build"] / ".config").write_text("CONFIG_X86_64=y\n")
    seen: dict = {"jobs": []}

    def fake_build(tree_, arch_, purpose, slot=None, make_vars=()):
        seen["purpose"], seen["make_vars"] = purpose, make_vars
        return build.Kernel("patched", purpose, "x86_64", tree["build"],
                            tree["build"] / "bzImage", "c0ffee", "x", 0.0)

    def fake_boot(spec, image, job, rundir, extra=None):
        seen["jobs"].append(job)
        rundir.mkdir(parents=True)
        lines = ["@@ boot 1.0", *KTAP,
                 *(record if rundir.name == "mglru-y" else []), "@@ exit 0"]
        (rundir / "results.txt").write_text("\n".join(lines) + "\n")
        return BootResult("ok", 0, [], rundir / "console.log",
                          rundir / "results.txt", 1.0, lines)

    monkeypatch.setattr(suite.build, "build_kernel", fake_build)
    monkeypatch.setattr(suite.image, "build_image",
                        lambda arch_: type("Img", (), {"path": tmp_path})())
    monkeypatch.setattr(suite.boot_mod, "boot", fake_boot)
    out = tmp_path / "out"
    passed, summary = suite.run_suite(t, arch, out, kselftests=False,
                                      purpose="coverage", coverage=plan)
    assert passed
    assert seen["purpose"] == "coverage"
    assert seen["make_vars"] == coveragerun.make_vars(("src",))
    assert all("export FL_COVERAGE=1\n" in job for job in seen["jobs"])
    ktap = (out / "suite.ktap").read_text()
    assert "ok 1 mglru=y anon_swap.pageout_64k" in ktap
    assert "# coverage" not in ktap         # the suite's own file, as ever
    assert summary.splitlines()[-1] == (
        "# coverage: 7 of 10 executable added lines ran (70.0%), 26 added; "
        "2 problem(s), see the report")
    doc = json.loads((out / "coverage.json").read_text())
    assert doc["boots"] == ["mglru-y"]
    assert doc["problems"] == [
        "arch/arm64/ not profiled: another architecture's",
        "boot mglru-n: no coverage record: the guest sent none (the boot "
        "ended before the suite did?)"]
    assert (out / "coverage" / "notes" / "src" / "util.gcno").exists()
