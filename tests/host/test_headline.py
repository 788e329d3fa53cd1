"""The headline every report opens with (issue 38, item 3): read at a
glance, one sign convention, no nan or inf, changes without a better
direction as changes, the command that reproduces the run.

The runs here are written as a run directory (environment.json and
samples.jsonl) with values shaped like the newcomer trial's default run
(tests/host/data/run-* hold real boots, but at n=1 or 2, where nothing
can be significant)."""

import json
import math
import re

import numpy as np
import pytest

from foliolab.render import report
from foliolab.workloads import WORKLOADS

# (workload, metric): the baseline's mean and the other kernel's, as in
# the trial's default run; 0 means every sample is 0.
TRIAL = {
    ("pageout", "pageout_ms"): (180.0, 153.5),
    ("pageout", "pswpout"): (8192, 8192),
    ("pageout-4k", "pageout_ms"): (300.0, 301.0),
    ("pageout-lazyfree", "pageout_ms"): (60.0, 27.9),
    ("pageout-lazyfree", "mthp_split_deferred"): (0, 12.0),
    ("dirty-tlb", "bogo_ops_per_s"): (1000.0, 1126.0),
    ("dirty-tlb", "tlb_shootdowns"): (20000.0, 3000.0),
    ("dirty-tlb", "call_ipis"): (9000.0, 1377.0),
    ("dirty-tlb", "pgscan_anon"): (50000.0, 50100.0),
    ("dirty-tlb", "pgactivate"): (4000.0, 4712.0),
    ("dirty-tlb", "workingset_refault_anon"): (3000.0, 3477.0),
    ("khugepaged", "hot2_access_s"): (82.0, 81.0),
    ("khugepaged", "hot2_collapse_s"): (4.2, 4.1),
    ("khugepaged", "cold_thp_mb"): (0, 0),
    ("khugepaged", "khugepaged_cpu_s"): (10.0, 8.19),
    ("khugepaged", "scan_succeeded"): (40.0, 52.0),
    ("ksm-rmap", "rmap_walk_max_ms"): (705.0, 1.4),
    ("ksm-rmap", "lock_wait_max_ms"): (300.0, 14.7),
    ("ksm-rmap", "move_ms"): (50.0, 0),
    ("file-reclaim", "reclaim_real_s"): (2.0, 1.046),
    ("file-reclaim", "reclaimed_mb"): (409.6, 409.2),
}


def values(mean: float, n: int, rng) -> list[float]:
    """``n`` samples around ``mean`` (3% spread), or n zeros."""
    if mean == 0:
        return [0.0] * n
    return [float(v) for v in rng.normal(mean, 0.03 * mean, n)]


def write_run(
    out,
    table=TRIAL,
    names=("vanilla", "patched"),
    runs=10,
    specs=None,
    command=None,
    built=None,
):
    """A finished run directory of ``table``'s metrics."""
    out.mkdir(parents=True)
    rng = np.random.default_rng(7)
    workloads = list(dict.fromkeys(w for w, _ in table))
    specs = specs or {
        "vanilla": "base",
        "patched": "base+/src/foliolab/patches/6.12",
    }
    env = {
        "workloads": workloads,
        "kernels": list(names),
        "kernel_specs": specs,
        "runs": runs,
        "samples_per_boot": 1,
        "arch": "x86_64",
        "config": "perf",
        "errors": [],
        "failures": [],
        "params": {w: {} for w in workloads},
    }
    if command:
        env["command_line"] = command
    if built:
        env["kernel_records"] = [
            {"name": n, "given": built[n][1], "built": built[n][0]}
            for n in names
        ]
    (out / "environment.json").write_text(json.dumps(env))
    rows = {
        (w, k, i): {} for w in workloads for k in names for i in range(runs)
    }
    for (w, metric), means in table.items():
        for k, mean in zip(names, means):
            for i, v in enumerate(values(mean, runs, rng)):
                rows[w, k, i][metric] = v
    (out / "samples.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "workload": w,
                    "variant": k,
                    "run": i,
                    "values": v,
                    "valid": True,
                    "reasons": [],
                    "boot": "ok",
                    "rundir": "",
                }
            )
            + "\n"
            for (w, k, i), v in rows.items()
        )
    )
    return out


