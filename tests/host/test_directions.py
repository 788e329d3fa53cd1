"""Each reclaim counter's better direction, held against what it means in
its workload. A workload that does a fixed amount of work (page out 256
MiB, reclaim 80% of a file) is better for scanning less to do it; one that
runs for a fixed time (stress-ng's vm stressor) is better for reclaiming
and swapping more in that time. A counter the workload fixes by its own
request has no better direction. A new reclaim counter fails here until
its direction is declared below with its reason."""

from foliolab.workloads import WORKLOADS
from foliolab.workloads.model import NO_DIRECTION

FIXED_TIME = "fixed time: more reclaim work done in it is better"
FIXED_WORK = "fixed work: less scanning for the same reclaim is better"
FIXED_BY_REQUEST = "set by the request itself: a change, not better or worse"
WHOLE_FOLIOS = "folios swapped out whole rather than split is better"

# (workload, metric) -> (better, why)
DECLARED = {
    ("dirty-tlb", "pgscan_anon"): ("higher", FIXED_TIME),
    ("dirty-tlb", "pgsteal_anon"): ("higher", FIXED_TIME),
    ("dirty-tlb", "pswpout"): ("higher", FIXED_TIME),
    ("file-reclaim", "pgscan_file"): ("lower", FIXED_WORK),
    ("file-reclaim", "pgsteal_file"): (NO_DIRECTION, FIXED_BY_REQUEST),
    # the files read once are of a fixed size: so is what reclaim must take
    ("lru-file-readonce", "pgscan_file"): ("lower", FIXED_WORK),
    ("pageout", "pswpout"): (NO_DIRECTION, FIXED_BY_REQUEST),
    ("pageout-4k", "pswpout"): (NO_DIRECTION, FIXED_BY_REQUEST),
    ("pageout", "mthp_swpout"): ("higher", WHOLE_FOLIOS),
    # advice=pageout swaps out what it is asked to; the others none
    ("madvise", "pswpout"): (NO_DIRECTION, FIXED_BY_REQUEST),
}

RECLAIM_COUNTERS = ("pgscan", "pgsteal", "pswpout", "swpout")


def reclaim_metrics():
    return {
        (w.name, m.key): m.better
        for w in WORKLOADS.values()
        for m in w.metrics
        if m.key.startswith(RECLAIM_COUNTERS)
        or m.key in ("pswpout", "mthp_swpout")
    }


def test_every_reclaim_counter_has_its_declared_direction():
    found = reclaim_metrics()
    undeclared = sorted(set(found) - set(DECLARED))
    assert not undeclared, f"declare their direction and why: {undeclared}"
    assert not set(DECLARED) - set(found), "a declared counter is gone"
    wrong = {
        k: (found[k], DECLARED[k][0])
        for k in found
        if found[k] != DECLARED[k][0]
    }
    assert not wrong, wrong


def test_one_meaning_one_direction():
    """The same reason never gives two directions to one counter."""
    seen: dict[tuple[str, str], str] = {}
    for (_, metric), (better, why) in DECLARED.items():
        family = metric.split("_")[0]
        assert seen.setdefault((family, why), better) == better, metric
