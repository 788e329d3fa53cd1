"""The mm CI's tests (suite/mmci): its kconfig fragment, the wrappers a
tree has, a wrapper's output as outcomes, the k-of-n comparison, the
host tests on a fake tree, and test --mm-ci's checks and dry run.
Everything here is cheap: small git repositories, no kernel, no guest.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from foliolab import cli, errors
from foliolab.bootrecord import BootStatus
from foliolab.errors import SourceError
from foliolab.guestdata import parse
from foliolab.suite.mmci import (
    compare,
    config,
    discover,
    guest,
    hosttests,
    mmci,
    results,
)
from foliolab.suite.mmci.results import WrapperRun, wrapper_outcomes
from foliolab.testrecord import TestOutcome, TestStatus

MM = "tools/testing/selftests/mm"
T = TestStatus


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@x",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@x",
            "PATH": "/usr/bin:/bin",
            "HOME": str(repo),
        },
    ).stdout


KERNEL_MAKEFILE = "VERSION = 7\nPATCHLEVEL = 3\n"


def make_tree(root: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A git repository with ``files`` committed, and an mm/rmap.c and a
    Makefile's version as every kernel tree has (a git: spec of a tree
    without them is refused before anything is made of it): (repo,
    commit)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    kernel = {"mm/rmap.c": "/* rmap */\n", "Makefile": KERNEL_MAKEFILE}
    for name, text in {**kernel, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tree")
    return root, git(root, "rev-parse", "HEAD").strip()


USAGE = """\
usage() {
\tcat <<EOF
usage: ${BASH_SOURCE[0]:-$0} [ options ]

  -t: specify specific categories to tests to run

Alternatively, specific groups tests can be run by passing a string
to the -t argument containing one or more of the following categories
separated by spaces:
- mmap
\ttests for mmap(2)
- ksm_numa
\tksm tests that require >=2 NUMA nodes
- memory-failure
\ttest memory-failure behaves as expected

example: ./run_vmtests.sh -t "hmm mmap ksm"
EOF
\texit 0
}
CATEGORY="mmap" run_test ./map_fixed_noreplace
CATEGORY="unlisted" run_test ./new_test
"""


# -- the kconfig fragment ---------------------------------------------


def test_the_fragment_says_where_it_came_from_and_parses():
    text = config.FRAGMENT.read_text()
    assert mmci.REPOSITORY in text
    assert ".github/kconfigs/mm-selftests.config" in text
    assert f"commit: {mmci.COMMIT}" in text
    opts = config.mmci_fragment()
    assert opts["CONFIG_NUMA"] == "y"
    assert opts["CONFIG_TEST_HMM"] == "y"
    assert "CONFIG_CMA" not in opts  # commented out there


def test_the_trees_own_config_comes_second_and_wins(tmp_path):
    repo, commit = make_tree(
        tmp_path / "t",
        {
            f"{MM}/config": "CONFIG_TEST_HMM=m\nCONFIG_FTRACE=y\n",
            f"{MM}/run_vmtests.sh": USAGE,
        },
    )
    m = config.merged(repo, commit)
    assert m.options["CONFIG_TEST_HMM"] == "m"
    assert m.origin["CONFIG_TEST_HMM"] == config.FROM_TREE
    assert m.overridden["CONFIG_TEST_HMM"] == ("y", "m")
    assert m.options["CONFIG_FTRACE"] == "y"
    assert m.origin["CONFIG_NUMA"] == config.FROM_MMCI
    assert list(m.options)[-1] == "CONFIG_FTRACE"  # the later file's place
    assert "CONFIG_TEST_HMM=m" in m.lines()


def test_a_tree_without_its_own_config_gets_the_mm_cis(tmp_path):
    repo, commit = make_tree(tmp_path / "t", {"README": "x\n"})
    m = config.merged(repo, commit)
    assert m.options == config.mmci_fragment()
    assert not m.overridden


# -- discovery ----------------------------------------------------------


def wrapper_tree(tmp_path: Path) -> tuple[Path, str]:
    return make_tree(
        tmp_path / "w",
        {
            f"{MM}/run_vmtests.sh": USAGE,
            f"{MM}/ksft_cow.sh": "#!/bin/sh -e\n./run_vmtests.sh -t cow\n",
            f"{MM}/ksft_ksm_numa.sh": (
                "#!/bin/sh -e\n./run_vmtests.sh -t ksm_numa\n"
            ),
            f"{MM}/ksft_own_check.sh": "#!/bin/sh\necho PASS\nexit 0\n",
            f"{MM}/ksft_memory_failure.sh": (
                "#!/bin/sh -e\n./run_vmtests.sh -t memory-failure\n"
            ),
            f"{MM}/cow.c": "int main(void) { return 0; }\n",
        },
    )


def test_the_wrappers_a_tree_has_are_found_not_listed(tmp_path):
    repo, commit = wrapper_tree(tmp_path)
    d = discover.discover(repo, commit)
    assert d.kind == discover.WRAPPERS
    by = {w.name: w for w in d.wrappers}
    assert sorted(by) == ["cow", "ksm_numa", "memory_failure", "own_check"]
    assert by["cow"].command == "./ksft_cow.sh"
    assert by["cow"].category == "cow" and by["cow"].in_mmci
    assert by["memory_failure"].category == "memory-failure"
    # a wrapper of its own, and one the mm CI's list does not have
    assert by["own_check"].category == "" and not by["own_check"].in_mmci
    assert "not in the mm CI's list" in by["own_check"].describe()
    assert "flaky" in by["ksm_numa"].flaky
    assert not d.left_out


def test_what_the_mm_ci_leaves_out_is_left_out_with_why(tmp_path, monkeypatch):
    monkeypatch.setattr(mmci, "LEFT_OUT", {"ksft_ksm_numa.sh": "flaky"})
    repo, commit = wrapper_tree(tmp_path)
    d = discover.discover(repo, commit)
    assert "ksm_numa" not in {w.name for w in d.wrappers}
    assert d.left_out == {"ksft_ksm_numa.sh": "flaky"}


def test_a_tree_before_the_wrappers_runs_its_categories(tmp_path):
    repo, commit = make_tree(tmp_path / "c", {f"{MM}/run_vmtests.sh": USAGE})
    d = discover.discover(repo, commit)
    assert d.kind == discover.CATEGORIES
    assert [w.command for w in d.wrappers] == [
        "./run_vmtests.sh -t mmap",
        "./run_vmtests.sh -t ksm_numa",
        "./run_vmtests.sh -t memory-failure",
        "./run_vmtests.sh -t unlisted",  # used, not in the usage text
    ]
    assert d.wrappers[1].flaky and d.wrappers[2].in_mmci


def test_a_tree_without_run_vmtests_is_one_clear_error(tmp_path):
    repo, commit = make_tree(tmp_path / "n", {"README": "x\n"})
    with pytest.raises(SourceError, match="run_vmtests.sh"):
        discover.discover(repo, commit)


def test_case_names_become_path_parts():
    assert discover.path_part("Basic COW (4 KiB)") == "Basic_COW_4_KiB"
    assert discover.path_part("memory-failure") == "memory-failure"
    assert discover.path_part("a.b/c") == "a_b_c"
    assert discover.path_part("...") == "_"


REAL_73 = Path.home() / ".cache/foliolab/debian/src/7.3.4-1~bpo13+1"
REAL_BASE = Path.home() / ".cache/foliolab/linux"


@pytest.mark.skipif(
    not (REAL_73 / ".git").exists(), reason="no unpacked 7.3.4 tree here"
)
def test_the_real_7_3_4_tree_read_only():
    head = git(REAL_73, "rev-parse", "HEAD").strip()
    d = discover.discover(REAL_73, head)
    names = {w.name for w in d.wrappers}
    assert d.kind == discover.WRAPPERS and len(d.wrappers) == 32
    assert {"cow", "ksm_numa", "kmemleak_confirm"} <= names
    # every wrapper the mm CI runs is in the tree
    assert {w.script for w in d.wrappers if w.in_mmci} == set(mmci.WRAPPERS)


@pytest.mark.skipif(
    not (REAL_BASE / ".git").exists(), reason="no 6.12 base tree here"
)
def test_the_real_6_12_base_read_only():
    d = discover.discover(REAL_BASE, "base")
    assert d.kind == discover.CATEGORIES
    names = [w.name for w in d.wrappers]
    assert names[0] == "mmap" and "cow" in names and "ksm_numa" in names


# -- a wrapper's output -------------------------------------------------

COW = discover.Wrapper("cow", "./ksft_cow.sh", "cow", "ksft_cow.sh", True)


def header(command: str) -> str:
    """run_vmtests.sh's header of a program, as GNU tr makes it."""
    title = f"running {command}"
    sep = "-" * len(title)
    return f"# {sep}\n# {title}\n# {sep}\n"


GOOD = (
    """\
TAP version 13
"""
    + header("./cow")
    + """\
# TAP version 13
# 1..3
# ok 1 Basic COW after fork() with base page
# not ok 2 Basic COW after fork() with PMD THP
# ok 3 Basic COW with io_uring # SKIP io_uring not available
# # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0
# [FAIL]
not ok 1 cow # exit=1
"""
    + header("./gup_longterm -a")
    + """\
# ok 1 R/W longterm
# ok 2 R/W longterm
# [PASS]
ok 2 gup_longterm -a
# SUMMARY: PASS=1 SKIP=0 FAIL=1
1..2
"""
)


def rows_of(output: str, **kw) -> dict[str, TestOutcome]:
    run = WrapperRun(kw.pop("wrapper", COW), output, **kw)
    return {r.path: r for r in wrapper_outcomes(run, "up", "up/cow.log")}


