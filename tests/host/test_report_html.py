"""report.html in a real browser: headless Chromium (Debian's, which
`foliolab setup` installs) loads the page from disk and its DOM holds the
contents, the headline and every workload's tables. Missing Chromium
fails the test: CI must not pass it by skipping.

Then the page as written, without a browser: its contents, its full
statistics, its colours by verdict, the overview's log axis, and no
empty panel (text says what is not drawn and why)."""

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from foliolab.boot import monitors
from foliolab.manifest import RunManifest
from foliolab.render import report


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        "chromium is not installed: run `foliolab setup` (it "
        "installs Debian's chromium for this test)"
    )


class Dom(HTMLParser):
    """Ids and table classes of the page the browser built."""

    def __init__(self):
        super().__init__()
        self.ids: dict[str, list[str]] = {}
        self.stack: list[str] = []
        self.tables: dict[str, list[str]] = {}
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids[a["id"]] = []
        if tag in ("section", "nav"):
            self.stack.append(a.get("id") or "")
        if tag == "table":
            for sid in self.stack:
                self.tables.setdefault(sid, []).append(a.get("class") or "")
        if tag == "img":
            self.images.append(a.get("src") or "")

    def handle_endtag(self, tag):
        if tag in ("section", "nav") and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for sid in self.stack:
            if sid in self.ids:
                self.ids[sid].append(data)


def browser_dom(path) -> Dom:
    cp = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            # a small /dev/shm, and no profile written to $HOME
            "--disable-dev-shm-usage",
            f"--user-data-dir={path.parent / '.chromium'}",
            "--dump-dom",
            path.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert cp.returncode == 0, cp.stderr[-2000:]
    dom = Dom()
    dom.feed(cp.stdout)
    return dom


# A run with what report.html must show well: a better, a worse and a
# changed metric (no better direction), a cut to 1/600 (the overview's log
# axis), a count from 0 (no ratio) and one to 0 (not on a log axis).
SYNTHETIC = {
    "pageout": {
        "pageout_ms": ([100, 101, 99, 100, 102], [80, 81, 79, 80, 82]),
        "pswpout": ([0, 0, 0, 0, 0], [5, 6, 5, 6, 5]),
    },
    "pageout-lazyfree": {
        "pageout_ms": ([56, 57, 55, 56, 58], [25, 26, 24, 25, 27]),
        "mthp_split_deferred": ([4096] * 5, [0] * 5),
    },
    "ksm-rmap": {
        "rmap_walk_max_ms": (
            [640, 641, 639, 642, 638],
            [1.0, 1.1, 0.9, 1.05, 0.95],
        ),
        "vmas": ([20000] * 5, [10000] * 5),
    },
    "file-reclaim": {
        "reclaim_real_s": (
            [0.100, 0.101, 0.099, 0.100, 0.102],
            [0.120, 0.121, 0.119, 0.122, 0.118],
        ),
        "reclaimed_mb": ([400, 401, 399, 400, 402], [420, 421, 419, 420, 422]),
    },
}


def synthetic_run(out, runs: dict = SYNTHETIC):
    """A finished run of vanilla and patched (5 samples each) with
    ``runs``' values: {workload: {metric: (vanilla's, patched's)}}."""
    out.mkdir(parents=True)
    (out / "environment.json").write_text(
        json.dumps(
            {
                "workloads": list(runs),
                "kernels": ["vanilla", "patched"],
                "kernel_specs": {"vanilla": "base", "patched": "base+series"},
                "runs": 5,
                "samples_per_boot": 1,
                "command_line": ["foliolab", "compare", "--runs", "5"],
            }
        )
    )
    lines = []
    for w, metrics in runs.items():
        for k, kernel in enumerate(("vanilla", "patched")):
            for i in range(5):
                lines.append(
                    json.dumps(
                        {
                            "workload": w,
                            "variant": kernel,
                            "run": i,
                            "values": {m: v[k][i] for m, v in metrics.items()},
                            "valid": True,
                            "reasons": [],
                            "boot": "ok",
                            "rundir": "",
                        }
                    )
                )
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")


