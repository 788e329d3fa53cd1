"""The robot's own logic (`foliolab check --robot`) on small made-up
trees and outputs, no kernel and no compiler: reading diagnostics, what a
patch adds (with line numbers moved by earlier hunks), which cells
compile which prefixes, what a header change makes a cell compile, and
what a cached result is kept under."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from foliolab import cli, proc
from foliolab.errors import UsageError
from foliolab.kernel import source
from foliolab.robot import (
    cache,
    checks,
    command,
    matrix,
    objects,
    prefixes,
    report,
    run,
    toolchain,
    treecheck,
)
from foliolab.robot import diagnostics as dg

# ---- reading diagnostics ---------------------------------------------

GCC = (
    "  CC      mm/vmscan.o\n"
    "../src/mm/vmscan.c: In function 'shrink_folio_list':\n"
    "../src/mm/vmscan.c:1203:7: warning: unused variable 'nr' "
    "[-Wunused-variable]\n"
    " 1203 |   int nr;\n"
    "      |       ^~\n"
    "../src/include/linux/rmap.h:850:1: warning: no previous prototype "
    "for 'f' [-Wmissing-prototypes]\n"
    "../src/mm/vmscan.c:1300:3: note: in expansion of macro 'X'\n"
    "/abs/src/mm/rmap.c:77:9: error: 'x' undeclared (first use in this "
    "function)\n"
    "make[3]: *** [scripts/Makefile.build:229: mm/rmap.o] Error 1\n"
    "mm/rmap.o: warning: objtool: try_to_unmap_one+0x10: call without "
    "frame pointer\n"
)

SPARSE = (
    "  CHECK   mm/rmap.c\n"
    "/abs/src/mm/rmap.c:120:17: warning: incorrect type in argument 1 "
    "(different address spaces)\n"
    "/abs/src/mm/rmap.c:120:17:    expected void const volatile [noderef] "
    "__user *ptr\n"
    "/abs/src/mm/rmap.c:120:17:    got int *p\n"
)


def paths():
    return dg.PathMap("/abs/src", "/abs/build")


def test_compiler_output_read_relative_to_the_tree():
    got = dg.parse_compiler(GCC, "gcc", dg.PathMap("/abs/src", "/abs/build"))
    # "../src" from the build directory is the tree; notes, excerpts and
    # make's own lines are not diagnostics
    assert [(d.file, d.line, d.severity) for d in got] == [
        ("mm/vmscan.c", 1203, "warning"),
        ("include/linux/rmap.h", 850, "warning"),
        ("mm/rmap.c", 77, "error"),
        ("mm/rmap.o", 0, "warning"),
    ]
    assert got[0].message == "unused variable 'nr' [-Wunused-variable]"
    assert got[3].tool == "objtool"


def test_sparse_continuation_lines_are_the_detail():
    (d,) = dg.parse_compiler(SPARSE, "sparse", paths())
    assert d.file == "mm/rmap.c" and d.line == 120
    assert "different address spaces" in d.message
    assert d.detail == (
        "expected void const volatile [noderef] __user *ptr; got int *p"
    )


def test_kernel_doc_both_formats_once_each():
    text = (
        "Warning: mm/vmscan.c:240 No description found for return "
        "value of 'f'\n"
        "Warning: mm/vmscan.c:240 No description found for return "
        "value of 'f'\n"
        "include/linux/rmap.h:12: warning: Function parameter or "
        "struct member 'nr' not described in 'g'\n"
    )
    got = checks.parse_kernel_doc(text)
    assert [(d.file, d.line) for d in got] == [
        ("mm/vmscan.c", 240),
        ("include/linux/rmap.h", 12),
    ]


def test_checkpatch_findings_on_their_file_or_the_patch():
    text = (
        "WARNING: line length of 101 exceeds 100 columns\n"
        "#45: FILE: mm/rmap.c:1830:\n"
        "+\tfoo();\n\n"
        "CHECK: Please use a blank line after declarations\n"
        "#60: FILE: mm/vmscan.c:12:\n\n"
        "WARNING: Possible unwrapped commit description\n"
        "#8: \n\n"
        "total: 0 errors, 2 warnings, 1 checks, 80 lines checked\n"
    )
    got = checks.parse_checkpatch(text, "0003-x.patch")
    assert [(d.file, d.line, d.severity) for d in got] == [
        ("mm/rmap.c", 1830, "warning"),
        ("mm/vmscan.c", 12, "check"),
        ("0003-x.patch", 0, "warning"),
    ]


# ---- what a patch adds -----------------------------------------------


def diag(line, source, message="unused variable 'nr'", file="mm/vmscan.c"):
    return dg.Diagnostic("gcc", file, line, "warning", message, source)


def test_a_warning_moved_down_by_an_earlier_hunk_is_not_new():
    before = [diag(1203, "int nr;")]
    after = [diag(1290, "int nr;")]  # 87 lines added above it
    assert dg.added(before, after) == []


def test_a_new_warning_is_new_even_among_old_ones():
    before = [diag(100, "int nr;"), diag(200, "long x;", "unused 'x'")]
    after = [
        diag(110, "int nr;"),
        diag(210, "long x;", "unused 'x'"),
        diag(300, "int y;", "unused 'y'"),
    ]
    assert dg.added(before, after) == [after[2]]


def test_the_same_warning_on_one_more_line_counts_once():
    before = [diag(10, "int nr;")]
    after = [diag(10, "int nr;"), diag(50, "int nr;")]
    assert dg.added(before, after) == [after[1]]


def test_a_header_warning_printed_per_object_is_one():
    h = diag(
        850, "void f(void)", "no previous prototype", "include/linux/rmap.h"
    )
    assert dg.added([h], [h, h, h]) == []
    assert dg.added([], [h, h]) == [h]


def test_line_numbers_in_a_message_do_not_make_it_new():
    a = diag(5, "int f(void);", "previous declaration at mm/rmap.c:120")
    b = diag(9, "int f(void);", "previous declaration at mm/rmap.c:133")
    assert dg.added([a], [b]) == []


def test_a_changed_line_text_makes_it_new():
    assert dg.added([diag(5, "int nr;")], [diag(5, "int nr = 0;")]) != []


def test_sources_come_from_the_tree():
    lines = {"mm/vmscan.c": ["a", "  int nr;  "]}
    got = dg.with_sources([diag(2, "")], lambda f, n: lines[f][n - 1])
    assert got[0].source == "int nr;"


# ---- the matrix --------------------------------------------------------


def test_the_matrix_covers_the_arches_and_configs():
    cells = matrix.full_matrix()
    names = {c.name for c in cells}
    for arch in ("x86_64", "arm64"):
        for v in matrix.LAB_VARIANTS:
            assert f"{arch}/{v}" in names
    for arch in ("i386", "arm", "riscv64", "powerpc64le", "s390x"):
        assert f"{arch}/mm" in names
    assert "x86_64/perf-clang" in names
    assert len(cells) == 22


def test_only_x86_64_and_i386_compile_every_prefix():
    cells = matrix.full_matrix()
    per = {c.name for c in cells if c.per_prefix}
    assert per == {"x86_64/perf", "i386/mm"}
    for c in cells:
        want = tuple(range(13)) if c.per_prefix else (0, 12)
        assert c.prefixes(12) == want, c.name
    assert cells[0].prefixes(0) == (0,)


def test_cells_are_picked_by_name_arch_or_pattern():
    assert [c.name for c in matrix.select(["arm"])] == ["arm/mm"]
    assert {c.name for c in matrix.select(["*/no-thp"])} == {
        "x86_64/no-thp",
        "arm64/no-thp",
    }
    assert len(matrix.select(["arm64"])) == 8
    assert len(matrix.select(None)) == 22
    with pytest.raises(UsageError, match="no cell 'sparc/mm'"):
        matrix.select(["sparc/mm"])


def configs(tmp_path):
    d = tmp_path / "configs"
    d.mkdir()
    (d / "base.config").write_text(
        "CONFIG_64BIT=y\nCONFIG_SWAP=y\nCONFIG_THP_SWAP=y\n"
        "CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_NUMA=y\n"
    )
    (d / "arch-arm64.config").write_text("CONFIG_ARM64_CONTPTE=y\n")
    (d / "arch-x86_64.config").write_text("CONFIG_ACPI_NUMA=y\n")
    (d / "perf.config").write_text("")
    return d


def cell(name):
    (c,) = [c for c in matrix.full_matrix() if c.name == name]
    return c


def test_an_option_off_takes_what_needs_it_along(tmp_path):
    d = configs(tmp_path)
    cfg = matrix.cell_config(cell("arm64/no-thp"), (6, 12), d)
    assert cfg.musts["CONFIG_TRANSPARENT_HUGEPAGE"] == "n"
    assert "CONFIG_ARM64_CONTPTE" not in cfg.musts
    assert "CONFIG_THP_SWAP" not in cfg.musts
    assert cfg.musts["CONFIG_SWAP"] == "y"
    cfg = matrix.cell_config(cell("x86_64/no-numa"), (6, 12), d)
    assert cfg.musts["CONFIG_NUMA"] == "n"
    assert "CONFIG_ACPI_NUMA" not in cfg.musts
    assert "# CONFIG_NUMA is not set" in cfg.text()


def test_the_debug_cell_asks_for_the_mm_debug_options(tmp_path):
    cfg = matrix.cell_config(
        cell("x86_64/mm-debug"), (6, 12), configs(tmp_path)
    )
    for opt in (
        "DEBUG_VM",
        "DEBUG_VM_PGFLAGS",
        "DEBUG_VM_RB",
        "PAGE_TABLE_CHECK",
    ):
        assert cfg.musts[f"CONFIG_{opt}"] == "y"


def test_an_arch_without_a_feature_is_a_note_not_a_failure():
    cfg = matrix.cell_config(cell("arm/mm"), (7, 3))
    final = (
        "CONFIG_MMU=y\nCONFIG_SWAP=y\nCONFIG_ARCH_MULTI_V7=y\n"
        "CONFIG_ARCH_VIRT=y\nCONFIG_ARM_LPAE=y\nCONFIG_HIGHMEM=y\n"
    )
    miss, lack = cfg.dropped(final)
    assert miss == [] and "CONFIG_NUMA" in lack
    miss, _ = cfg.dropped(final.replace("CONFIG_SWAP=y\n", ""))
    assert miss == ["CONFIG_SWAP=y (got n)"]


# ---- what a header change selects ----------------------------------------

TREE = {
    "mm/rmap.c": '#include <linux/rmap.h>\n#include "internal.h"\n',
    "mm/vmscan.c": '#include <linux/mm.h>\n#include "internal.h"\n',
    "kernel/fork.c": "#include <linux/rmap.h>\n",
    "kernel/exit.c": "#include <linux/mm.h>\n",  # rmap.h via mm.h only
    "fs/proc/task_mmu.c": "#  include <linux/rmap.h>\n",
    "fs/exec.c": '#include "../mm/internal.h"\n',
    "arch/arm64/mm/contpte.c": "#include <asm/tlbflush.h>\n",
    "arch/arm64/kernel/smp.c": "#include <asm/tlbflush.h>\n",
    "arch/x86/mm/tlb.c": "#include <asm/tlbflush.h>\n",
    "drivers/x/y.c": "#include <linux/rmap.h>\n",  # not searched
}


def grep(word, dirs):
    return sorted(
        f
        for f, text in TREE.items()
        if word in text and any(f.startswith(d + "/") for d in dirs)
    )


def read(path):
    return TREE[path]


def test_a_header_selects_the_files_that_include_it():
    sel = objects.select(["include/linux/rmap.h"], "x86", grep, read)
    # mm/ is compiled whole; a file reaching rmap.h through mm.h only is
    # not selected; drivers/ is not searched
    assert sel.includers == ("kernel/fork.c", "fs/proc/task_mmu.c")
    assert sel.dirs == ("mm",)
    assert sel.top_dirs() == ("fs", "kernel")
    # sparse looks at the header through mm/'s includer
    assert sel.header_users == ("mm/rmap.c",)


def test_a_local_header_is_found_by_its_relative_path():
    sel = objects.select(["mm/internal.h"], "x86", grep, read)
    assert sel.includers == ("fs/exec.c",)


def test_an_arch_header_selects_on_its_own_arch_only():
    arm = objects.select(
        ["arch/arm64/include/asm/tlbflush.h", "arch/arm64/mm/contpte.c"],
        "arm64",
        grep,
        read,
    )
    assert arm.dir_sources == ("arch/arm64/mm",)
    assert arm.includers == ("arch/arm64/kernel/smp.c",)
    x86 = objects.select(
        ["arch/arm64/include/asm/tlbflush.h", "arch/arm64/mm/contpte.c"],
        "x86",
        grep,
        read,
    )
    assert x86.includers == () and x86.dir_sources == ()
    assert x86.changed_c == ()


def test_includers_are_capped_after_the_config_has_its_say(monkeypatch):
    many = {
        f"kernel/f{i:03d}.c": "#include <linux/swap.h>\n" for i in range(60)
    }
    many.update(
        {f"fs/g{i:03d}.c": "#include <linux/rmap.h>\n" for i in range(5)}
    )
    monkeypatch.setattr(objects, "MAX_INCLUDERS", 7)
    sel = objects.select(
        ["include/linux/swap.h", "include/linux/rmap.h"],
        "x86",
        lambda w, d: sorted(f for f in many if w in many[f]),
        lambda p: many[p],
    )
    assert len(sel.includers) == 65
    # kernel/'s first ten are not in the config: they take no place
    enabled = {f[:-2] + ".o" for f in many} - {
        f"kernel/f{i:03d}.o" for i in range(10)
    }
    got = objects.targets(sel, enabled, lambda p: True)
    # headers in order (rmap.h, swap.h), each's files by priority
    assert got == ["mm/"] + [f"fs/g{i:03d}.o" for i in range(5)] + [
        f"kernel/f{i:03d}.o" for i in range(10, 17)
    ]


def test_targets_are_what_the_config_compiles_and_exists():
    sel = objects.select(
        ["include/linux/rmap.h", "arch/arm64/mm/a.c"], "arm64", grep, read
    )
    enabled = {
        "kernel/fork.o",
        "arch/arm64/mm/a.o",
        "arch/arm64/mm/b.o",
        "arch/arm64/mm/sub/c.o",
        "kernel/other.o",
    }
    # fs/proc/task_mmu.o is not in the config; b.c is gone from the tree
    exists = {
        "kernel/fork.c",
        "arch/arm64/mm/a.c",
        "fs/proc/task_mmu.c",
        "arch/arm64/mm/sub/c.c",
    }.__contains__
    assert objects.targets(sel, enabled, exists) == [
        "mm/",
        "arch/arm64/mm/a.o",
        "kernel/fork.o",
    ]


def test_make_dry_run_lists_the_objects():
    text = (
        "gcc -Wp,-MMD,kernel/.fork.o.d -nostdinc -c -o kernel/fork.o "
        "../src/kernel/fork.c\n"
        "  gcc -c -o fs/proc/base.o ../src/fs/proc/base.c\n"
        "gcc -o scripts/mod/empty.o x.c\n"
        "ld -o kernel/.tmp_x.o\n"
    )
    assert objects.dry_run_objects(text, ("kernel", "fs")) == {
        "kernel/fork.o",
        "fs/proc/base.o",
    }


def test_a_diagnostic_of_the_whole_series_is_laid_to_its_patch():
    p1 = objects.added_lines(
        "diff --git a/mm/rmap.c b/mm/rmap.c\n"
        "--- a/mm/rmap.c\n+++ b/mm/rmap.c\n"
        "@@ -1 +1,2 @@\n+\tint nr;\n ctx\n"
    )
    p2 = objects.added_lines(
        "--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n+\tlong x;\n"
    )
    assert p1 == {"mm/rmap.c": ["int nr;"]}
    assert objects.blame("mm/rmap.c", "int nr;", [p1, p2]) == 1
    assert objects.blame("mm/vmscan.c", "other", [p1, p2]) == 2
    assert objects.blame("mm/ksm.c", "x", [p1, p2]) == 2


# ---- the run: findings, cache keys ----------------------------------


def fake_series(tmp_path, n):
    made = []
    for i in range(n + 1):
        patch = None
        if i:
            patch = tmp_path / f"{i:04d}-p.patch"
            patch.write_text(
                f"--- a/mm/rmap.c\n+++ b/mm/rmap.c\n+\tint v{i};\n"
            )
        made.append(prefixes.Prefix(i, f"c{i}", f"t{i}", patch))
    return prefixes.SeriesTrees(tmp_path, tuple(made), (7, 3), "base")


def result(name, i, *diags):
    return cache.CellResult(name, f"t{i}", tuple(diags), 1.0, 1, "")


def said(kdoc, checkpatch):
    """What kernel-doc and checkpatch said, in the registry's order (the
    order of their findings on one patch and line)."""
    by = {checks.KERNEL_DOC: kdoc, checks.CHECKPATCH: checkpatch}
    return [treecheck.Said(c, by[c]) for c in checks.CHECKS if c in by]


def test_findings_per_prefix_and_for_the_whole_series(tmp_path, tmp_cache):
    series = fake_series(tmp_path, 3)
    x86, arm = cell("x86_64/perf"), cell("arm/mm")
    old = diag(10, "int old;", file="mm/rmap.c")
    new2 = diag(30, "int v2;", "unused 'v2'", "mm/rmap.c")
    moved = diag(12, "int old;", file="mm/rmap.c")
    results = {
        (x86.name, 0): result(x86.name, 0, old),
        (x86.name, 1): result(x86.name, 1, moved),
        (x86.name, 2): result(x86.name, 2, moved, new2),
        (x86.name, 3): result(x86.name, 3, moved, new2),
        (arm.name, 0): result(arm.name, 0, old),
        (arm.name, 3): result(arm.name, 3, moved, new2),
    }
    kdoc = {i: [] for i in range(4)}
    kdoc[3] = [
        dg.Diagnostic(
            "kernel-doc", "mm/rmap.c", 5, "warning", "No description found"
        )
    ]
    found = report.findings(
        series, (x86, arm), results, said(kdoc, {1: [], 2: [], 3: []})
    )
    assert [f.line() for f in found] == [
        "0002: x86_64/perf: mm/rmap.c:30: warning: unused 'v2'",
        # the whole series on arm: laid to the patch that added the line
        "0002: arm/mm: mm/rmap.c:30: warning: unused 'v2'",
        "0003: all/kernel-doc: mm/rmap.c:5: warning: No description found",
    ]
    assert [f.whole for f in found] == [False, True, False]


def test_an_old_warning_of_an_object_recompiled_later_is_not_new(
    tmp_path, tmp_cache
):
    """Prefix 1 recompiles only rmap.o; prefix 2's header change
    recompiles vsprintf.o, whose warning the base's full compile had: not
    new. A warning prefix 1 added is said once, not again when prefix 3
    recompiles its object."""
    series = fake_series(tmp_path, 3)
    x86 = cell("x86_64/perf")
    old = diag(
        1683, "va_format(", "candidate for gnu_printf", "lib/vsprintf.c"
    )
    new1 = diag(30, "int v1;", "unused 'v1'", "mm/rmap.c")
    results = {
        (x86.name, 0): result(x86.name, 0, old),
        (x86.name, 1): result(x86.name, 1, new1),
        (x86.name, 2): result(x86.name, 2, old),
        (x86.name, 3): result(x86.name, 3, new1, old),
    }
    kdoc = {i: [] for i in range(4)}
    found = report.findings(
        series, (x86,), results, said(kdoc, {1: [], 2: [], 3: []})
    )
    assert [f.line() for f in found] == [
        "0001: x86_64/perf: mm/rmap.c:30: warning: unused 'v1'",
    ]


def test_the_cache_key_follows_tree_config_compiler_and_targets():
    base = dict(
        tree="t",
        cell="x86_64/perf",
        config="CONFIG_SWAP=y\n",
        compilers="gcc 12.2.0",
        targets=["mm/"],
        checks="",
    )
    key = cache.cache_key(**base)
    assert key == cache.cache_key(**base)
    for field, other in (
        ("tree", "t2"),
        ("cell", "i386/mm"),
        ("config", "# CONFIG_SWAP is not set\n"),
        ("compilers", "gcc 13.1.0"),
        ("targets", ["mm/", "kernel/fork.o"]),
        ("checks", "sparse"),
    ):
        assert cache.cache_key(**{**base, field: other}) != key, field


def test_the_cache_keys_are_the_ones_earlier_runs_kept_results_under():
    """A result cached before is found again: the key of a cell's result
    and of kernel-doc's, as the robot made them on 2026-11-29."""
    assert (
        cache.cache_key(
            "t", "x86_64/perf", "CONFIG_SWAP=y\n", "gcc 12.2.0", ["mm/"], ""
        )
        == "5b28f6b117999ffc884fb9c6"
    )
    tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    kdoc = checks.KERNEL_DOC.cell
    assert kdoc == "all/kernel-doc"
    key = cache.cache_key(tree, kdoc, "", "", ["mm/rmap.c"], "")
    assert key == "b44609b0e73f0cc20514e3b8"


