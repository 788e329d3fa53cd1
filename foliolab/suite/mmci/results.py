"""One mm selftest wrapper's run as test outcomes, one per case.

A wrapper that runs ``run_vmtests.sh -t CATEGORY`` prints, per program,
a ``# running ./PROGRAM ARGS`` header, the program's own output with
``# `` before each line (its TAP results among them: ``# ok 3 name``,
``# not ok 4 name``, the lines the mm CI greps as ``# not ok``), then
the program's own result at the top level (``ok 2 PROGRAM # SKIP``,
``not ok 3 PROGRAM # exit=1``), and at the very end its plan (``1..N``).
A wrapper of its own (7.3.4's kmemleak ones) prints top-level TAP, or
just a line and its exit status.

Paths are KernelCI's shape: ``kselftest.mm.WRAPPER`` for the wrapper
(its exit status, its output's completeness, the kernel's console),
``kselftest.mm.WRAPPER.PROGRAM`` for each program, and
``kselftest.mm.WRAPPER.PROGRAM.CASE`` for each of its TAP cases (a case
named by the ``[RUN]`` line above it where that line heads it alone);
names made path parts by discover.path_part, a repeated name numbered
(``_2``). Every result line is read by guestdata.parse.tap_result, the
suite's one reading of TAP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from foliolab.bootrecord import BootStatus
from foliolab.guestdata import parse
from foliolab.suite.mmci import mmci
from foliolab.suite.mmci.discover import Wrapper, path_part
from foliolab.testrecord import TestOutcome, TestStatus

PREFIX = "kselftest.mm"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# run_vmtests.sh's header of each program: "running ./cow", "running
# bash ./charge_reserved_hugetlb.sh -cgroup-v2", between two separator
# lines (is_separator)
_RUNNING = re.compile(r"^running (.+)$")


def is_separator(line: str, title: str) -> bool:
    """Whether ``line`` is run_vmtests.sh's separator above ``title``, its
    header: the title with every character tr'd to "-" (GNU tr), or some
    of them (busybox's tr has no [:graph:] class, and maps the letters of
    "[:graph:][:space:]" alone: "-unnin--./--otection_keys_64"). A
    program's own "running ..." line is no header: 6.12's protection_keys
    prints "running PKEY tests for unsupported CPU/OS" without one."""
    return (
        len(line) == len(title)
        and "-" in line
        and all(c in ("-", t) for c, t in zip(line, title))
    )


# console lines that mean the kernel died: the guest's output cannot be
# complete after one of them
_KERNEL_DIED = re.compile(
    r"Kernel panic - not syncing|end Kernel panic|Oops:|"
    r"BUG: (?:kernel NULL pointer|unable to handle)"
)
_STATUS = {
    "pass": TestStatus.PASS,
    "xfail": TestStatus.PASS,  # an expected failure held
    "fail": TestStatus.FAIL,
    "skip": TestStatus.SKIP,
    "error": TestStatus.ERROR,
}


@dataclass(frozen=True)
class WrapperRun:
    """What one run of a wrapper left: its output (stdout and stderr),
    its exit status (None: never learned, the guest died first), whether
    it was stopped at its time limit, and the guest's console."""

    wrapper: Wrapper
    output: str
    exit_code: int | None
    timed_out: bool = False
    console: str = ""
    duration_s: float | None = None
    time_limit_s: int | None = None
    # the guest listed its tasks as the limit neared (guest.STUCK_TAG)
    stuck_listed: bool = False
    # how the boot ended, and why in its executor's words (BootResult's
    # why_ended): the row names them when no exit status came back
    boot_ended: BootStatus = BootStatus.OK
    boot_why: str = ""


def program_name(command: str) -> str:
    """run_vmtests.sh's pretty_name: the command without ``./`` or
    ``bash ./`` before it."""
    return re.sub(r"^(?:bash )?\./", "", command.strip())


# a scratch path a run's command line names (run_vmtests.sh gives
# khugepaged's file case a mktemp -d directory: /tmp/xfs_dir_HFhGvr)
_SCRATCH = re.compile(r"\s+/tmp/\S*")


