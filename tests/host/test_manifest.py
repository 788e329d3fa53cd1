"""manifest.py: the run's record, written and read back."""

import dataclasses
import json
from pathlib import Path

import pytest

from foliolab import errors
from foliolab.errors import DamagedRunError
from foliolab.executors import QemuExecutor
from foliolab.executors.base import ExecutorRecord
from foliolab.executors.lava.local import LavaLocalExecutor
from foliolab.executors.lava.server import LavaServerExecutor
from foliolab.kernel.build import Kernel
from foliolab.kernel.specs import parse_kernel
from foliolab.kernelrecord import (
    BuildRecord,
    KernelRecord,
    SeriesRecord,
    SpecRecord,
    given_record,
    plain,
)
from foliolab.manifest import HostRecord, RunManifest


def manifest(**kw):
    d = dict(
        command=["foliolab", "compare"],
        foliolab="0.1.0 (x)",
        started="2026-11-24T00:00:00+00:00",
        host=HostRecord(cpus=2),
        arch="x86_64",
        accel="tcg",
        vcpus=2,
        cpu="max",
        numa_nodes=1,
        config="perf",
        base_package="linux-source-6.12",
        base_version="6.12.117-1~deb12u1",
        patches_label="x",
        kernels=[],
        runs=2,
        samples_per_boot=1,
        workloads=["pageout"],
        params={"pageout": {"size_mb": "256"}},
        memory_mb={"pageout": 3072},
        numa_nodes_per_workload={"pageout": 1},
    )
    d.update(kw)
    return RunManifest(**d)


def test_a_kernel_is_recorded_with_every_field_its_classes_have(tmp_path):
    """The build's and the spec's fields go in as they are, so fields a
    later build.Kernel gains (a version, a package's sha256) are kept
    without a change here."""

    @dataclasses.dataclass(frozen=True)
    class NewerKernel(Kernel):
        version: str = "6.12.117"
        source: dict = dataclasses.field(
            default_factory=lambda: {"deb_sha256": "ab12"}
        )

    k = NewerKernel(
        "a",
        "perf",
        "x86_64",
        Path("/b"),
        Path("/b/bzImage"),
        "c0ffee",
        "5ha",
        12.5,
    )
    spec = parse_kernel("a=base")
    m = manifest(
        kernels=[
            KernelRecord(
                "a",
                "base",
                given_record(spec),
                BuildRecord.from_json(plain(k)),
            )
        ]
    )
    m.write(tmp_path)
    d = json.loads((tmp_path / "environment.json").read_text())
    # results.json's keys as before, and the records beside them
    assert d["kernels"] == ["a"] and d["kernel_specs"] == {"a": "base"}
    assert d["commits"] == {"a": "c0ffee"} and d["config_sha"] == {"a": "5ha"}
    (rec,) = d["kernel_records"]
    assert rec["built"]["version"] == "6.12.117"
    assert rec["built"]["source"] == {"deb_sha256": "ab12"}
    assert rec["built"]["image"] == "/b/bzImage"
    assert rec["given"]["kind"] == "base"
    back = RunManifest.read(tmp_path)
    assert back.kernels[0].build_hash == ("c0ffee", "5ha")
    assert back.kernels[0].built.more["version"] == "6.12.117"
    assert back.kernels[0].built.image == "/b/bzImage"
    assert back.to_json() == d


def test_a_series_kernel_records_its_series_and_the_tree_it_went_on(tmp_path):
    series = SeriesRecord(
        "patches/7.3",
        4,
        "0123456789abcdef",
        "debian:7.3",
        "linux-source-7.3 7.3.4-1~bpo13+1",
        "c0ffee",
        ["a" * 64, "b" * 64, "c" * 64, "d" * 64],
    )
    m = manifest(
        kernels=[
            KernelRecord("up", "debian:7.3"),
            KernelRecord("next", "debian:7.3+patches/7.3:4", series=series),
        ]
    )
    m.write(tmp_path)
    d = json.loads((tmp_path / "environment.json").read_text())
    assert d["kernel_records"][1]["series"] == {
        "directory": "patches/7.3",
        "patches": 4,
        "sha": "0123456789abcdef",
        "onto": "debian:7.3",
        "tree": "linux-source-7.3 7.3.4-1~bpo13+1",
        "commit": "c0ffee",
        "patch_sha256": ["a" * 64, "b" * 64, "c" * 64, "d" * 64],
    }
    back = RunManifest.read(tmp_path)
    assert back.kernel("next").series == series
    assert back.kernel("up").series is None
    assert back.to_json() == d