def test_a_header_needs_its_separator_and_a_programs_own_running_is_none():
    """6.12's protection_keys prints "running PKEY tests for ..." itself:
    no header, as no separator is above it. busybox's tr leaves some of a
    separator's characters as they were; it is still one."""
    title = "running ./protection_keys_64"
    busybox_sep = "-unnin--./--otection_keys_64"
    assert results.is_separator(busybox_sep, title)
    assert results.is_separator("-" * len(title), title)
    assert not results.is_separator("-" * (len(title) - 1), title)
    assert not results.is_separator("has pkeys: 0", title)
    assert not results.is_separator(title, title)  # no "-" at all
    pkey = discover.Wrapper(
        "pkey", "./run_vmtests.sh -t pkey", "pkey", "", True
    )
    out = (
        "TAP version 13\n"
        f"# {busybox_sep}\n# {title}\n# {busybox_sep}\n"
        "# has pkeys: 0\n"
        "# running PKEY tests for unsupported CPU/OS\n"
        "# [PASS]\n"
        "ok 1 protection_keys_64\n"
        "# SUMMARY: PASS=1 SKIP=0 FAIL=0\n"
        "1..1\n"
    )
    rows = rows_of(out, wrapper=pkey, exit_code=0)
    assert {p: r.status for p, r in rows.items()} == {
        "kselftest.mm.pkey": T.PASS,
        "kselftest.mm.pkey.protection_keys_64": T.PASS,
    }


def test_ok_not_ok_and_skip_cases_each_a_row():
    rows = rows_of(GOOD, exit_code=1)
    p = "kselftest.mm.cow.cow"
    assert rows[f"{p}.Basic_COW_after_fork_with_base_page"].status == T.PASS
    assert rows[f"{p}.Basic_COW_after_fork_with_PMD_THP"].status == T.FAIL
    skip = rows[f"{p}.Basic_COW_with_io_uring"]
    assert skip.status == T.SKIP
    assert skip.misc["reason"] == "io_uring not available"
    assert rows[p].status == T.FAIL and rows[p].misc["detail"] == "exit=1"
    g = "kselftest.mm.cow.gup_longterm_-a"
    assert rows[g].status == T.PASS
    # a repeated case name is numbered, not lost
    assert rows[f"{g}.R_W_longterm"].status == T.PASS
    assert rows[f"{g}.R_W_longterm_2"].status == T.PASS
    w = rows["kselftest.mm.cow"]
    assert w.status == T.FAIL and w.log == "up/cow.log" and w.kernel == "up"
    assert len(rows) == 8


def test_a_case_that_prints_what_it_measured_keeps_one_path_every_boot():
    """pagemap_ioctl names a case by the pages it counted (a new path
    each boot, each then missing from the others: counted failed, run
    mmci-next1); a number standing alone is N, one inside a word
    stays."""
    paths = []
    for extra in ("26", "49"):
        out = GOOD.replace(
            "# ok 3 Basic COW with io_uring # SKIP io_uring not available",
            f"# ok 3 transact_test Extra pages {extra} (0.1%), extra "
            f"thread faults {extra}.\n# ok 4 hugetlb 2048kB",
        )
        rows = rows_of(out, exit_code=1)
        paths.append(sorted(rows))
        p = "kselftest.mm.cow.cow"
        assert (
            rows[
                f"{p}.transact_test_Extra_pages_N_N_extra_thread_faults_N"
            ].status
            == T.PASS
        )
        assert f"{p}.hugetlb_2048kB" in rows
    assert paths[0] == paths[1]


def test_a_size_with_its_unit_or_an_order_names_its_case_not_a_measure():
    """cow runs each case once per hugetlb size ("(2048 kB)", "(1048576
    kB)", run mmci-next1), split_huge_page_test once per order and
    uffd-wp-mremap once per size=: the number says which case, so it
    stays (not N and N_2 by order)."""
    out = GOOD.replace(
        "# ok 3 Basic COW with io_uring # SKIP io_uring not available",
        "# ok 3 Basic COW ... with hugetlb (2048 kB)\n"
        "# ok 4 Basic COW ... with hugetlb (1048576 kB)\n"
        "# ok 5 File-backed THP split to order 3 test done\n"
        "# ok 6 test_one(size=2097152, private=true, swapout=false)",
    )
    rows = rows_of(out, exit_code=1)
    p = "kselftest.mm.cow.cow"
    for case in (
        "Basic_COW_with_hugetlb_2048_kB",
        "Basic_COW_with_hugetlb_1048576_kB",
        "File-backed_THP_split_to_order_3_test_done",
        "test_one_size_2097152_private_true_swapout_false",
    ):
        assert rows[f"{p}.{case}"].status == T.PASS


def test_a_result_line_belongs_to_the_program_that_ran_whatever_its_name():
    out = GOOD.replace("ok 2 gup_longterm -a", "ok 2 gup_longterm")
    g = rows_of(out, exit_code=1)["kselftest.mm.cow.gup_longterm_-a"]
    assert g.status == T.PASS and g.misc["result_name"] == "gup_longterm"


def cow_612(leaks: set[int]) -> str:
    """6.12.117's cow, three cases: each result named by its outcome,
    the case by the "[RUN]" line above it; the cases in ``leaks`` had
    the test's allowed hugetlb leak (``# XFAIL``)."""
    out = "TAP version 13\n" + header("./cow") + "# 1..3\n"
    for i, size in enumerate(("2048 kB", "1048576 kB", "2048 kB"), 1):
        what = "in child" if i < 3 else "in parent"
        out += (
            f"# # [RUN] vmsplice() + unmap {what} ... with hugetlb ({size})\n"
        )
        out += (
            f"# ok {i} # XFAIL Leak from parent into child\n"
            if i in leaks
            else f"# ok {i} No leak from parent into child\n"
        )
    return out + "ok 1 cow\n1..1\n"


def test_a_case_is_named_by_its_run_line_whatever_its_outcome():
    """6.12's cow names results by outcome: numbered by order, one
    allowed leak renamed every later case and each kernel counted the
    other's names missing (run mmci612-slow, "4 fail" on each). Named by
    their [RUN] lines, a leak keeps the case's path and passes, the
    directive kept beside it."""
    p = "kselftest.mm.cow.cow"
    names = {
        f"{p}.vmsplice_unmap_in_child_with_hugetlb_2048_kB",
        f"{p}.vmsplice_unmap_in_child_with_hugetlb_1048576_kB",
        f"{p}.vmsplice_unmap_in_parent_with_hugetlb_2048_kB",
    }
    held = rows_of(cow_612(set()), exit_code=0)
    leaked = rows_of(cow_612({2}), exit_code=0)
    assert set(held) == set(leaked) == names | {p, "kselftest.mm.cow"}
    for rows in (held, leaked):
        assert all(r.status == T.PASS for r in rows.values())
    case = leaked[f"{p}.vmsplice_unmap_in_child_with_hugetlb_1048576_kB"]
    assert case.misc["directive"] == "XFAIL Leak from parent into child"
    assert compare.allowed_failure(case)
    assert not any(compare.allowed_failure(r) for r in held.values())


def test_an_allowed_failure_without_a_name_is_named_as_when_it_holds():
    """7.3.4's cow prints "ok 165 # XFAIL vmsplice() ..." when the leak
    happens, "ok 165 vmsplice() ..." when not: one case, one path; the
    same for a nameless skip."""
    for line in ("# ok 3 # XFAIL Basic COW", "# ok 3 Basic COW"):
        out = GOOD.replace(
            "# ok 3 Basic COW with io_uring # SKIP io_uring not available",
            line,
        )
        rows = rows_of(out, exit_code=1)
        assert rows["kselftest.mm.cow.cow.Basic_COW"].status == T.PASS
    out = GOOD.replace(
        "# ok 3 Basic COW with io_uring # SKIP io_uring not available",
        "# ok 3 # SKIP Basic COW",
    )
    rows = rows_of(out, exit_code=1)
    assert rows["kselftest.mm.cow.cow.Basic_COW"].status == T.SKIP


def test_results_under_one_run_line_keep_their_own_names():
    """madv_populate's "[RUN] test_holes" heads four cases, each named for
    what it checks: a program whose [RUN] lines head groups names every
    result by its own name, one under a [RUN] line of its own too."""
    out = GOOD.replace(
        "# ok 3 Basic COW with io_uring # SKIP io_uring not available",
        "# # [RUN] test_holes\n"
        "# ok 3 MADV_POPULATE_READ with holes\n"
        "# ok 4 MADV_POPULATE_WRITE with holes\n"
        "# # [RUN] test_one\n"
        "# # a note between\n"
        "# ok 5 done",
    )
    rows = rows_of(out, exit_code=1)
    p = "kselftest.mm.cow.cow"
    for case in (
        "MADV_POPULATE_READ_with_holes",
        "MADV_POPULATE_WRITE_with_holes",
        "done",
    ):
        assert rows[f"{p}.{case}"].status == T.PASS
    # the results before any [RUN] line keep theirs
    assert f"{p}.Basic_COW_after_fork_with_base_page" in rows


