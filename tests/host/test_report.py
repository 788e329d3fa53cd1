"""report.py and its halves: the analysis of a run (analyse.py) and its
drawing (render/), on runs written here and on captured guest output."""

import json

import pytest
from runfiles import bytes_under

from foliolab import cli, errors, render
from foliolab.analysis import diff
from foliolab.boot import derive
from foliolab.render import report
from foliolab.testrecord import Outcomes, TestStatus
from foliolab.workloads import WORKLOADS


def write_run(out, names, values, attribution=None, specs=None):
    """A finished run directory: environment.json and samples.jsonl with
    ``values[kernel]`` as pageout_ms samples; the first kernel is the
    base, each other a series of its own unless ``specs`` says."""
    out.mkdir(parents=True)
    specs = specs or {
        n: "base" if i == 0 else f"base+series/{n}"
        for i, n in enumerate(names)
    }
    env = {
        "workloads": ["pageout"],
        "kernels": names,
        "kernel_specs": specs,
        "errors": [],
        "failures": [],
        "runs": 5,
        "samples_per_boot": 1,
    }
    if attribution:
        env["attribution"] = attribution
    (out / "environment.json").write_text(json.dumps(env))
    lines = []
    for kernel, vals in values.items():
        for i, v in enumerate(vals):
            lines.append(
                json.dumps(
                    {
                        "workload": "pageout",
                        "variant": kernel,
                        "run": i,
                        "values": {"pageout_ms": v},
                        "valid": True,
                        "reasons": [],
                        "boot": "ok",
                        "rundir": "",
                    }
                )
            )
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")


def test_three_kernel_report(tmp_path):
    out = tmp_path / "r"
    write_run(
        out,
        ["base", "s1", "all"],
        {
            "base": [100, 101, 99, 100, 102],
            "s1": [80, 81, 79, 80, 82],
            "all": [50, 51, 49, 50, 52],
        },
    )
    text = report.write_report(out).text
    header = next(
        line
        for line in text.splitlines()
        if "base" in line and "s1" in line and "all" in line
    )
    assert header.index("base") < header.index("s1") < header.index("all")
    ratios = [
        line
        for line in text.splitlines()
        if line.startswith("Ratio") and "pageout_ms" in line
    ]
    assert len(ratios) == 2
    assert "s1" in ratios[0] and "0.801" in ratios[0]
    assert "all" in ratios[1] and "0.502" in ratios[1]
    res = json.loads((out / "results.json").read_text())
    rows = [r for r in res["summary"] if r["metric"] == "pageout_ms"]
    assert [(r["baseline"], r["kernel"]) for r in rows] == [
        ("base", "s1"),
        ("base", "all"),
    ]
    assert all(r["significant"] for r in rows)
    md = (out / "report.md").read_text()
    assert "| s1 |" in md and "| all |" in md


def test_attribution_compares_each_step_with_the_one_before(tmp_path):
    out = tmp_path / "r"
    write_run(
        out,
        ["base", "p4", "p10"],
        {
            "base": [100, 101, 99, 100, 102],
            "p4": [100, 99, 101, 100, 100],
            "p10": [50, 51, 49, 50, 52],
        },
        attribution={"p4": 4, "p10": 10},
    )
    text = report.write_report(out).text
    assert "base->p4" in text and "p4->p10" in text
    res = json.loads((out / "results.json").read_text())
    steps = {
        (r["from"], r["to"]): r
        for r in res["attribution"]
        if r["metric"] == "pageout_ms"
    }
    assert not steps["base", "p4"]["significant"]
    assert steps["p4", "p10"]["significant"]
    assert steps["p4", "p10"]["ratio"] == pytest.approx(0.5, rel=0.02)


def test_a_patches_run_reads_as_before(tmp_path):
    """Runs with vanilla and patched keep their two-column table."""
    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [100, 101, 99, 100, 102], "patched": [90, 91, 89, 90, 92]},
    )
    text = report.write_report(out).text
    assert render.LEGEND.splitlines()[0] in text
    ratio = next(
        line for line in text.splitlines() if line.startswith("Ratio")
    )
    assert ratio.split()[2] == "0.900"  # 90.4 / 100.4


