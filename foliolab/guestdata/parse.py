"""Parsers for what the guest sends back: records, /proc files, ftrace
profiles and KTAP. Pure functions on text; tested against captured output.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field


@dataclass
class GuestSample:
    """Everything one sample sent: files, metrics and verdicts."""

    files: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    invalid: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    oracles: list[tuple[str, str, bool, str]] = field(default_factory=list)


@dataclass
class GuestOutput:
    samples: list[GuestSample]
    output: list[str]  # the job's own (non-record) lines
    boot_s: float | None = None  # kernel uptime when init started the job
    exit_code: int | None = None


def parse_records(lines: list[str]) -> GuestOutput:
    """Split the results port's lines into samples ("@@ sample N" frames).

    Records before the first "@@ sample" belong to an implicit sample 0.
    """
    out = GuestOutput([], [])
    cur: GuestSample | None = None
    fname: str | None = None
    fbuf: list[str] = []

    def sample() -> GuestSample:
        nonlocal cur
        if cur is None:
            cur = GuestSample()
            out.samples.append(cur)
        return cur

    for line in lines:
        if fname is not None:
            if line == "@@ end":
                sample().files[fname] = "\n".join(fbuf) + "\n"
                fname, fbuf = None, []
            else:
                fbuf.append(line)
            continue
        if not line.startswith("@@ "):
            out.output.append(line)
            continue
        kind, _, rest = line[3:].partition(" ")
        if kind == "sample":
            cur = GuestSample()
            out.samples.append(cur)
        elif kind == "file":
            fname = rest.strip()
        elif kind == "metric":
            key, _, val = rest.partition(" ")
            try:
                sample().metrics[key] = float(val)
            except ValueError:
                sample().invalid.append(f"unparsable metric line: {line}")
        elif kind == "invalid":
            sample().invalid.append(rest)
        elif kind == "corrupt":
            sample().corrupt.append(rest)
        elif kind == "oracle":
            parts = rest.split(" ", 3) + ["", "", "", ""]
            sample().oracles.append(
                (parts[0], parts[1], parts[2] == "ok", parts[3])
            )
        elif kind == "boot":
            try:
                out.boot_s = float(rest)
            except ValueError:
                pass
        elif kind == "exit":
            try:
                out.exit_code = int(rest)
            except ValueError:
                pass
        else:
            out.output.append(line)
    if fname is not None:  # cut off mid-file (the guest died)
        sample().files[fname] = "\n".join(fbuf) + "\n"
        sample().invalid.append(f"file {fname} was cut off")
    return out


# The records' framing on a console shared with the kernel (guest/frame.awk):
# "@@= SEQ LEN ADLER32 TEXT" anywhere in a console line.
_FRAME = re.compile(rb"@@= (\d+) (\d+) ([0-9a-f]{8}) ")
_FRAME_END = re.compile(rb"@@=end (\d+)")
# a boot's name: RUN/raw/WORKLOAD/NAME's last two parts
_BOOT_ID = re.compile(rb" *([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")


@dataclass
class ConsoleStream:
    """The job's records as recovered from a console log."""

    lines: list[str]  # the records, in order, as far as complete
    begun: bool = False  # "@@=begin" seen
    boot_id: str = ""  # the ID it named, if any
    count: int | None = None  # what "@@=end COUNT" announced
    damaged: list[int] = field(default_factory=list)  # failed their check
    missing: list[int] = field(default_factory=list)  # never seen intact
    kernel_text: str = ""  # the console without the frames

    @property
    def complete(self) -> bool:
        return self.begun and self.count is not None and not self.missing

    def problems(self) -> list[str]:
        """What kept the stream from being whole, one line each."""
        out = []
        if not self.begun:
            out.append("no records on the console (no @@=begin)")
        elif self.count is None:
            out.append("the records on the console end without @@=end")
        if self.missing:
            shown = ", ".join(map(str, self.missing[:8]))
            more = "..." if len(self.missing) > 8 else ""
            why = (
                f", {len(self.damaged)} of them damaged on the console"
                if self.damaged
                else ""
            )
            out.append(
                f"{len(self.missing)} record line(s) lost ({shown}{more}){why}"
            )
        return out