def test_a_run_from_before_the_manifest_reads(data):
    m = RunManifest.read(data / "run-pageout-aa")
    assert m.names == ["vanilla", "patched"]
    assert m.kernels[0].commit and m.executor.kind.text == "qemu"
    assert m.command == [] and m.workloads == ["pageout"]


def test_a_manifest_of_the_untyped_records_reads_and_writes_as_before(
    tmp_path,
):
    """environment.json as a run wrote it when a kernel's spec, build,
    host and count were dicts in the manifest (a run of 2026-11-26, cut to
    one kernel): every field reads into its record and the file comes
    back key for key."""
    old = {
        "foliolab": "0.1.0 (0df9abb)",
        "started": "2026-11-26T10:00:00+00:00",
        "host": {"kernel": "6.18.44", "cpus": 2, "machine": "x86_64"},
        "arch": "x86_64",
        "accel": "tcg",
        "vcpus": 2,
        "cpu": "max",
        "numa_nodes": 1,
        "config": "perf",
        "base_package": "linux-source-6.12",
        "base_version": "6.12.117-1~deb12u1",
        "patches_label": "p",
        "runs": 2,
        "samples_per_boot": 1,
        "workloads": ["pageout"],
        "params": {"pageout": {"size_mb": "32"}},
        "memory_mb": {"pageout": 3072},
        "numa_nodes_per_workload": {"pageout": 1},
        "fault_injection": None,
        "records_on": "port",
        "executor": {
            "kind": "qemu",
            "device_type": "",
            "tags": [],
            "lava_version": "",
            "rounds_per_block": 0,
            "server": "",
            "artifacts_url": "",
        },
        "count": {
            "plugin": "/c/libcounter.so",
            "plugin_api": 1,
            "mode": "per-vCPU",
            "roots": "per vCPU",
            "cmdline": "nokaslr",
        },
        "qemu": "QEMU emulator version 7.2.22",
        "image": "ab12",
        "patches": [],
        "attribution": {},
        "extra_roots": [],
        "timeout": None,
        "monitors": False,
        "errors": [],
        "failures": [],
        "stopped": "",
        "resumed": [],
        "finished": "",
        "command_line": ["foliolab", "compare", "--count"],
        "kernels": ["next"],
        "kernel_specs": {"next": "base+patches/7.3:4"},
        "kernel_records": [
            {
                "name": "next",
                "spec": "base+patches/7.3:4",
                "given": {
                    "name": "next",
                    "kind": "series",
                    "text": "base+patches/7.3:4",
                    "series_dir": "patches/7.3",
                    "prefix": 4,
                    "repo": None,
                    "ref": "",
                    "image": None,
                    "debian_version": "",
                    "onto": None,
                    "series_sha": "5e7e5",
                },
                "built": {
                    "variant": "next",
                    "purpose": "perf",
                    "arch": "x86_64",
                    "build_dir": "/b",
                    "image": "/b/bzImage",
                    "commit": "c0ffee",
                    "config_sha": "5ha",
                    "elapsed": 12.5,
                    "origin": "",
                    "release": "6.12.117",
                },
                "series": None,
            }
        ],
        "commits": {"next": "c0ffee"},
        "config_sha": {"next": "5ha"},
        "build_seconds": {"next": 12.5},
    }
    (tmp_path / "environment.json").write_text(json.dumps(old))
    m = RunManifest.read(tmp_path)
    assert m.host == HostRecord("6.18.44", 2, "x86_64")
    assert m.count.cmdline == "nokaslr" and m.count.plugin_api == 1
    (k,) = m.kernels
    assert k.built.release == "6.12.117" and k.built.elapsed == 12.5
    assert k.given.fields["prefix"] == 4 and k.series_sha == "5e7e5"
    assert k.build_hash == ("c0ffee", "5ha")
    assert m.to_json() == old


def test_a_lab_run_names_its_accelerator_by_the_lab(tmp_path):
    m = manifest(accel="lava")
    m.executor = ExecutorRecord(LavaServerExecutor.kind, device_type="qemu")
    assert m.to_json()["accel"] == "lava qemu"


def _lava_opts(**kw):
    from foliolab.executors.lava.job import LavaOptions, Target

    return LavaOptions(Target("qemu", ("rpi",)), **kw)