def test_allowed_failures_are_counted_k_of_n_apart_from_failures(tmp_path):
    def run(leaks: set[int]) -> list[TestOutcome]:
        return wrapper_outcomes(
            WrapperRun(COW, cow_612(leaks), 0), "k", "cow.log"
        )

    up = [run(set()), run({1}), run({1})]
    nxt = [run({1, 2}), run({1, 2}), run({1, 2})]
    cases = compare.compare(up, nxt)
    assert all(c.verdict == compare.HOLDS for c in cases)
    allowed = {
        a.path.rsplit(".", 1)[1]: a for a in compare.allowed_failures(up, nxt)
    }
    assert set(allowed) == {
        "vmsplice_unmap_in_child_with_hugetlb_2048_kB",
        "vmsplice_unmap_in_child_with_hugetlb_1048576_kB",
    }
    a = allowed["vmsplice_unmap_in_child_with_hugetlb_1048576_kB"]
    assert (a.up.k, a.up.n, a.next.k, a.next.n) == (0, 3, 3, 3)
    assert a.p == pytest.approx(0.05)
    b = allowed["vmsplice_unmap_in_child_with_hugetlb_2048_kB"]
    assert (b.up.k, b.next.k) == (2, 3)
    text, js = compare.write(
        tmp_path, cases, "up", "next", allowed=list(allowed.values())
    )
    body = text.read_text()
    assert "allowed failures (# XFAIL, counted as passes)" in body
    assert "0/3       3/3 p=0.05" in body
    assert '"allowed_failures"' in js.read_text()
    # one that happened in every run of each kernel is counted, not listed
    got = json.loads(js.read_text())["allowed_failures"]
    assert {
        "path": a.path,
        "up": {"k": 0, "n": 3},
        "next": {"k": 3, "n": 3},
        "p": pytest.approx(0.05),
    } in got
    assert len(got) == 2
    steady = compare.allowed_failures(nxt, nxt)
    assert compare.allowed_text(steady, "a", "b").endswith(
        "  none\n  and 2 in every run of each kernel "
        "(the JSON's allowed_failures)\n"
    )
    assert compare.allowed_text([], "a", "b") == ""
    # n counts the runs the case held in: a failed run is no run of its
    # allowed failure, and a kernel that never held it is listed, not
    # "every run"
    failed = [
        dataclasses.replace(r, status=T.FAIL) if r.path == b.path else r
        for r in run({1})
    ]
    (b,) = [
        x
        for x in compare.allowed_failures([run({1}), failed], [failed])
        if x.path == b.path
    ]
    assert (b.up.k, b.up.n, b.next.k, b.next.n) == (1, 1, 0, 0)
    assert b.p is None
    assert b.path in compare.allowed_text([b], "up", "next")
    # one kernel alone: its own heading, no "next" in the JSON
    alone = compare.allowed_failures(up, [])
    assert compare.allowed_text(alone, "up", None).startswith(
        "\nallowed failures (# XFAIL, counted as passes) in some runs, "
        "k/n on up:\n        2/3 "
    )
    _, js = compare.write(tmp_path, cases, "up", None, allowed=alone)
    assert all(
        set(a) == {"path", "up"}
        for a in json.loads(js.read_text())["allowed_failures"]
    )


def test_a_second_result_under_a_run_line_keeps_the_cases_path_first():
    """7.3.4's ksm_functional_tests prints "not ok ... set ksmd's scanning
    frequency failed" and goes on to its own result, both under one
    [RUN] line: the first keeps the case's path (so the failure is the
    case's), the second is numbered; the other cases keep theirs."""

    def ksm(extra: bool) -> str:
        out = "TAP version 13\n" + header("./ksm_functional_tests")
        out += "# # [RUN] test_unmerge\n# ok 1 Pages were unmerged\n"
        out += "# # [RUN] test_prctl_fork_exec\n"
        if extra:
            out += "# not ok 2 set ksmd's scanning frequency failed\n"
        out += "# ok 3 PR_SET_MEMORY_MERGE value is inherited\n"
        out += "# # [RUN] test_zero_pages\n# ok 4 Zero pages merged\n"
        return out + "ok 1 ksm_functional_tests\n1..1\n"

    p = "kselftest.mm.cow.ksm_functional_tests"
    up = rows_of(ksm(False), exit_code=0)
    nxt = rows_of(ksm(True), exit_code=0)
    assert up[f"{p}.test_prctl_fork_exec"].status == T.PASS
    assert nxt[f"{p}.test_prctl_fork_exec"].status == T.FAIL
    assert nxt[f"{p}.test_prctl_fork_exec_2"].status == T.PASS
    for case in ("test_unmerge", "test_zero_pages"):
        assert up[f"{p}.{case}"].status == nxt[f"{p}.{case}"].status

    def populate(cut: bool) -> str:
        out = "TAP version 13\n" + header("./madv_populate")
        out += "# # [RUN] test_prot_read\n# ok 1 READ with PROT_READ\n"
        out += "# ok 2 WRITE with PROT_READ\n"
        out += "# # [RUN] test_prot_write\n# ok 3 READ with PROT_WRITE\n"
        if not cut:
            out += "# ok 4 WRITE with PROT_WRITE\n"
        return out + "ok 1 madv_populate\n1..1\n"

    # cut short after its third result (groups of 2 and 1): still each
    # by its own name, as in the whole run
    p = "kselftest.mm.cow.madv_populate"
    whole = rows_of(populate(False), exit_code=0)
    cut = rows_of(populate(True), exit_code=0)
    assert set(cut) == set(whole) - {f"{p}.WRITE_with_PROT_WRITE"}


def test_a_nameless_result_loses_whichever_directive_word_it_has():
    for line in ("XPASS", "ERROR", "TODO", "xfail"):
        r = parse.tap_result(f"ok 3 # {line} Basic COW")
        assert results.case_description(r) == "Basic COW"
    # a directive alone is all the name there is
    assert results.case_description(parse.tap_result("ok 3 # SKIP")) == (
        "SKIP"
    )
    # a result with its own name keeps it whole
    r = parse.tap_result("ok 3 SKIP the rest # SKIP no THP")
    assert results.case_description(r) == "SKIP the rest"


def test_a_passing_wrapper_passes_and_a_skip_exit_skips():
    out = GOOD.replace("# not ok 2", "# ok 2").replace(
        "not ok 1 cow # exit=1", "ok 1 cow"
    )
    assert rows_of(out, exit_code=0)["kselftest.mm.cow"].status == T.PASS
    assert rows_of(out, exit_code=4)["kselftest.mm.cow"].status == T.SKIP
    # a case that fails with the wrapper exiting 0 still fails it
    out = GOOD.replace("not ok 1 cow # exit=1", "ok 1 cow")
    assert rows_of(out, exit_code=0)["kselftest.mm.cow"].status == T.FAIL


CRASHED = GOOD.split("# [PASS]")[0]  # ends inside gup_longterm


def test_a_crashed_wrapper_is_an_error_and_so_is_the_program_it_was_in():
    rows = rows_of(
        CRASHED,
        exit_code=None,
        console="[  12.3] Kernel panic - not syncing: Fatal exception\n",
    )
    w = rows["kselftest.mm.cow"]
    assert w.status == T.ERROR and "kernel died" in w.misc["detail"]
    g = rows["kselftest.mm.cow.gup_longterm_-a"]
    assert g.status == T.ERROR and "ends inside it" in g.misc["detail"]
    # what finished before the crash keeps its results
    assert rows["kselftest.mm.cow.cow"].status == T.FAIL


def test_a_wrapper_without_an_exit_status_says_how_its_boot_ended():
    """A QEMU that never started (its initrd gone, stop 71) left no output:
    the row names the boot's ending and why, in the executor's words (as
    its boot.json does), not "the guest stopped first"."""
    issue = "qemu: error reading initrd /r/up/guest/thp/initrd.cpio"
    w = rows_of(
        "",
        exit_code=None,
        boot_ended=BootStatus.QEMU_ERROR,
        boot_why=issue,
    )["kselftest.mm.cow"]
    assert w.status == T.ERROR
    assert w.misc["detail"] == (
        f"no exit status: QEMU failed before the guest ran (boot qemu-error: "
        f"{issue})"
    )
    w = rows_of(
        CRASHED,
        exit_code=None,
        boot_ended=BootStatus.NOT_RUN,
        boot_why="lava: the job's log was lost",
    )
    assert w["kselftest.mm.cow"].misc["detail"] == (
        "no exit status: the executor gave no record of this boot (boot "
        "not-run: lava: the job's log was lost)"
    )
    w = rows_of(CRASHED, exit_code=None, boot_ended=BootStatus.NO_EXIT)
    assert w["kselftest.mm.cow"].misc["detail"] == (
        "no exit status: the guest stopped first (boot no-exit)"
    )


def test_output_without_its_plan_is_an_error_even_with_an_exit_status():
    rows = rows_of(CRASHED, exit_code=0)
    assert rows["kselftest.mm.cow"].status == T.ERROR
    assert "without its plan" in rows["kselftest.mm.cow"].misc["detail"]


def test_a_timeout_is_an_error_naming_the_limit():
    rows = rows_of(CRASHED, exit_code=None, timed_out=True, time_limit_s=300)
    w = rows["kselftest.mm.cow"]
    assert w.status == T.ERROR and "300 s" in w.misc["detail"]
    g = rows["kselftest.mm.cow.gup_longterm_-a"]
    assert "time limit" in g.misc["detail"]
    assert "stuck" not in w.misc["detail"]
    rows = rows_of(
        CRASHED,
        exit_code=None,
        timed_out=True,
        time_limit_s=300,
        stuck_listed=True,
    )
    assert "'@@ mmci stuck' lines" in rows["kselftest.mm.cow"].misc["detail"]


