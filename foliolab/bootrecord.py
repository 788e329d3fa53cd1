"""A boot as a record in the run directory: how it ended, and what it ran.

Each boot directory (OUT/raw/WORKLOAD/NAME/) holds the raw output (console
log, ``results.txt`` with the guest's ``@@`` records, ``counts.txt`` from
the counting plugin), ``job.json`` (what the measuring half asked for:
workload, kernel, pass, samples, parameters; written before the boot) and
``boot.json`` (how it ended; written after it). These files are the
contract between measuring and analysing: ``foliolab report`` derives
every sample from them again, and nothing else.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from foliolab import records
from foliolab.errors import DamagedRunError

JOB_FILE = "job.json"
BOOT_FILE = "boot.json"


class BootStatus(str, enum.Enum):
    """How a boot ended (a str, so it is its own value in JSON)."""

    OK = "ok"  # the job ran to its end
    PANIC = "panic"  # the kernel panicked
    TIMEOUT = "timeout"  # the host's limit stopped QEMU
    NO_EXIT = "no-exit"  # QEMU ended without the job's exit record
    QEMU_ERROR = "qemu-error"  # QEMU failed with an error of its own
    NOT_RUN = "not-run"  # its executor's job ended before it

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class HostLoad:
    """The host while a boot ran (boot.json's ``host``): what the report
    says of the machine beside its kernels' numbers."""

    loadavg_1m: float | None = None  # at the boot's start
    governor: str = ""  # the CPU frequency governor
    steal_pct: float | None = None  # CPU time stolen while it ran
    # seconds the boot waited for the machine's other foliolab guest to
    # end (locks.guests_here); None: not known (an older record, or QEMU
    # not run here)
    guest_lock_wait_s: float | None = None
    # qemu-system processes already running as QEMU started (any user's,
    # any program's); None: not known
    other_guests: int | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> HostLoad:
        d = d or {}
        return cls(
            d.get("loadavg_1m"),
            d.get("governor", ""),
            d.get("steal_pct"),
            d.get("guest_lock_wait_s"),
            d.get("other_guests"),
        )

    def to_json(self) -> dict[str, Any]:
        """What is known, in the order boot.json has always had it."""
        return {
            k: v
            for k, v in (
                ("loadavg_1m", self.loadavg_1m),
                ("governor", self.governor),
                ("steal_pct", self.steal_pct),
                ("guest_lock_wait_s", self.guest_lock_wait_s),
                ("other_guests", self.other_guests),
            )
            if v not in (None, "")
        }


@dataclass
class BootResult:
    """One boot as the host saw it."""

    status: BootStatus
    exit_code: int | None  # the job's exit code, if it got that far
    issues: list[str]  # kernel issues seen on the console
    console: Path
    results: Path
    elapsed: float
    records: list[str] = field(default_factory=list)
    cpu_s: float | None = None  # QEMU's user + system CPU time
    host: HostLoad = field(default_factory=HostLoad)
    # why the boot ended as it did, in the executor's (or QEMU's) words,
    # where the job's own end did not say: also the last of ``issues``;
    # "" for a boot that ran its job, or ended with no word
    why_ended: str = ""

    def __post_init__(self) -> None:
        self.status = BootStatus(self.status)  # a bad name fails here

    @property
    def clean(self) -> bool:
        """Booted, ran the job to the end, and the kernel said nothing bad."""
        return self.status is BootStatus.OK and not self.issues

    def describe(self) -> str:
        what = str(self.status)
        if self.issues:
            what += " with " + ", ".join(self.issues)
        return what


def read_boot(rundir: Path) -> BootResult | None:
    """The BootResult a finished boot in ``rundir`` had, from its files
    (None if the boot never finished: no boot.json; outcome.judge writes
    it)."""
    path = rundir / BOOT_FILE
    if not path.exists():
        return None
    d = read_json(
        path,
        ("status", "exit_code", "issues", "console", "results", "elapsed"),
    )
    f = records.Fields(path, d, boot_hint(rundir))
    name = f.string("results")
    if "/" in name or name in ("", ".", ".."):
        f.wrong("results", "a file name of the boot's own directory")
    results = rundir / name
    lines = (
        records.read_text(
            results, records.RecordKind.GUEST_OUTPUT, boot_hint(rundir)
        ).splitlines()
        if results.exists() or results.is_symlink()
        else []
    )
    try:
        status = BootStatus(f.string("status"))
    except ValueError:
        raise DamagedRunError(
            f"{path}: unknown status {d['status']!r}", hint=boot_hint(rundir)
        ) from None
    host = f.object("host")
    hf = records.Fields(path, host, boot_hint(rundir), "host")
    return BootResult(
        status,
        f.optional_integer("exit_code"),
        f.strings("issues", default=False),
        rundir / f.string("console"),
        results,
        f.number("elapsed", minimum=0),
        lines,
        f.optional_number("cpu_s", minimum=0),
        HostLoad(
            hf.optional_number("loadavg_1m", minimum=0),
            hf.string("governor", ""),
            hf.optional_number("steal_pct"),
            hf.optional_number("guest_lock_wait_s", minimum=0),
            hf.optional_integer("other_guests", minimum=0),
        ),
    )


def boot_hint(rundir: Path) -> str:
    """What to do about a damaged file of the boot in ``rundir``."""
    return (
        f"remove {rundir} and finish the run with `foliolab compare "
        "--resume --out DIR` and the run's options: it boots it again"
    )


def read_json(
    path: Path, keys: tuple[str, ...], hint: str = ""
) -> dict[str, Any]:
    """A run file's JSON object with at least ``keys``; DamagedRunError
    naming the file and what is wrong, never a traceback (``hint``: what
    to do; default, for a boot's file: boot it again)."""
    hint = hint or boot_hint(path.parent)
    return records.read_object(path, records.kind_of(path), keys, hint)


def _proc_stat_cpu() -> list[int]:
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return []


# QEMU's system emulators: qemu-system-x86_64, -aarch64, -arm
QEMU_SYSTEM = "qemu-system"


def qemu_processes() -> set[int]:
    """The ids of the qemu-system processes on the host now, whoever
    started them (another user, a program that is not foliolab, an older
    foliolab without the guests' lock): by the name the kernel keeps
    (/proc/PID/comm, cut to 15 characters) or the name it was started
    under (argv[0] in /proc/PID/cmdline, which ``exec -a`` sets)."""
    found = set()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            comm = (p / "comm").read_text().strip()
            argv0 = (p / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue  # ended meanwhile, or not ours to read
        name = Path(argv0.decode(errors="replace")).name
        if comm.startswith(QEMU_SYSTEM) or name.startswith(QEMU_SYSTEM):
            found.add(int(p.name))
    return found


def host_state() -> dict[str, Any]:
    """What the host looked like as a boot started: its load average, the
    CPU counters steal time is read from, the frequency governor, and
    the guests already running."""
    state: dict[str, Any] = {
        "cpu_ticks": _proc_stat_cpu(),
        "other_guests": len(qemu_processes()),
    }
    try:
        with open("/proc/loadavg") as f:
            state["loadavg_1m"] = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    state["governor"] = (
        gov.read_text().strip() if gov.exists() else "none (no cpufreq)"
    )
    return state


def host_during(
    before: dict[str, Any], guest_lock_wait_s: float | None = None
) -> HostLoad:
    """The host as ``before`` (host_state()) found it, with the share of
    CPU time the hypervisor stole from it while the boot ran (steal is the
    8th field of /proc/stat's cpu line) and the seconds the boot waited
    for the machine's guests' lock."""
    steal = None
    a, b = before.get("cpu_ticks", []), _proc_stat_cpu()
    if len(a) >= 8 and len(b) >= 8:
        total = sum(b) - sum(a)
        steal = round(100.0 * (b[7] - a[7]) / total, 2) if total > 0 else 0.0
    return HostLoad(
        before.get("loadavg_1m"),
        before.get("governor", ""),
        steal,
        guest_lock_wait_s,
        before.get("other_guests"),
    )


class Pass(str, enum.Enum):
    """Which pass a boot belongs to."""

    TIMED = "timed"  # the workload's own times and counters
    COUNT = "count"  # under the counting plugin: exact counts only


@dataclass(frozen=True)
class BootJob:
    """What the measuring half asked one boot to do."""

    seq: int  # the boot's place in the run (derivation order)
    workload: str
    kernel: str  # the kernel's name (a sample's ``variant``)
    pass_: Pass
    first_run: int  # the run number of the boot's first sample
    samples: int
    params: dict[str, str] = field(default_factory=dict)
    arch: str = ""  # the guest's (counting boots read counts by it)
    # the functions a counting boot counted inclusively (the workload's own
    # and --root's): deriving its samples again needs them
    count_roots: list[str] = field(default_factory=list)

    def write(self, rundir: Path) -> None:
        rundir.mkdir(parents=True, exist_ok=True)
        d = asdict(self)
        d["pass"] = d.pop("pass_").value
        (rundir / JOB_FILE).write_text(json.dumps(d, indent=1) + "\n")

    @classmethod
    def read(cls, rundir: Path) -> BootJob:
        path = rundir / JOB_FILE
        d = read_json(
            path, ("seq", "workload", "kernel", "pass", "first_run", "samples")
        )
        f = records.Fields(path, d, boot_hint(rundir))
        try:
            pass_ = Pass(f.string("pass"))
        except ValueError as e:
            raise DamagedRunError(
                f"{path}: {e}", hint=boot_hint(rundir)
            ) from None
        return cls(
            seq=f.integer("seq", minimum=0),
            workload=f.string("workload"),
            kernel=f.string("kernel"),
            pass_=pass_,
            first_run=f.integer("first_run", minimum=0),
            samples=f.integer("samples", minimum=1),
            params={k: str(v) for k, v in f.object("params").items()},
            arch=f.string("arch", ""),
            count_roots=f.strings("count_roots"),
        )


def boot_dirs(out: Path) -> list[Path]:
    """The run's boot directories that have a job.json, in boot order."""
    dirs = [p.parent for p in (out / "raw").glob(f"*/*/{JOB_FILE}")]
    return sorted(dirs, key=lambda d: BootJob.read(d).seq)
