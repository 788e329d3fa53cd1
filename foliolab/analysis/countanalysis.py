"""The counting analysis of a run: what its counting samples say across
samples.

Per workload, the functions whose instruction count varies between
repeats of one kernel (nondeterministic, left out of
``kernel_insns_deterministic``) and each kernel's differential profile
against the baseline, read from the plugin output the run directory
keeps. Apart from the statistics (workloadstats.py) because it reads
raw counting windows, not sample values, and adds the deterministic
counts to the samples before their statistics are taken.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foliolab.boot.derive import Sample
from foliolab.guestdata import countwindows
from foliolab.manifest import VARIANTS
from foliolab.workloads import find

# How many functions a differential profile shows per workload.
PROFILE_TOP = 10


@dataclass
class CountAnalysis:
    """What the counting samples of one workload say across samples: which
    functions are nondeterministic and where the kernels differ."""

    workload: str
    windows: dict[str, list[countwindows.Window]]  # kernel -> valid windows
    flagged: set[str]  # functions whose count varies in repeats
    known: bool  # every kernel had two windows or more
    # kernel -> its profile against the baseline (the first kernel)
    profiles: dict[str, list[countwindows.ProfileRow]]
    notes: list[str]
    # kernels with a counting sample whose roots were per vCPU
    untracked: list[str] = field(default_factory=list)
    # the kernels' releases, when more than one (analyse_counts): no
    # deterministic sum is given
    releases: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(self.windows)

    @property
    def profile(self) -> list[countwindows.ProfileRow]:
        """The last kernel's profile (patched's, in a --patches run)."""
        return self.profiles.get(self.names[-1], []) if self.names else []

    def summary_line(self) -> str:
        n = "/".join(str(len(ws)) for ws in self.windows.values())
        who = "v/p" if self.names == list(VARIANTS) else "/".join(self.names)
        if len(self.releases) > 1:
            return (
                f"kernels of {len(self.releases)} releases "
                f"({', '.join(self.releases)}): no "
                "kernel_insns_deterministic, which would sum different "
                "functions on each; compare the counts per operation"
                + self.untracked_text()
            )
        if not self.known:
            return (
                f"determinism unknown: counting samples {who} {n} (a "
                "function is flagged only when repeats of one kernel "
                "differ)" + self.untracked_text()
            )
        shares = []
        for ws in self.windows.values():
            for w in ws:
                if w.kernel_insns:
                    out = w.kernel_insns - countwindows.deterministic_insns(
                        w.insns(), w.kernel_insns, self.flagged
                    )
                    shares.append(100.0 * out / w.kernel_insns)
        worst = max(shares, default=0.0)
        return (
            f"nondeterministic: {len(self.flagged)} functions flagged "
            f"over counting samples {who} {n}, up to {worst:.2f}% of a "
            "window; left out of kernel_insns_deterministic"
            + self.untracked_text()
        )

    def untracked_text(self) -> str:
        if not self.untracked:
            return ""
        return (
            "; roots counted per vCPU, not following their task across "
            f"context switches, on {', '.join(self.untracked)} (a "
            "switched-out root counts the next task's work)"
        )

    def as_dict(self) -> dict[str, Any]:
        base = self.names[0] if self.names else ""

        def rows(name: str) -> list[dict[str, Any]]:
            return [
                {
                    "function": r.function,
                    "insns": r.insns,
                    "calls": r.calls,
                    "delta": r.delta(base, name),
                    "nondeterministic": r.nondeterministic,
                }
                for r in self.profiles.get(name, [])
            ]

        return {
            "flagged": sorted(self.flagged),
            "known": self.known,
            "notes": self.notes,
            "roots_per_vcpu_on": self.untracked,
            "profile": rows(self.names[-1]) if self.names else [],
            "profiles": {k: rows(k) for k in self.names[1:]},
        }


def _counting_windows(
    out: Path, samples: list[Sample], notes: list[str]
) -> list[tuple[Sample, countwindows.Window]]:
    """Each valid counting sample with its window, read from the run
    directory's raw plugin output (each file parsed once)."""
    cache: dict[str, list[countwindows.Window]] = {}
    pairs = []
    for s in samples:
        w = find(s.workload)
        if not s.counts or not s.valid or w is None:
            continue
        if s.counts not in cache:
            path = out / s.counts
            if not path.exists():
                notes.append(f"{path} is missing: its sample has no profile")
            cache[s.counts] = countwindows.read_windows(path, w.window)
        mine = cache[s.counts]
        if 0 <= s.count_window < len(mine):
            pairs.append((s, mine[s.count_window]))
    return pairs


def analyse_counts(
    out: Path,
    samples: list[Sample],
    names: list[str] | None = None,
    releases: dict[str, str] | None = None,
) -> dict[str, CountAnalysis]:
    """Flag nondeterministic functions per workload (over every kernel's
    repeats), add ``kernel_insns_deterministic`` and
    ``nondeterministic_pct`` to each counting sample when that is known,
    and build the differential profile.

    ``releases`` (kernel name -> its release): kernels of more than one
    release get neither figure. The deterministic sum is over the
    functions no kernel's repeats vary in, by name; two trees have
    different functions (renamed, split, inlined), so each kernel's sum
    is over different code and their ratio means nothing (6.12.117
    against 7.3.4 gave x1,189 for page faults whose count per fault
    moved +2.2%)."""
    notes: list[str] = []
    several = sorted({r for r in (releases or {}).values() if r})
    one_tree = len(several) <= 1
    pairs = _counting_windows(out, samples, notes)
    by: dict[str, dict[str, list[tuple[Sample, countwindows.Window]]]] = (
        defaultdict(lambda: defaultdict(list))
    )
    for s, win in pairs:
        by[s.workload][s.variant].append((s, win))
    names = list(names or VARIANTS)
    result = {}
    for name, variants in by.items():
        windows = {v: [win for _, win in variants.get(v, [])] for v in names}
        known = one_tree and all(len(ws) >= 2 for ws in windows.values())
        flagged = countwindows.nondeterministic_functions(
            {v: [win.insns() for win in ws] for v, ws in windows.items()}
        )
        if known:
            for s, win in (p for v in variants.values() for p in v):
                det = countwindows.deterministic_insns(
                    win.insns(), win.kernel_insns, flagged
                )
                s.values["kernel_insns_deterministic"] = det
                if win.kernel_insns:
                    s.values["nondeterministic_pct"] = 100.0 * (
                        1 - det / win.kernel_insns
                    )
        profiles = {
            k: countwindows.differential_profile(
                windows, names[0], k, flagged, PROFILE_TOP
            )
            for k in names[1:]
        }
        untracked = [
            v
            for v in names
            if any(
                s.roots_follow_tasks is False for s, _ in variants.get(v, [])
            )
        ]
        result[name] = CountAnalysis(
            name,
            windows,
            flagged,
            known,
            profiles,
            list(notes),
            untracked,
            [] if one_tree else several,
        )
    return result