def stable_name(command: str) -> str:
    """A program's name for its path: the command less a scratch
    directory made anew each run, so the same case has the same path in
    every run and on every kernel (k of n needs it)."""
    return _SCRATCH.sub("", command)


# a number standing alone in a case's description: what the case
# measured, more often than which case it is (pagemap_ioctl's "ok 100
# transact_test Extra pages 26 (0.1%), extra thread faults 26." named a
# case anew each boot: 4 boots, 4 paths, each missing from 3 boots and
# so counted failed 3 times, run mmci-next1). A number inside a word
# ("2048kB", "mthp_64kB") stays, and so does one that says which case
# it is: a size with its unit after a space (cow's "... with hugetlb
# (2048 kB)" and "(1048576 kB)" in one run, two cases, not N and N_2
# by order), a folio order (split_huge_page_test's "split to order 3
# test done", one per order) and a size given as size= (uffd-wp-mremap's
# "(size=2097152, private=true, ...)", one per THP and hugetlb size).
_MEASURED = re.compile(
    r"(?<![\w.-])(?<!order )(?<!size=)\d+(?:\.\d+)?"
    r"(?!\w|\.\d|\s(?:[kKMGT]i?B|bytes?)\b)"
)


def case_name(description: str) -> str:
    """A case's name for its path: its description with each number
    standing alone as N, so a case that prints what it measured keeps
    one path (two cases that differ only there become x and x_2, in the
    order they ran)."""
    return _MEASURED.sub("N", description)


# a program's "[RUN] what" line before its cases (ksft_print_msg's "# "
# before it): cow's, gup_longterm's, ksm_functional_tests',
# madv_populate's, uffd-wp-mremap's
_RUN_TITLE = re.compile(r"^# \[RUN\] (.+)$")


@dataclass
class _Case:
    """One TAP result of a program, and the ``[RUN]`` line above it
    (its group's index into _Program.titles; None: no [RUN] yet)."""

    result: parse.TapResult
    group: int | None


@dataclass
class _Program:
    name: str  # as run_vmtests.sh prints it ("gup_test -u -w")
    path: str
    results: list[_Case] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)  # its [RUN] lines
    planned: int | None = None
    result: parse.TapResult | None = None
    result_name: str = ""  # the result line's name, where it differs


# the directive words a result with no name of its own is left with
# ("ok 165 # XFAIL vmsplice() ...": tap_result's name is the directive)
_DIRECTIVE_WORDS = ("XFAIL", "XPASS", "SKIP", "ERROR", "TODO")


def case_description(r: parse.TapResult) -> str:
    """A result's own name, without the directive word a result with no
    name of its own is left with: "ok 165 # XFAIL vmsplice() ..." names
    the case "vmsplice() ...", as when it holds ("ok 165 vmsplice()
    ..."), so one case has one path whether the test's allowed failure
    happened or not."""
    if r.name != r.directive:
        return r.name
    word, _, rest = r.name.partition(" ")
    if word.upper() in _DIRECTIVE_WORDS and rest.strip():
        return rest.strip()
    return r.name


def _case_names(p: _Program) -> list[str]:
    """Each result's description, in order: its ``[RUN]`` line's where
    the program heads its results one by one, else its own name.

    Why: 6.12's cow names each result by its outcome ("ok 162 No leak
    from parent into child", "ok 162 # XFAIL Leak from parent into
    child"), the same words for hundreds of cases, told apart only by
    the "[RUN] vmsplice() + unmap in child ... with hugetlb (1048576
    kB)" line above each; numbered by order, one case's allowed leak
    renamed every later one (run mmci612-slow). Where [RUN] lines head
    groups (madv_populate's "[RUN] test_holes" above four cases named
    for what they check), the results' own names say which case each
    is.

    Which of the two a program does is decided over the whole program,
    not line by line, so that an output cut short or a result printed
    twice does not rename the cases around it: it heads one by one when
    more than half of its [RUN] lines that head any result head exactly
    one. A second result under one [RUN] line of such a program (7.3.4's
    ksm_functional_tests prints a failure and goes on to its own result)
    keeps the line's name, numbered _2 by the caller: the first result
    under the line keeps the case's path, so the failure is the case's.
    A madv_populate cut off after its third result (groups of 2 and 1)
    still names each by its own name."""
    sizes: dict[int, int] = {}
    for c in p.results:
        if c.group is not None:
            sizes[c.group] = sizes.get(c.group, 0) + 1
    singles = sum(1 for n in sizes.values() if n == 1)
    by_title = 2 * singles > len(sizes)
    return [
        p.titles[c.group]
        if by_title and c.group is not None
        else case_description(c.result)
        for c in p.results
    ]


