"""Monitors: /proc/vmstat and /proc/interrupts read about once a second in
the guest during a workload's timed window (guest/lib.sh, `--monitors`).

The guest ships them as files ``monitor.vmstat`` and ``monitor.interrupts``
of each sample; the host keeps one file per boot and monitor in the boot's
directory, ``monitor-vmstat.txt`` and ``monitor-interrupts.txt``:

    # foliolab monitor vmstat (docs/manual.md, "Monitors")
    ## sample 0
    == 12.34                 <- guest uptime in seconds at the read
    pgfault 123456           <- the /proc file's lines as read
    ...
    ==.                      <- the read is complete
    == 13.36
    ...

A last block without its ``==.`` (a read that failed, or a sampler
stopped in its midst) is dropped; anything else that does not parse is
named in the series' ``problems``, never raised: a monitor cannot make a
boot invalid.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from foliolab import records
from foliolab.errors import DamagedRunError
from foliolab.guestdata.parse import GuestSample

log = logging.getLogger("foliolab")

MONITORS = ("vmstat", "interrupts")
_HEADER = '# foliolab monitor {} (docs/manual.md, "Monitors")\n'
_SAMPLE = "## sample "
_READ = "== "
_END = "==."


def monitor_path(rundir: Path, monitor: str) -> Path:
    return rundir / f"monitor-{monitor}.txt"


def write_monitors(rundir: Path, samples: list[GuestSample]) -> list[Path]:
    """The boot's monitor files from its samples' records (none if no
    sample had monitors on); returns the files written."""
    written = []
    for monitor in MONITORS:
        parts = [
            f"{_SAMPLE}{i}\n{s.files[f'monitor.{monitor}']}"
            for i, s in enumerate(samples)
            if f"monitor.{monitor}" in s.files
        ]
        if parts:
            path = monitor_path(rundir, monitor)
            path.write_text(_HEADER.format(monitor) + "".join(parts))
            written.append(path)
    return written


@dataclass(frozen=True)
class Reading:
    """One read of a /proc file: counters by name (interrupts: summed
    over the CPUs, by the row's label such as TLB or CAL)."""

    uptime: float
    counters: dict[str, int]


@dataclass
class MonitorSeries:
    """One sample's readings of one monitor."""

    monitor: str
    sample: int
    readings: list[Reading] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # label -> text
    problems: list[str] = field(default_factory=list)

    def rates(self, keys: tuple[str, ...]) -> list[tuple[float, float]]:
        """(seconds since the first read, sum of ``keys``' increase per
        second since the read before) for each read after the first."""
        out = []
        r = self.readings
        for prev, cur in zip(r, r[1:]):
            dt = cur.uptime - prev.uptime
            if dt <= 0:
                continue
            # a counter missing from either read (a cut read) is left out,
            # not taken as 0: that would draw a spike
            inc = sum(
                cur.counters[k] - prev.counters[k]
                for k in keys
                if k in cur.counters and k in prev.counters
            )
            out.append((cur.uptime - r[0].uptime, inc / dt))
        return out


def _count(text: str) -> bool:
    """Digits int() takes (str.isdigit() also passes "²", int() does not)."""
    return text.isascii() and text.isdecimal()


def _vmstat_line(line: str) -> tuple[str, int, str] | None:
    key, _, value = line.partition(" ")
    return (key, int(value), "") if _count(value.strip()) else ("", 0, "")


def _interrupts_line(line: str) -> tuple[str, int, str] | None:
    """``TLB:  3  4  TLB shootdowns`` -> ("TLB", 7, "TLB shootdowns");
    the CPU header line -> None."""
    label, colon, rest = line.strip().partition(":")
    if not colon:
        return None if label.startswith("CPU") else ("", 0, "")
    fields = rest.split()
    counts = []
    while fields and _count(fields[0]):
        counts.append(int(fields.pop(0)))
    return label, sum(counts), " ".join(fields)


_LINE = {"vmstat": _vmstat_line, "interrupts": _interrupts_line}


def parse_monitor(text: str, monitor: str) -> list[MonitorSeries]:
    """A monitor file's series, one per sample; damage is named in each
    series' problems (a file that names no sample gets one series)."""
    out: list[MonitorSeries] = []
    block: Reading | None = None
    parse_line = _LINE[monitor]

    def series() -> MonitorSeries:
        if not out:
            out.append(MonitorSeries(monitor, 0))
        return out[-1]

    def cut(where: int) -> None:
        series().problems.append(f"line {where}: a read cut short")

    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# ") and n == 1:
            continue
        if line.startswith(_SAMPLE):
            block = None  # the sampler stopped: its last read cut
            try:
                out.append(MonitorSeries(monitor, int(line[len(_SAMPLE) :])))
            except ValueError:
                out.append(MonitorSeries(monitor, len(out)))
                series().problems.append(f"line {n}: bad sample {line!r}")
        elif line.startswith(_READ):
            if block is not None:
                cut(n)
            try:
                block = Reading(float(line[len(_READ) :]), {})
            except ValueError:
                block = None
                series().problems.append(f"line {n}: bad uptime {line!r}")
        elif line == _END:
            if block is not None:
                series().readings.append(block)
            block = None
        elif block is not None:
            row = parse_line(line)
            if row is None:
                continue
            if not row[0]:
                series().problems.append(f"line {n}: unreadable {line!r}")
                block = None
                continue
            block.counters[row[0]] = row[1]
            if row[2]:
                series().names[row[0]] = row[2]
        elif line.strip():
            series().problems.append(f"line {n}: outside a read {line!r}")
    return out


def read_monitor(rundir: Path, monitor: str) -> list[MonitorSeries]:
    """A boot's series of ``monitor`` ([] without the file); problems are
    logged with the file's name."""
    path = monitor_path(rundir, monitor)
    if not path.exists() and not path.is_symlink():
        return []
    try:
        text = records.read_text(path, records.RecordKind.MONITOR)
    except DamagedRunError as e:  # a figure must never cost the report
        log.warning("monitor file %s", e.message)
        return []
    out = parse_monitor(text, monitor)
    for s in out:
        for p in s.problems[:3]:
            log.warning("monitor file %s, sample %d: %s", path, s.sample, p)
    return out