@pytest.fixture
def trial(tmp_path):
    out = write_run(tmp_path / "run")
    text = report.write_report(out).text
    return out, text


def headline_of(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("Headline"))
    end = lines.index("", start)
    return lines[start:end]


def reproduce_of(text: str) -> list[str]:
    """The lines after 'reproduce:' up to the next blank line."""
    lines = text.splitlines()
    start = lines.index("reproduce:") + 1
    return lines[start : lines.index("", start)]


NAN_INF = re.compile(r"\b(nan|inf|Infinity|NaN)\b")


def test_a_default_run_headline_is_at_most_twelve_lines(trial):
    out, text = trial
    head = headline_of(text)
    assert len(head) <= 12, "\n".join(head)
    rows = [x for x in head if x.split()[0] in {w for w, _ in TRIAL}]
    # every workload's lead metric, in the report's order
    assert [x.split()[0] for x in rows][:2] == ["pageout", "pageout-4k"]
    for w in {w for w, _ in TRIAL}:
        assert any(x.split()[0] == w for x in rows), w
    # one line counts the rest and points to the tables
    others = next(x for x in head if "other significant change" in x)
    assert "table below" in others
    # the command follows, a paragraph of its own (report.txt's width)
    assert reproduce_of(text)[0].startswith("  foliolab compare --kernel")


def test_a_row_gives_each_kernels_mean_sd_change_ci_and_p(trial):
    """report.md's headline has each kernel's mean ± sd and the %change;
    report.txt's, too wide for 100 columns with seven workloads, the
    means alone (the workload tables below have the rest)."""
    out, text = trial
    head = headline_of(text)
    assert "vanilla" in head[1] and "patched" in head[1]
    assert all(len(x) <= 100 for x in head)
    row = next(x for x in head if x.split()[:2] == ["pageout", "pageout_ms"])
    assert re.search(
        r"1\d\d\.\d +1\d\d\.\d +better +p\[0\.8\d\d, 0\.8\d\d\] +\d",
        row,
    ), row
    # the run pairs its rounds: the paired CI decides, and the title
    # says what the mark means
    assert "p[...] paired" in head[0]
    assert "where a row says paired CI (or p[...]): the rounds pair" in text
    md = (out / "report.md").read_text()
    row = next(x for x in md.splitlines() if x.startswith("| pageout |"))
    assert re.search(
        r"1\d\d\.\d ± \d\.\d+ \| 1\d\d\.\d ± \d\.\d+ \| -1\d\.\d\d%"
        r" \| better \| p\[0\.8\d\d, 0\.8\d\d\] \| \d",
        row,
    ), row
    same = next(x for x in head if x.split()[0] == "pageout-4k")
    assert " n.s. " in same and "better" not in same


def test_zero_to_n_and_n_to_zero_are_said_as_such(trial):
    """0 -> N and N -> 0, never nan or inf, in every report."""
    out, text = trial
    assert "from 0" in text
    row = next(
        x for x in text.splitlines() if x.startswith("Mean") and "move_ms" in x
    )
    assert "-100.00% (to 0)" in row
    for name in ("report.txt", "report.md", "report.html"):
        body = (out / name).read_text()
        assert not NAN_INF.search(body), (name, NAN_INF.search(body))
        assert "*0.00%*" not in body
    ratio = next(
        x
        for x in text.splitlines()
        if x.startswith("Ratio") and "mthp_split_deferred" in x
    )
    assert "from 0 CI - " in ratio and "SIGNIFICANT, worse" in ratio