def test_too_few_runs_are_called_out(tmp_path):
    """3 vs 3 cannot reach p < 0.05 with a rank test: the report says so
    instead of printing a table that can never show a change."""
    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [100, 101, 102], "patched": [50, 51, 52]},
    )
    text = report.write_report(out).text
    assert "no row can be significant" in text and "--runs 4" in text
    row = next(
        r
        for r in json.loads((out / "results.json").read_text())["summary"]
        if r["metric"] == "pageout_ms"
    )
    assert row["min_p"] == pytest.approx(0.1)
    assert not row["significant"]


def test_paired_ratio_and_drift(tmp_path):
    """The host slows down over the run: each kernel's values rise by round,
    the unpaired CI is wide, the paired ratio sees the steady 0.9, and the
    report flags the drift."""
    out = tmp_path / "r"
    base = [100 + 10 * i for i in range(8)]
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": base, "patched": [0.9 * v for v in base]},
    )
    text = report.write_report(out).text
    row = next(
        r
        for r in json.loads((out / "results.json").read_text())["summary"]
        if r["metric"] == "pageout_ms"
    )
    assert row["paired_n"] == 8
    assert row["paired_ratio"] == pytest.approx(0.9)
    assert row["paired_ci_high"] - row["paired_ci_low"] < 1e-9
    assert row["ci_high"] - row["ci_low"] > 0.1
    assert "DRIFT: vanilla's pageout_ms rises over the run" in text


def test_diff_compares_ratios_of_runs(tmp_path, capsys):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    write_run(
        v1,
        ["vanilla", "patched"],
        {"vanilla": [100, 101, 99, 100, 102], "patched": [90, 91, 89, 90, 92]},
    )
    write_run(
        v2,
        ["vanilla", "patched"],
        {
            "vanilla": [200, 202, 198, 200, 204],  # a slower host
            "patched": [100, 101, 99, 100, 102],
        },
    )
    env = json.loads((v2 / "environment.json").read_text())
    env["qemu"] = "QEMU emulator version 8.2"
    (v2 / "environment.json").write_text(json.dumps(env))
    report.write_report(v1)
    report.write_report(v2)
    assert cli.main(["diff", str(v1), str(v2)]) == 0
    text = capsys.readouterr().out
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("pageout ") and "pageout_ms" in line
    )
    assert "0.900*" in row and "0.500*" in row
    assert "qemu:" in text and "8.2" in text
    assert cli.main(["diff", str(v1)]) == errors.UsageError.exit_code
    assert (
        cli.main(["diff", str(v1), str(tmp_path)])
        == errors.UsageError.exit_code
    )