def test_a_result_comes_back_from_the_cache(tmp_path):
    kept = cache.ResultCache(tmp_path)
    r = cache.CellResult(
        "arm/mm", "t", (diag(3, "int nr;"),), 12.5, 78, "/log"
    )
    assert kept.get("k") is None
    kept.put("k", r)
    got = kept.get("k")
    assert got.cached and got.diagnostics == r.diagnostics
    (tmp_path / "k.json").write_text("{damaged")
    assert kept.get("k") is None


def test_clang_is_left_out_where_the_tree_needs_a_newer_one(
    monkeypatch, tmp_path
):
    series = fake_series(tmp_path, 1)
    cells = (cell("x86_64/perf"), cell("x86_64/perf-clang"))
    monkeypatch.setattr(toolchain, "min_llvm", lambda repo, c, a: (17, 0, 1))
    keep, notes = toolchain.usable(cells, series)
    assert len(keep) == 2 and notes == []
    monkeypatch.setattr(toolchain, "min_llvm", lambda repo, c, a: (21, 0, 0))
    keep, notes = toolchain.usable(cells, series)
    assert [c.name for c in keep] == ["x86_64/perf"]
    assert "needs LLVM 21.0.0" in notes[0]


# ---- the command line ----------------------------------------------


@pytest.mark.parametrize(
    "argv, words",
    [
        (
            ["check", "--robot", "--robot-cells", "x86_64/nope"],
            "no cell 'x86_64/nope'",
        ),
        (["check", "--robot-cells", "arm"], "needs --robot"),
        (
            [
                "check",
                "--robot",
                "--since",
                "debian:6.12.107",
                "--history-only",
            ],
            "two different checks",
        ),
    ],
)
def test_bad_robot_input_is_one_line_before_any_work(
    tmp_cache, capsys, argv, words
):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not Path(tmp_cache).exists()


