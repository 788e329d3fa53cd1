"""What a boot of the correctness suite says: each guest test's KTAP
results and leak oracles, each kselftest's results compared with
vanilla's (ours and upstream's), the counts of each guest test under
``--count``, and the suite's KTAP summary.

It reads a judged boot (BootResult) and the baselines; building and
booting the suite is suite.py's.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from foliolab.arch import Arch
from foliolab.bootrecord import BootResult
from foliolab.guestdata import countwindows, parse
from foliolab.kernel import upstream_selftests as upstream_mod
from foliolab.kernelrecord import KernelRecord
from foliolab.testrecord import Outcomes, TestOutcome, TestStatus
from foliolab.workloads.windows import RUN

log = logging.getLogger("foliolab")

SKIP_EXIT = 4  # kselftest's KSFT_SKIP


@dataclass
class Check:
    """One line of the suite's verdict."""

    name: str
    status: str  # pass | fail | skip
    detail: str = ""
    # a kselftest that ran again: how its runs went (reruns_note()), on
    # its KTAP line whatever the status
    reruns: str = ""


@dataclass
class SuiteBoot:
    lru_gen: str
    boot: str
    checks: list[Check] = field(default_factory=list)
    kselftests: dict[str, dict[str, str]] = field(default_factory=dict)
    # a kselftest that ran again after failing (suite.RERUNS): the overall
    # result of each run before the last, which ``kselftests`` holds
    kselftest_reruns: dict[str, list[str]] = field(default_factory=dict)
    # how long each kselftest ran in the guest, its runs added ("@@
    # seconds"): its row's duration
    kselftest_seconds: dict[str, int] = field(default_factory=dict)
    console: str = ""
    counts: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteResult:
    """A suite run: its verdict, its KTAP summary, its boots (each with
    its checks) and the kernel it booted."""

    passed: bool
    summary: str
    boots: tuple[SuiteBoot, ...]
    kernel: KernelRecord

    def tests(self) -> list[TestOutcome]:
        """Every check of every boot, as the run's outcomes: path
        ``suite.mglru-on.PROGRAM.CASE``, the boot's console as its log."""
        return [
            TestOutcome(
                f"suite.mglru-{'on' if b.lru_gen == 'y' else 'off'}.{c.name}",
                TestStatus(c.status),
                self.kernel.name,
                duration_s=b.kselftest_seconds.get(
                    c.name.removeprefix("kselftest.")
                )
                if c.name.startswith("kselftest.")
                else None,
                log=f"mglru-{b.lru_gen}/console.log",
                misc={
                    k: v
                    for k, v in (("detail", c.detail), ("reruns", c.reruns))
                    if v
                },
            )
            for b in self.boots
            for c in b.checks
        ]

    def outcomes(self) -> Outcomes:
        return Outcomes("test", [self.kernel], self.tests())


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "Collapse multiple fully populated PTE table.... OK" (khugepaged) and
# "Testing wp-fork on anon... done|skipped [...]|failed" (uffd-unit-tests)
_DOTS_RESULT = re.compile(
    r"^(?:Testing )?(.*?)\.{3,}\s*"
    r"(OK|Fail|Skip|done|skipped|failed)\b"
)
_DOTS_STATUS = {
    "OK": "pass",
    "done": "pass",
    "Fail": "fail",
    "failed": "fail",
    "Skip": "skip",
    "skipped": "skip",
}


def kselftest_results(text: str) -> dict[str, str]:
    """Per-subtest status of one kselftest run, plus its overall result.

    TAP lines give the subtests; programs that print "name... OK|Fail"
    or "Testing name... done|skipped|failed" instead (khugepaged,
    uffd-unit-tests) are read that way; "@@ exitcode" gives the exit
    status (124: timed out). The overall entry "" is pass only if the
    program exited 0 (or 4, skip) and no subtest failed.
    """
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    rep = parse.parse_ktap(lines)
    out = {f"{r.number}:{r.name}": r.status for r in rep.results}
    if not rep.results:
        section = ""
        for line in lines:
            if line.startswith("Run test: "):
                section = line[len("Run test: ") :].strip() + ": "
            m = _DOTS_RESULT.match(line)
            if m:
                key = f"{len(out) + 1}:{section}{m.group(1).strip()}"
                out[key] = _DOTS_STATUS[m.group(2)]
    code = None
    for line in lines:
        if line.startswith("@@ exitcode "):
            code = int(line.split()[3])
    failed = any(v in ("fail", "error") for v in out.values())
    if code == 124:
        overall = "timeout"
    elif code == SKIP_EXIT and not failed:
        overall = "skip"
    elif code == 0 and not failed:
        overall = "pass"
    else:
        overall = "fail"
    out[""] = overall
    return out