def test_report_rederives_a_captured_run(tmp_path, data):
    """A real run directory (tests/host/data/run-pageout-aa: an A/A
    pageout run with --count, captured from QEMU): foliolab report derives
    from its raw boots the very samples the run appended as it went."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    live = derive.load_samples(out)
    assert live and any(s.counts for s in live)
    again = derive.rederive(out)

    def key(s):  # the run moved, so its paths did
        return (
            s.workload,
            s.variant,
            s.run,
            s.values,
            s.valid,
            s.boot,
            s.boot_s,
            s.wall_s,
            s.counts,
            s.count_window,
            s.cpu_s,
            len(s.reasons),
        )

    assert [key(s) for s in again] == [key(s) for s in live]
    assert all(s.valid for s in again)
    text = report.write_report(out).text
    assert "pageout_ms" in text and "Differential profile" in text
    # x86 has no contpte: its row would be zeros, so only its name is listed
    zero = next(
        line
        for line in text.splitlines()
        if line.startswith("Zero in every sample: ")
    )
    assert "contpte_unfolds" in zero
    assert not any(
        line.split()[1:2] == ["contpte_unfolds"]
        for line in text.splitlines()
        if line.startswith("Mean")
    )
    assert "Zero in every sample: " in (out / "report.md").read_text()
    res = json.loads((out / "results.json").read_text())
    assert any(r["metric"] == "contpte_unfolds" for r in res["summary"])


def test_report_writes_every_boot_as_a_test_of_the_run(tmp_path, data):
    """outcomes.json from the manifest and the raw boots alone: the run's
    kernels, each boot a test whose status is how the boot ended."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    raw = out / "raw" / "pageout"

    def boot_json(name, **change):
        path = raw / name / "boot.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))

    boot_json("patched-001", status="panic", exit_code=None)
    boot_json("vanilla-001", issues=["WARNING"])
    (raw / "vanilla-001-count" / "boot.json").unlink()  # never finished
    report.write_report(out)
    got = Outcomes.read(out)
    assert got.command == "compare"
    assert [k.name for k in got.kernels] == ["vanilla", "patched"]
    status = {t.path: t.status for t in got.tests}
    assert status == {
        "compare.pageout.vanilla.timed-000": TestStatus.PASS,
        "compare.pageout.vanilla.count-000": TestStatus.PASS,
        "compare.pageout.patched.timed-000": TestStatus.PASS,
        "compare.pageout.patched.count-000": TestStatus.PASS,
        "compare.pageout.patched.timed-001": TestStatus.ERROR,
        "compare.pageout.patched.count-001": TestStatus.PASS,
        "compare.pageout.vanilla.timed-001": TestStatus.FAIL,
        "compare.pageout.vanilla.count-001": TestStatus.MISS,
    }
    by_path = {t.path: t for t in got.tests}
    panicked = by_path["compare.pageout.patched.timed-001"]
    assert panicked.kernel == "patched" and panicked.misc["boot"] == "panic"
    assert panicked.log == "raw/pageout/patched-001/console.log"
    assert panicked.duration_s is not None and panicked.duration_s > 0
    assert by_path["compare.pageout.vanilla.timed-001"].misc["issues"] == (
        "WARNING"
    )
    unfinished = by_path["compare.pageout.vanilla.count-001"]
    assert unfinished.log == "" and unfinished.duration_s is None
    # the report writes them again alike
    first = (out / "outcomes.json").read_bytes()
    report.write_report(out)
    assert (out / "outcomes.json").read_bytes() == first


def test_a_run_from_before_raw_boots_has_its_kernels_and_no_tests(
    tmp_path,
):
    write_run(tmp_path / "run", ["a", "b"], {"a": [1.0] * 5, "b": [2.0] * 5})
    report.write_report(tmp_path / "run")
    got = Outcomes.read(tmp_path / "run")
    assert [k.name for k in got.kernels] == ["a", "b"] and got.tests == []


# Counted metrics a counting sample does not carry itself: the report adds
# the first two across samples; dsb ish is an arm64 instruction.
_NOT_FROM_A_WINDOW = {
    "kernel_insns_deterministic",
    "nondeterministic_pct",
    "dsb_ish_insns",
}


def test_pageout_emits_every_metric_it_declares(data):
    """The workload's contract, on real guest output: every metric pageout
    declares is derived from what its guest side sent (timed boots) or
    from its counting window (counting boots)."""
    w = WORKLOADS["pageout"]
    samples = derive.rederive(data / "run-pageout-aa")
    timed = [s for s in samples if not s.counts]
    counted = [s for s in samples if s.counts]
    assert timed and counted
    for s in timed:
        assert {m.key for m in w.metrics if not m.counted} <= set(s.values)
    for s in counted:
        # captured before the counter followed tasks: no switch counts
        assert s.roots_follow_tasks is False
        untracked = {m.key for m in w.metrics if m.key.endswith("_switches")}
        assert {
            m.key for m in w.metrics if m.counted
        } - _NOT_FROM_A_WINDOW - untracked <= set(s.values)


def test_diff_lines_up_kernels_by_role(tmp_path, capsys):
    """Runs whose kernels are named differently (v1=, v2=) line up by
    role; another arch is warned about; long names are never cut; a run
    against itself is refused."""
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    write_run(
        v1,
        ["base", "series_v1_with_a_long_name"],
        {
            "base": [100, 101, 99, 100, 102],
            "series_v1_with_a_long_name": [90, 91, 89, 90, 92],
        },
    )
    write_run(
        v2,
        ["vanilla", "series_v2"],
        {
            "vanilla": [100, 101, 99, 100, 102],
            "series_v2": [80, 81, 79, 80, 82],
        },
    )
    env = json.loads((v2 / "environment.json").read_text())
    env["arch"] = "arm64"
    (v2 / "environment.json").write_text(json.dumps(env))
    report.write_report(v1)
    report.write_report(v2)
    assert cli.main(["diff", "--all", str(v1), str(v2)]) == 0
    text = capsys.readouterr().out
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("pageout ") and "pageout_ms" in line
    )
    assert "0.900*" in row and "0.801*" in row
    assert "#1 series_v1_with_a_long_name/series_v2" in row
    assert "WARNING: the runs differ in arch" in text
    assert cli.main(["diff", str(v1), str(v1)]) == errors.UsageError.exit_code
    err = capsys.readouterr().err
    assert "same run directory" in err and len(err.strip().splitlines()) <= 2


