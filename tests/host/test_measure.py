"""measure.py: the boots of a run in their order, handed to an executor
passed in (a fake here, which records the order and ends boots on
demand), judged, and kept; a resumed run keeps its finished boots."""

import pytest

from foliolab import bootrecord
from foliolab.arch import get_arch
from foliolab.boot import derive, measure
from foliolab.errors import Stop
from foliolab.executors.base import BootCapture, BootSpec, Ended
from foliolab.kernel.build import Kernel
from foliolab.workloads import WORKLOADS


class FakeExecutor:
    """Runs each boot by recording its kernel and returning a capture that
    ends the way ``outcome(kernel)`` says: "ok" (a sample and exit 0),
    "panic", or "stop" (a stop signal arrives during the boot)."""

    kind = "fake"
    rounds_per_block = 0

    def __init__(self, images, outcome=lambda kernel: "ok"):
        self.by_image = {v: k for k, v in images.items()}
        self.outcome = outcome
        self.order = []
        self.jobs = {}

    def run(self, image, blocks):
        for block in blocks:
            yield block, [self.capture(b) for b in block.boots]

    def capture(self, b):
        kernel = self.by_image[b.spec.kernel]
        how = self.outcome(kernel)
        if how == "stop":
            raise Stop("SIGTERM")
        self.order.append(kernel)
        self.jobs[kernel] = b.job
        if how == "panic":
            return BootCapture(
                b.rundir,
                Ended.EXITED,
                b"Kernel panic - not syncing: x\n",
                "",
                1.0,
            )
        return BootCapture(
            b.rundir, Ended.EXITED, b"", "@@ sample 0\n@@ exit 0\n", 1.0
        )


def fake_request(tmp_path, names, runs, outcome=lambda k: "ok", **kw):
    kernels = {
        n: Kernel(
            n, "perf", "x86_64", tmp_path, tmp_path / n, n * 8, "c0ffee", 0.0
        )
        for n in names
    }
    spec = BootSpec(get_arch("x86_64"), tmp_path / names[0], accel="tcg")
    fake = FakeExecutor({n: k.image for n, k in kernels.items()}, outcome)
    req = measure.RunRequest(
        [WORKLOADS["pageout"]],
        {},
        runs,
        kernels,
        tmp_path / "initrd",
        spec,
        tmp_path / "out",
        executor=fake,
        **kw,
    )
    return req, fake


def test_n_kernels_are_interleaved_in_a_balanced_order(tmp_path):
    req, fake = fake_request(tmp_path, ["a", "b", "c"], runs=4)
    res = measure.run_workloads(req)
    assert "".join(fake.order) == "abccbaabccba"
    positions = {
        n: [i % 3 for i, k in enumerate(fake.order) if k == n] for n in "abc"
    }
    assert {n: sum(p) for n, p in positions.items()} == {
        "a": 4,
        "b": 4,
        "c": 4,
    }
    assert not res.failures
    assert sorted({s.variant for s in res.samples}) == ["a", "b", "c"]


def test_two_kernels_keep_abba(tmp_path):
    req, fake = fake_request(tmp_path, ["vanilla", "patched"], runs=3)
    measure.run_workloads(req)
    assert [k[0] for k in fake.order] == list("vppvvp")


def test_a_failing_kernel_is_given_up_after_three_boots(tmp_path):
    """Kernel b panics every time: after three boots it is given up, the
    other kernels' samples are all kept, and the failures are listed."""
    req, fake = fake_request(
        tmp_path,
        ["a", "b", "c"],
        runs=5,
        outcome=lambda k: "panic" if k == "b" else "ok",
    )
    res = measure.run_workloads(req)
    assert fake.order.count("b") == measure.MAX_BOOT_FAILURES
    assert fake.order.count("a") == fake.order.count("c") == 5
    assert any("gave up after 3" in f for f in res.failures)
    assert sum(1 for f in res.failures if "boot" in f and "b " in f) >= 3
    kept = derive.load_samples(tmp_path / "out")
    assert len([s for s in kept if s.variant in "ac"]) == 10
    assert all(not s.valid for s in kept if s.variant == "b")


def test_the_samples_of_a_run_are_those_of_its_boots(tmp_path):
    """The samples a run appended as it went are the samples derived
    again from its boot directories, in the same order."""
    req, fake = fake_request(
        tmp_path,
        ["a", "b", "c"],
        runs=3,
        outcome=lambda k: "panic" if k == "b" else "ok",
    )
    res = measure.run_workloads(req)
    live = derive.load_samples(req.out)
    again = derive.rederive(req.out)
    assert again == live == res.samples
    jobs = [bootrecord.BootJob.read(d) for d in bootrecord.boot_dirs(req.out)]
    assert [j.kernel for j in jobs] == fake.order
    assert {j.pass_ for j in jobs} == {bootrecord.Pass.TIMED}