def _refuse(constant):
    raise ValueError(f"{constant} in results.json")


def test_results_json_is_json_and_diff_says_from_0(trial, tmp_path, capsys):
    """results.json held NaN and Infinity (no JSON parser but Python's
    reads them), and `foliolab diff` printed "inf*[inf,inf]" from it."""
    import shutil

    from foliolab import cli

    out, _ = trial
    res = json.loads(
        (out / "results.json").read_text(), parse_constant=_refuse
    )
    row = next(
        r for r in res["summary"] if r["metric"] == "mthp_split_deferred"
    )
    assert row["ratio"] is None and row["vanilla_mean"] == 0
    again = shutil.copytree(out, tmp_path / "again")
    assert cli.main(["diff", "--all", str(out), str(again)]) == 0
    text = capsys.readouterr().out
    assert not NAN_INF.search(text), NAN_INF.search(text)
    line = next(x for x in text.splitlines() if "mthp_split_deferred" in x)
    assert line.split()[-4:] == ["from", "0*", "from", "0*"], line


def test_one_sign_everywhere_and_the_legend_says_which(trial):
    """A metric that fell is negative in the headline, the text table,
    report.md, report.html and results.json alike, better or not."""
    out, text = trial
    assert (
        "+ = larger" in text
        and "+ = larger" in (out / "report.md").read_text()
    )
    bogo = next(
        x
        for x in text.splitlines()
        if x.startswith("Hmean") and "bogo_ops_per_s" in x
    )
    assert re.search(r"\* \+1\d\.\d\d%\*$", bogo), bogo  # rose: +
    shoot = next(
        x
        for x in text.splitlines()
        if x.startswith("Amean") and "tlb_shootdowns" in x
    )
    assert re.search(r"\* -8\d\.\d\d%\*$", shoot), shoot  # fell: -
    md = (out / "report.md").read_text()
    assert re.search(r"`tlb_shootdowns`.*\| -8\d\.\d\d% better \|", md)
    assert re.search(r"`bogo_ops_per_s`.*\| \+1\d\.\d\d% better \|", md)
    res = json.loads((out / "results.json").read_text())
    row = next(r for r in res["summary"] if r["metric"] == "tlb_shootdowns")
    assert row["pct_change"] < 0 and row["verdict"] == "better"
    assert row["better"] == "lower" and row["pct_diff"] > 0  # mmtests'


def test_a_metric_with_no_better_direction_is_a_change(trial):
    """Scan statuses and reclaimed amounts are changes: never better or
    worse, never a regression; results.json says "none" for them only."""
    out, text = trial
    assert WORKLOADS["khugepaged"].metric("scan_succeeded").better == "none"
    assert WORKLOADS["file-reclaim"].metric("reclaimed_mb").better == "none"
    res = json.loads((out / "results.json").read_text())
    scan = next(r for r in res["summary"] if r["metric"] == "scan_succeeded")
    assert scan["significant"] and scan["verdict"] == "changed"
    assert {r["better"] for r in res["summary"]} == {"lower", "higher", "none"}
    mean = next(
        x
        for x in text.splitlines()
        if x.startswith("Mean") and "scan_succeeded" in x
    )
    # the verdict, then the adjusted p (q) that decided it with the CI
    assert re.search(r"\* \+\d\d\.\d\d%\*.* changed( q=0\.\d+)?$", mean), mean
    reclaimed = next(
        x
        for x in text.splitlines()
        if x.startswith("Mean") and "reclaimed_mb" in x
    )
    assert "worse" not in reclaimed and "better" not in reclaimed
    md = (out / "report.md").read_text()
    row = next(x for x in md.splitlines() if "`scan_succeeded`" in x)
    assert "| none |" in row and "changed" in row and "worse" not in row
    head = "\n".join(headline_of(text))
    assert "1 changed)" in head
    assert "regression" not in text.lower()