def test_headline_names_each_significant_change(tmp_path):
    """The headline opens every report: a real change with both kernels'
    means, its %change, CI and p; an unchanged kernel as n.s.; then the
    command that reproduces the run, with every kernel's spec."""
    out = tmp_path / "r"
    write_run(
        out,
        ["base", "same", "fast"],
        {
            "base": [100, 101, 99, 100, 102],
            "same": [101, 100, 102, 99, 100],
            "fast": [80, 81, 79, 80, 82],
        },
    )
    env = json.loads((out / "environment.json").read_text())
    env["command_line"] = [
        "foliolab",
        "compare",
        "--kernel",
        "base=base",
        "--runs",
        "5",
    ]
    (out / "environment.json").write_text(json.dumps(env))
    text = report.write_report(out).text
    lines = text.splitlines()
    top = lines[: lines.index("guest: ? ? -cpu ? 0 vCPUs; config ? sha ?")]
    assert top[2].startswith(
        "Headline: each kernel against the baseline "
        "base (mean ± sd; %change: + = larger"
    )
    same = next(x.split() for x in top if x.split()[3:4] == ["same"])
    assert same[-5:] == ["+0.00%", "n.s.", "[0.988,", "1.012]", "1"]
    fast = next(x for x in top if x.split()[3:4] == ["fast"])
    assert fast.split()[4:13] == [
        "100.4",
        "±",
        "1.140",
        "80.40",
        "±",
        "1.140",
        "-19.92%",
        "better",
        "[0.790,",
    ]
    assert "  foliolab compare --kernel base=base --runs 5" in text
    md = (out / "report.md").read_text()
    assert md.index("## Headline") < md.index("## pageout")
    assert (
        "| pageout | pageout_ms (ms) | fast | 100.4 ± 1.140 | 80.40 ± "
        "1.140 | -19.92% | better |"
    ) in md
    html = (out / "report.html").read_text()
    assert html.index('id="headline"') < html.index('id="workload-pageout"')
    assert "foliolab compare --kernel base=base --runs 5" in html


def test_small_n_prints_no_interval(tmp_path):
    """An A/A run at n=2: no CI anywhere (a bootstrap over two values is
    no interval), no significant row, and the headline says why."""
    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [175.0, 179.0], "patched": [190.0, 198.0]},
    )
    text = report.write_report(out).text
    ratio = next(
        line for line in text.splitlines() if line.startswith("Ratio")
    )
    assert "CI none (n<3)" in ratio and "[" not in ratio
    assert "paired" not in ratio
    assert "n.s. (n=2/2, too few)" in text
    assert "NO CI: n=2/2" in text
    row = next(
        r
        for r in json.loads((out / "results.json").read_text())["summary"]
        if r["metric"] == "pageout_ms"
    )
    assert row["ci_low"] is None and not row["significant"]
    md_row = next(
        line
        for line in (out / "report.md").read_text().splitlines()
        if "`pageout_ms`" in line and "|" in line
    )
    assert "none (n<3)" in md_row and "[" not in md_row


def test_counts_that_repeat_exactly_are_exact(tmp_path):
    """A count with no spread in either kernel is an exact result: its
    values and ratio, significant at n=3, not a rank test's p=0.1."""
    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [512, 512, 512], "patched": [256, 256, 256]},
    )
    text = report.write_report(out).text
    ratio = next(
        line for line in text.splitlines() if line.startswith("Ratio")
    )
    assert "CI exact p=exact" in ratio and "SIGNIFICANT" in ratio
    row = next(
        x for x in text.splitlines() if x.startswith("  pageout ")
    ).split()
    assert row[3:] == [
        "512",
        "±",
        "0",
        "256",
        "±",
        "0",
        "-50.00%",
        "better",
        "(exact)",
        "exact",
        "exact",
    ]
    row = next(
        r
        for r in json.loads((out / "results.json").read_text())["summary"]
        if r["metric"] == "pageout_ms"
    )
    assert row["exact"] and row["significant"] and row["ratio"] == 0.5