def test_a_warning_in_the_console_fails_a_wrapper_that_passed():
    out = GOOD.replace("# not ok 2", "# ok 2").replace(
        "not ok 1 cow # exit=1", "ok 1 cow"
    )
    console = "WARNING: CPU: 1 PID: 42 at mm/rmap.c:123 folio_add\n"
    w = rows_of(out, exit_code=0, console=console)["kselftest.mm.cow"]
    assert w.status == T.FAIL and "mm/rmap.c" in w.misc["detail"]
    # the mm CI's exception: memory_failure's own messages
    mf = discover.Wrapper(
        "memory_failure",
        "./ksft_memory_failure.sh",
        "memory-failure",
        "ksft_memory_failure.sh",
        True,
    )
    ok = rows_of(
        out.replace(header("./cow"), header("./memory-failure")).replace(
            "ok 1 cow", "ok 1 memory-failure"
        ),
        wrapper=mf,
        exit_code=0,
        console="Memory failure: 0x1234: BUG recovery action\n",
    )
    assert ok["kselftest.mm.memory_failure"].status == T.PASS


def test_a_wrapper_of_its_own_gives_its_top_level_tap_or_its_exit():
    own = discover.Wrapper(
        "kmemleak_confirm", "./ksft_kmemleak_confirm.sh", "", "x.sh", False
    )
    tap = "TAP version 13\n1..1\nnot ok 1 min_unref_scans held\n"
    rows = rows_of(tap, wrapper=own, exit_code=1)
    assert rows["kselftest.mm.kmemleak_confirm.min_unref_scans_held"].status
    assert rows["kselftest.mm.kmemleak_confirm"].status == T.FAIL
    assert rows["kselftest.mm.kmemleak_confirm"].misc["mmci"] == (
        "not in the mm CI's list"
    )
    plain = "SKIP: no kmemleak debugfs (CONFIG_DEBUG_KMEMLEAK)\n"
    rows = rows_of(plain, wrapper=own, exit_code=4)
    assert list(rows) == ["kselftest.mm.kmemleak_confirm"]
    assert rows["kselftest.mm.kmemleak_confirm"].status == T.SKIP


# -- k of n ----------------------------------------------------------------


def runs_of(*statuses: TestStatus | None) -> list[list[TestOutcome]]:
    """One run per status of the case ``kselftest.mm.x.y`` (None: the run
    has no row for it), each with another row that always passes."""
    return [
        [TestOutcome("kselftest.mm.x.z", T.PASS)]
        + ([TestOutcome("kselftest.mm.x.y", s)] if s else [])
        for s in statuses
    ]


def case(up, nxt) -> compare.CaseComparison:
    by = {c.path: c for c in compare.compare(up, nxt)}
    assert by["kselftest.mm.x.z"].verdict == compare.HOLDS
    return by["kselftest.mm.x.y"]


def test_always_against_never_needs_three_runs_each():
    c = case(runs_of(T.PASS, T.PASS, T.PASS), runs_of(T.FAIL, T.FAIL, T.FAIL))
    assert c.verdict == compare.NEW
    assert c.p == pytest.approx(0.05)  # 1 / C(6, 3): not below 0.05 alone
    c = case(runs_of(T.PASS, T.PASS), runs_of(T.FAIL, T.FAIL))
    assert c.verdict == compare.NOT_SIGNIFICANT
    assert c.p == pytest.approx(1 / 6)


def test_a_significant_rise_is_new_and_the_same_rate_is_not():
    up = runs_of(*[T.PASS] * 9, T.FAIL)
    c = case(up, runs_of(*[T.FAIL] * 7, *[T.PASS] * 3))
    assert c.verdict == compare.NEW and c.p < compare.ALPHA
    assert (c.up.k, c.up.n, c.next.k, c.next.n) == (1, 10, 7, 10)
    c = case(up, runs_of(*[T.PASS] * 9, T.FAIL))
    assert c.verdict == compare.BOTH and c.p > compare.ALPHA
    c = case(runs_of(T.FAIL, T.PASS), runs_of(T.PASS, T.PASS))
    assert c.verdict == compare.ONLY_UP


def test_skips_are_not_runs_and_a_missing_row_is_a_miss():
    c = case(runs_of(T.SKIP, T.PASS, T.PASS), runs_of(None, T.ERROR, T.FAIL))
    assert (c.up.k, c.up.n, c.up.skipped) == (0, 2, 1)
    assert (c.next.k, c.next.n) == (3, 3)
    assert c.verdict == compare.NOT_SIGNIFICANT  # 2 runs on up: too few
    c = case(runs_of(T.SKIP, T.SKIP), runs_of(T.FAIL, T.FAIL))
    assert c.verdict == compare.NOT_COMPARED and c.p is None


def test_the_summary_table_and_the_outcome_rows(tmp_path):
    up = runs_of(T.PASS, T.PASS, T.PASS)
    nxt = runs_of(T.FAIL, T.FAIL, T.FAIL)
    cases = compare.compare(up, nxt)
    rows = {s.kernel: s for s in compare.summary(cases, "up", "next")}
    assert (rows["up"].passed, rows["up"].failed, rows["up"].new) == (
        2,
        0,
        None,
    )
    assert (rows["next"].passed, rows["next"].failed, rows["next"].new) == (
        1,
        1,
        1,
    )
    text, js = compare.write(tmp_path, cases, "up", "next")
    assert "new failure" in text.read_text()
    assert '"verdict": "new failure"' in js.read_text()
    out = {r.path: r for r in compare.comparison_outcomes(cases, "next")}
    new = out["compare.kselftest.mm.x.y"]
    assert new.status == T.FAIL and new.kernel == "next"
    assert (new.misc["up_k"], new.misc["next_k"]) == (0, 3)
    assert out["compare.kselftest.mm.x.z"].status == T.PASS


# -- host tests on a fake tree --------------------------------------------

FAKE_MAKEFILE = """\
TARGETS = holds fails
targets: $(TARGETS)
holds:
\tprintf '#!/bin/sh\\necho fine\\n' > $@ && chmod +x $@
fails:
\tprintf '#!/bin/sh\\necho broken; exit 3\\n' > $@ && chmod +x $@
"""


def test_targets_are_read_from_the_makefile():
    assert hosttests.targets(
        "TARGETS = main idr-test multiorder xarray maple\n"
    ) == ["main", "idr-test", "multiorder", "xarray", "maple"]


def test_host_tests_build_from_a_copy_and_each_program_is_a_row(tmp_path):
    repo, commit = make_tree(
        tmp_path / "k",
        {
            "tools/testing/radix-tree/Makefile": FAKE_MAKEFILE,
            "tools/testing/memblock/Makefile": "TARGETS = main\nmain:\n"
            "\tfalse\n",
            "lib/xarray.c": "/* */\n",
        },
    )
    out = tmp_path / "out"
    rows = {
        r.path: r
        for r in hosttests.run_host_tests(
            repo, commit, "up", out, "up/host", scratch=tmp_path
        )
    }
    assert rows["hosttest.radix-tree.build"].status == T.PASS
    assert rows["hosttest.radix-tree.holds"].status == T.PASS
    fails = rows["hosttest.radix-tree.fails"]
    assert fails.status == T.FAIL and fails.misc["detail"] == "exit status 3"
    assert "broken" in (out / fails.log).read_text()
    assert rows["hosttest.vma"].status == T.SKIP  # not in this tree
    assert rows["hosttest.memblock.build"].status == T.FAIL
    assert rows["hosttest.memblock.main"].status == T.MISS
    # the tree is only read: nothing built in it, the copy is gone
    assert not (repo / "tools/testing/radix-tree/holds").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert not list(tmp_path.glob("foliolab-mmci-*"))


def test_a_program_past_its_time_limit_is_an_error(tmp_path):
    repo, commit = make_tree(
        tmp_path / "k",
        {
            "tools/testing/vma/Makefile": "TARGETS = vma\nvma:\n"
            "\tprintf '#!/bin/sh\\nsleep 30\\n' > $@ && chmod +x $@\n",
        },
    )
    rows = {
        r.path: r
        for r in hosttests.run_host_tests(
            repo, commit, "up", tmp_path / "o", "h", time_limit_s=1
        )
    }
    assert rows["hosttest.vma.vma"].status == T.ERROR
    assert "timed out" in rows["hosttest.vma.vma"].misc["detail"]


# -- the command ------------------------------------------------------------


def run_cli(capsys, *argv):
    rc = cli.main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def host_only_argv(out: Path, repo: Path, *extra: str) -> list[str]:
    """test --mm-ci of up and next, both the fake tree ``repo``'s main,
    no wrapper: a run of the host tests alone."""
    return [
        "test",
        "--mm-ci",
        "--wrappers",
        "none",
        *extra,
        "--out",
        str(out),
        "--kernel",
        f"up=git:{repo}@main",
        "--kernel",
        f"next=git:{repo}@main",
    ]


def test_mm_ci_without_kernels_is_one_line(capsys):
    rc, _, err = run_cli(capsys, "test", "--mm-ci")
    assert rc == errors.UsageError.exit_code
    assert "--mm-ci needs the kernels" in err


def test_mm_ci_refuses_the_suites_options(capsys):
    rc, _, err = run_cli(
        capsys, "test", "--mm-ci", "--kernel", "up=base", "--only", "ksm"
    )
    assert rc == errors.UsageError.exit_code
    assert "not --only" in err


def test_the_suite_still_takes_one_kernel(capsys):
    rc, _, err = run_cli(
        capsys, "test", "--kernel", "a=base", "--kernel", "b=base"
    )
    assert rc == errors.UsageError.exit_code
    assert "one kernel, not 2" in err


