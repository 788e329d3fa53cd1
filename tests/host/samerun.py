"""What two runs of the same block under two executors must share: the
samples (count, validity, which metrics each has) and the report's rows."""

import json

from foliolab.boot import derive


def results(out):
    return json.loads((out / "results.json").read_text())


def assert_same_run(out, qemu_out, samples: int) -> None:
    """``out`` (another executor) gave what ``qemu_out`` gave."""
    got, want = derive.load_samples(out), derive.load_samples(qemu_out)
    assert len(got) == len(want) == samples
    assert all(s.valid for s in got + want)

    def shape(ss):
        return sorted((s.variant, s.run, tuple(sorted(s.values))) for s in ss)

    assert shape(got) == shape(want)

    def rows(o):
        return sorted(
            (r["workload"], r["metric"]) for r in results(o)["summary"]
        )

    assert rows(out) == rows(qemu_out)