def test_without_migration_there_is_no_compaction_or_thp(tmp_path):
    cfg = matrix.cell_config(
        cell("x86_64/no-migration"), (7, 3), configs(tmp_path)
    )
    for opt in ("MIGRATION", "COMPACTION", "TRANSPARENT_HUGEPAGE"):
        assert cfg.musts[f"CONFIG_{opt}"] == "n"
    assert "CONFIG_THP_SWAP" not in cfg.musts


def test_make_lines_per_compiler():
    src, out = Path("/src"), Path("/out")
    gcc = toolchain.make_argv(cell("arm/mm"), src, out, 2, "W=1", "mm/")
    assert "CROSS_COMPILE=arm-linux-gnueabihf-" in gcc
    assert "CC=ccache arm-linux-gnueabihf-gcc" in gcc
    assert "cmd_checkdoc=" in gcc and gcc[-2:] == ["W=1", "mm/"]
    clang = toolchain.make_argv(cell("x86_64/perf-clang"), src, out, 2)
    assert "LLVM=-19" in clang and "CC=ccache clang-19" in clang
    # clang's build links the host's tools with lld: no gcc for them
    assert not any(a.startswith(("HOSTCC=", "CROSS_COMPILE=")) for a in clang)


def test_typographic_quotes_are_the_c_locales():
    utf8 = dg.parse_compiler(
        "mm/ksm.c:3:13: warning: variable \u2018x\u2019 set but not used\n",
        "gcc",
    )
    assert utf8[0].message == "variable 'x' set but not used"
    a = diag(3, "int x;", "variable \u2018x\u2019 set but not used")
    b = diag(4, "int x;", "variable 'x' set but not used")
    assert dg.added([a], [b]) == []