def test_the_dry_run_lists_each_kernels_wrappers_and_guest(capsys, tmp_path):
    repo, _ = wrapper_tree(tmp_path)
    rc, out, err = run_cli(
        capsys,
        "test",
        "--mm-ci",
        "--dry-run",
        "--kernel",
        f"up=git:{repo}@main",
    )
    assert rc == 0, err
    assert "12 GiB in 2 NUMA nodes" in out and "16 GiB" in out
    assert "guest: 4 wrappers, each in its own boot" in out
    assert "./ksft_own_check.sh  (not in the mm CI's list)" in out
    assert "host tests vma: none (not in the tree)" in out
    assert "kconfig: " in out
    assert ", TCG, 2400 s per wrapper\n" in out
    rc, out, err = run_cli(
        capsys,
        "test",
        "--mm-ci",
        "--dry-run",
        "--wrapper-limit",
        "1500",
        "--kernel",
        f"up=git:{repo}@main",
    )
    assert rc == 0, err
    assert ", TCG, 1500 s per wrapper\n" in out  # the limit the run keeps


def test_the_dry_run_says_what_the_run_boots_and_builds(
    capsys, tmp_path, tmp_cache, monkeypatch
):
    """--wrappers, --repeat and --no-host-tests as the run takes them: the
    chosen wrappers in the run's order, the rest named as not run, the
    boots of each, no host tests, whether the kernel is kept; a name the
    tree lacks refused as the run refuses it."""
    from foliolab.kernel import store

    repo, commit = wrapper_tree(tmp_path)
    argv = ["test", "--mm-ci", "--dry-run", "--kernel", f"up=git:{repo}@main"]
    rc, out, err = run_cli(
        capsys,
        *argv,
        "--wrappers",
        "own_check,cow",
        "--repeat",
        "3",
        "--no-host-tests",
    )
    assert rc == 0, err
    assert "  host tests: not run (--no-host-tests)\n" in out
    assert "host tests vma" not in out
    assert (
        "guest: 2 of its 4 wrappers, each in its own boot, 3 boots of each"
        in out
    )
    assert out.index("    own_check ") < out.index("    cow ")
    assert "    not run: ksm_numa memory_failure\n" in out
    assert "  kernel: built first (not in the kernel store)\n" in out
    # kept as before the test modules were: built again, so not "kept"
    from foliolab.arch import get_arch
    from foliolab.kernel import build, kconfig, source
    from foliolab.suite.mmci import run as mmci_run

    arch = get_arch("x86_64")
    kept = store.store_dir(
        arch, kconfig.MMCI, source.Tree("up", repo, commit, "")
    )
    kept.mkdir(parents=True)
    for f in (Path(arch.kernel_image).name, *build.KEPT_FILES):
        (kept / f).write_text("")
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 0, err
    assert "  kernel: built first (not in the kernel store)\n" in out
    (kept / mmci_run.STORED_TEST_MODULES).mkdir()
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 0, err
    assert f"  kernel: kept in {kept}\n" in out
    assert "guest: 4 wrappers, each in its own boot\n" in out
    assert "not run:" not in out
    rc, out, err = run_cli(capsys, *argv, "--wrappers", "none")
    assert rc == 0, err
    assert "guest: none of its 4 wrappers (--wrappers)\n" in out
    assert "  kernel:" not in out  # nothing booted, nothing built
    rc, out, err = run_cli(capsys, *argv, "--repeat", "2")
    assert rc == 0, err
    assert "  host tests: 2 runs of each\n" in out
    assert "test modules:" not in out  # the tree names none
    rc, out, err = run_cli(capsys, *argv, "--wrappers", "cow,nosuch")
    assert rc == errors.UsageError.exit_code
    assert "--wrappers nosuch: the tree has no such wrappers" in err


def test_a_changed_guest_is_said_first(capsys, tmp_path, monkeypatch):
    """--append with --mm-ci: the dry run says first that the guest is not
    the mm CI's, and every wrapper's boot gets the arguments."""
    repo, _ = wrapper_tree(tmp_path)
    argv = ["test", "--mm-ci", "--kernel", f"up=git:{repo}@main"]
    extra = ["--append", "transparent_hugepage=never"]
    rc, out, err = run_cli(capsys, *argv, *extra, "--dry-run")
    assert rc == 0, err
    assert out.startswith(
        "not the mm CI's guest: every boot adds the kernel arguments "
        "transparent_hugepage=never\n"
    )
    rc, out, err = run_cli(capsys, *argv, "--dry-run")
    assert rc == 0 and "not the mm CI's guest" not in out
    # the boots' kernel arguments
    from foliolab.commands import test as test_cmd

    given = [*argv, *extra, "--out", str(tmp_path / "o")]
    args = cli.build_parser().parse_args(given)
    args.argv = given
    req = test_cmd._mmci_request(args)
    assert req.append == ("transparent_hugepage=never",)


def test_a_changed_guests_summary_says_so_first(tmp_path):
    """The kept summary of a run with --append: its text starts with the
    line that says so, its JSON names the arguments."""
    import json

    row = TestOutcome("kselftest.mm.hmm", TestStatus.PASS, "base")
    cases = compare.compare([[row]], [])
    args = ("transparent_hugepage=never",)
    text, js = compare.write(
        tmp_path,
        cases,
        "base",
        None,
        extra={"kernel_args_added": list(args)},
        heading=mmci.changed_guest(args),
    )
    assert text.read_text().startswith(
        "not the mm CI's guest: every boot adds the kernel arguments "
        "transparent_hugepage=never\n"
    )
    assert json.loads(js.read_text())["kernel_args_added"] == list(args)


@pytest.mark.parametrize(
    "option", [["--append", "transparent_hugepage=never"], ["--xtrace"]]
)
def test_a_guest_option_without_a_boot_is_refused(capsys, tmp_path, option):
    repo, _ = wrapper_tree(tmp_path)
    rc, _, err = run_cli(
        capsys,
        "test",
        "--mm-ci",
        "--kernel",
        f"up=git:{repo}@main",
        "--wrappers",
        "none",
        *option,
        "--dry-run",
    )
    assert rc == errors.UsageError.exit_code
    assert f"{option[0]} with --wrappers none" in err


def test_a_search_in_a_changed_guest_says_so():
    """The first-bad answer of a run with --append, read on its own (its
    text, its rows), says the guest was not the mm CI's."""
    from foliolab.suite.mmci import firstbad

    found = firstbad.FirstBad(
        "next",
        "base+s",
        ("kselftest.mm.hmm",),
        (),
        2,
        "0002-x.patch",
        kernel_args_added=("transparent_hugepage=never",),
    )
    assert firstbad.text(found).startswith(
        "not the mm CI's guest: every boot adds the kernel arguments "
        "transparent_hugepage=never\n"
    )
    (row,) = firstbad.outcomes(found)
    assert row.misc["kernel_args_added"] == "transparent_hugepage=never"
    plain = firstbad.FirstBad(
        "next", "base+s", ("kselftest.mm.hmm",), (), 2, "0002-x.patch"
    )
    assert "mm CI's guest" not in firstbad.text(plain)
    assert "kernel_args_added" not in firstbad.outcomes(plain)[0].misc


def test_mm_ci_end_to_end_on_fake_trees_finds_the_new_failure(
    capsys, tmp_path, monkeypatch
):
    """The command's whole host path: each kernel's tree, its host tests
    three times, outcomes.json, the summary, and a failing exit for a
    program that always fails on next and never on up."""
    from foliolab.kernel import source, trees

    fine = FAKE_MAKEFILE.replace("exit 3", "exit 0")
    up_repo, up_commit = make_tree(
        tmp_path / "up",
        {
            "tools/testing/radix-tree/Makefile": fine,
            f"{MM}/run_vmtests.sh": USAGE,
        },
    )
    next_repo, next_commit = make_tree(
        tmp_path / "next",
        {
            "tools/testing/radix-tree/Makefile": FAKE_MAKEFILE,
            f"{MM}/run_vmtests.sh": USAGE,
        },
    )
    made = {
        "up": source.Tree("up", up_repo, up_commit, ""),
        "next": source.Tree("next", next_repo, next_commit, ""),
    }
    monkeypatch.setattr(trees, "tree_of", lambda k: made[k.name])
    monkeypatch.setattr(hosttests, "check_host", lambda: None)
    out = tmp_path / "out"
    rc, stdout, err = run_cli(
        capsys,
        "test",
        "--mm-ci",
        "--wrappers",
        "none",
        "--repeat",
        "3",
        "--out",
        str(out),
        "--kernel",
        f"up=git:{up_repo}@main",
        "--kernel",
        f"next=git:{next_repo}@main",
    )
    assert rc == errors.FoliolabError.exit_code, err
    assert "new failure on next" in err
    assert "new failure" in stdout and "hosttest.radix-tree.fails" in stdout
    from foliolab.testrecord import Outcomes

    got = Outcomes.read(out)
    assert [k.name for k in got.kernels] == ["up", "next"]
    verdict = {t.path: t for t in got.tests}[
        "compare.hosttest.radix-tree.fails"
    ]
    assert verdict.status == T.FAIL and verdict.misc["next_k"] == 3
    assert sum(t.path == "hosttest.radix-tree.holds" for t in got.tests) == 6
    assert (out / "mmci-summary.json").exists()
    assert (out / "next/host-3/radix-tree-fails.log").exists()


def test_one_kernel_alone_fails_on_any_failing_case(
    capsys, tmp_path, monkeypatch
):
    """A run of one kernel is a baseline: with nothing to compare, a case
    that fails fails the command (as kselftest's runner exits), and one
    whose every case passes does not."""
    from foliolab.kernel import source, trees

    fine = FAKE_MAKEFILE.replace("exit 3", "exit 0")
    for name, makefile, rc_wanted in (
        ("bad", FAKE_MAKEFILE, errors.FoliolabError.exit_code),
        ("good", fine, 0),
    ):
        repo, commit = make_tree(
            tmp_path / name,
            {
                "tools/testing/radix-tree/Makefile": makefile,
                f"{MM}/run_vmtests.sh": USAGE,
            },
        )
        tree = source.Tree("up", repo, commit, "")
        monkeypatch.setattr(trees, "tree_of", lambda k, t=tree: t)
        monkeypatch.setattr(hosttests, "check_host", lambda: None)
        rc, stdout, err = run_cli(
            capsys,
            "test",
            "--mm-ci",
            "--wrappers",
            "none",
            "--out",
            str(tmp_path / f"out-{name}"),
            "--kernel",
            f"up=git:{repo}@main",
        )
        assert rc == rc_wanted, err
        if rc:
            assert "the mm CI's tests: a case failed on up" in err