def console_records(raw: bytes) -> ConsoleStream:
    """Recover the records a guest framed onto its console (frame.awk).

    A frame is found anywhere in a line (firmware or kernel text may share
    it), exactly LEN bytes of text are taken after its header and checked
    against its Adler-32; a frame that fails (a line split or joined by
    other output) is damaged, and its line counts as missing unless an
    intact copy turns up. The lines are kept up to the first one missing,
    so a damaged stream is never silently shortened in its middle.
    """
    good: dict[int, bytes] = {}
    damaged: set[int] = set()
    begun = False
    boot_id = b""
    count = None
    kernel: list[bytes] = []
    for line in raw.split(b"\n"):
        line = line.rstrip(b"\r")
        if not begun:
            at = line.find(b"@@=begin")
            if at < 0:
                kernel.append(line)
                continue
            begun = True
            m = _BOOT_ID.match(line, at + len(b"@@=begin"))
            boot_id = m.group(1) if m else b""
            kernel.append(line[:at])
            continue
        rest, pos = [], 0
        while True:
            m = _FRAME.search(line, pos)
            if m is None:
                break
            seq, n = int(m.group(1)), int(m.group(2))
            text = line[m.end() : m.end() + n]
            rest.append(line[pos : m.start()])
            if len(
                text
            ) == n and f"{zlib.adler32(text):08x}".encode() == m.group(3):
                good.setdefault(seq, text)
                pos = m.end() + n
            else:
                damaged.add(seq)
                pos = m.end()
        tail = line[pos:]
        e = _FRAME_END.search(tail)
        if e and count is None:
            count = int(e.group(1))
            tail = tail[: e.start()]
        kernel.append(b"".join(rest) + tail.replace(b"@@=done", b""))
    total = count if count is not None else max(good, default=0)
    missing = [i for i in range(1, total + 1) if i not in good]
    upto = missing[0] - 1 if missing else total
    lines = [good[i].decode("utf-8", "replace") for i in range(1, upto + 1)]
    return ConsoleStream(
        lines,
        begun,
        boot_id.decode("utf-8", "replace"),
        count,
        sorted(d for d in damaged if d not in good),
        missing,
        b"\n".join(kernel).decode("utf-8", "replace"),
    )


def parse_vmstat(text: str) -> dict[str, int]:
    """/proc/vmstat (or any "name value" file) into a dict."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def parse_interrupts(text: str) -> dict[str, int]:
    """/proc/interrupts: each row's name ('TLB', 'CAL', '24') -> sum over
    CPUs."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    out = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        total = 0
        for field_ in rest.split()[:ncpu]:
            if not field_.isdigit():
                break
            total += int(field_)
        out[name.strip()] = total
    return out


def parse_memcg(text: str) -> dict[str, int]:
    """memory.events / memory.stat: "key value" lines."""
    return parse_vmstat(text)


def parse_stress_ng_yaml(text: str) -> dict[str, dict[str, float]]:
    """The `metrics:` list of stress-ng's --yaml output, per stressor.

    Only the flat "key: number" entries are read, which is all the format
    has there; no YAML library needed.
    """
    out: dict[str, dict[str, float]] = {}
    cur: dict[str, float] | None = None
    in_metrics = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_metrics = line.strip() == "metrics:"
            continue
        if not in_metrics:
            continue
        item = line.strip()
        if item.startswith("- stressor:"):
            cur = out.setdefault(item.split(":", 1)[1].strip(), {})
            continue
        key, sep, value = item.partition(":")
        if cur is not None and sep:
            try:
                cur[key.strip()] = float(value)
            except ValueError:
                pass
    return out


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


_PROFILE_ROW = re.compile(r"^\s*(\S+)\s+(\d+)\s+([\d.]+)\s+us\b")


def parse_function_profile(text: str) -> dict[str, dict[str, float]]:
    """ftrace trace_stat/function* (all CPUs concatenated) summed per function.

    Returns {function: {"hits": n, "time_us": total}}.
    """
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = _PROFILE_ROW.match(line)
        if not m:
            continue
        row = out.setdefault(m.group(1), {"hits": 0, "time_us": 0.0})
        row["hits"] += int(m.group(2))
        row["time_us"] += float(m.group(3))
    return out


def parse_trace_field(text: str, event: str, field_: str) -> dict[str, int]:
    """Histogram of ``field_=VALUE`` over the ``event:`` lines of a trace."""
    rx = re.compile(rf"\b{re.escape(field_)}=([^,\s]+)")
    out: dict[str, int] = {}
    for line in text.splitlines():
        if f" {event}:" not in line:
            continue
        m = rx.search(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


_SCAN_PMD = re.compile(
    r"\s([\d.]+): mm_khugepaged_scan_pmd: mm=(\S+?),"
    r".*\bstatus=(\S+?),"
)


@dataclass
class MmScans:
    """khugepaged's PMD scans of one mm, from its trace events."""

    mm: str
    first_s: float
    last_s: float
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.statuses.values())