def test_a_cells_row_says_what_it_compiled_and_what_was_cached():
    t = report.CellTime(
        "x86_64/perf",
        prepare_s=20,
        compile_s={4: 30.0, 5: 10.0},
        cached=[0, 1, 2, 3, 12],
        objects=89,
        cpu_s=70,
        cached_s=300,
    )
    row = t.row()
    assert "compiled 4-5" in row and "cached 0-3,12 (300 s" in row
    assert row.split()[1] == "60"  # prepare + this run's compiles


# ---- the tree-wide checks: one object each -------------------------


def git(repo, *args):
    return source.git(repo, *args).stdout.strip()


def small_series(tmp_path):
    """A repository of a base and two patches, with stand-ins for the
    tree's kernel-doc (silent) and checkpatch.pl (a warning on a patch
    with XXX in it). Patch 1 adds a line above the base's TODO (moving
    it down); patch 2 adds a TODO and an XXX."""
    repo = tmp_path / "linux"
    (repo / "scripts").mkdir(parents=True)
    (repo / "mm").mkdir()
    kdoc = repo / "scripts" / "kernel-doc"
    kdoc.write_text("#!/bin/sh\nexit 0\n")
    kdoc.chmod(0o755)
    (repo / "scripts" / "checkpatch.pl").write_text(
        "open(my $f, '<', $ARGV[-1]) or die;\n"
        'while (<$f>) { print "WARNING: an XXX\\n" if /^\\+.*XXX/ }\n'
    )
    rmap = repo / "mm" / "rmap.c"
    rmap.write_text("int a;\n/* TODO old */\n")
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    texts = ["int z;\nint a;\n/* TODO old */\n"]
    texts.append(texts[0] + "/* TODO new */ /* XXX */\n")
    made = [
        prefixes.Prefix(
            0,
            git(repo, "rev-parse", "HEAD"),
            git(repo, "rev-parse", "HEAD^{tree}"),
            None,
        )
    ]
    for i, text in enumerate(texts, 1):
        rmap.write_text(text)
        git(repo, "commit", "-q", "-am", f"patch {i}")
        patch = tmp_path / f"{i:04d}-p.patch"
        patch.write_text(git(repo, "format-patch", "-1", "--stdout") + "\n")
        made.append(
            prefixes.Prefix(
                i,
                git(repo, "rev-parse", "HEAD"),
                git(repo, "rev-parse", "HEAD^{tree}"),
                patch,
            )
        )
    return prefixes.SeriesTrees(repo, tuple(made), (7, 3), "base")


