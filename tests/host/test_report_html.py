"""report.html in a real browser: headless Chromium (Debian's, which
`foliolab setup` installs) loads the page from disk and its DOM holds the
headline and every workload's table. Missing Chromium fails the test:
CI must not pass it by skipping."""

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from foliolab import monitors, report
from foliolab.manifest import RunManifest


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed: run `foliolab setup` (it "
                "installs Debian's chromium for this test)")


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
        if tag == "section":
            self.stack.append(a.get("id") or "")
        if tag == "table":
            for sid in self.stack:
                self.tables.setdefault(sid, []).append(a.get("class") or "")
        if tag == "img":
            self.images.append(a.get("src") or "")

    def handle_endtag(self, tag):
        if tag == "section" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for sid in self.stack:
            if sid in self.ids:
                self.ids[sid].append(data)


def browser_dom(path) -> Dom:
    cp = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         # a small /dev/shm, and no profile written to $HOME
         "--disable-dev-shm-usage",
         f"--user-data-dir={path.parent / '.chromium'}",
         "--dump-dom", path.resolve().as_uri()],
        capture_output=True, text=True, timeout=180)
    assert cp.returncode == 0, cp.stderr[-2000:]
    dom = Dom()
    dom.feed(cp.stdout)
    return dom


def test_report_html_in_a_browser(tmp_path, data):
    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    report.write_report(out)
    dom = browser_dom(out / "report.html")
    headline = " ".join(dom.ids["headline"])
    # an A/A run: its kernels as they are, not "patched vs vanilla"
    assert "A/A run, vanilla and patched are the same kernel (base)" in \
        headline
    assert "patched vs vanilla" not in headline
    assert "n.s. (n=2/2, too few)" in headline
    assert "headline" in dom.tables["headline"]
    for name in RunManifest.read(out).workloads:
        assert any("metrics" in c for c in dom.tables[f"workload-{name}"])
    # every image inline: the page needs no network and no other file
    assert dom.images and all(s.startswith("data:image/png;base64,")
                              for s in dom.images)


def test_every_workload_has_its_table_in_the_browser(tmp_path):
    """Three kernels, two workloads: both tables, the headline's change."""
    out = tmp_path / "run"
    out.mkdir()
    names = ["base", "s1", "all"]
    (out / "environment.json").write_text(json.dumps({
        "workloads": ["pageout", "pageout-4k"], "kernels": names,
        "kernel_specs": {"base": "base", "s1": "base+series:1",
                         "all": "base+series"}, "runs": 5,
        "command_line": ["foliolab", "compare", "--runs", "5"]}))
    lines = []
    for w in ("pageout", "pageout-4k"):
        for k, scale in zip(names, (1.0, 0.99, 0.5)):
            for i in range(5):
                lines.append(json.dumps({
                    "workload": w, "variant": k, "run": i,
                    "values": {"pageout_ms": scale * (100 + i)},
                    "valid": True, "reasons": [], "boot": "ok",
                    "rundir": ""}))
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")
    report.write_report(out)
    dom = browser_dom(out / "report.html")
    headline = " ".join(dom.ids["headline"])
    assert "each kernel against the baseline base" in headline
    assert "pageout-4k pageout_ms (ms) all" in headline
    assert "-50.00% better" in headline
    assert ("foliolab compare --kernel base=base --kernel s1=base+series:1 "
            "--kernel all=base+series --runs 5") in headline
    for name in ("pageout", "pageout-4k"):
        assert any("metrics" in c for c in dom.tables[f"workload-{name}"])


def test_report_html_draws_the_runs_monitors(tmp_path, data):
    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    report.write_report(out)
    assert "Monitors" not in (out / "report.html").read_text()
    reads = "".join(f"== {10 + t}.0\npgfault {1000 * t * t}\npgscan_kswapd "
                    f"{50 * t}\npswpout {7 * t}\n==.\n" for t in range(4))
    for boot in ("vanilla-000", "patched-000"):
        monitors.monitor_path(out / "raw" / "pageout" / boot,
                              "vmstat").write_text(
            f"# foliolab monitor vmstat\n## sample 0\n{reads}")
    report.write_report(out)
    page = (out / "report.html").read_text()
    assert "Monitors (per second of each timed window)" in page
    assert "pageout: /proc/vmstat and /proc/interrupts rates" in page