def test_a_run_stopped_at_its_second_kernel_keeps_the_first_and_resumes(
    capsys, tmp_path, monkeypatch
):
    """Each run's rows are written as they come: a run stopped at its
    second kernel (a signal, here) leaves outcomes.json with the first
    kernel's rows, marked unfinished, which the KCIDB export refuses in
    one line; --resume runs only what the stopped run had not recorded,
    and a resume asking for another run is refused before any work."""
    from foliolab import rundir
    from foliolab.kernel import source, trees
    from foliolab.testrecord import Outcomes

    fine = FAKE_MAKEFILE.replace("exit 3", "exit 0")
    repo, commit = make_tree(
        tmp_path / "up",
        {
            "tools/testing/radix-tree/Makefile": fine,
            f"{MM}/run_vmtests.sh": USAGE,
        },
    )
    monkeypatch.setattr(
        trees,
        "tree_of",
        lambda k: source.Tree(
            k.name, repo, git(repo, "rev-parse", "main").strip(), ""
        ),
    )
    monkeypatch.setattr(hosttests, "check_host", lambda: None)
    real = hosttests.run_host_tests
    ran: list[str] = []

    def stopped_at_next(path, commit, name, out, log_dir):
        # run 2 begins with next (its kernels reversed): stopped there
        if log_dir == "next/host-2":
            raise errors.StoppedError("stopped by signal 15")
        ran.append(log_dir)
        return real(path, commit, name, out, log_dir)

    monkeypatch.setattr(hosttests, "run_host_tests", stopped_at_next)
    out = tmp_path / "out"
    argv = host_only_argv(out, repo, "--repeat", "2")
    rc, _, err = run_cli(capsys, *argv)
    assert rc == errors.StoppedError.exit_code, err
    got = Outcomes.read(out)
    assert not got.finished
    assert [k.name for k in got.kernels] == ["up", "next"]
    assert ran == ["up/host-1", "next/host-1"]
    holds = [t for t in got.tests if t.path == "hosttest.radix-tree.holds"]
    assert sorted((t.kernel, t.misc["run"]) for t in holds) == [
        ("next", 1),
        ("up", 1),
    ]
    assert not (out / "mmci-summary.json").exists()
    rc, _, err = run_cli(
        capsys,
        "report",
        str(out),
        "--kcidb",
        str(tmp_path / "k.json"),
        "--origin",
        "lab",
    )
    assert rc == errors.UsageError.exit_code
    assert "the run did not finish" in err
    assert not (tmp_path / "k.json").exists()

    rc, _, err = run_cli(capsys, *argv, "--resume", "--repeat", "3")
    assert rc == errors.UsageError.exit_code
    assert "had repeat 2, this asks for 3" in err
    assert Outcomes.read(out).tests == got.tests  # refused: untouched
    # the same spec, another tree: main moved since the stop
    (repo / "mm/rmap.c").write_text("/* rmap, changed */\n")
    git(repo, "commit", "-q", "-am", "moved")
    rc, _, err = run_cli(capsys, *argv, "--resume")
    assert rc == errors.UsageError.exit_code
    assert (
        f"kernel up's tree is at {git(repo, 'rev-parse', 'main')[:12]}" in err
    )
    assert f"the stopped run's was at {commit[:12]}" in err
    git(repo, "reset", "-q", "--hard", commit)
    # a row of no unit (a hand-edited run number) is damage, said first
    kept_text = (out / "outcomes.json").read_text()
    (out / "outcomes.json").write_text(
        kept_text.replace('"run": 1', '"run": "1"', 1)
    )
    rc, _, err = run_cli(capsys, *argv, "--resume")
    assert rc == errors.DamagedRunError.exit_code
    assert "is of no host-test run or boot this run has" in err
    (out / "outcomes.json").write_text(kept_text)

    monkeypatch.setattr(hosttests, "run_host_tests", real)
    ran.clear()
    monkeypatch.setattr(
        hosttests,
        "run_host_tests",
        lambda path, commit, name, out, log_dir: (
            ran.append(log_dir) or real(path, commit, name, out, log_dir)
        ),
    )
    rc, _, err = run_cli(capsys, *argv, "--resume")
    assert rc == 0, err
    assert ran == ["next/host-2", "up/host-2"]  # run 1's were kept
    done = Outcomes.read(out)
    assert done.finished and [k.name for k in done.kernels] == ["up", "next"]
    holds = [t for t in done.tests if t.path == "hosttest.radix-tree.holds"]
    assert sorted((t.kernel, t.misc["run"]) for t in holds) == [
        ("next", 1),
        ("next", 2),
        ("up", 1),
        ("up", 2),
    ]
    rc, _, err = run_cli(capsys, *argv, "--resume")
    assert rc == errors.UsageError.exit_code
    assert "is finished" in err
    assert rundir.identify(out).finished  # the refusal left it finished


def _fake_boots(monkeypatch, mmci_run, booted, setups):
    """_side_by_side's guest and host tests recorded, nothing run."""
    monkeypatch.setattr(
        mmci_run,
        "_guest_setup",
        lambda req, name, tree: setups.append(name) or (None, None, None),
    )

    def one_wrapper(req, name, w, spec, img, executor, log_dir, tests):
        booted.append((name, w.name, log_dir))
        return [TestOutcome(f"kselftest.mm.{w.name}", TestStatus.PASS, name)]

    def host_tests(path, commit, name, out, log_dir):
        booted.append((name, "host", log_dir))
        return [TestOutcome("hosttest.vma.vma", TestStatus.PASS, name)]

    monkeypatch.setattr(mmci_run, "_one_wrapper", one_wrapper)
    monkeypatch.setattr(hosttests, "run_host_tests", host_tests)


def _wrappers(*names):
    return tuple(
        discover.Wrapper(n, f"./ksft_{n}.sh", "", f"ksft_{n}.sh", True)
        for n in names
    )


def test_a_resumed_kernel_boots_only_what_was_not_kept(monkeypatch, tmp_path):
    """The guest side of --resume: a boot kept from the stopped run is
    not booted again, and a kernel whose every boot was kept is not even
    built."""
    from foliolab.arch import get_arch
    from foliolab.kernelrecord import KernelRecord
    from foliolab.suite.mmci import run as mmci_run
    from foliolab.testrecord import Outcomes

    req = mmci_run.MmciRequest((), get_arch("x86_64"), tmp_path, repeat=2)
    setups: list[str] = []
    booted: list[tuple[str, str, str]] = []
    _fake_boots(monkeypatch, mmci_run, booted, setups)
    kernel = mmci_run._KernelTests("up", None, _wrappers("mmap", "cow"), False)

    def stopped(*units):
        rows = [
            TestOutcome(
                f"kselftest.mm.{w}", TestStatus.PASS, "up", misc={"run": i}
            )
            for i, w in units
        ]
        kept = Outcomes("test", [KernelRecord("up", "base")], rows)
        return mmci_run._SoFar(tmp_path, [], kept)

    every = [(i, w) for i in (1, 2) for w in ("mmap", "cow")]
    runs = mmci_run._side_by_side(
        req, [kernel], object(), mmci_run._Guests(req), stopped(*every)
    )
    assert setups == [] and booted == []
    assert [len(r) for r in runs["up"]] == [2, 2]
    runs = mmci_run._side_by_side(
        req,
        [kernel],
        object(),
        mmci_run._Guests(req),
        stopped(*[u for u in every if u != (2, "cow")]),
    )
    assert setups == ["up"] and booted == [("up", "cow", "up/guest/cow-2")]
    assert [[r.path for r in rows] for rows in runs["up"]] == [
        ["kselftest.mm.mmap", "kselftest.mm.cow"],
        ["kselftest.mm.mmap", "kselftest.mm.cow"],
    ]


def test_the_kernels_boots_go_side_by_side_in_abba_order(
    monkeypatch, tmp_path
):
    """--repeat: each run boots every wrapper on each kernel in turn, the
    kernels in the order given in run 1 and reversed in run 2, every
    kernel built before the first boot; not all of one kernel's runs
    before the other's, which put hours between the two sides of a
    comparison (a case whose rate drifted looked new on the later
    one). A wrapper one kernel's tree lacks is booted on the other."""
    from foliolab.arch import get_arch
    from foliolab.kernel import source
    from foliolab.suite.mmci import run as mmci_run

    req = mmci_run.MmciRequest((), get_arch("x86_64"), tmp_path, repeat=2)
    setups: list[str] = []
    booted: list[tuple[str, str, str]] = []
    _fake_boots(monkeypatch, mmci_run, booted, setups)
    monkeypatch.setattr(
        mmci_run,
        "_guest_setup",
        lambda req, name, tree: (
            booted.append((name, "setup", "")) or (None, None, None)
        ),
    )
    tree = source.Tree("t", tmp_path, "0" * 40, "")
    up = mmci_run._KernelTests("up", tree, _wrappers("mmap", "cow"), True)
    nxt = mmci_run._KernelTests(
        "next", tree, _wrappers("mmap", "cow", "ksm"), True
    )
    runs = mmci_run._side_by_side(
        req, [up, nxt], object(), mmci_run._Guests(req)
    )
    assert [(k, what) for k, what, _ in booted] == [
        ("up", "setup"),
        ("next", "setup"),
        ("up", "host"),
        ("next", "host"),
        ("up", "mmap"),
        ("next", "mmap"),
        ("up", "cow"),
        ("next", "cow"),
        ("next", "ksm"),
        ("next", "host"),
        ("up", "host"),
        ("next", "mmap"),
        ("up", "mmap"),
        ("next", "cow"),
        ("up", "cow"),
        ("next", "ksm"),
    ]
    assert booted[-1][2] == "next/guest/ksm-2"
    assert booted[3][2] == "next/host-1"
    assert [len(r) for r in runs["up"]] == [3, 3]
    assert [len(r) for r in runs["next"]] == [4, 4]
    assert {r.misc["run"] for r in runs["next"][1]} == {2}