def test_reproduce_names_every_kernel_with_its_build(tmp_path):
    out = write_run(
        tmp_path / "run",
        command=["foliolab", "compare", "--runs", "10"],
        built={
            "vanilla": (
                {"commit": "9dc52e640653ab21", "release": "6.12.117"},
                {},
            ),
            "patched": (
                {"commit": "c0ffee1234567890", "release": "6.12.117"},
                {"series_sha": "abcdef0123456789"},
            ),
        },
    )
    lines = reproduce_of(report.write_report(out).text)
    assert all(len(x) <= 100 for x in lines)
    # the command wrapped with backslashes, then a comment per kernel
    # (its line wrapped as prose where it runs past the width)
    cmd = [x for x in lines if not x.lstrip().startswith(("#", "abcdef"))]
    assert " ".join(x.rstrip(" \\").strip() for x in cmd) == (
        "foliolab compare --kernel vanilla=base --kernel "
        "patched=base+/src/foliolab/patches/6.12 --runs 10"
    )
    notes = " ".join(x.strip() for x in lines[len(cmd) :])
    assert notes == (
        "# vanilla=base: 6.12.117, commit 9dc52e640653 "
        "# patched=base+/src/foliolab/patches/6.12: 6.12.117, commit "
        "c0ffee123456, series sha abcdef0123456789"
    )
    md = (out / "report.md").read_text()
    assert (
        "# patched=base+/src/foliolab/patches/6.12: 6.12.117, commit "
        "c0ffee123456, series sha abcdef0123456789" in md
    )


def test_reproduce_replaces_patches_by_the_kernels_it_named(tmp_path):
    out = write_run(
        tmp_path / "run",
        command=["foliolab", "compare", "--patches", "none", "--runs", "10"],
        specs={"vanilla": "base", "patched": "base"},
    )
    assert reproduce_of(report.write_report(out).text) == [
        "  foliolab compare --kernel vanilla=base "
        "--kernel patched=base --runs 10"
    ]


def test_an_aa_run_names_its_kernels_as_they_are(tmp_path):
    out = write_run(
        tmp_path / "run",
        table={("pageout", "pageout_ms"): (180.0, 180.0)},
        specs={"vanilla": "base", "patched": "base"},
    )
    text = report.write_report(out).text
    assert text.splitlines()[0] == (
        "foliolab A/A comparison: vanilla=base "
        "and patched=base, the same kernel"
    )
    head = headline_of(text)
    assert head[0].startswith(
        "Headline: A/A run, vanilla and patched are the same kernel (base)"
    )
    assert "patched against vanilla" not in text
    assert "patched vs vanilla" not in text


def with_base_version(out, version="6.12.117-1~deb12u1"):
    env = json.loads((out / "environment.json").read_text())
    env["base_version"] = version  # the default --base, always recorded
    (out / "environment.json").write_text(json.dumps(env))
    return out


@pytest.mark.parametrize(
    "specs, title",
    [
        (
            {"up": "debian:7.3", "next": "debian:7.3+patches/7.3"},
            "foliolab comparison of up=debian:7.3, next=debian:7.3+patches/7.3 "
            "(baseline up)",
        ),
        (
            {"a": "debian:7.3", "b": "debian:7.3"},
            "foliolab A/A comparison: a=debian:7.3 and b=debian:7.3, the same "
            "kernel",
        ),
        (
            {"up": "debian:7.3", "port": "base+patches/6.12"},
            "foliolab comparison of up=debian:7.3, port=base+patches/6.12 "
            "(base 6.12.117-1~deb12u1; baseline up)",
        ),
    ],
)
def test_the_title_names_the_base_only_when_a_kernel_is_built_on_it(
    tmp_path, specs, title
):
    """A run of debian:7.3 kernels said "(base 6.12.117-1~deb12u1)"."""
    out = with_base_version(
        write_run(tmp_path / "run", names=tuple(specs), specs=specs)
    )
    assert report.write_report(out).text.splitlines()[0] == title
    base = "<li>base: " in (out / "report.html").read_text()
    assert base == ("(base " in title)
    assert base == ("- base: " in (out / "report.md").read_text())