def test_fault_hits_every_kernel_but_the_baseline(tmp_path):
    req, fake = fake_request(tmp_path, ["a", "b", "c"], runs=1, fault="panic")
    measure.run_workloads(req)
    assert "FL_FAULT=\n" in fake.jobs["a"]
    assert "FL_FAULT=panic" in fake.jobs["b"]
    assert "FL_FAULT=panic" in fake.jobs["c"]


def test_a_stopped_run_resumes_where_it_stopped(tmp_path):
    """A stop signal during the 4th boot: three boots have boot.json, the
    4th only its job.json. Resumed, only the missing boots run, and the
    samples are those of an uninterrupted run, in count and validity."""
    booted = []

    def stop_at_fourth(kernel):
        booted.append(kernel)
        return "stop" if len(booted) == 4 else "ok"

    req, fake = fake_request(
        tmp_path, ["a", "b"], runs=4, outcome=stop_at_fourth
    )
    with pytest.raises(Stop):
        measure.run_workloads(req)
    dirs = bootrecord.boot_dirs(req.out)
    assert sum((d / "boot.json").exists() for d in dirs) == 3
    assert len(derive.load_samples(req.out)) == 3

    again, fake2 = fake_request(tmp_path, ["a", "b"], runs=4, resume=True)
    res = measure.run_workloads(again)
    # abba abba: the 4th boot on (a, a, b, b, a) run again
    assert "".join(fake2.order) == "aabba"
    assert res.kept == 3 and res.planned == 8
    whole, _ = fake_request(tmp_path / "whole", ["a", "b"], runs=4)
    (tmp_path / "whole").mkdir()
    straight = measure.run_workloads(whole).samples
    key = lambda s: (s.variant, s.run, s.valid, s.values)  # noqa: E731
    assert sorted(map(key, res.samples)) == sorted(map(key, straight))
    assert sorted(map(key, derive.load_samples(req.out))) == sorted(
        map(key, straight)
    )


def test_progress_gives_the_overall_position_and_an_eta(tmp_path, tmp_cache):
    """60 s kept per pageout boot; the first of four boots takes 30 s:
    the three left take 3 x 60 s x 30/60 = 1:30."""
    from foliolab import timings

    for _ in range(3):
        timings.record_boot("x86_64", "pageout", "tcg", False, 1, 60.0)
    req, fake = fake_request(tmp_path, ["a", "b"], runs=2)
    boots = measure.plan(req.workloads, {}, ("a", "b"), 2, 1, False)
    eta = measure.RunEta(req, boots)
    assert eta.step(boots[0], 30.0) == "boot 1 of 4, ETA 1:30"
    assert eta.step(boots[1], 60.0) == "boot 2 of 4, ETA 1:30"  # 90 s/120
    measure.run_workloads(req)
    # a test's stand-in boots are not kept as the lab's times
    assert timings.Timings.load().boots == {
        "x86_64/pageout/tcg/timed/1": [60.0, 60.0, 60.0]
    }


def test_monitor_files_are_kept_per_timed_boot(tmp_path):
    class WithMonitor(FakeExecutor):
        def capture(self, b):
            c = super().capture(b)
            c.records = (
                "@@ sample 0\n@@ file monitor.vmstat\n== 1.0\n"
                "pgfault 1\n==.\n@@ end\n@@ exit 0\n"
            )
            return c

    req, fake = fake_request(tmp_path, ["a"], runs=1, monitors=True)
    req.executor = WithMonitor({"a": tmp_path / "a"})
    measure.run_workloads(req)
    (d,) = bootrecord.boot_dirs(req.out)
    assert (
        (d / "monitor-vmstat.txt")
        .read_text()
        .startswith("# foliolab monitor vmstat")
    )
    assert not (d / "monitor-interrupts.txt").exists()


def test_a_counting_boot_is_derived_again_with_the_roots_it_counted(
    tmp_path, monkeypatch
):
    """compare --root: job.json keeps the roots, so `foliolab report`
    derives the extra roots' metrics again (not the workload's alone)."""
    rundir = tmp_path / "raw" / "khugepaged" / "a-000-count"
    bootrecord.BootJob(
        0,
        "khugepaged",
        "a",
        bootrecord.Pass.COUNT,
        0,
        1,
        {},
        "x86_64",
        ["hpage_collapse_scan_pmd", "collapse_file"],
    ).write(rundir)
    seen = []
    monkeypatch.setattr(bootrecord, "read_boot", lambda d: object())
    monkeypatch.setattr(
        derive, "samples_from_boot", lambda w, *a: seen.append(w) or []
    )
    derive.samples_of_boot(tmp_path, rundir)
    (w,) = seen
    assert "collapse_file" in w.count_roots
    assert w.metric("collapse_file_insns").counted
    assert bootrecord.BootJob.read(rundir).count_roots[-1] == "collapse_file"