def test_report_html_in_a_browser(tmp_path, data):
    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    report.write_report(out)
    dom = browser_dom(out / "report.html")
    headline = " ".join(dom.ids["headline"])
    # an A/A run: its kernels as they are, not "patched vs vanilla"
    assert (
        "A/A run, vanilla and patched are the same kernel (base)" in headline
    )
    assert "patched vs vanilla" not in headline
    assert "n.s. (n=2/2, too few)" in headline
    assert "headline" in dom.tables["headline"]
    contents = " ".join(dom.ids["contents"])
    for name in RunManifest.read(out).workloads:
        assert any("metrics" in c for c in dom.tables[f"workload-{name}"])
        assert any(
            c.startswith("full") for c in dom.tables[f"workload-{name}"]
        )
        assert name in contents
    # every image inline: the page needs no network and no other file
    assert dom.images and all(
        s.startswith("data:image/png;base64,") for s in dom.images
    )


def test_every_workload_has_its_table_in_the_browser(tmp_path):
    """Three kernels, two workloads: both tables, the headline's change."""
    out = tmp_path / "run"
    out.mkdir()
    names = ["base", "s1", "all"]
    (out / "environment.json").write_text(
        json.dumps(
            {
                "workloads": ["pageout", "pageout-4k"],
                "kernels": names,
                "kernel_specs": {
                    "base": "base",
                    "s1": "base+series:1",
                    "all": "base+series",
                },
                "runs": 5,
                "command_line": ["foliolab", "compare", "--runs", "5"],
            }
        )
    )
    lines = []
    for w in ("pageout", "pageout-4k"):
        for k, scale in zip(names, (1.0, 0.99, 0.5)):
            for i in range(5):
                lines.append(
                    json.dumps(
                        {
                            "workload": w,
                            "variant": k,
                            "run": i,
                            "values": {"pageout_ms": scale * (100 + i)},
                            "valid": True,
                            "reasons": [],
                            "boot": "ok",
                            "rundir": "",
                        }
                    )
                )
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")
    report.write_report(out)
    dom = browser_dom(out / "report.html")
    headline = " ".join(dom.ids["headline"])
    assert "each kernel against the baseline base" in headline
    assert "pageout-4k pageout_ms (ms) all" in headline
    assert "-50.00% better" in headline
    assert (
        "foliolab compare --kernel base=base --kernel s1=base+series:1 "
        "--kernel all=base+series --runs 5"
    ) in headline
    for name in ("pageout", "pageout-4k"):
        assert any("metrics" in c for c in dom.tables[f"workload-{name}"])


def test_report_html_draws_the_runs_monitors(tmp_path, data):
    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    report.write_report(out)
    assert "Monitors" not in (out / "report.html").read_text()
    reads = "".join(
        f"== {10 + t}.0\npgfault {1000 * t * t}\npgscan_kswapd "
        f"{50 * t}\npswpout {7 * t}\n==.\n"
        for t in range(4)
    )
    for boot in ("vanilla-000", "patched-000"):
        monitors.monitor_path(
            out / "raw" / "pageout" / boot, "vmstat"
        ).write_text(f"# foliolab monitor vmstat\n## sample 0\n{reads}")
    report.write_report(out)
    page = (out / "report.html").read_text()
    assert "Monitors (per second of each timed window)" in page
    assert "pageout: /proc/vmstat and /proc/interrupts rates" in page


class Page(HTMLParser):
    """report.html as written: its ids, the links of its contents, and
    each table (by class) as rows of (row class, [(cell class, text)])."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: list[str] = []
        self.contents: list[str] = []
        self.tables: dict[str, list] = {}
        self.images: list[str] = []
        self._nav = False
        self._table: list | None = None
        self._cell: list | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"])
        if tag == "nav" and a.get("id") == "contents":
            self._nav = True
        if tag == "a" and self._nav:
            self.contents.append(a.get("href", ""))
        if tag == "table":
            self._table = self.tables.setdefault(a.get("class") or "", [])
        if tag == "tr" and self._table is not None:
            self._table.append((a.get("class") or "", []))
        if tag in ("td", "th") and self._table is not None:
            self._cell = [a.get("class") or "", ""]
        if tag == "img":
            self.images.append(a.get("alt") or "")

    def handle_endtag(self, tag):
        if tag == "nav":
            self._nav = False
        if tag == "table":
            self._table = None
        if tag in ("td", "th") and self._cell is not None:
            self._table[-1][1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data

    def rows(self, cls: str) -> dict[str, tuple[str, list]]:
        """A table's body rows by their first cell."""
        return {cells[0][1]: (rc, cells) for rc, cells in self.tables[cls][1:]}


def _synthetic_report(tmp_path, runs: dict = SYNTHETIC):
    out = tmp_path / "run"
    synthetic_run(out, runs)
    report.write_report(out)
    text = (out / "report.html").read_text()
    return out, text, Page(text)