class Todo(treecheck.TreeCheck):
    """A made-up check of the trees: each TODO in the changed files."""

    cell = "all/todo"
    reads = treecheck.Reads.TREES

    def inputs(self, tree, prefix):
        return tree.changed()

    def run(self, tree, prefix, inputs):
        return proc.run(
            ["grep", "-Hn", "TODO", *inputs], cwd=tree.worktree, check=False
        ).stdout

    def parse(self, output, prefix):
        found = []
        for line in output.splitlines():
            file, n, _ = line.split(":", 2)
            found.append(
                dg.Diagnostic("todo", file, int(n), "warning", "TODO")
            )
        return found


class Size(treecheck.TreeCheck):
    """A made-up check of the patches: a patch's size in lines."""

    cell = "all/size"
    reads = treecheck.Reads.PATCHES

    def run(self, tree, prefix, inputs):
        return str(len(prefix.made_by().read_text().splitlines()))

    def parse(self, output, prefix):
        name = prefix.made_by().name
        return [dg.Diagnostic("size", name, 0, "check", f"{output} lines")]


def test_a_new_tree_wide_check_is_one_object_in_the_registry(
    tmp_path, tmp_cache, monkeypatch
):
    """Two made-up checks added to CHECKS, and nothing else: the robot
    runs them beside kernel-doc and checkpatch, and reports what each
    patch adds by them (a check of the trees: the TODO patch 1 moved is
    not new; a check of the patches: all it says)."""
    series = small_series(tmp_path)
    monkeypatch.setattr(checks, "CHECKS", (*checks.CHECKS, Todo(), Size()))
    got = run.Robot(series, (), tmp_path / "out").run()
    sizes = [
        len(series.prefixes[i].made_by().read_text().splitlines())
        for i in (1, 2)
    ]
    assert got.lines() == [
        f"0001: all/size: 0001-p.patch: check: {sizes[0]} lines",
        "0002: all/checkpatch: 0002-p.patch: warning: an XXX",
        f"0002: all/size: 0002-p.patch: check: {sizes[1]} lines",
        "0002: all/todo: mm/rmap.c:4: warning: TODO",
    ]
    assert (tmp_path / "out" / "robot.txt").read_text().splitlines() == (
        got.lines()
    )
    # a check of the trees is kept under each tree: a second run takes
    # it from the cache, without running it
    monkeypatch.setattr(Todo, "run", lambda *a: pytest.fail("ran again"))
    again = run.Robot(series, (), tmp_path / "out2").run()
    assert again.lines() == got.lines()


