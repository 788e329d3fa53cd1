"""Reports from saved results: terminal table, report.md, report.html,
results.json, PNGs, and the run's outcomes (outcomes.json: every boot as
a test on the manifest's kernels).

Everything here reads the run directory only: OUT/environment.json (the
run's manifest) and the raw boots under OUT/raw/ (through ``derive``;
OUT/samples.jsonl for runs from before job.json), so `foliolab report OUT`
redoes every sample, table and plot without rebuilding or rebooting
anything. The analysis is analyse.py's, the drawing render/'s.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from foliolab import bootrecord, records, rundir
from foliolab.analysis.analyse import Analysis, analyse
from foliolab.boot.derive import (
    Sample,
    load_samples,
    rederive,
    run_samples,
)
from foliolab.bootrecord import BootJob, BootResult, BootStatus
from foliolab.errors import DamagedRunError
from foliolab.manifest import RunManifest
from foliolab.render import growth, plots
from foliolab.render.html import Figures, Section, html_figures, html_report
from foliolab.render.mail import mail_report
from foliolab.render.markdown import markdown_report
from foliolab.render.monitors import monitor_report
from foliolab.render.text import head_lines, text_report
from foliolab.rundir import staged
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus

log = logging.getLogger("foliolab")


def results_json(a: Analysis) -> dict[str, Any]:
    """results.json: results.json's environment, samples and summary, and what
    was added since (invalid samples, counting, attribution)."""
    env = a.m.to_json()
    env["host_line"] = a.host_line
    env["missing_boots"] = a.missing
    results = {
        "environment": env,
        "samples": [r for s in a.samples for r in s.rows()],
        "summary": [r.as_json() for wa in a.workloads for r in wa.rows],
        "invalid": [
            {
                "workload": s.workload,
                "variant": s.variant,
                "run": s.run,
                "reasons": s.reasons,
                "rundir": s.rundir,
            }
            for s in a.samples
            if not s.valid
        ],
        "counting": {k: c.as_dict() for k, c in a.counts.items()},
        "headline": dataclasses.asdict(a.headline),
        # how the secondary metrics were decided, per kernel (fdr.py)
        "fdr": [dataclasses.asdict(f) for f in a.headline.fdr],
    }
    if a.growth:
        results["growth"] = [t.as_json() for t in a.growth]
    if a.m.attribution:
        results["attribution"] = [
            r.as_json() for wa in a.workloads for r in wa.steps
        ]
    return results


def _save(
    out: Path, name: str, data: bytes | None, files: list[Path]
) -> bytes | None:
    if data:
        (out / "plots").mkdir(parents=True, exist_ok=True)
        (out / "plots" / name).write_bytes(data)
        files.append(out / "plots" / name)
    return data


def _plots(a: Analysis, out: Path, files: list[Path]) -> Figures:
    """Draw the plots once: into plots/ (report.md links them) and into
    the Figures report.html carries inline."""
    figures = Figures()
    try:
        figures.overview = _save(out, "overview.png", plots.forest(a), files)
        figures.overview_notes = plots.forest_notes(a)
    except Exception as e:  # a plot must never cost the results
        log.warning("overview plot failed: %s", e)
    for wa in a.workloads:
        name, mine = wa.workload.name, []
        try:
            figures.notes[name] = plots.figure_notes(wa, a.samples, a.names)
            data = _save(
                out,
                f"{name}.png",
                plots.workload_figure(wa, a.samples, a.names),
                files,
            )
            if data:
                mine.append(
                    (
                        f"{name}: primary and significant metrics, "
                        "each its ratio to the baseline's mean and "
                        "its values per kernel",
                        data,
                    )
                )
            data = (
                _save(
                    out,
                    f"{name}-profile.png",
                    plots.profile_figure(wa.workload, wa.counts),
                    files,
                )
                if wa.counts
                else None
            )
            if data:
                mine.append((f"{name}: differential profile", data))
        except Exception as e:  # a plot must never cost the results
            log.warning("plot for %s failed: %s", name, e)
        figures.workloads[name] = mine
    return figures


def finite(value: Any) -> Any:
    """``value`` with every NaN and infinity as None: results.json is
    JSON (a parser in a browser or jq refuses NaN and Infinity). A ratio
    from 0 is null there; its means say it (0 -> N)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return finite(dataclasses.asdict(value))
    return value