def test_runs_too_small_warns_before_anything_is_built(caplog, monkeypatch):
    from foliolab.run import orchestrate

    def no_compare(req, **_):
        raise AssertionError("compare started")

    monkeypatch.setattr(orchestrate, "compare", no_compare)
    with pytest.raises(AssertionError):
        cli.main(
            [
                "compare",
                "--patches",
                "none",
                "--runs",
                "2",
                "--workloads",
                "pageout",
            ]
        )
    text = caplog.text
    assert "with --runs 2 no row can be significant" in text
    assert "p below 0.333" in text and "--runs 4 or more" in text
    assert "no confidence interval" in text


def test_number_style_is_one():
    assert render.fmt(87193412.0) == "87,193,412"
    assert render.fmt(170919.72) == "170,920"
    assert render.fmt(176.83) == "176.8"
    assert render.fmt(0.012345) == "0.01235"
    assert render.fmt(float("nan")) == "-"


def test_tables_say_from_0_and_to_0_never_nan_or_inf(tmp_path):
    """A count that appears (0 -> N) or disappears (N -> 0): "from 0" and
    "(to 0)" in the tables of report.txt, report.md and report.html, no
    nan, inf or a significant 0.00%."""
    import re

    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [0, 0, 0, 0, 0], "patched": [5, 6, 5, 6, 5]},
    )
    text = report.write_report(out).text
    ratio = next(x for x in text.splitlines() if x.startswith("Ratio"))
    assert ratio.split()[2] == "from" and "CI - " in ratio
    assert "*from 0*" in text
    for name in ("report.txt", "report.md", "report.html"):
        body = (out / name).read_text()
        assert not re.search(r"\b(nan|inf)\b", body), name
        assert "*0.00%*" not in body
    out = tmp_path / "gone"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [5, 6, 5, 6, 5], "patched": [0, 0, 0, 0, 0]},
    )
    assert "-100.00% (to 0)" in report.write_report(out).text


def test_one_sign_in_the_tables_plus_is_larger(tmp_path):
    out = tmp_path / "r"
    write_run(
        out,
        ["vanilla", "patched"],
        {"vanilla": [100, 101, 99, 100, 102], "patched": [90, 91, 89, 90, 92]},
    )
    text = report.write_report(out).text
    amean = next(x for x in text.splitlines() if x.startswith("Amean"))
    assert amean.endswith("*  -9.96%*")  # fell: -, though better
    md = (out / "report.md").read_text()
    assert "| -9.96% better |" in md and "%change" in md
    res = json.loads((out / "results.json").read_text())
    row = next(r for r in res["summary"] if r["metric"] == "pageout_ms")
    assert row["pct_change"] == pytest.approx(-9.96, abs=0.01)
    assert row["pct_diff"] == pytest.approx(9.96, abs=0.01)  # mmtests'
    assert row["verdict"] == "better"


def test_a_metric_with_no_better_direction_is_a_change_in_the_tables():
    from foliolab.analysis import fdr
    from foliolab.analysis.workloadstats import (
        WorkloadAnalysis,
        summarize_workload,
    )
    from foliolab.boot.derive import Sample

    w = WORKLOADS["file-reclaim"]
    assert w.metric("reclaimed_mb").better == "none"
    assert WORKLOADS["khugepaged"].metric("scan_succeeded").better == "none"
    samples = [
        Sample(
            "file-reclaim",
            k,
            i,
            {"reclaimed_mb": v + i * 0.01},
            True,
            [],
            "ok",
            "",
        )
        for i in range(5)
        for k, v in (("vanilla", 409.6), ("patched", 409.2))
    ]
    # a secondary metric: decided with its family's adjusted p, as the
    # report decides it (analysis/fdr.py), a family of one here
    wa = WorkloadAnalysis(
        w, summarize_workload(w, samples), [], [], [], None, ""
    )
    fdr.control([wa], ["vanilla", "patched"])
    (row,) = wa.rows
    assert row.q_value == row.p_value
    assert row.significant and row.verdict == "changed"
    assert not row.directed