def test_contents_link_every_workload_and_every_link_lands(tmp_path):
    _, text, page = _synthetic_report(tmp_path)
    assert text.index('id="contents"') < text.index('id="headline"')
    for target in ("#headline", "#run", "#overview"):
        assert target in page.contents
    for name in SYNTHETIC:
        for part in ("", "-summary", "-stats", "-figures"):
            assert f"#workload-{name}{part}" in page.contents
    # every link of the contents lands on an element of the page
    assert {h[1:] for h in page.contents} <= set(page.ids)
    assert len(page.ids) == len(set(page.ids))


def test_full_statistics_as_in_the_text_report(tmp_path):
    """Min, Amean, Median, Stddev, CoeffVar and Max of each kernel with
    their %change, as report.txt has them; the secondary metrics too."""
    out, _, page = _synthetic_report(tmp_path)
    rows = [
        [c[1] for c in cells]
        for _, cells in page.tables["full primary workload-pageout"]
    ]
    assert rows[0] == ["metric", "statistic", "vanilla", "patched", "%change"]
    assert rows[1:8] == [
        ["pageout_ms (ms)", "Min", "99", "79", "-20.20%"],
        ["", "Amean", "100.4", "80.40", "-19.92%"],
        ["", "Median", "100", "80", "-20.00%"],
        ["", "Stddev", "1.140", "1.140", "+0.00%"],
        ["", "CoeffVar", "1.136%", "1.418%", "+24.88%"],
        ["", "Max", "102", "82", "-19.61%"],
        ["", "Paired ratio", "", "0.801 [0.799, 0.802]", "5 rounds"],
    ]
    text = (out / "report.txt").read_text()
    for stat, value in (("Min", "79"), ("Stddev", "1.140"), ("Max", "82")):
        line = next(
            x
            for x in text.splitlines()
            if x.startswith(stat) and "pageout_ms" in x
        )
        assert value in line
    secondary = [
        [c[1] for c in cells]
        for _, cells in page.tables["full secondary workload-pageout"]
    ]
    assert ["pswpout (pages)", "Min", "0", "5", "from 0"] in secondary


def test_rows_and_cells_coloured_by_verdict(tmp_path):
    _, text, page = _synthetic_report(tmp_path)
    for css in (
        "tr.better td",
        "tr.worse td",
        "tr.changed td",
        "td.better",
        "td.worse",
        "td.changed",
    ):
        assert css in text
    verdicts = {
        (w, m): page.rows(f"metrics workload-{w}")[m][0]
        for w, m in (
            ("pageout", "pageout_ms *"),
            ("pageout", "pswpout *"),
            ("file-reclaim", "reclaim_real_s *"),
            ("file-reclaim", "reclaimed_mb *"),
            ("ksm-rmap", "vmas *"),
        )
    }
    assert verdicts == {
        ("pageout", "pageout_ms *"): "better",
        # 0 -> 5: pages out a fixed amount, so no better direction
        ("pageout", "pswpout *"): "changed",
        ("file-reclaim", "reclaim_real_s *"): "worse",
        # no better direction: "changed", never better or worse
        ("file-reclaim", "reclaimed_mb *"): "changed",
        ("ksm-rmap", "vmas *"): "changed",
    }
    headline = {
        cells[1][1]: rc
        for rc, cells in page.tables["headline"][1:]
        if cells[0][1] == "file-reclaim"
    }
    assert headline == {"reclaim_real_s (s)": "worse"}
    amean = next(
        cells
        for _, cells in page.tables["full primary workload-pageout"]
        if cells[1][1] == "Amean"
    )
    assert amean[-1] == ("r better", "-19.92%")
    # an uncoloured row is one that is not significant
    _, _, aa = _synthetic_report(
        tmp_path / "aa",
        {
            "pageout": {
                "pageout_ms": (
                    [100, 101, 99, 100, 102],
                    [101, 100, 99, 102, 100],
                )
            }
        },
    )
    assert aa.rows("metrics workload-pageout")["pageout_ms"][0] == "ns"


def _analysis(out):
    from foliolab.analysis.analyse import analyse
    from foliolab.boot.derive import run_samples

    return analyse(out, RunManifest.read(out), run_samples(out))