def khugepaged_scans_by_mm(text: str) -> list[MmScans]:
    """mm_khugepaged_scan_pmd events grouped per mm, in order of first scan.

    khugepaged visits mms in the order they registered, so with tasks
    started one after another this is the tasks' start order.
    """
    out: dict[str, MmScans] = {}
    for line in text.splitlines():
        m = _SCAN_PMD.search(line)
        if not m:
            continue
        ts, mm, status = float(m.group(1)), m.group(2), m.group(3)
        row = out.setdefault(mm, MmScans(mm, ts, ts))
        row.last_s = ts
        row.statuses[status] = row.statuses.get(status, 0) + 1
    return list(out.values())


def scans_before(text: str, mm: str, before_s: float) -> int:
    """How many PMD scans of ``mm`` happened before ``before_s``."""
    n = 0
    for line in text.splitlines():
        m = _SCAN_PMD.search(line)
        if m and m.group(2) == mm and float(m.group(1)) < before_s:
            n += 1
    return n


_GRAPH_LEAF = re.compile(r"([\d.]+) (us|ms)\s*\|\s*([A-Za-z0-9_.]+)\(\);")


def parse_graph_durations(text: str, function: str) -> list[float]:
    """Durations in ms of ``function`` from a function_graph trace.

    Expects leaf lines ("... 1234.567 us |  rmap_walk_ksm();"), which is
    what max_graph_depth=1 with set_graph_function produces.
    """
    out = []
    for line in text.splitlines():
        m = _GRAPH_LEAF.search(line)
        if m and m.group(3) == function:
            v = float(m.group(1))
            out.append(v if m.group(2) == "ms" else v / 1000.0)
    return out


# --- KTAP / TAP -----------------------------------------------------------

_RESULT = re.compile(
    r"^(ok|not ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$"
)


@dataclass
class TapResult:
    number: int
    name: str
    status: str  # pass | fail | skip | xfail | error
    directive: str = ""  # the text after "# ", e.g. "SKIP no soft-dirty"


@dataclass
class TapReport:
    results: list[TapResult] = field(default_factory=list)
    planned: int | None = None
    bailed_out: str | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        c = {"pass": 0, "fail": 0, "skip": 0, "xfail": 0, "error": 0}
        for r in self.results:
            c[r.status] += 1
        return c

    @property
    def ok(self) -> bool:
        """Every result passed or skipped, the plan was met, no bail out."""
        c = self.counts
        return (
            not self.bailed_out
            and not self.errors
            and c["fail"] == 0
            and c["error"] == 0
            and (self.planned is None or len(self.results) == self.planned)
        )


_PLAN = re.compile(r"^1\.\.(\d+)")


def tap_plan(line: str) -> int | None:
    """The count of a TAP plan line ("1..12"), None for any other."""
    m = _PLAN.match(line)
    return int(m.group(1)) if m else None


def tap_result(line: str) -> TapResult | None:
    """One TAP result line ("ok 3 name # SKIP why", "not ok 4 name") as
    a result, None for any other line (an indented one among them: a
    subtest's). The one reading of a result line, at any nesting depth:
    parse_ktap's and the mm CI wrappers' (suite/mmci/results.py)."""
    m = _RESULT.match(line.rstrip())
    if not m:
        return None
    ok, num, name, directive = m.groups()
    d = (directive or "").upper()
    if d.startswith("SKIP"):
        status = "skip"
    elif d.startswith("XFAIL"):
        status = "xfail"
    elif d.startswith("ERROR"):
        status = "error"
    else:
        status = "pass" if ok == "ok" else "fail"
    return TapResult(
        int(num),
        name.strip() or (directive or ""),
        status,
        (directive or "").strip(),
    )


def parse_ktap(lines: list[str]) -> TapReport:
    """Top-level KTAP/TAP results (indented subtests and "# " lines
    ignored)."""
    rep = TapReport()
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith((" ", "\t", "#")):
            continue
        if line.startswith("Bail out!"):
            rep.bailed_out = line[len("Bail out!") :].strip() or "bail out"
            continue
        planned = tap_plan(line)
        if planned is not None:
            rep.planned = planned
            continue
        result = tap_result(line)
        if result is not None:
            rep.results.append(result)
    if rep.planned is not None and len(rep.results) != rep.planned:
        rep.errors.append(
            f"planned {rep.planned} tests, saw {len(rep.results)}"
        )
    return rep