@pytest.mark.parametrize(
    "cls, opts, details",
    [
        (QemuExecutor, None, {}),
        (
            LavaLocalExecutor,
            {},
            {"device_type": "qemu", "tags": ["rpi"], "rounds_per_block": 2},
        ),
        (
            LavaServerExecutor,
            {"url": "https://lab.example", "artifacts_url": "http://f.x/a"},
            {
                "device_type": "qemu",
                "tags": ["rpi"],
                "rounds_per_block": 2,
                "server": "https://lab.example",
                "artifacts_url": "http://f.x/a",
            },
        ),
    ],
)
def test_each_executor_writes_its_record_as_before_and_reads_it_back(
    tmp_path, cls, opts, details
):
    """An executor's record is its kind and its class's own details; in
    environment.json it keeps the one shape every manifest has had (every
    key, in its order, empty where the executor has no such detail), and
    its class reads the details back."""
    from foliolab.executors.lava.debs import LAVA_VERSION

    rec = cls.record(cls.options(None) if opts is None else _lava_opts(**opts))
    expected = {
        "kind": cls.kind.text,
        "device_type": "",
        "tags": [],
        "lava_version": LAVA_VERSION if details else "",
        "rounds_per_block": 0,
        "server": "",
        "artifacts_url": "",
        **details,
    }
    m = manifest()
    m.executor = rec
    m.write(tmp_path)
    text = (tmp_path / "environment.json").read_text()
    assert json.dumps(json.loads(text)["executor"]) == json.dumps(expected)
    back = RunManifest.read(tmp_path).executor
    assert back.kind is cls.kind and back.details == rec.details
    assert back.to_json() == expected


def test_the_report_says_how_the_boots_ran_in_their_executors_words():
    """render asks the registry, which asks the class of the record's
    kind: QEMU here says nothing, LAVA its version, device and server."""
    from foliolab.executors.lava.debs import LAVA_VERSION
    from foliolab.render import executor_note

    m = manifest()
    assert executor_note(m) == ""
    m.executor = LavaLocalExecutor.record(_lava_opts())
    assert executor_note(m) == (
        f"; boots run as LAVA {LAVA_VERSION} jobs (lava-local, device type "
        "qemu, this machine), records on the console"
    )
    m.executor = LavaServerExecutor.record(
        _lava_opts(url="https://lab.example")
    )
    assert "(lava, device type qemu, https://lab.example)" in executor_note(m)
    m.executor = ExecutorRecord(LavaServerExecutor.kind)
    assert executor_note(m) == "; boots run by the lava executor"


def test_the_executor_kind_is_read_as_its_kind_and_written_as_its_text(
    tmp_path,
):
    """environment.json keeps the kind's text; a manifest read back has
    the registry's kind (an old manifest without an executor ran QEMU),
    and a kind no executor has is a damaged run, named by its file."""
    m = manifest(accel="lava")
    m.executor.kind = LavaLocalExecutor.kind
    m.write(tmp_path)
    d = json.loads((tmp_path / "environment.json").read_text())
    assert d["executor"]["kind"] == "lava-local"
    assert RunManifest.read(tmp_path).executor.kind is LavaLocalExecutor.kind
    del d["executor"]
    assert RunManifest.from_json(d).executor.kind is QemuExecutor.kind
    d["executor"] = {"kind": "pigeon"}
    (tmp_path / "environment.json").write_text(json.dumps(d))
    with pytest.raises(
        DamagedRunError, match="environment.json: a field has the wrong form"
    ):
        RunManifest.read(tmp_path)


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"workloads": ["pageout"], "kernels": 3}', "field 'kernels'"),
        ('["not", "a", "run"]', "not a JSON object"),
        ('{"runs": 2}', "no workloads"),
    ],
)
def test_a_damaged_manifest_is_named(tmp_path, text, says):
    (tmp_path / "environment.json").write_text(text)
    with pytest.raises(errors.DamagedRunError, match=says):
        RunManifest.read(tmp_path)


# ---- reproduce: the command and kernels a report names ----------------------


def test_a_written_command_for_a_run_that_recorded_none(data):
    from foliolab.analysis import reproduce

    m = RunManifest.read(data / "run-pageout-aa")
    assert reproduce.line(m) == (
        "foliolab compare --kernel vanilla=base --kernel patched=base "
        "--workloads pageout --runs 2 --arch x86_64 --config perf --count "
        "--param pageout.size_mb=32"
    )
    assert reproduce.same_kernel(m)
    assert reproduce.kernel_note(m, "vanilla") == (
        "vanilla=base: commit 9dc52e640653"
    )