# What results.json has always held (docs/manual.md, "How a comparison runs").
RESULTS_KEYS = ("environment", "samples", "summary")


def damaged_results(out: Path) -> str | None:
    """What is wrong with OUT/results.json, or None if it reads (or is not
    there yet: a run's first report writes it)."""
    path = out / "results.json"
    if not path.exists():
        return None
    try:
        records.read_object(path, records.RecordKind.RESULTS, RESULTS_KEYS)
    except DamagedRunError as e:
        return e.message.removeprefix(f"{path}: ")
    return None


def _say_if_damaged(out: Path) -> None:
    """One line when the results.json about to be rewritten was damaged:
    the report is rebuilt from the run's own records, not from it."""
    why = damaged_results(out)
    if why:
        source = (
            "the boots under raw/"
            if (out / "raw").is_dir()
            else "samples.jsonl"
        )
        log.warning(
            "foliolab: %s was damaged (%s); rebuilt from "
            "environment.json and %s",
            out / "results.json",
            why,
            source,
        )


@dataclass(frozen=True)
class Written:
    """A report as write_report wrote it."""

    text: str  # report.txt
    # its opening (render/text.head_lines), the lines above its guest line
    headline: tuple[str, ...]
    # the report's files, in the order written (not samples.jsonl, which
    # deriving the samples rewrites)
    files: tuple[Path, ...]


def write_report(
    run: Path, samples: list[Sample] | None = None, dest: Path | None = None
) -> Written:
    """(Re)write results.json, report.md, report.html, report.txt and
    plots/; return what was written.
    ``samples``: the run's, as it derived them (else derived again).
    ``dest``: where all of it goes (default the run): the run is then
    only read, so a read-only or shared run can be reported."""
    out = dest or run
    m = RunManifest.read(run)  # the run is read before anything is made
    with rundir.removed_if_it_fails(out):
        out.mkdir(parents=True, exist_ok=True)
        return _write_report(run, m, samples, out)


def _write_report(
    run: Path, m: RunManifest, samples: list[Sample] | None, out: Path
) -> Written:
    if out == run:
        _say_if_damaged(run)
    # the whole set written aside, then renamed into place: an
    # interrupted report leaves the old set whole
    with staged(out) as stage:
        text, headline, staged_files = _write_set(run, m, stage, samples)
    files = tuple(out / p.relative_to(stage) for p in staged_files)
    return Written(text, headline, files)


def _write_set(
    run: Path, m: RunManifest, out: Path, samples: list[Sample] | None
) -> tuple[str, tuple[str, ...], list[Path]]:
    """The report set of ``run`` into ``out``: report.txt's text, its
    opening, the files written."""
    if samples is None:  # else the run wrote them as it measured
        samples = run_samples(run, out)
    a = analyse(run, m, samples)
    files = [out / "results.json", out / "report.md"]
    (out / "results.json").write_text(
        json.dumps(
            finite(results_json(a)), indent=1, default=str, allow_nan=False
        )
        + "\n"
    )
    (out / "report.md").write_text(markdown_report(a))
    figures = _plots(a, out, files)
    # the guest's per-second /proc/vmstat and /proc/interrupts, as mmtests
    # shows its monitors: only in the HTML page, beside the tables
    try:
        monitors, notes = monitor_report(run)
    except Exception as e:  # a figure must never cost the report
        log.warning("WARNING: the monitors' figures could not be drawn: %s", e)
        monitors, notes = [], []
    heading = "Monitors (per second of each timed window)"
    extra = [
        *_growth_section(a, out, files),
        Section(
            "monitors",
            heading,
            html_figures(heading, monitors, "monitors", notes, level=2),
        ),
    ]
    (out / "report.html").write_text(html_report(a, figures, extra))
    text = text_report(a)
    (out / "report.txt").write_text(text)
    files += [out / "report.html", out / "report.txt"]
    run_outcomes(run, m).write(out)
    return text, tuple(head_lines(a)), files