@pytest.mark.parametrize(
    "base, value, text",
    [
        (0.0, 12.0, "from 0"),
        (12.0, 0.0, "-100.00% (to 0)"),
        (0.0, 0.0, "0.00%"),
        (100.0, 85.3, "-14.70%"),
        (100.0, 112.6, "+12.60%"),
        (math.nan, 1.0, "-"),
    ],
)
def test_change_cells(base, value, text):
    from foliolab.render import change_cell

    assert change_cell(base, value) == text


def test_ratio_cells_are_never_inf_or_nan():
    from foliolab.render import fmt_ratio

    assert fmt_ratio(math.inf) == "from 0"
    assert fmt_ratio(math.nan) == "-" and fmt_ratio(None) == "-"
    assert fmt_ratio(0.0) == "0.000" and fmt_ratio(0.8531) == "0.853"


def test_a_run_without_valid_samples_says_so(tmp_path):
    out = write_run(tmp_path / "run")
    lines = (out / "samples.jsonl").read_text().splitlines()
    bad = ('"workload": "pageout"', '"workload": "ksm-rmap"')
    (out / "samples.jsonl").write_text(
        "".join(
            (
                x.replace('"valid": true', '"valid": false')
                if any(b in x for b in bad)
                else x
            )
            + "\n"
            for x in lines
        )
    )
    head = headline_of(report.write_report(out).text)
    assert "  no valid samples: pageout, ksm-rmap" in head
    assert [x.split()[0] for x in head[2:7]] == [
        "pageout-4k",
        "pageout-lazyfree",
        "pageout-lazyfree",
        "dirty-tlb",
        "dirty-tlb",
    ]


def test_report_txt_is_within_100_columns(trial, data, tmp_path):
    """Every line of report.txt, the seven-workload run's and the recorded
    counting run's (tables, lists, the command), within 100 columns."""
    import shutil

    out, text = trial
    run = tmp_path / "aa"
    shutil.copytree(data / "run-pageout-aa", run)
    for body in (text, report.write_report(run).text):
        wide = [x for x in body.splitlines() if len(x) > 100]
        assert not wide, wide


def test_compare_ends_with_the_headline_not_the_report(trial):
    """What compare prints at its end: the title, the headline and the
    command; the workload tables stay in report.txt."""
    out, _ = trial
    head = "\n".join(report.write_report(out).headline)
    assert "Headline:" in head and "reproduce:" in head
    assert "== pageout" not in head and "guest:" not in head
    assert len(head.splitlines()) <= 20


@pytest.mark.parametrize(
    "run", ["run-pageout-aa", "runs/sweep-612-pageout", "trial"]
)
def test_the_headline_is_the_reports_opening(run, request, data, tmp_path):
    """Written.headline is the lines of report.txt above its blank line
    and guest line, as written: one function makes both."""
    import shutil

    if run == "trial":
        out = request.getfixturevalue("trial")[0]
    else:
        out = tmp_path / "copy"
        shutil.copytree(data / run, out)
    written = report.write_report(out)
    lines = written.text.splitlines()
    guest = next(i for i, x in enumerate(lines) if x.startswith("guest: "))
    assert lines[guest - 1] == ""
    assert list(written.headline) == lines[: guest - 1]
    assert written.headline[0].startswith("foliolab ")
    assert (out / "report.txt").read_text() == written.text
    assert written.files[-1] == out / "report.txt"
    names = ("results.json", "report.md", "report.html", "report.txt")
    assert {out / n for n in names} <= set(written.files)
    plots = sorted((out / "plots").iterdir())
    assert plots and sorted(set(written.files) - {out / n for n in names}) == (
        plots
    )