def test_the_robots_options_are_one_request():
    args = cli.build_parser().parse_args(
        ["check", "--robot", "--robot-cells", "arm,x86_64/perf"]
    )
    request = command.RobotRequest.from_args(args)
    assert request.robot and request.cells == ("arm", "x86_64/perf")
    assert not request.history_only and request.jobs >= 1
    assert [c.name for c in command.chosen_cells(request)] == [
        "x86_64/perf",
        "arm/mm",
    ]
    with pytest.raises(UsageError, match="give 1 or more"):
        command.chosen_cells(dataclasses.replace(request, jobs=0))


# ---- the run's outcomes ----------------------------------------------


def test_the_robots_run_is_its_outcomes(tmp_path, tmp_cache, monkeypatch):
    """check --robot on two patches, the cells stood in for: x86_64/perf
    finds what patch 2 adds, arm/mm (the whole series) nothing, i386/mm
    breaks on prefix 1, x86_64/perf-clang is left out, and the real
    tree-wide checks find patch 2's XXX. outcomes.json has a kernel a
    prefix and a test a cell and patch, each with its verdict."""
    from foliolab.errors import BuildError
    from foliolab.kernel import sources
    from foliolab.kernel import specs as kernels
    from foliolab.testrecord import Outcomes

    series = small_series(tmp_path)
    (tmp_path / "series").write_text("0001-p.patch\n0002-p.patch\n")
    x86, arm, i386, clang = (
        cell(n)
        for n in ("x86_64/perf", "arm/mm", "i386/mm", "x86_64/perf-clang")
    )
    out = tmp_path / "out"
    new2 = diag(30, "int v2;", "unused 'v2'", "mm/rmap.c")

    def cell_on(robot, c, prefix):
        i = prefix.index
        if c == i386 and i:
            raise BuildError("robot cell i386/mm: compile failed (exit 2)")
        robot.times[c.name].compile_s[i] = 2.5
        log = out / "logs" / f"{i}.log" if c == x86 else tmp_path / "x.log"
        diags = (new2,) if c == x86 and i == 2 else ()
        return cache.CellResult(c.name, prefix.tree, diags, 2.5, 1, str(log))

    monkeypatch.setattr(run.Robot, "cell_on", cell_on)
    monkeypatch.setattr(run, "series_trees", lambda *a: series)
    monkeypatch.setattr(run, "ensure_tools", lambda cells: None)
    monkeypatch.setattr(
        run,
        "usable",
        lambda cells, s: (
            tuple(c for c in cells if c != clang),
            ["x86_64/perf-clang: not run: the tree needs LLVM 21"],
        ),
    )
    tree = source.Tree(
        "patched",
        series.repo,
        series.tip.commit,
        "d1g",
        onto=source.Onto("base", "linux 7.3", series.prefixes[0].commit),
    )
    spec = kernels.with_series(kernels.parse_base("base"), "patched", tmp_path)
    request = command.RobotRequest(True, None, 1, False, tmp_path)
    assert len(sources.read_patches(tmp_path).patches) == 2
    with pytest.raises(BuildError, match="1 cell"):
        command.run_request(request, spec, tree, (x86, arm, i386, clang), out)

    done = Outcomes.read(out)
    assert done.command == "check"
    assert [k.name for k in done.kernels] == ["0000", "0001", "0002"]
    assert [k.spec for k in done.kernels] == [
        "base",
        f"base+{tmp_path}:1",
        f"base+{tmp_path}:2",
    ]
    assert done.kernels[2].series is not None
    assert done.kernels[2].series.patches == 2
    assert all(k.built is None for k in done.kernels)
    got = [(t.path, t.status.value, t.kernel) for t in done.tests]
    assert got == [
        ("robot.x86_64.perf.0001", "pass", "0001"),
        ("robot.x86_64.perf.0002", "fail", "0002"),
        # the whole series: both patches judged on the last prefix
        ("robot.arm.mm.0001", "pass", "0002"),
        ("robot.arm.mm.0002", "pass", "0002"),
        ("robot.i386.mm.0001", "error", ""),
        ("robot.i386.mm.0002", "error", ""),
        # the tree-wide checks, in the registry's order
        ("robot.all.checkpatch.0001", "pass", "0001"),
        ("robot.all.checkpatch.0002", "fail", "0002"),
        ("robot.all.kernel-doc.0001", "pass", "0001"),
        ("robot.all.kernel-doc.0002", "pass", "0002"),
        ("robot.x86_64.perf-clang.0001", "skip", ""),
        ("robot.x86_64.perf-clang.0002", "skip", ""),
    ]
    by = {t.path: t for t in done.tests}
    failed = by["robot.x86_64.perf.0002"]
    assert failed.misc["findings"] == 1
    assert failed.misc["first"] == (
        "0002: x86_64/perf: mm/rmap.c:30: warning: unused 'v2'"
    )
    assert (failed.misc["arch"], failed.misc["config"]) == ("x86_64", "perf")
    assert failed.duration_s == 2.5 and failed.log == "logs/2.log"
    assert by["robot.arm.mm.0001"].misc["build_log"] == str(tmp_path / "x.log")
    assert "compile failed" in str(by["robot.i386.mm.0002"].misc["why"])
    assert "LLVM 21" in str(by["robot.x86_64.perf-clang.0001"].misc["why"])
    # robot.txt says the same findings, as it always has
    assert (out / "robot.txt").read_text().splitlines() == [
        "0002: all/checkpatch: 0002-p.patch: warning: an XXX",
        "0002: x86_64/perf: mm/rmap.c:30: warning: unused 'v2'",
    ]


def test_a_cells_name_is_a_dotted_path_of_its_own():
    assert report.outcome_path("x86_64/perf", "0003") == (
        "robot.x86_64.perf.0003"
    )
    assert report.outcome_path("a.b/c d", "0001") == "robot.a_b.c_d.0001"
    assert report.outcome_path("x//y", "0001") == "robot.x._.y.0001"
