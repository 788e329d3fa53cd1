"""stutterp: mmap latency under reclaim (mmaplatency.c, run by
stutterp.sh): one task times rounds of mmap, a write to every page, and
munmap while others keep its memcg in reclaim; what mmtests'
pagereclaim-stutterp reports as its primary metric, mmap latency.

Where it differs from mmtests (whose program is not used): there, with
THP off, one part uses a lot of anonymous memory, one copies a large
file and one measures mmap latency, all against the whole machine's
memory; here all three run in a memcg of ``memcg_mb`` (anonymous
pressure of ``pressure_pct``% of it swapping to zram, a file of
``file_mb`` rewritten on XFS on a brd ramdisk), the measured rounds
begin once the memcg has met its limit, and last ``seconds``. Its
samples are not held to a captured boot yet (no fixture; the contract
test names it as missing).

Not counted (``--count``): it marks no window, on purpose. A window is
the machine's, every vCPU's kernel work between its marks, so a window
round the measured rounds would hold the pressure tasks' work too, most
of it (their faults, swap-outs and writeback), in proportions that
follow the scheduling of a run bounded in time, which the counter slows:
a count per round would count the pressure. Nor does a root single the
measured task out: handle_mm_fault and reclaim's functions count
whichever task enters them, and the pressure enters them all the time;
only mmap and munmap are the measured task's alone, and its rounds meet
reclaim in their faults, not there. What stutterp measures, latency
under concurrent pressure, is a time. A counting run (``--count``) gives
it no counting boot (boot/measure.py, plan()): it is timed there as in
any run, and the report gives its timed metrics alone."""

from __future__ import annotations

from foliolab.guestdata import parse
from foliolab.guestdata.parse import GuestSample
from foliolab.workloads.checks import (
    common_checks,
    copy_metrics,
    counter_deltas,
)
from foliolab.workloads.model import (
    NO_DIRECTION,
    Derived,
    Metric,
    Param,
    Workload,
)

# mmtests' pagereclaim-stutterp: mmap latency (here the mean of a round's
# mmap + write + munmap, microseconds).
LEAD = "stutterp.mmap_latency"
STATS = ("p50", "p90", "p99", "max")
# Rounds a sample needs, at least, for its percentiles to mean anything.
MIN_ROUNDS = 20


def derive_stutterp(s: GuestSample, params: dict[str, str]) -> Derived:
    d = Derived()
    common_checks(s, d, need_swap=True)
    copy_metrics(s, d, (f"mmap_us_{st}" for st in STATS))
    copy_metrics(s, d, ("limit_ms", "anon_mb", "file_mb"))
    if "mmap_us_mean" not in s.metrics:
        d.invalid.append("mmaplatency reported no latencies")
        return d
    d.values[LEAD] = s.metrics["mmap_us_mean"]
    rounds = s.metrics.get("rounds", 0)
    if rounds < MIN_ROUNDS:
        d.invalid.append(f"{rounds:.0f} rounds, fewer than {MIN_ROUNDS}")
    if not s.metrics.get("anon_mb"):
        d.invalid.append("the anonymous pressure wrote nothing meanwhile")
    if int(params["file_mb"]) and not s.metrics.get("file_mb"):
        d.invalid.append("the file pressure wrote nothing meanwhile")
    events = counter_deltas(s, "memcg_events", parse.parse_memcg)
    stat = counter_deltas(s, "memcg_stat", parse.parse_memcg)
    if events.get("oom_kill"):
        d.invalid.append(f"{events['oom_kill']} memcg OOM kill(s)")
    if not events or not stat:
        d.invalid.append("the memcg's counters are missing")
        return d
    d.values["memcg_pgscan"] = stat.get("pgscan", 0)
    d.values["memcg_pgsteal"] = stat.get("pgsteal", 0)
    if not events.get("max"):
        d.invalid.append(
            "the memcg limit was never reached (memory.events max "
            "did not move)"
        )
    elif not stat.get("pgsteal"):
        d.invalid.append("no reclaim in the memcg (memory.stat pgsteal)")
    return d


STUTTERP = Workload(
    name="stutterp",
    title=f"mmtests pagereclaim-stutterp: mmap latency under reclaim ({LEAD})",
    script="stutterp",
    params={
        "memcg_mb": Param.integer(
            "64", "memory.max of the memcg everything runs in", 16, 1024
        ),
        "pressure_pct": Param.integer(
            "150",
            "anonymous memory the pressure writes over and over, percent "
            "of memcg_mb (over 100: it swaps)",
            110,
            400,
        ),
        "file_mb": Param.integer(
            "32",
            "MiB of a file rewritten over and over meanwhile (0: none)",
            0,
            1024,
        ),
        "map_kb": Param.integer(
            "256",
            "KiB mapped, written a byte a page and unmapped a round",
            4,
            65536,
        ),
        "seconds": Param.integer("10", "seconds of measured rounds", 1, 120),
    },
    metrics=(
        Metric(
            LEAD,
            "us",
            "lower",
            "a round (mmap, a write a page, munmap), mean of the sample's",
        ),
        *(
            Metric(
                f"mmap_us_{st}",
                "us",
                "lower",
                f"a round: {'the slowest' if st == 'max' else st}",
                primary=st == "p99",
            )
            for st in STATS
        ),
        Metric(
            "limit_ms",
            "ms",
            NO_DIRECTION,
            "from the pressure's start to the memcg meeting memory.max",
            primary=False,
        ),
        Metric(
            "anon_mb",
            "MiB",
            "higher",
            "written by the anonymous pressure during the rounds",
            primary=False,
        ),
        Metric(
            "file_mb",
            "MiB",
            "higher",
            "written by the file pressure during the rounds",
            primary=False,
        ),
        Metric(
            "memcg_pgscan",
            "pages",
            NO_DIRECTION,
            "pages the memcg's reclaim scanned (memory.stat pgscan)",
            primary=False,
        ),
        Metric(
            "memcg_pgsteal",
            "pages",
            NO_DIRECTION,
            "pages the memcg's reclaim took (memory.stat pgsteal)",
            primary=False,
        ),
    ),
    derive=derive_stutterp,
    cmdline=("brd.rd_nr=1", "brd.rd_size=2097152"),
    timeout=300,
    # its fixture's boot under TCG (defaults, beside an mm CI guest's
    # boots): 25.8 s
    tcg_boot_s=25.8,
)

WORKLOADS = (STUTTERP,)