def test_overview_is_on_a_log_axis(tmp_path):
    """A cut to 1/640 has its place beside 0.45 and 1.2: the overview's
    ratio axis is logarithmic, labelled in plain numbers; a ratio of 0
    (a count that went to 0) is said in text, not drawn at the edge."""
    from foliolab.render import plots

    out, _, page = _synthetic_report(tmp_path)
    a = _analysis(out)
    fig = plots.draw_forest(a)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    low, high = ax.get_xlim()
    ksm = next(r for r in plots.overview_rows(a) if r.workload == "ksm-rmap")
    assert 0 < low < ksm.ci_low and ksm.ratio < 0.002 and high > 1.19
    # a decade takes the same room wherever it is: 0.0016 is as far from
    # 0.016 as 0.1 is from 1
    x = ax.transData.transform
    gap = x((0.016, 0))[0] - x((0.0016, 0))[0]
    assert gap == pytest.approx(x((1, 0))[0] - x((0.1, 0))[0])
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "0.002" in labels and "1" in labels
    assert not any("10^" in t or "e-" in t for t in labels)
    import matplotlib.pyplot as plt

    plt.close(fig)
    assert plots.forest_notes(a) == [
        "pageout-lazyfree patched: mthp_split_deferred: to 0 from 4,096 "
        "folios: a ratio of 0 has no place on a log axis"
    ]
    assert any(
        "mthp_split_deferred: to 0" in t
        for t in _section_text(out, "overview")
    )


def _section_text(out, sid: str) -> list[str]:
    text = (out / "report.html").read_text()
    start = text.index(f'id="{sid}"')
    return [text[start : text.index("</section>", start)]]


def _visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_no_empty_panel_for_a_zero_baseline(tmp_path):
    """pswpout went from 0 to 5: no ratio panel (a change from 0 has
    none), its values drawn, and a line of text says why; every panel
    drawn has its samples."""
    from foliolab.render import plots

    out, _, page = _synthetic_report(tmp_path)
    a = _analysis(out)
    wa = next(w for w in a.workloads if w.workload.name == "pageout")
    fig = plots.draw_workload(wa, a.samples, a.names)
    axes = _visible_axes(fig)
    assert [ax.get_title().split("\n")[0] for ax in axes] == [
        "pageout_ms: ratio",
        "pageout_ms: values",
        "pswpout: values",
    ]
    from matplotlib.collections import PathCollection

    for ax in axes:  # each panel holds its ten samples
        assert (
            sum(
                len(c.get_offsets())
                for c in ax.collections
                if isinstance(c, PathCollection)
            )
            == 10
        )
    import matplotlib.pyplot as plt

    plt.close(fig)
    note = (
        "pswpout: no ratio panel, the baseline vanilla has a mean of 0 "
        "(a change from 0 has no ratio); its values per kernel are drawn"
    )
    assert plots.figure_notes(wa, a.samples, a.names) == [note]
    assert note in _section_text(out, "workload-pageout-figures")[0]


def test_a_metric_zero_everywhere_gets_text_not_a_panel(tmp_path):
    """Nothing to draw at all: no figure, no overview, no empty frame;
    the text names the metric and says why."""
    from foliolab.render import plots

    out, text, page = _synthetic_report(
        tmp_path, {"pageout": {"pageout_ms": ([0] * 5, [0] * 5)}}
    )
    a = _analysis(out)
    (wa,) = a.workloads
    assert plots.draw_workload(wa, a.samples, a.names) is None
    assert plots.draw_forest(a) is None
    assert not (out / "plots" / "pageout.png").exists()
    assert "Constant in every sample (not plotted): pageout_ms" in text
    assert plots.forest_notes(a) == [
        "pageout patched: pageout_ms: 0 in both kernels"
    ]
    assert "pageout_ms: 0 in both kernels" in _section_text(out, "overview")[0]
    assert not page.images


def test_monitors_of_a_window_under_a_second_say_so(tmp_path, data):
    """One read per window gives no rate: no monitors' panel, a line in
    the monitors' section saying why, and the section in the contents."""
    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    one = "# foliolab monitor vmstat\n## sample 0\n== 10.0\npgfault 5\n==.\n"
    for boot in ("vanilla-000", "patched-000"):
        monitors.monitor_path(
            out / "raw" / "pageout" / boot, "vmstat"
        ).write_text(one)
    report.write_report(out)
    page = Page((out / "report.html").read_text())
    section = _section_text(out, "monitors")[0]
    assert (
        "pageout: no panel: every timed window had fewer than two reads "
        "(at most 1; the sampler reads about once a second, so a window "
        "under a second has no rate)"
    ) in section
    assert "<img" not in section
    assert "#monitors" in page.contents