def kselftest_seconds(text: str) -> int | None:
    """How long one kselftest run took in the guest, from its "@@ seconds
    NAME N" line (None without one)."""
    for line in text.splitlines():
        f = line.split()
        if f[:2] == ["@@", "seconds"] and len(f) == 4 and f[3].isdigit():
            return int(f[3])
    return None


def judge_boot(lru_gen: str, res: BootResult) -> SuiteBoot:
    g = parse.parse_records(res.records)
    sb = SuiteBoot(lru_gen, res.describe(), console=str(res.console))
    if not res.clean:
        sb.checks.append(
            Check("boot", "fail", f"{res.describe()} (console: {res.console})")
        )
    s = g.samples[0] if g.samples else parse.GuestSample()
    for fname, text in s.files.items():
        if fname.startswith("ktap."):
            # "ktap.GROUP@K": the K-th run of GROUP under --repeat
            group, _, run = fname[5:].partition("@")
            rep = parse.parse_ktap(text.splitlines())
            for r in rep.results:
                # a skip keeps its reason (the directive without "SKIP")
                reason = r.directive[4:].strip() if r.status == "skip" else ""
                # the kselftest harness names a case FIXTURE.NAME, and our
                # fixtures are named after their program
                name = r.name.removeprefix(f"{group}.")
                sb.checks.append(
                    Check(
                        f"{group}.{name}" + (f"@{run}" if run else ""),
                        r.status if r.status != "xfail" else "pass",
                        reason,
                    )
                )
            if not rep.results or rep.errors or rep.bailed_out:
                sb.checks.append(
                    Check(
                        fname[5:],
                        "fail",
                        "; ".join(rep.errors + [rep.bailed_out or ""]).strip(
                            "; "
                        )
                        or "no results",
                    )
                )
        elif fname.startswith("kselftest."):
            # "kselftest.NAME@K": its K-th run, after K - 1 failed ones
            name = fname[10:].partition("@")[0]
            if name in sb.kselftests:
                sb.kselftest_reruns.setdefault(name, []).append(
                    sb.kselftests[name][""]
                )
            sb.kselftests[name] = kselftest_results(text)
            took = kselftest_seconds(text)
            if took is not None:
                sb.kselftest_seconds[name] = (
                    sb.kselftest_seconds.get(name, 0) + took
                )
    for group, check, ok, detail in s.oracles:
        sb.checks.append(
            Check(f"{group}.oracle.{check}", "pass" if ok else "fail", detail)
        )
    return sb


def reruns_note(earlier: list[str]) -> str:
    """How a kselftest that ran again went before its last run, e.g.
    "run 2 of 2; run 1: fail" ("" when it ran once)."""
    if not earlier:
        return ""
    return f"run {len(earlier) + 1} of {len(earlier) + 1}; " + ", ".join(
        f"run {i}: {status}" for i, status in enumerate(earlier, 1)
    )