@pytest.mark.parametrize(
    "row, cell",
    [
        # a row of today: the per-kernel counts beside results.json's
        (
            {
                "n_baseline": 2,
                "n_kernel": 4,
                "n_vanilla": 2,
                "n_patched": 4,
                "ci_low": 0.4,
                "ci_high": 0.6,
            },
            "0.500 (no CI, n<3)",
        ),
        # a row from before them, and one from before the counts at all
        (
            {"n_vanilla": 3, "n_patched": 3, "ci_low": 0.4, "ci_high": 0.6},
            "0.500*[0.400,0.600]",
        ),
        ({"ci_low": 0.4, "ci_high": 0.6}, "0.500*[0.400,0.600]"),
    ],
)
def test_diff_reads_summary_rows_old_and_new(row, cell):
    r = diff.Ratio.from_json(
        {
            "workload": "pageout",
            "metric": "pageout_ms",
            "ratio": 0.5,
            "significant": True,
            **row,
        }
    )
    assert r.kernel == "patched" and diff._cell(r) == cell


def test_report_out_writes_elsewhere_and_only_reads_the_run(
    tmp_path, data, capsys
):
    """report RUN --out DIR: the run's bytes as they were; DIR gets the
    very reports `report RUN` writes into a copy of the run."""
    import shutil

    run, inplace = tmp_path / "run", tmp_path / "inplace"
    shutil.copytree(data / "run-pageout-aa", run)
    shutil.copytree(data / "run-pageout-aa", inplace)
    before = bytes_under(run)
    dest = tmp_path / "elsewhere"
    assert cli.main(["report", str(run), "--out", str(dest)]) == 0
    assert bytes_under(run) == before
    assert cli.main(["report", str(inplace)]) == 0
    for name in ("report.txt", "report.md", "outcomes.json"):
        assert (dest / name).read_bytes() == (inplace / name).read_bytes()
    # the samples name their boots' directories: the run's, not DIR's
    moved = (inplace / "samples.jsonl").read_text()
    assert (dest / "samples.jsonl").read_text() == moved.replace(
        str(inplace), str(run)
    )
    a = json.loads((dest / "results.json").read_text())
    b = json.loads((inplace / "results.json").read_text())
    assert a["summary"] == b["summary"] and a["samples"] == b["samples"]
    assert sorted(p.name for p in (dest / "plots").iterdir()) == sorted(
        p.name for p in (inplace / "plots").iterdir()
    )


def test_report_of_a_run_it_cannot_write_asks_for_out(
    tmp_path, data, capsys, monkeypatch
):
    """A run on a read-only mount (root writes through file modes, so the
    mount's refusal is stood in for): one line naming --out, nothing
    written."""
    import shutil

    from foliolab.commands import results

    run = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", run)
    before = bytes_under(run)
    monkeypatch.setattr(
        results,
        "unwritable",
        lambda p: "read-only file system" if p == run else None,
    )
    rc = cli.main(["report", str(run)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.UsageError.exit_code and len(err) == 1, err
    assert "cannot be written (read-only file system)" in err[0]
    assert "give --out DIR" in err[0]
    assert bytes_under(run) == before
    assert cli.main(["report", str(run), "--out", str(tmp_path / "o")]) == 0
    assert bytes_under(run) == before


def test_a_boot_whose_time_is_not_a_time_is_named_not_a_traceback(
    tmp_path, data
):
    """A boot.json whose elapsed time is negative: the report names the
    boot and what to do (DamagedRunError, exit 11), as a damaged boot's
    other fields are named."""
    import shutil

    from foliolab.errors import DamagedRunError

    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    path = out / "raw" / "pageout" / "patched-001" / "boot.json"
    path.write_text(
        json.dumps({**json.loads(path.read_text()), "elapsed": -1})
    )
    with pytest.raises(
        DamagedRunError, match="patched-001/boot.json: field 'elapsed'"
    ):
        report.write_report(out)
