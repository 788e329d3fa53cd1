"""Upstream's newer mm selftests, run on the 6.12 kernels.

Linux 7.3 (Debian's linux-source-7.3, see debian.py) carries three of the
five seeds and newer versions of the mm selftests that exercise their
paths: rmap (migration of anon, shm, file and KSM pages, among them
``migrate.ksm_and_mremap``), ksm_functional_tests, khugepaged, droppable
(MAP_DROPPABLE), uffd-wp-mremap and cow. They are built here statically
against 7.3's own uapi headers and run by the suite as a second group of
kselftests (names ``upstream.PROGRAM``) in every suite boot, MGLRU on and
off. A case that passes on vanilla 6.12 must pass on the port: vanilla's
results are recorded per MGLRU setting in their own baseline file.

Unlike the 6.12 kselftests, a program that does not pass as a whole on
vanilla is still compared case by case: on 6.12 every one of these
programs has cases for features 6.12 lacks, so the program's own exit
status says little; each case that passes on vanilla is the promise.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import proc, records
from foliolab.arch import Arch
from foliolab.errors import BuildError, FoliolabError, UsageError
from foliolab.kernel import debian
from foliolab.paths import PROJECT_ROOT, cache_root

log = logging.getLogger("foliolab")

# The exact package, so that a recorded baseline stays the baseline of
# the binaries built (a newer 7.3 upload may change the tests).
PACKAGE = debian.Package("linux-source-7.3", "7.3.4-1~bpo13+1")
PREFIX = "upstream."
BASELINE = PROJECT_ROOT / "tests" / "upstream-selftests-vanilla.json"
MM = "tools/testing/selftests/mm"
# What the build takes from the 7.3 tree: the mm tests, the kselftest
# headers beside them, tools' uapi copies, and mm/gup_test.h (cow.c
# includes it by a path relative to its own directory).
ARCHIVE_PATHS = (
    MM,
    "tools/testing/selftests/kselftest.h",
    "tools/testing/selftests/kselftest_harness.h",
    "tools/include/uapi",
    "mm/gup_test.h",
)
# Every test links these (the mm Makefile's $(TEST_GEN_FILES) rule).
COMMON_SOURCES = ("vm_util.c", "hugepage_settings.c")
# The mm Makefile's CFLAGS and lib.mk's, less what a static build on the
# host does not need.
CFLAGS = (
    "-static",
    "-Wall",
    "-O2",
    "-D_GNU_SOURCE=",
    "-U_FORTIFY_SOURCE",
    "-Wunreachable-code",
)
LDLIBS = ("-lrt", "-lpthread", "-lm")
# cow.c tests io_uring fixed buffers only with liburing, which bookworm's
# static build does not need: the probe's "not found" answer, written by
# us instead of check_config.sh.
NO_LIBURING = "// No liburing support found (foliolab: built without)\n"


@dataclass(frozen=True)
class UpstreamTest:
    """One run of a 7.3 mm selftest program: how it is built and run."""

    program: str
    timeout: int  # seconds, on x86 under TCG
    args: str = ""
    extra_sources: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()


# name (after PREFIX) -> test; the names are what results and the
# baseline use.
TESTS = {
    "rmap": UpstreamTest("rmap", 900, libs=("-lnuma",)),
    "ksm_functional_tests": UpstreamTest("ksm_functional_tests", 600),
    "khugepaged": UpstreamTest("khugepaged", 900),
    "khugepaged-mthp": UpstreamTest("khugepaged", 900, args="-s 2"),
    "droppable": UpstreamTest("droppable", 300),
    "uffd-wp-mremap": UpstreamTest(
        "uffd-wp-mremap", 600, extra_sources=("uffd-common.c",)
    ),
    "cow": UpstreamTest("cow", 1500),
}
# In the guest: /foliolab/upstream, where they run (ksm_functional_tests
# execs ./ksm_functional_tests).
GUEST_DIR = "upstream"


def out_dir(arch: Arch) -> Path:
    """The build's directory in the cache; the binaries are in ``bin``."""
    return cache_root() / "upstream-selftests" / arch.name


def bin_dir(arch: Arch) -> Path:
    """Where the built programs are (image.py puts them in the image)."""
    return out_dir(arch) / "bin"


