"""test, check, run and bisect boot on the executor the user chose, as
compare does: ``--executor`` and its flags reach ``boot_once``, and an
executor that cannot run the command's boots is refused in one line
before anything is built.

No kernel here: a stand-in executor class is put in the registry, and the
builds are stood in for (tests/host/test_qemu.py boots them for real
through LAVA's dispatcher).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from foliolab import cli, errors, executors
from foliolab.arch import get_arch
from foliolab.boot import measure
from foliolab.bootrecord import BootResult
from foliolab.executors.base import (
    BootCapture,
    BootRequest,
    BootSpec,
    Elsewhere,
    Ended,
    ExecutorKind,
    ExecutorRecord,
    NoOptions,
    Settled,
)
from foliolab.testrecord import Outcomes


class Stand:
    """An executor of its own, registered for the test: it boots nothing
    and says so (records on the console, as a lab's)."""

    kind = ExecutorKind("stand", Elsewhere("stand", "the stand's"))
    summary = "a stand-in"
    chosen_by_flag = True
    flags = ()
    results_port = False
    carries_files = False
    rounds_per_block = 0
    made: list[Stand] = []

    def __init__(self, out: Path) -> None:
        self.out = out
        self.blocks: list = []

    @classmethod
    def options(cls, args: argparse.Namespace) -> NoOptions:
        return NoOptions()

    @classmethod
    def check(cls, opts: NoOptions, count: bool) -> None:
        if count:
            from foliolab.errors import UsageError

            raise UsageError("the stand cannot count")

    @classmethod
    def make(cls, opts: NoOptions, out: Path) -> Stand:
        cls.made.append(cls(out))
        return cls.made[-1]

    @classmethod
    def record(cls, opts: NoOptions) -> ExecutorRecord:
        return ExecutorRecord(cls.kind)

    @classmethod
    def read_details(cls, d):
        return {}

    @classmethod
    def report_note(cls, rec: ExecutorRecord) -> str:
        return "; boots stood in for"

    @classmethod
    def settle(cls, want, spec, image, count) -> Settled:
        return Settled("stand", "the stand's", spec)

    @classmethod
    def dry_run_note(cls, opts: NoOptions) -> str:
        return ""

    def run(self, image, blocks):
        for block in blocks:
            self.blocks.append(block)
            yield (
                block,
                [
                    BootCapture(b.rundir, Ended.EXITED, b"", "@@ exit 0\n")
                    for b in block.boots
                ],
            )


class Counts(Stand):
    """A stand-in that counts (bisect's executors must)."""

    kind = ExecutorKind("counts", Elsewhere("counts", "the counter's"))

    @classmethod
    def check(cls, opts: NoOptions, count: bool) -> None:
        pass


@pytest.fixture
def stand(monkeypatch):
    for cls in (Stand, Counts):
        monkeypatch.setitem(executors.EXECUTORS, cls.kind, cls)
    monkeypatch.setattr(Stand, "made", [])
    return Stand


@dataclass
class Booted:
    """What boot_once was handed, in one module."""

    executors: list
    requests: list


def stand_in_boots(monkeypatch, module, clean: bool = True) -> Booted:
    """``module``'s boot_once, recording its executor and request."""
    seen = Booted([], [])

    def boot_once(executor, request, image):
        seen.executors.append(executor)
        seen.requests.append(request)
        request.rundir.mkdir(parents=True, exist_ok=True)
        (request.rundir / "console.log").write_text("")
        (request.rundir / "results.txt").write_text("")
        return BootResult(
            "ok" if clean else "panic",
            0,
            [],
            request.rundir / "console.log",
            request.rundir / "results.txt",
            1.0,
            [],
        )

    monkeypatch.setattr(module, "boot_once", boot_once)
    return seen


# ---- boot_once ---------------------------------------------------------------


def test_boot_once_runs_the_boot_on_the_executor_it_is_given(stand, tmp_path):
    """One block of one boot, named by the boot (WORKLOAD-NAME: a LAVA
    job's file name); an executor without a results port gets the
    records framed on the console."""
    ex = Stand(tmp_path)
    spec = BootSpec(get_arch("x86_64"), tmp_path / "bzImage")
    res = measure.boot_once(
        ex,
        BootRequest("suite/mglru-y", spec, "true\n", tmp_path / "b"),
        tmp_path / "initrd",
    )
    (block,) = ex.blocks
    assert block.name == "suite-mglru-y" and block.workload == "suite"
    (boot,) = block.boots
    assert boot.spec.console_results and not spec.console_results
    assert res.clean and res.exit_code == 0


# ---- test --------------------------------------------------------------------


def test_test_hands_the_chosen_executor_to_boot_once(
    stand, tmp_path, monkeypatch
):
    from foliolab.commands import test as testcmd
    from foliolab.kernel import build, image
    from foliolab.suite import run as suite

    out = tmp_path / "out"
    monkeypatch.setattr(
        testcmd.trees,
        "variant_tree",
        lambda *a: SimpleNamespace(variant="vanilla", commit="c0ffee"),
    )
    kernel = build.Kernel(
        variant="vanilla",
        purpose="debug",
        arch="x86_64",
        build_dir=tmp_path,
        image=tmp_path / "bzImage",
        commit="c0ffee",
        config_sha="5ha",
        elapsed=1.0,
    )
    monkeypatch.setattr(build, "build_kernel", lambda *a, **kw: kernel)
    monkeypatch.setattr(
        image,
        "build_image",
        lambda arch, kselftests=None: SimpleNamespace(path=tmp_path / "i"),
    )
    seen = stand_in_boots(monkeypatch, suite)
    cli.main(
        [
            "test",
            "--variant",
            "vanilla",
            "--executor",
            "stand",
            "--only",
            "file_shmem",
            "--mglru",
            "on",
            "--out",
            str(out),
        ]
    )
    assert seen.executors == Stand.made and len(Stand.made) == 1
    assert Stand.made[0].out == out
    assert [r.boot_id for r in seen.requests] == ["suite/mglru-y"]
    assert (out / "suite.json").exists()
    # the run's record: the kernel as built, the boot's checks as tests
    done = Outcomes.read(out)
    assert done.command == "test"
    (k,) = done.kernels
    assert (k.name, k.spec, k.commit, k.config_sha) == (
        "vanilla",
        "base",
        "c0ffee",
        "5ha",
    )
    assert all(t.kernel == "vanilla" for t in done.tests)


# ---- check -------------------------------------------------------------------


def stand_in_check(tmp_path, monkeypatch, patches=1):
    """``check`` on a series of ``patches`` patches, every stage stood
    in for (checkpatch passes); its module, and the series' directory."""
    from foliolab.commands import kernel as kernelcmd
    from foliolab.kernel import build, source
    from foliolab.series import check as seriescheck

    series = tmp_path / "series"
    series.mkdir()
    names = [f"{i:04d}-p{i}.patch" for i in range(1, patches + 1)]
    for i, name in enumerate(names, 1):
        (series / name).write_text(f"Subject: [PATCH] p{i}\n\n---\n")
    (series / "series").write_text("".join(n + "\n" for n in names))
    monkeypatch.setattr(kernelcmd.kernels, "check_spec", lambda spec: None)
    monkeypatch.setattr(kernelcmd.trees, "tree_of", lambda spec: None)
    onto = source.Onto("base", "linux 7.3", "ba5e")
    monkeypatch.setattr(
        seriescheck.trees,
        "tree_of",
        lambda spec: source.Tree(
            "patched",
            tmp_path,
            f"c{spec.applied.prefix if spec.applied else 0}",
            "d1g",
            onto=onto,
        ),
    )
    monkeypatch.setattr(
        seriescheck,
        "run_checkpatch",
        lambda repo, patch: seriescheck.Step(True, "ok"),
    )
    monkeypatch.setattr(
        seriescheck.image,
        "build_image",
        lambda arch, kselftests=None: SimpleNamespace(path=tmp_path / "i"),
    )
    monkeypatch.setattr(
        seriescheck.build,
        "build_kernel",
        lambda tree, arch, config, keep=None: build.Kernel(
            tree.variant,
            "perf",
            "x86_64",
            tmp_path,
            tmp_path / "bzImage",
            tree.commit,
            "5ha",
            1.0,
        ),
    )
    return seriescheck, series


def test_check_hands_the_chosen_executor_to_boot_once(
    stand, tmp_path, monkeypatch
):
    seriescheck, series = stand_in_check(tmp_path, monkeypatch)
    seen = stand_in_boots(monkeypatch, seriescheck)
    out = tmp_path / "out"
    rc = cli.main(
        [
            "check",
            "--patches",
            str(series),
            "--executor",
            "stand",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    assert seen.executors == Stand.made and Stand.made[0].out == out
    assert [r.boot_id for r in seen.requests] == ["check/0001"]
    # the run's record: the prefix built, its checkpatch and its boot
    done = Outcomes.read(out)
    assert done.command == "check"
    (k,) = done.kernels
    assert (k.name, k.spec, k.commit, k.config_sha) == (
        "0001",
        f"base+{series}:1",
        "c1",
        "5ha",
    )
    assert k.series is not None and k.series.patches == 1
    assert [(t.path, t.status.value, t.kernel) for t in done.tests] == [
        ("check.0001.checkpatch", "pass", ""),
        ("check.0001.boot", "pass", "0001"),
    ]
    assert done.tests[1].log == "0001/console.log"


def test_check_records_a_failed_boot_and_checkpatch(
    stand, tmp_path, monkeypatch
):
    """Patch 2's checkpatch finds something and its prefix panics; patch
    3's does not build: each says so in the run's outcomes, which are
    written although the command fails."""
    seriescheck, series = stand_in_check(tmp_path, monkeypatch, 3)
    monkeypatch.setattr(
        seriescheck,
        "run_checkpatch",
        lambda repo, patch: (
            seriescheck.Step(False, "total: 1 errors")
            if patch.name.startswith("0002")
            else seriescheck.Step(True, "ok")
        ),
    )
    building = seriescheck.build.build_kernel

    def build_kernel(tree, arch, config, keep=None):
        if tree.commit == "c3":
            raise errors.BuildError("make failed")
        return building(tree, arch, config, keep)

    monkeypatch.setattr(seriescheck.build, "build_kernel", build_kernel)
    stand_in_boots(monkeypatch, seriescheck)
    clean = seriescheck.boot_once
    stand_in_boots(monkeypatch, seriescheck, clean=False)
    panic = seriescheck.boot_once
    monkeypatch.setattr(
        seriescheck,
        "boot_once",
        lambda e, request, img: (
            panic if request.boot_id == "check/0002" else clean
        )(e, request, img),
    )
    out = tmp_path / "out"
    rc = cli.main(
        ["check", "--patches", str(series), "--executor", "stand"]
        + ["--out", str(out)]
    )
    assert rc == errors.BuildError.exit_code
    done = Outcomes.read(out)
    assert [k.name for k in done.kernels] == ["0001", "0002"]
    assert [(t.path, t.status.value, t.kernel) for t in done.tests] == [
        ("check.0001.checkpatch", "pass", ""),
        ("check.0001.boot", "pass", "0001"),
        ("check.0002.checkpatch", "fail", ""),
        ("check.0002.boot", "fail", "0002"),
        ("check.0003.checkpatch", "pass", ""),
        ("check.0003.boot", "error", ""),
    ]
    assert done.tests[3].log == "0002/console.log"
    assert "make failed" in str(done.tests[5].misc["build"])


# ---- run ---------------------------------------------------------------------


def test_run_hands_the_chosen_executor_to_boot_once(
    stand, tmp_path, monkeypatch
):
    from foliolab.run import command as runcommand

    monkeypatch.setattr(
        runcommand.trees,
        "variant_tree",
        lambda *a: SimpleNamespace(variant="vanilla"),
    )
    monkeypatch.setattr(
        runcommand.build,
        "build_kernel",
        lambda *a, **kw: SimpleNamespace(image=tmp_path / "k" / "bzImage"),
    )
    monkeypatch.setattr(
        runcommand.image,
        "build_image",
        lambda arch: SimpleNamespace(path=tmp_path / "i"),
    )
    seen = stand_in_boots(monkeypatch, runcommand)
    assert cli.main(["run", "--executor", "stand", "--", "true"]) == 0
    assert seen.executors == Stand.made
    (req,) = seen.requests
    assert req.boot_id == "run/run" and req.spec.accel == "tcg"
    assert Stand.made[0].out == req.rundir


# ---- bisect ------------------------------------------------------------------


def test_bisect_hands_the_chosen_executor_to_boot_once(
    stand, tmp_path, monkeypatch
):
    """QemuLab makes the request's executor (one that counts) and counts
    each commit's kernel on it."""
    from foliolab.bisect import lab as bisectlab
    from foliolab.bisect.record import (
        BisectRequest,
        Direction,
        StepStatus,
        Threshold,
    )
    from foliolab.workloads import WORKLOADS

    w = WORKLOADS["pageout"]
    req = BisectRequest(
        tmp_path / "repo",
        "good",
        "bad",
        w,
        w.resolve({}),
        "try_to_unmap_insns_per_folio",
        Threshold(Direction.BELOW, 0.5, True),
        "x86_64",
        "perf",
        tmp_path / "out",
        executor=executors.ExecutorOptions.of(Counts),
    )
    monkeypatch.setattr(bisectlab, "fetch_range", lambda repo, commits: None)
    monkeypatch.setattr(
        bisectlab.image,
        "build_image",
        lambda arch: SimpleNamespace(path=tmp_path / "i"),
    )
    counter = SimpleNamespace(symbols={}, with_roots=lambda roots: None)
    monkeypatch.setattr(
        bisectlab.counting, "counter_for", lambda arch, d: counter
    )
    monkeypatch.setattr(
        bisectlab.counting, "missing_functions", lambda s, roots: []
    )
    seen = stand_in_boots(monkeypatch, bisectlab, clean=False)
    lab = bisectlab.QemuLab(req, [])
    kernel = SimpleNamespace(build_dir=tmp_path, image=tmp_path / "bzImage")
    m = lab.count(kernel, tmp_path / "out" / "0001")
    assert m.status is StepStatus.BOOT_FAILED
    assert len(Counts.made) == 1 and seen.executors == Counts.made


def test_bisect_takes_the_executor_flags(stand, tmp_path, monkeypatch):
    from foliolab.bisect import search

    got = []

    monkeypatch.setattr(
        search, "bisect", lambda req, make_lab=None: got.append(req.executor)
    )
    argv = [
        "bisect",
        *("--repo", str(tmp_path), "--good", "a", "--bad", "b"),
        *("--workload", "pageout", "--metric", "kernel_insns"),
        *("--above", "1", "--executor", "counts"),
    ]
    assert cli.main(argv) == 0
    assert got[0].executor is Counts


@pytest.mark.skipif(
    __import__("os").geteuid() != 0,
    reason="--executor lava-local needs root",
)
def test_bisect_over_lava_local_reaches_the_lab(tmp_path, monkeypatch):
    """LAVA's dispatcher here counts, so bisect's lab (which makes its
    executor to count) is made on lava-local; the lab's is refused above."""
    from foliolab.bisect import lab as bisectlab
    from foliolab.bisect import search
    from foliolab.executors.lava.local import LavaLocalExecutor

    made = []

    def lab(req, commits):
        made.append(bisectlab.make_executor(req.executor, req.out, True))

    monkeypatch.setattr(
        search, "bisect", lambda req, make_lab=None: lab(req, [])
    )
    argv = [
        "bisect",
        *("--repo", str(tmp_path), "--good", "a", "--bad", "b"),
        *("--workload", "pageout", "--metric", "kernel_insns"),
        *("--above", "1", "--executor", "lava-local"),
    ]
    assert cli.main([*argv, "--out", str(tmp_path / "o")]) == 0
    assert isinstance(made[0], LavaLocalExecutor)


# ---- refused before anything is built ----------------------------------------

BOARD = [
    "--executor",
    "lava-local",
    "--lava-device-type",
    "bcm2711-rpi-4-b",
    "--lava-dtb",
    "/etc/hostname",
]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["test", *BOARD], "runs LAVA's qemu device type"),
        (["test", "--count", "--executor", "stand"], "the stand cannot count"),
        (
            ["test", "--lava-poll", "5"],
            "--lava-poll is an option of --executor lava, "
            "not of --executor qemu",
        ),
        (["check", "--patches", "SERIES", *BOARD], "runs LAVA's qemu"),
        (["run", *BOARD, "--", "true"], "runs LAVA's qemu device type"),
        (
            ["run", "--count", "--executor", "stand", "--", "true"],
            "the stand cannot count",
        ),
        (
            ["run", "--add", "/bin/true", "--executor", "stand", "--"]
            + ["true"],
            "--add /bin/true: --executor stand puts only the job",
        ),
        (
            [
                "bisect",
                *("--repo", "REPO", "--good", "a", "--bad", "b"),
                *("--workload", "pageout", "--metric", "kernel_insns"),
                *("--above", "1", "--executor", "stand"),
            ],
            "the stand cannot count",
        ),
        (
            [
                "bisect",
                *("--repo", "REPO", "--good", "a", "--bad", "b"),
                *("--workload", "pageout", "--metric", "kernel_insns"),
                *("--above", "1", "--executor", "lava"),
            ],
            "--count needs foliolab's QEMU plugin",
        ),
    ],
)
def test_an_executor_that_cannot_run_the_boots_is_refused_before_any_build(
    stand, tmp_path, monkeypatch, capsys, nothing_built, argv, message
):
    series = tmp_path / "series"
    series.mkdir()
    (series / "0001-a.patch").write_text("Subject: [PATCH] a\n\n---\n")
    (series / "series").write_text("0001-a.patch\n")
    argv = [
        str(series) if a == "SERIES" else str(tmp_path) if a == "REPO" else a
        for a in argv
    ]
    calls = nothing_built
    out = tmp_path / "o"
    at = argv.index("--") if "--" in argv else len(argv)
    rc = cli.main(
        argv[:at] + ["--out", str(out)] * (argv[0] != "run") + argv[at:]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) <= 2
    assert not calls and not out.exists() and not Stand.made