@pytest.mark.parametrize(
    "command, line",
    [
        (
            ["foliolab", "compare", "--patches", "none", "--runs", "4"],
            "foliolab compare --kernel vanilla=base --kernel patched=base+p "
            "--runs 4",
        ),
        (
            ["foliolab", "compare", "--patches=p", "--runs", "4"],
            "foliolab compare --kernel vanilla=base --kernel patched=base+p "
            "--runs 4",
        ),
        (
            ["foliolab", "compare", "--kernel", "a=base", "--runs", "4"],
            "foliolab compare --kernel a=base --runs 4",
        ),
        (
            ["foliolab", "attribute", "--at", "4", "--runs", "4"],
            "foliolab attribute --at 4 --runs 4",
        ),
    ],
)
def test_the_command_names_every_kernel(data, command, line):
    """A compare run's command with its kernels spelled out (--patches and
    the default mean this checkout's series); other commands as given."""
    from foliolab.analysis import reproduce

    m = RunManifest.read(data / "run-pageout-aa")
    m.command = command
    m.kernels[1].spec = "base+p"
    m.kernels[1].given = SpecRecord(series_sha="5e7e5")
    m.kernels[1].built = BuildRecord(commit="c0ffee" * 4, release="6.12.117")
    assert reproduce.line(m) == line
    assert not reproduce.same_kernel(m)
    assert reproduce.kernel_note(m, "patched") == (
        "patched=base+p: 6.12.117, commit c0ffeec0ffee, series sha 5e7e5"
    )


@pytest.mark.parametrize(
    "run",
    [
        "results-612-r7-count",
        "results-73-r2-count",
        "results-73-r2-count-b",
        "sweep-612-pageout",
    ],
)
def test_a_spec_is_recorded_as_the_recorded_runs_wrote_it(
    data, monkeypatch, run
):
    """Each kernel's ``given`` reads back and is written again key for
    key, in order; a spec parsed today is written as the run wrote it
    (its series' sha aside: the series in patches/ has moved on)."""
    root = Path(__file__).resolve().parents[2]
    d = json.loads((data / "runs" / run / "environment.json").read_text())
    monkeypatch.chdir(root)
    for rec in d["kernel_records"]:
        given = rec["given"]
        back = SpecRecord.from_json(given)
        assert json.dumps(back.to_json()) == json.dumps(given)
        if (
            given["kind"] == "series"
            and not Path(given["series_dir"]).is_dir()
        ):
            continue  # a series of another machine
        now = given_record(parse_kernel(f"{rec['name']}={rec['spec']}"))
        now.series_sha = given.get("series_sha", "")
        assert json.dumps(now.to_json()) == json.dumps(given)


def test_every_source_writes_the_fields_it_always_wrote(tmp_path):
    """The first sources' records keep one layout, whatever their kind: a
    run recorded before reads back, and one recorded now reads as
    before."""
    img = tmp_path / "bzImage"
    series = tmp_path / "s"
    series.mkdir()
    # one patch: an empty series is refused where it is read
    (series / "series").write_text("0001.patch\n")
    (series / "0001.patch").write_text("--- a/x\n+++ b/x\n")
    keys = [
        "name",
        "kind",
        "text",
        "series_dir",
        "prefix",
        "repo",
        "ref",
        "image",
        "debian_version",
        "onto",
    ]
    for spec, kind, own in (
        ("base", "base", {}),
        ("git:/src/linux@v7.3", "git", {"repo": "/src/linux", "ref": "v7.3"}),
        ("debian:7.3", "debian", {"debian_version": "7.3"}),
        (f"image:{img}", "image", {"image": str(img)}),
        (f"base+{series}:0", "series", {"series_dir": str(series)}),
    ):
        d = given_record(parse_kernel(f"k={spec}")).to_json()
        assert list(d)[: len(keys)] == keys and d["kind"] == kind
        assert {k: d[k] for k in own} == own
    d = given_record(parse_kernel(f"k=git:/src/linux@v7.3+{series}")).to_json()
    assert d["onto"]["kind"] == "git" and d["onto"]["name"] == "k"
    assert d["series_sha"] and d["prefix"] is None