def compile_argv(
    cc: str, test: UpstreamTest, src: Path, hdr: Path, out: Path
) -> list[str]:
    """The compiler command that builds ``test`` in the mm directory of
    the unpacked sources ``src`` against the uapi headers ``hdr``."""
    selftests = src / "tools/testing/selftests"
    return [
        cc,
        *CFLAGS,
        "-I",
        str(src),
        "-I",
        str(selftests),
        "-isystem",
        str(hdr),
        "-isystem",
        str(src / "tools/include/uapi"),
        f"{test.program}.c",
        *COMMON_SOURCES,
        *test.extra_sources,
        *LDLIBS,
        *test.libs,
        "-o",
        str(out / test.program),
    ]


@dataclass(frozen=True)
class Plan:
    """What the suite runs of this group: the source and the tests."""

    source: debian.Source
    names: tuple[str, ...]  # keys of TESTS

    def guest_commands(
        self, slowdown: float = 1
    ) -> dict[str, tuple[str, int]]:
        """The suite's kselftest entries: name -> (command line in the
        guest's GUEST_DIR, time limit)."""
        return {
            PREFIX + name: (
                TESTS[name].program
                + (f" {TESTS[name].args}" if TESTS[name].args else ""),
                round(TESTS[name].timeout * slowdown),
            )
            for name in self.names
        }


def parse_selection(text: str) -> tuple[str, ...]:
    """``--upstream-selftests``: ``all``, ``none`` or NAME,NAME,..."""
    if text == "all":
        return tuple(TESTS)
    if text == "none":
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in TESTS]
    if unknown or not names:
        raise UsageError(
            f"--upstream-selftests {text}: no upstream test "
            f"{', '.join(unknown) or '(empty)'}",
            hint="all, none, or some of: " + ", ".join(TESTS),
        )
    return names


def source() -> debian.Source:
    """The pinned 7.3 source: the cached unpack if there is one, else
    fetched from Debian's archive (apt lists first)."""
    tree = cache_root() / "debian" / "src" / PACKAGE.version
    if not (tree / ".git").exists():
        debian.resolve(PACKAGE.version)
    return debian.prepare(PACKAGE)


def check_arch(arch: Arch) -> None:
    """The group is built with the host's compiler and static libnuma."""
    if not arch.native:
        raise UsageError(
            f"upstream selftests: built for the host's "
            f"architecture only, not {arch.name}",
            hint="add --no-upstream-selftests",
        )


def plan(selection: tuple[str, ...] | None, arch: Arch) -> Plan | None:
    """What to run of the group, or None to leave it out.

    ``selection`` None (the default): all, when the 7.3 source can be had
    and the architecture is the host's; named tests: an error otherwise."""
    requested = selection is not None
    if selection == () or (not requested and not arch.native):
        return None
    check_arch(arch)
    try:
        return Plan(source(), selection or tuple(TESTS))
    except FoliolabError as e:
        if requested:
            raise UsageError(
                f"--upstream-selftests: {PACKAGE.name} "
                f"{PACKAGE.version} cannot be had ({e})",
                hint="check the network to deb.debian.org, "
                "or add --no-upstream-selftests",
            ) from None
        log.warning(
            "upstream selftests left out: %s %s cannot be had (%s)",
            PACKAGE.name,
            PACKAGE.version,
            e,
        )
        return None


def build(src: debian.Source, arch: Arch) -> Path:
    """Build the group from ``src`` into the cache (kept until the source
    or the list of tests changes); returns the binaries' directory."""
    check_arch(arch)
    out = out_dir(arch)
    stamp = out / "built-from"
    want = f"{src.commit} {' '.join(sorted(TESTS))}\n"
    if stamp.exists() and stamp.read_text() == want:
        return bin_dir(arch)
    shutil.rmtree(out, ignore_errors=True)
    unpacked, hdr, bins = out / "src", out / "hdr", bin_dir(arch)
    for d in (unpacked, hdr, bins):
        d.mkdir(parents=True)
    _extract(src.tree, src.commit, unpacked, out / "src.tar")
    # 7.3's uapi headers, made out of the (shared, read-only) tree
    proc.run(
        [
            "make",
            "-s",
            "-C",
            str(src.tree),
            f"O={out / 'kbuild'}",
            f"ARCH={arch.linux_arch}",
            "headers_install",
            f"INSTALL_HDR_PATH={hdr}",
        ],
        log_path=out / "headers.log",
        error=BuildError,
        what="make headers_install (7.3)",
    )
    mm = unpacked / MM
    (mm / "local_config.h_gen").write_text(NO_LIBURING)
    for test in TESTS.values():
        if (bins / test.program).exists():
            continue  # khugepaged runs twice, is built once
        proc.run(
            compile_argv(arch.guest_cc, test, unpacked, hdr / "include", bins),
            cwd=mm,
            log_path=out / f"{test.program}.log",
            error=BuildError,
            what=f"building 7.3's {test.program} selftest",
        )
    stamp.write_text(want)
    return bins