class _Names:
    """Unique path parts under each parent (a second ``x`` is ``x_2``)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def child(self, parent: str, name: str) -> str:
        base = f"{parent}.{path_part(name)}"
        n = self.seen.get(base, 0) + 1
        self.seen[base] = n
        return base if n == 1 else f"{base}_{n}"


def _outcome(
    path: str, r: parse.TapResult, kernel: str, log: str, misc: dict[str, str]
) -> TestOutcome:
    if r.status == "skip":
        reason = r.directive[4:].strip()
        if reason:
            misc = {**misc, "reason": reason}
    elif r.status == "xfail":
        misc = {**misc, "directive": r.directive}
    elif r.directive:
        misc = {**misc, "detail": r.directive}
    return TestOutcome(path, _STATUS[r.status], kernel, log=log, misc=misc)


def wrapper_outcomes(
    run: WrapperRun, kernel: str = "", log: str = ""
) -> list[TestOutcome]:
    """The wrapper's row first, then each program's and case's rows in
    the order they ran. ``log``: the wrapper's log, relative to the run
    directory."""
    w = run.wrapper
    top = f"{PREFIX}.{w.name}"
    names = _Names()
    misc: dict[str, str] = {"command": w.command}
    if w.flaky:
        misc["mmci"] = w.flaky
    elif not w.in_mmci:
        misc["mmci"] = "not in the mm CI's list"
    programs: list[_Program] = []
    own_cases: list[TestOutcome] = []  # a wrapper's own top-level TAP
    current: _Program | None = None
    plan: int | None = None
    saw_tap = False
    above = ""  # the "# " line before this one, its "# " left out
    for raw in run.output.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        if line.startswith("TAP version"):
            saw_tap = True
            continue
        if line.startswith("# "):
            inner, before = line[2:], above
            above = inner
            m = _RUNNING.match(inner)
            if m and w.category and is_separator(before, inner):
                name = program_name(m.group(1))
                current = _Program(name, names.child(top, stable_name(name)))
                programs.append(current)
                continue
            if current is None or current.result is not None:
                continue  # run_vmtests.sh's own notes
            planned = parse.tap_plan(inner)
            if planned is not None:
                current.planned = planned
                continue
            title = _RUN_TITLE.match(inner)
            if title:
                current.titles.append(title.group(1).strip())
                continue
            r = parse.tap_result(inner)
            if r is not None:
                group = len(current.titles) - 1 if current.titles else None
                current.results.append(_Case(r, group))
            continue
        above = ""
        planned = parse.tap_plan(line)
        if planned is not None:
            plan = planned
            continue
        r = parse.tap_result(line)
        if r is None:
            continue
        saw_tap = True
        if current is not None and current.result is None:
            # run_vmtests.sh's result of the program it ran last, whatever
            # name it prints (the header's path is the row's)
            current.result = r
            if program_name(r.name) != current.name:
                current.result_name = r.name
        else:  # a wrapper's own case, or a result without its header
            own_cases.append(
                _outcome(
                    names.child(top, case_name(case_description(r))),
                    r,
                    kernel,
                    log,
                    {},
                )
            )
    rows: list[TestOutcome] = []
    for p in programs:
        cases = [
            _outcome(
                names.child(p.path, case_name(description)),
                c.result,
                kernel,
                log,
                {},
            )
            for c, description in zip(p.results, _case_names(p))
        ]
        rows.append(_program_row(p, len(cases), run, kernel, log))
        rows += cases
    rows += own_cases
    status, detail = _wrapper_status(run, rows, plan, saw_tap)
    if detail:
        misc["detail"] = detail
    wrapper_row = TestOutcome(
        top, status, kernel, run.duration_s, log, misc=misc
    )
    return [wrapper_row, *rows]


def _program_row(
    p: _Program, reported: int, run: WrapperRun, kernel: str, log: str
) -> TestOutcome:
    misc: dict[str, str] = {"command": p.name}
    if p.result_name:
        misc["result_name"] = p.result_name
    if p.planned is not None and p.planned != reported:
        misc["plan"] = f"planned {p.planned} cases, reported {reported}"
    if p.result is not None:
        return _outcome(p.path, p.result, kernel, log, misc)
    # started, never finished: the guest died or the time ran out
    misc["detail"] = (
        "stopped at the wrapper's time limit"
        if run.timed_out
        else "the output ends inside it (the kernel or the guest died)"
    )
    return TestOutcome(p.path, TestStatus.ERROR, kernel, log=log, misc=misc)


# why a wrapper gave no exit status, by how its boot ended (the other
# endings: the guest stopped first)
_NO_EXIT_STATUS = {
    BootStatus.QEMU_ERROR: "no exit status: QEMU failed before the guest ran",
    BootStatus.NOT_RUN: (
        "no exit status: the executor gave no record of this boot"
    ),
}


def _wrapper_status(
    run: WrapperRun,
    rows: list[TestOutcome],
    plan: int | None,
    saw_tap: bool,
) -> tuple[TestStatus, str]:
    """The wrapper's own status: how it ended, what its kernel's console
    says (the mm CI's tripwire), and the worst of its rows."""
    w = run.wrapper
    died = [ln for ln in run.console.splitlines() if _KERNEL_DIED.search(ln)]
    problems = mmci.kernel_log_problems(w.script, run.console)
    if run.timed_out:
        limit = f" of {run.time_limit_s} s" if run.time_limit_s else ""
        stuck = (
            "; the tasks a minute before it: its results.txt's "
            "'@@ mmci stuck' lines"
            if run.stuck_listed
            else ""
        )
        return TestStatus.ERROR, f"timed out (time limit{limit}){stuck}"
    if died:
        return TestStatus.ERROR, f"the kernel died: {died[0].strip()}"
    if run.exit_code is None:
        why = _NO_EXIT_STATUS.get(
            run.boot_ended, "no exit status: the guest stopped first"
        )
        said = f": {run.boot_why}" if run.boot_why else ""
        return TestStatus.ERROR, f"{why} (boot {run.boot_ended}{said})"
    top_level = sum(1 for r in rows if r.path.count(".") == 3)
    if (w.category or saw_tap) and plan is None:
        return TestStatus.ERROR, "the output ends without its plan (1..N)"
    if plan is not None and plan != top_level:
        return (
            TestStatus.ERROR,
            f"planned {plan} programs, reported {top_level}",
        )
    failed = [r.path for r in rows if r.status == TestStatus.FAIL]
    errors = [r.path for r in rows if r.status == TestStatus.ERROR]
    if problems:
        return TestStatus.FAIL, f"kernel log: {problems[0].strip()}"
    if errors:
        return TestStatus.ERROR, f"{len(errors)} did not finish: {errors[0]}"
    if run.exit_code not in (0, mmci.KSFT_SKIP):
        return TestStatus.FAIL, f"exit status {run.exit_code}"
    if failed:
        return TestStatus.FAIL, f"{len(failed)} not ok, first {failed[0]}"
    if run.exit_code == mmci.KSFT_SKIP:
        return TestStatus.SKIP, "exit status 4 (skip)"
    return TestStatus.PASS, ""