def compare_kselftests(
    results: dict[str, dict[str, str]],
    baseline: dict[str, dict[str, str]],
    reruns: dict[str, list[str]] | None = None,
) -> list[Check]:
    """A (sub)test that passed on vanilla must pass here.

    A kselftest that did not pass as a whole on vanilla is reported but
    not compared: its subtests are not stable enough to call a difference
    a regression (uffd-unit-tests: timing under TCG). migration's
    baseline failure was the image's, not the kernel's: its private
    cases call pthread_cancel(), which needs libgcc_s, now in the image
    (image.DLOPENED); with it they passed (2026-11-30), but the
    recorded baseline still says fail until it is recorded again.
    ``reruns``: the earlier runs of a kselftest that ran again; its last
    run is judged, and its line says how the earlier ones went.
    """
    checks = []
    for name, subs in sorted(results.items()):
        base = baseline.get(name, {})
        note = reruns_note((reruns or {}).get(name, []))
        if name in baseline and base.get("") != "pass":
            checks.append(
                Check(
                    f"kselftest.{name}",
                    "skip",
                    f"{subs.get('', '?')} here; not compared: "
                    f"{base.get('')} on vanilla",
                    note,
                )
            )
            continue
        for sub, status in sorted(subs.items()):
            label = f"kselftest.{name}" + (f".{sub}" if sub else "")
            if base.get(sub) == "pass" and status != "pass":
                checks.append(
                    Check(
                        label,
                        "fail",
                        f"{status} here, pass on vanilla",
                        note if sub == "" else "",
                    )
                )
            elif sub == "":
                checks.append(
                    Check(
                        label,
                        "pass" if status == "pass" else "skip",
                        ""
                        if status == "pass"
                        else f"{status} (also on vanilla)",
                        note,
                    )
                )
    for name in sorted(set(baseline) - set(results)):
        checks.append(Check(f"kselftest.{name}", "fail", "did not run"))
    return checks


def compare_upstream(
    boots: list[SuiteBoot], arch: Arch, record: bool, names: tuple[str, ...]
) -> None:
    """Upstream's selftests in each boot against vanilla's in a boot with
    the same MGLRU setting; ``record``: write vanilla's, compare to them."""
    path = upstream_mod.baseline_path(arch)
    base = upstream_mod.Baseline.load(path)
    runs = {b.lru_gen: upstream_mod.own_results(b.kselftests) for b in boots}
    if record:
        base = upstream_mod.Baseline(
            upstream_mod.package_label(),
            {**(base.by_lru if base else {}), **runs},
        )
        base.save(path)
        log.info("upstream selftest baseline written to %s", path)
    for b in boots:
        if base and base.package != upstream_mod.package_label():
            b.checks.append(
                Check(
                    "kselftest.upstream",
                    "fail",
                    f"baseline of {base.package}, tests of "
                    f"{upstream_mod.package_label()}: record "
                    "it again",
                )
            )
            continue
        b.checks += [
            Check(v.name, v.status, v.detail)
            for v in upstream_mod.compare(
                runs[b.lru_gen],
                base.by_lru.get(b.lru_gen) if base else None,
                names,
            )
        ]


def ktap_summary(boots: list[SuiteBoot]) -> str:
    lines = ["KTAP version 1"]
    checks = [(b, c) for b in boots for c in b.checks]
    lines.append(f"1..{len(checks)}")
    for i, (b, c) in enumerate(checks, 1):
        tag = f"mglru={b.lru_gen} {c.name}"
        reruns = f" ({c.reruns})" if c.reruns else ""
        if c.status == "pass":
            lines.append(
                f"ok {i} {tag}" + (f" # {c.reruns}" if c.reruns else "")
            )
        elif c.status == "skip":
            lines.append(f"ok {i} {tag} # SKIP {c.detail}{reruns}")
        else:
            lines.append(f"not ok {i} {tag} # {c.detail}{reruns}")
    fails = sum(c.status == "fail" for _, c in checks)
    lines.append(
        f"# Totals: pass:{sum(c.status == 'pass' for _, c in checks)}"
        f" fail:{fails} skip:{sum(c.status == 'skip' for _, c in checks)}"
    )
    return "\n".join(lines) + "\n"


def test_counts(res: BootResult, arch: str) -> dict[str, dict[str, float]]:
    """``foliolab test --count``: each of our guest tests' counts, from
    the windows run.sh put around them (in the order the tests ran)."""
    windows = countwindows.read_windows(res.console.parent / "counts.txt", RUN)
    s = parse.parse_records(res.records).samples
    names = [f[5:] for f in (s[0].files if s else {}) if f.startswith("ktap.")]
    return {
        name: countwindows.window_metrics(w, arch, None)
        for name, w in zip(names, windows)
    }


def count_lines(
    lru_gen: str, counts: dict[str, dict[str, float]]
) -> list[str]:
    """KTAP diagnostic lines: the exact kernel work of each guest test."""
    return [
        f"# counted mglru={lru_gen} {name}: kernel_insns "
        f"{v['kernel_insns']:.0f}, tlb_flush_insns "
        f"{v['tlb_flush_insns']:.0f}, ipis_sent {v['ipis_sent']:.0f}"
        for name, v in counts.items()
    ]