def run_outcomes(run: Path, m: RunManifest) -> Outcomes:
    """The compare's outcomes, from its manifest and raw boots only (so
    `foliolab report` writes them again alike): the manifest's kernels,
    and every boot under raw/ as a test, in boot order (none for a run
    from before job.json)."""
    names = set(m.names)
    tests = []
    for boot_dir in bootrecord.boot_dirs(run):
        job = BootJob.read(boot_dir)
        res = bootrecord.read_boot(boot_dir)
        misc: dict[str, str | int | float] = {
            "workload": job.workload,
            "pass": job.pass_.value,
            "first_run": job.first_run,
            "samples": job.samples,
        }
        if res is not None:
            misc["boot"] = res.status.value
            if res.exit_code is not None:
                misc["exit_code"] = res.exit_code
            if res.issues:
                misc["issues"] = ", ".join(res.issues)
        try:
            tests.append(
                TestOutcome(
                    # the boot's workload directory: a sweep's point is
                    # its own
                    f"compare.{boot_dir.parent.name}.{job.kernel}."
                    f"{job.pass_.value}-{job.first_run:03d}",
                    boot_status(res),
                    job.kernel if job.kernel in names else "",
                    res.elapsed if res is not None else None,
                    str(res.console.relative_to(run)) if res else "",
                    misc,
                )
            )
        except ValueError as e:  # an elapsed time that is none, say
            raise DamagedRunError(
                f"{boot_dir}: {e}", hint=bootrecord.boot_hint(boot_dir)
            ) from None
    return Outcomes("compare", m.kernels, tests)


def boot_status(res: BootResult | None) -> TestStatus:
    """A boot as a test: pass if it ran its job to the end and the kernel
    said nothing bad, fail if it ran with kernel issues (a warning, an
    oops), error if it could not end (a panic, a timeout, no exit
    record, QEMU's error), miss if it never ran or never finished (no
    boot.json)."""
    if res is None or res.status is BootStatus.NOT_RUN:
        return TestStatus.MISS
    if res.status is BootStatus.OK:
        return TestStatus.PASS if res.clean else TestStatus.FAIL
    return TestStatus.ERROR


def _growth_section(
    a: Analysis, out: Path, files: list[Path]
) -> list[Section]:
    """The sweep's growth tables and their log-log plots (plots/growth-*),
    as the HTML page's section; none for a run without a sweep."""
    if not a.growth:
        return []
    parts = [f"<p>{escape(growth.INTRO)}</p>"]
    for t in a.growth:
        try:
            data = _save(
                out, growth.plot_name(t), plots.growth_figure(t), files
            )
        except Exception as e:  # a plot must never cost the results
            log.warning("growth plot %s failed: %s", growth.plot_name(t), e)
            data = None
        summary = "".join(
            f"<li>{escape(line.strip())}</li>"
            for line in growth.summary_lines(t)[1:]
        )
        parts.append(
            f"<h3>{escape(growth.heading(t))}</h3>"
            + growth.table(t).html("growth")
            + f"<ul>{summary}</ul>"
            + (html_figures("", [(growth.heading(t), data)]) if data else "")
        )
    return [
        Section(
            "growth",
            "Growth",
            '<section id="growth"><h2>Growth</h2>'
            + "".join(parts)
            + "</section>",
        )
    ]


def mail_text(run: Path) -> str:
    """The run's report for a mail (render/mail.py), derived as `report`
    derives it, with nothing written: a read-only run gives it too."""
    m = RunManifest.read(run)
    samples = rederive(run)
    if samples is None:
        samples = load_samples(run)
    return mail_report(analyse(run, m, samples), run)
