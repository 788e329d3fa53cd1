"""Every registered workload's contract, on real guest output: its derive
function, run on its captured boots (its folder's fixture/, a run
directory read as `foliolab report` reads it; and the A/A pageout run of
tests/host/data, the reports' fixture), gives the metrics it declares and
exactly the samples recorded in the run's expected.jsonl.

expected.jsonl was written from the derive functions as they were when the
boots were captured; a derive function changed on purpose writes it again:
``python tests/host/test_workload_contract.py --write``.
"""

import json
import sys
from pathlib import Path

import pytest

from foliolab import workloads
from foliolab.boot import derive
from foliolab.boot.derive import Sample

DATA = Path(__file__).parent / "data"
# Real boots kept as run directories (each README names the foliolab run
# they came from): each workload folder's fixture (a timed boot of each of
# its workloads, and a counting boot of each but khugepaged's, whose is
# 12 MB of trace), and the A/A pageout run (timed and counting).
CAPTURED_RUNS = (*workloads.fixtures(), DATA / "run-pageout-aa")


def contract(s: Sample) -> dict:
    """What a sample's derive decides, without where the run lay."""
    return {
        "workload": s.workload,
        "variant": s.variant,
        "run": s.run,
        "values": s.values,
        "valid": s.valid,
        "reasons": s.reasons,
        "count_window": s.count_window,
        "roots_follow_tasks": s.roots_follow_tasks,
    }


def derived(run: Path) -> list[dict]:
    return [contract(s) for s in derive.rederive(run) or []]


def expected(run: Path) -> list[dict]:
    lines = (run / "expected.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def captured() -> dict[Path, list[dict]]:
    return {run: derived(run) for run in CAPTURED_RUNS}


@pytest.mark.parametrize(
    "run",
    CAPTURED_RUNS,
    ids=[
        r.parent.name if r.name == "fixture" else r.name for r in CAPTURED_RUNS
    ],
)
def test_captured_boots_derive_the_expected_samples(run, captured):
    assert captured[run] == expected(run)


# Workloads with no captured boot yet, and why. Their case is expected to
# fail, strictly: once a boot is captured the mark fails, to be removed.
NOT_CAPTURED: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            n,
            marks=pytest.mark.xfail(
                strict=True, reason="no captured boot: " + NOT_CAPTURED[n]
            ),
        )
        if n in NOT_CAPTURED
        else n
        for n in workloads.WORKLOADS
    ],
)
def test_every_workload_derives_every_metric_it_declares(name, captured):
    """Each workload has a captured timed boot, valid, and every timed
    metric it declares comes from one of them; its counting boots (when
    captured) are valid."""
    w = workloads.WORKLOADS[name]
    mine = [
        s for run in captured.values() for s in run if s["workload"] == name
    ]
    timed = [s for s in mine if s["count_window"] < 0]
    assert timed, (
        f"no captured boot of {name}: copy a raw boot directory "
        f"of a foliolab run to its folder's fixture/raw/{name}/, "
        f"name the run in fixture/README.md, and write "
        f"expected.jsonl (see this module's docstring)"
    )
    for s in mine:
        assert s["valid"], s["reasons"]
    # a metric of one setting (dirty-tlb's stress-ng rate, its threaded
    # writer's) is derived by that setting's boot
    derived_somewhere = {k for s in timed for k in s["values"]}
    missing = {m.key for m in w.metrics if not m.counted} - derived_somewhere
    assert not missing, f"{name} declares but never derives {missing}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write")
    for run in CAPTURED_RUNS:
        (run / "expected.jsonl").write_text(
            "".join(json.dumps(s) + "\n" for s in derived(run))
        )