def _extract(tree: Path, commit: str, dest: Path, tar: Path) -> None:
    """The ARCHIVE_PATHS of ``commit`` into ``dest`` (the tree is only
    read: the mm Makefile's probe would write into it)."""
    proc.run(
        [
            "git",
            "-C",
            str(tree),
            "archive",
            "-o",
            str(tar),
            commit,
            "--",
            *ARCHIVE_PATHS,
        ],
        error=BuildError,
        what="git archive of 7.3's selftests",
    )
    proc.run(
        ["tar", "-xf", str(tar), "-C", str(dest)],
        error=BuildError,
        what="unpacking 7.3's selftests",
    )
    tar.unlink()


# -- the baseline ---------------------------------------------------------

Results = dict[str, dict[str, str]]  # name -> {case: status}, as suite


@dataclass
class Baseline:
    """Vanilla 6.12's results of this group, per MGLRU setting ("y"/"n"),
    and the package the tests were built from."""

    package: str
    by_lru: dict[str, Results] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Baseline | None:
        if not path.exists():
            return None
        hint = "record it again with `foliolab test --record-baseline`"
        data = records.read_object(
            path, records.RecordKind.CACHE, ("package", "mglru"), hint
        )
        f = records.Fields(path, data, hint)
        return cls(f.string("package"), f.object("mglru", default=False))

    def save(self, path: Path) -> None:
        records.write_whole(
            path,
            json.dumps(
                {"package": self.package, "mglru": self.by_lru},
                indent=1,
                sort_keys=True,
            )
            + "\n",
        )


def package_label() -> str:
    return f"{PACKAGE.name} {PACKAGE.version}"


def baseline_path(arch: Arch) -> Path:
    if arch.name == "x86_64":
        return BASELINE
    return BASELINE.with_name(f"upstream-selftests-vanilla-{arch.name}.json")


def own_results(results: Results) -> Results:
    """This group's entries of a boot's kselftest results."""
    return {k: v for k, v in results.items() if k.startswith(PREFIX)}


@dataclass(frozen=True)
class Verdict:
    """One line of the comparison (suiteresults.Check's fields)."""

    name: str
    status: str  # pass | fail | skip
    detail: str = ""


def compare(
    results: Results, base: Results | None, names: tuple[str, ...]
) -> list[Verdict]:
    """Every case (and whole program) of the tests ``names`` that passed
    on vanilla must pass here; one line per program, one more per case
    that regressed."""
    if base is None:
        return [
            Verdict(
                "kselftest.upstream",
                "fail",
                "no vanilla baseline for this MGLRU setting: record "
                "one with --variant vanilla --record-baseline",
            )
        ]
    out = []
    for name in sorted({PREFIX + n for n in names} | set(results)):
        here, van = results.get(name), base.get(name)
        label = f"kselftest.{name}"
        if here is None:
            out.append(Verdict(label, "fail", "did not run"))
            continue
        if van is None:
            out.append(
                Verdict(
                    label,
                    "fail",
                    "not in the vanilla baseline: record it again",
                )
            )
            continue
        regressed = sorted(
            c for c, s in van.items() if s == "pass" and here.get(c) != "pass"
        )
        for case in filter(None, regressed):  # "": the line below
            out.append(
                Verdict(
                    f"{label}.{case}",
                    "fail",
                    f"{here.get(case, 'missing')} here, pass on vanilla",
                )
            )
        cases = [c for c in here if c]
        out.append(
            Verdict(
                label,
                "fail" if regressed else "pass",
                f"{sum(here[c] == 'pass' for c in cases)} of "
                f"{len(cases)} cases pass here, "
                f"{sum(van.get(c) == 'pass' for c in cases)} on "
                f"vanilla; program {here.get('', '?')} here, "
                f"{van.get('', '?')} on vanilla",
            )
        )
    return out