def test_a_probe_boots_the_reference_beside_the_prefix(monkeypatch, tmp_path):
    """The first-bad search's probe: the prefix's wrappers of the new
    failures and the reference's same wrappers, side by side, the
    reference's logs apart from its first ones and its guest not made
    again."""
    from foliolab.arch import get_arch
    from foliolab.kernel import source, specs, trees
    from foliolab.suite.mmci import run as mmci_run

    req = mmci_run.MmciRequest((), get_arch("x86_64"), tmp_path, repeat=2)
    setups: list[str] = []
    booted: list[tuple[str, str, str]] = []
    _fake_boots(monkeypatch, mmci_run, booted, setups)
    repo, commit = make_tree(
        tmp_path / "t",
        {
            f"{MM}/run_vmtests.sh": USAGE,
            f"{MM}/ksft_cow.sh": "",
            f"{MM}/ksft_mmap.sh": "",
        },
    )
    monkeypatch.setattr(
        trees, "tree_of", lambda k: source.Tree(k.name, repo, commit, "")
    )
    guests = mmci_run._Guests(req)
    tree = source.Tree("up", repo, commit, "")
    up = mmci_run._KernelTests("up", tree, _wrappers("mmap", "cow"), False)
    guests.of(up)
    probe = mmci_run._prefix_runner(req, up, object(), guests)
    got = probe(
        specs.parse_spec("next+p2", "base"), ["kselftest.mm.cow.cow.x"]
    )
    assert setups == ["up", "next+p2"]
    assert [(k, w, d) for k, w, d in booted] == [
        ("up", "cow", "up-beside-next+p2/guest/cow-1"),
        ("next+p2", "cow", "next+p2/guest/cow-1"),
        ("next+p2", "cow", "next+p2/guest/cow-2"),
        ("up", "cow", "up-beside-next+p2/guest/cow-2"),
    ]
    assert [len(r) for r in got.reference] == [1, 1]
    assert [len(r) for r in got.prefix] == [1, 1]
    # a host test's new failure, in a run with no guest: host tests on
    # both sides, beside each other, nothing booted or built
    booted.clear()
    setups.clear()
    host_only = mmci_run._prefix_runner(req, up, None, guests)
    got = host_only(specs.parse_spec("next+p1", "base"), ["hosttest.vma.vma"])
    assert setups == []
    assert booted == [
        ("up", "host", "up-beside-next+p1/host-1"),
        ("next+p1", "host", "next+p1/host-1"),
        ("next+p1", "host", "next+p1/host-2"),
        ("up", "host", "up-beside-next+p1/host-2"),
    ]
    assert [[r.path for r in rows] for rows in got.prefix] == [
        ["hosttest.vma.vma"],
        ["hosttest.vma.vma"],
    ]


def test_an_mm_ci_kernel_and_its_modules_are_built_once_then_kept(
    monkeypatch, tmp_path, tmp_cache
):
    """Going back to a kernel built by an earlier run (up, then next, then
    up again: one build directory) takes it from the store, modules and
    all, into the new run's directory, without building it again."""
    from foliolab.arch import get_arch
    from foliolab.kernel import build, kconfig, source
    from foliolab.suite.mmci import run as mmci_run

    arch = get_arch("x86_64")

    class Fragment:
        def __init__(self, text):
            self._text = text

        def text(self):
            return self._text

    monkeypatch.setattr(
        build, "fragment_of", lambda tree, a, purpose: Fragment(purpose)
    )
    built: list[str] = []

    def fake_build(
        tree, a, purpose, keep=None, keep_files=None, also_keep=None
    ):
        built.append(tree.commit)
        out = tmp_path / "build"
        mods = out / build.MODULES_ROOT / "lib" / "modules" / "7.3.4"
        mods.mkdir(parents=True, exist_ok=True)
        (mods / "test_hmm.ko").write_text(tree.commit)
        (out / "include" / "config").mkdir(parents=True, exist_ok=True)
        for there in build.KEPT_FILES.values():
            (out / there).write_text(tree.commit)
        image = out / "bzImage"
        image.write_text("image of " + tree.commit)
        k = build.Kernel(
            tree.variant, purpose, a.name, out, image, tree.commit, "sha", 9.0
        )
        if also_keep is not None:
            also_keep(k)
        return k.kept_in(keep, keep_files)

    monkeypatch.setattr(build, "build_kernel", fake_build)
    up = source.Tree("up", tmp_path, "a" * 40, "")
    nxt = source.Tree("next", tmp_path, "b" * 40, "")
    for i, tree in enumerate((up, nxt, up)):
        kdir = tmp_path / f"run{i}" / tree.variant
        made = mmci_run._kernel(tree, arch, kdir)
        kernel, modules = made.kernel, made.modules
        assert made.test_modules.is_dir() and not made.modules_not_built
        assert kernel.image.read_text() == "image of " + tree.commit
        assert kernel.image.is_relative_to(kdir)
        assert (kdir / "kernel" / "System.map").read_text() == tree.commit
        assert modules is not None and modules.is_relative_to(kdir)
        ko = modules / "lib" / "modules" / "7.3.4" / "test_hmm.ko"
        assert ko.read_text() == tree.commit
    assert built == [up.commit, nxt.commit]
    stored = mmci_run.store.store_dir(arch, kconfig.MMCI, up)
    assert kconfig.MMCI in stored.name
    # kept before the test modules were: built again, not taken without
    shutil.rmtree(stored / mmci_run.STORED_TEST_MODULES)
    mmci_run._kernel(up, arch, tmp_path / "run3" / "up")
    assert built == [up.commit, nxt.commit, up.commit]


def test_the_selftests_test_modules_are_built_against_the_kernel(
    monkeypatch, tmp_path
):
    """page_frag_test.ko, which 7.3.4's selftests build only with a
    kernel build directory: found in the tree's Makefile, built against
    the kernel, kept where test_page_frag.sh looks in the guest; one that
    does not build is named, and the kernel stands."""
    from foliolab.arch import get_arch
    from foliolab.errors import BuildError
    from foliolab.kernel import build, image, source

    makefile = (
        "KDIR ?= $(O)\nifneq (,$(wildcard $(KDIR)/Module.symvers))\n"
        "TEST_GEN_MODS_DIR := page_frag\nendif\n"
    )
    repo, commit = make_tree(
        tmp_path / "k",
        {
            f"{MM}/Makefile": makefile,
            f"{MM}/page_frag/Makefile": "obj-m += page_frag_test.o\n",
            f"{MM}/page_frag/page_frag_test.c": "/* */\n",
        },
    )
    assert guest.test_module_dirs(repo, commit) == ["page_frag"]
    tree = source.Tree("up", repo, commit, "")
    arch = get_arch("x86_64")
    kernel = build.Kernel(
        "up", "mm-ci", "x86_64", tmp_path, tmp_path, commit, "s", 1.0
    )
    seen = []

    def fake_module(k, t, a, source_dir):
        seen.append(sorted(p.name for p in source_dir.iterdir()))
        (source_dir / "page_frag_test.ko").write_bytes(b"ko")
        return [source_dir / "page_frag_test.ko"]

    monkeypatch.setattr(build, "build_external_module", fake_module)
    dest = tmp_path / "kept"
    guest.keep_test_modules(kernel, tree, arch, dest)
    assert seen == [["Makefile", "page_frag_test.c"]]
    assert (dest / "page_frag" / "page_frag_test.ko").read_bytes() == b"ko"
    assert not (dest / guest.NOT_BUILT_MODULES).exists()
    # into the guest beside the selftests, where the wrapper looks
    tests_dir = tmp_path / "mm"
    (tests_dir / "page_frag").mkdir(parents=True)
    tests = guest.Selftests(tests_dir, commit, (), tmp_path / "log")
    (tmp_path / "log").write_bytes(b"")
    monkeypatch.setattr(image, "guest_libraries", lambda a, d: {})
    monkeypatch.setattr(guest, "_guest_file", lambda a, p: tmp_path / "log")
    monkeypatch.setattr(image, "check_machine", lambda *a: None)
    archive = guest.payload(arch, tests, None, dest)
    assert b"foliolab/mmci/page_frag/page_frag_test.ko" in archive

    def fails(k, t, a, source_dir):
        raise BuildError("page_frag did not build")

    monkeypatch.setattr(build, "build_external_module", fails)
    dest2 = tmp_path / "kept2"
    guest.keep_test_modules(kernel, tree, arch, dest2)
    assert (dest2 / guest.NOT_BUILT_MODULES).read_text() == "page_frag\n"
    assert not list(dest2.rglob("*.ko"))
    # a tree without test modules: nothing to build, the directory made
    bare, bare_commit = make_tree(tmp_path / "b", {f"{MM}/Makefile": "all:\n"})
    assert guest.test_module_dirs(bare, bare_commit) == []
    dest3 = tmp_path / "kept3"
    guest.keep_test_modules(
        kernel, source.Tree("b", bare, bare_commit, ""), arch, dest3
    )
    assert dest3.is_dir() and not list(dest3.iterdir())


@pytest.mark.parametrize("arch_name", ["x86_64", "arm64"])
def test_a_test_module_is_built_by_the_kernels_make_line(
    monkeypatch, tmp_path, arch_name
):
    """The external module's make: the kernel's tree and build directory
    (O=), the module's directory (M=), the kernel's ARCH, cross compiler
    and compiler, the modules target; its log in the module's
    directory."""
    from foliolab.arch import get_arch
    from foliolab.kernel import build, source

    arch = get_arch(arch_name)
    made = []

    def fake_make(argv, log_path, label, total):
        made.append((argv, log_path))
        (tmp_path / "mod" / "page_frag_test.ko").write_bytes(b"ko")
        return 1

    monkeypatch.setattr(build, "_run_make", fake_make)
    (tmp_path / "mod").mkdir()
    kernel = build.Kernel(
        "up", "mm-ci", arch.name, tmp_path / "out", tmp_path, "c", "s", 1.0
    )
    tree = source.Tree("up", tmp_path / "src", "c", "")
    kos = build.build_external_module(kernel, tree, arch, tmp_path / "mod")
    assert kos == [tmp_path / "mod" / "page_frag_test.ko"]
    ((argv, log_path),) = made
    assert argv[:3] == ["make", "-C", str(tmp_path / "src")]
    assert f"O={tmp_path / 'out'}" in argv
    assert f"M={tmp_path / 'mod'}" in argv
    assert f"ARCH={arch.linux_arch}" in argv
    assert f"CROSS_COMPILE={arch.cross_compile}" in argv
    assert f"CC=ccache {arch.cross_compile}gcc" in argv
    assert argv[-1] == "modules"
    assert log_path == tmp_path / "mod" / "build.log"


def test_a_test_module_not_built_is_named_on_every_wrapper_row(
    monkeypatch, tmp_path, tmp_cache
):
    """A test module that failed to build: its log kept beside the
    kernel, its name carried from the store to the run's kernel and into
    the selftests' not-built list each wrapper row names; the modules
    that did build go into the guest's archive."""
    from foliolab.arch import get_arch
    from foliolab.errors import BuildError
    from foliolab.kernel import build, image, source
    from foliolab.suite.mmci import run as mmci_run

    arch = get_arch("x86_64")

    class Fragment:
        def text(self):
            return "mm-ci"

    monkeypatch.setattr(build, "fragment_of", lambda *a: Fragment())
    monkeypatch.setattr(
        guest, "test_module_dirs", lambda repo, commit: ["page_frag"]
    )
    monkeypatch.setattr(hosttests, "copy_tree", lambda *a: None)

    def fails(kernel, tree, a, source_dir):
        source_dir.mkdir(parents=True)
        (source_dir / "build.log").write_text("page_frag_test.c: error\n")
        raise BuildError("the module did not build")

    monkeypatch.setattr(build, "build_external_module", fails)

    fake_build = stand_in_build(tmp_path / "build", [])

    monkeypatch.setattr(build, "build_kernel", fake_build)
    tree = source.Tree("up", tmp_path, "a" * 40, "")
    made = mmci_run._kernel(tree, arch, tmp_path / "run" / "up")
    assert made.modules_not_built == ("page_frag",)
    assert "error" in (made.test_modules / "page_frag.build.log").read_text()
    # into the selftests' not-built list, and the archive gets the rest
    monkeypatch.setattr(mmci_run, "_kernel", lambda t, a, kdir: made)
    monkeypatch.setattr(
        guest,
        "build_selftests",
        lambda *a: guest.Selftests(tmp_path, "c", ("cow",), tmp_path / "l"),
    )
    (tmp_path / "base.cpio").write_bytes(b"")
    monkeypatch.setattr(
        image,
        "build_image",
        lambda a: type("Img", (), {"path": tmp_path / "base.cpio"})(),
    )
    given = []
    monkeypatch.setattr(
        guest,
        "payload",
        lambda a, tests, modules, test_modules: (
            given.append((tests, test_modules)) or b""
        ),
    )
    req = mmci_run.MmciRequest((), arch, tmp_path / "run")
    _, _, tests = mmci_run._guest_setup(req, "up", tree)
    assert tests.not_built == ("cow", "page_frag")
    assert given == [(tests, made.test_modules)]


def test_two_runs_storing_one_kernel_build_it_once_and_both_have_it_whole(
    monkeypatch, tmp_path, tmp_cache
):
    """The second of two runs that ask for one kernel at once waits for
    the first and takes what it stored: built once, the modules the
    first copied in two steps there for both."""
    import threading
    import time

    from foliolab.arch import get_arch
    from foliolab.kernel import build, source, store

    arch = get_arch("x86_64")

    class Fragment:
        def text(self):
            return "mm-ci"

    monkeypatch.setattr(build, "fragment_of", lambda *a: Fragment())
    calls = []

    slow_build = stand_in_build(tmp_path / "build", calls)

    def two_steps(built, there):
        (there / "modules").mkdir()
        time.sleep(0.5)  # the second run starts here
        (there / "modules" / "test_hmm.ko").write_text("ko")
        (there / "test-modules").mkdir()

    monkeypatch.setattr(build, "build_kernel", slow_build)
    tree = source.Tree("up", tmp_path, "a" * 40, "")
    got = {}

    def run(name):
        k = store.build_and_keep(
            tree,
            arch,
            "mm-ci",
            also_keep=two_steps,
            also_kept=("test-modules",),
        )
        got[name] = (k.build_dir / "modules" / "test_hmm.ko").read_text()

    first = threading.Thread(target=run, args=("first",))
    first.start()
    time.sleep(0.2)
    run("second")
    first.join()
    assert calls == [tree.commit]
    assert got == {"first": "ko", "second": "ko"}
    assert not [
        p
        for p in store.store_dir(arch, "mm-ci", tree).parent.iterdir()
        if p.name != store.store_dir(arch, "mm-ci", tree).name
    ]  # no part directory left


def stand_in_build(out: Path, calls: list[str]):
    """build.build_kernel's stand-in: a build directory with an image and
    the kept files at ``out``, the caller's also_keep called as the real
    one calls it, each tree's commit appended to ``calls``."""
    from foliolab.kernel import build

    def fake_build(
        tree, a, purpose, keep=None, keep_files=None, also_keep=None
    ):
        calls.append(tree.commit)
        (out / "include" / "config").mkdir(parents=True, exist_ok=True)
        for there in build.KEPT_FILES.values():
            (out / there).write_text("x")
        (out / "bzImage").write_text("image")
        k = build.Kernel(
            tree.variant,
            purpose,
            a.name,
            out,
            out / "bzImage",
            tree.commit,
            "s",
            1.0,
        )
        if also_keep is not None:
            also_keep(k)
        return k.kept_in(keep, keep_files)

    return fake_build


def test_the_runs_summary_lists_allowed_failures_and_a_resume_keeps_names(
    capsys, tmp_path, monkeypatch
):
    """run() hands each kernel's rows to the allowed-failure count: the
    summary and its JSON list an allowed failure that came on next only.
    A stopped run whose request has no case naming (recorded before
    cases were named by their [RUN] lines) is not resumed: its rows and
    new ones would name one case two ways."""
    from foliolab.kernel import source, trees
    from foliolab.suite.mmci import run as mmci_run

    repo, commit = make_tree(tmp_path / "up", {f"{MM}/run_vmtests.sh": USAGE})
    monkeypatch.setattr(
        trees, "tree_of", lambda k: source.Tree(k.name, repo, commit, "")
    )
    monkeypatch.setattr(hosttests, "check_host", lambda: None)
    stop = {"next": False}

    def side_by_side(req, kernels, *rest):
        runs = {}
        for k in kernels:
            if stop.get(k.name):
                raise errors.StoppedError("stopped by signal 15")
            misc = {"directive": "XFAIL leak"} if k.name == "next" else {}
            runs[k.name] = [
                [
                    TestOutcome(
                        "kselftest.mm.cow.cow.leak", T.PASS, k.name, misc=misc
                    )
                ]
                for _ in range(3)
            ]
        return runs

    monkeypatch.setattr(mmci_run, "_side_by_side", side_by_side)
    out = tmp_path / "out"
    argv = host_only_argv(out, repo)
    rc, stdout, err = run_cli(capsys, *argv)
    assert rc == 0, err
    assert "allowed failures (# XFAIL, counted as passes)" in stdout
    text = (out / "mmci-summary.txt").read_text()
    assert "0/3       3/3 p=0.05   kselftest.mm.cow.cow.leak" in text
    (got,) = json.loads((out / "mmci-summary.json").read_text())[
        "allowed_failures"
    ]
    assert got["up"] == {"k": 0, "n": 3} and got["next"] == {"k": 3, "n": 3}

    again = tmp_path / "again"
    stop["next"] = True
    argv[argv.index(str(out))] = str(again)
    rc, _, err = run_cli(capsys, *argv)
    assert rc == errors.StoppedError.exit_code, err
    request = again / mmci_run.REQUEST
    key = json.loads(request.read_text())
    assert key["case_names"] == mmci_run.CASE_NAMES
    del key["case_names"]
    request.write_text(json.dumps(key))
    stop["next"] = False
    rc, _, err = run_cli(capsys, *argv, "--resume")
    assert rc == errors.UsageError.exit_code
    assert "named its cases as foliolab did before a case was named" in err
    assert "run it again with another --out" in err
