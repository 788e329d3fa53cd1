"""LAVA jobs: generated, checked against LAVA's own schema, and their logs
read back into a run directory that `foliolab report` reads."""

import datetime as dt
import io
import json
import shutil
import subprocess
import tarfile
from dataclasses import replace

import pytest

from foliolab import cli, errors
from foliolab.arch import get_arch
from foliolab.boot import derive, outcome
from foliolab.commands import measure as measure_cmd
from foliolab.executors.base import BlockRequest, BootRequest, BootSpec, JobEnd
from foliolab.executors.lava import definition as lava
from foliolab.executors.lava.log import JobLog
from foliolab.guestdata import parse
from foliolab.kernel.build import Kernel
from foliolab.paths import GUEST_DIR
from foliolab.run import orchestrate
from foliolab.run import record as runrecord
from foliolab.workloads import WORKLOADS


def _block(tmp_path, names=("base", "all"), arch="x86_64"):
    boots = []
    for r, order in enumerate((names, names[::-1])):
        for n in order:
            image = tmp_path / n / "bzImage"
            image.parent.mkdir(exist_ok=True)
            image.write_bytes(f"kernel {n}".encode())
            spec = BootSpec(
                get_arch(arch),
                image,
                memory_mb=3072,
                timeout=240.0,
                cmdline=("page_table_check=on",),
            )
            boots.append(
                BootRequest(
                    f"pageout/{n}-{r:03d}",
                    spec,
                    "echo job\n",
                    tmp_path / "raw" / n,
                )
            )
    return BlockRequest("pageout-0", "pageout", tuple(boots))


def _ramdisk(tmp_path):
    path = tmp_path / "x86_64-base.cpio"
    path.write_bytes(b"070701 base ramdisk")
    return path


def test_a_block_is_one_valid_qemu_job(tmp_path):
    block = _block(tmp_path)
    store = lava.Artifacts(tmp_path / "art", "https://lab.example/a")
    job = lava.block_job(block, lava.Target(), store, _ramdisk(tmp_path))
    lava.validate(job)
    kinds = [next(iter(a)) for a in job["actions"]]
    assert kinds == ["deploy", "boot", "test"] * 4
    assert len({a[k]["namespace"] for a in job["actions"] for k in a}) == 4
    assert job["metadata"]["foliolab.boots"] == (
        "pageout/base-000,pageout/all-000,pageout/all-001,pageout/base-001"
    )
    kernel = job["actions"][0]["deploy"]["images"]["kernel"]
    assert "foliolab.boot=pageout/base-000" in kernel["image_arg"]
    assert "panic=1" in kernel["image_arg"]
    assert "console=ttyS0" in kernel["image_arg"]
    # the machine foliolab boots, which LAVA's amd64 template leaves out
    extra = job["context"]["extra_options"]
    assert "-no-reboot" in extra and "-machine q35" in extra
    assert "-cpu max" in extra and job["context"]["memory"] == 3072
    # artifacts are stored once under their content and referenced by sum
    files = sorted(p.name for p in (tmp_path / "art").iterdir())
    assert len(files) == 2 + 1 + 4  # two kernels, ramdisk, four jobs
    assert kernel["url"].startswith("https://lab.example/a/")
    name = kernel["url"].rsplit("/", 1)[1]
    import hashlib

    assert (
        hashlib.sha256((tmp_path / "art" / name).read_bytes()).hexdigest()
        == kernel["sha256sum"]
    )


def test_a_counting_boot_loads_the_plugin_into_its_own_qemu(tmp_path):
    """lava-local counts: each counting boot's QEMU loads foliolab's
    plugin, its counts written to that boot's own run directory (its
    kernel image_arg; the job's context is shared by the block's boots),
    booted without KASLR; a boot that does not count is as before."""
    from foliolab.counting import Counter
    from foliolab.executors.lava.export import LavaExport
    from foliolab.executors.lava.job import LavaOptions
    from foliolab.executors.lava.local import LavaLocalExecutor
    from foliolab.executors.lava.server import LavaServerExecutor

    plain = _block(tmp_path)
    counter = Counter(
        tmp_path / "libcounter.so", tmp_path / "syms.txt", ("try_to_unmap",)
    )
    counted = replace(
        plain,
        boots=tuple(
            replace(b, spec=replace(b.spec, counter=counter)) if i % 2 else b
            for i, b in enumerate(plain.boots)
        ),
    )
    store = lava.Artifacts(tmp_path / "art", "file:///a")
    job = lava.block_job(counted, lava.Target(), store, _ramdisk(tmp_path))
    lava.validate(job)
    before = lava.block_job(plain, lava.Target(), store, _ramdisk(tmp_path))
    assert job["context"] == before["context"]
    deploys = [a["deploy"] for a in job["actions"] if "deploy" in a]
    args = [d["images"]["kernel"]["image_arg"] for d in deploys]
    plain_args = [
        a["deploy"]["images"]["kernel"]["image_arg"]
        for a in before["actions"]
        if "deploy" in a
    ]
    for i, (arg, boot) in enumerate(zip(args, counted.boots)):
        if i % 2 == 0:
            assert arg == plain_args[i] and "-plugin" not in arg
            continue
        out = (boot.rundir / "counts.txt").resolve()
        assert arg.endswith(
            f" -plugin {tmp_path / 'libcounter.so'},"
            f"symbols={tmp_path / 'syms.txt'},out={out},root=try_to_unmap"
        )
        assert "nokaslr" in arg.split('"')[1]
    # lava-local takes --count; a lab's QEMU and `jobs export`'s cannot
    # write counts here
    LavaLocalExecutor.check(LavaOptions(), count=False)
    if __import__("os").geteuid() == 0:
        LavaLocalExecutor.check(LavaOptions(), count=True)
    for cls in (LavaServerExecutor, LavaExport):
        with pytest.raises(errors.UsageError, match="--count needs"):
            cls.check(LavaOptions(), count=True)


def test_a_board_job_boots_by_u_boot_and_is_valid(tmp_path):
    dtb = tmp_path / "bcm2711-rpi-4-b.dtb"
    dtb.write_bytes(b"\xd0\x0d\xfe\xed")
    target = lava.Target("bcm2711-rpi-4-b", ("rpi4-01",), dtb)
    target.check()
    job = lava.block_job(
        _block(tmp_path, arch="arm64"),
        target,
        lava.Artifacts(tmp_path / "art", "http://h/a"),
        _ramdisk(tmp_path),
    )
    lava.validate(job)
    deploy = job["actions"][0]["deploy"]
    assert deploy["to"] == "tftp" and deploy["ramdisk"]["header"] == "u-boot"
    assert job["actions"][1]["boot"]["method"] == "u-boot"
    assert job["tags"] == ["rpi4-01"]
    args = job["context"]["extra_kernel_args"]
    assert "panic=0" in args and "rdinit=/init" in args
    assert "page_table_check=on" in args and "foliolab.boot" not in args


def test_lava_schema_refuses_a_broken_job(tmp_path):
    job = lava.block_job(
        _block(tmp_path),
        lava.Target(),
        lava.Artifacts(tmp_path / "art", "http://h"),
        _ramdisk(tmp_path),
    )
    del job["actions"][2]["test"]["monitors"][0]["end"]
    with pytest.raises(errors.LavaError, match="LAVA refuses job"):
        lava.validate(job)


def test_an_arm64_qemu_job_names_its_machine_and_cpu(tmp_path):
    job = lava.block_job(
        _block(tmp_path, arch="arm64"),
        lava.Target(),
        lava.Artifacts(tmp_path / "art", "http://h"),
        _ramdisk(tmp_path),
    )
    lava.validate(job)
    ctx = job["context"]
    assert ctx["arch"] == "arm64" and ctx["cpu"] == "max"
    assert ctx["machine"] == "virt,gic-version=3,acpi=off"
    assert not any(
        o.startswith(("-cpu", "-machine")) for o in ctx["extra_options"]
    )
    kernel = job["actions"][0]["deploy"]["images"]["kernel"]
    assert "console=ttyAMA0" in kernel["image_arg"]


def test_bad_targets_are_named():
    with pytest.raises(errors.UsageError, match="device tree"):
        lava.Target("bcm2711-rpi-4-b").check()
    with pytest.raises(errors.UsageError, match="device type"):
        lava.Target("rpi 4").check()


def test_job_archive_holds_the_job_and_its_name():
    data = lava.job_tar("echo hi\n", "pageout/base-000")
    assert data == lava.job_tar("echo hi\n", "pageout/base-000")
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        assert tf.extractfile("foliolab/job.sh").read() == b"echo hi\n"
        assert tf.getmember("foliolab/job.sh").mode == 0o755
        assert (
            tf.extractfile("foliolab/boot-id").read() == b"pageout/base-000\n"
        )


# --- a LAVA log, as lava-run writes it ----------------------------------


def _framed(records: str, boot_id: str) -> list[str]:
    out = subprocess.run(
        [
            shutil.which("busybox"),
            "awk",
            "-v",
            f"id={boot_id}",
            "-f",
            str(GUEST_DIR / "frame.awk"),
        ],
        input=records.encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    return out.split("\n")


def _log(boots: list[tuple[str, list[str]]]) -> str:
    """lava-run's YAML log: info lines, then each boot's console lines as
    `lvl: target` records, one second apart."""
    t0 = dt.datetime(2026, 11, 24, 1, 0, 0)
    lines = [
        '- {"dt": "2026-11-24T00:59:59.000000", "lvl": "info", '
        '"msg": "lava-dispatcher, installed at version: 2023.01"}'
    ]
    n = 0
    for boot_id, console in boots:
        lines.append(
            '- {"dt": "%s", "lvl": "info", "msg": "start: 2 '
            'qemu-boot"}' % t0.isoformat()
        )
        for text in [
            "[    0.000000] Linux version 6.12.117 (foliolab)",
            "[    0.000000] Command line: console=ttyS0 panic=1 "
            f"rdinit=/init foliolab.boot={boot_id}",
            *console,
        ]:
            at = t0 + dt.timedelta(seconds=n)
            n += 1
            lines.append(
                "- "
                + json.dumps(
                    {"dt": at.isoformat(), "lvl": "target", "msg": text}
                )
            )
    lines.append(
        '- {"dt": "x", "lvl": "results", "msg": {"definition": '
        '"lava", "case": "job", "result": "pass"}}'
    )
    return "\n".join(lines) + "\n"


def test_split_boots_names_each_boot_by_its_command_line():
    log = _log([("pageout/a-000", ["x"]), ("pageout/b-000", ["y", "z"])])
    parts = JobLog.read(log).boots
    assert [p.boot_id for p in parts] == ["pageout/a-000", "pageout/b-000"]
    assert parts[1].elapsed == 3.0
    assert b"Linux version" in parts[0].console()


def test_a_board_boot_is_named_by_its_records():
    """A board's command line has no boot name (one set per job): the
    guest's @@=begin line names it; a plain console capture works too."""
    console = [
        "U-Boot 2024.01",
        "[    0.0] Linux version 6.12",
        *_framed("@@ exit 0\n", "pageout/a-000"),
        "U-Boot 2024.01",
        "[    0.0] Linux version 6.12",
        "[    9.0] Kernel panic - not syncing: x",
    ]
    parts = JobLog.read("\r\n".join(console)).boots
    assert [p.boot_id for p in parts] == ["pageout/a-000", ""]
    assert parts[0].lines[0].text == "U-Boot 2024.01"


def _stand_in_kernels(tmp_path):
    """Built vanilla and patched kernels, stood in for (nothing is built)."""
    kernels = {}
    for n in ("vanilla", "patched"):
        (tmp_path / n).mkdir(exist_ok=True)
        (tmp_path / n / "bzImage").write_bytes(f"kernel {n}".encode())
        kernels[n] = Kernel(
            n,
            "perf",
            "x86_64",
            tmp_path / n,
            tmp_path / n / "bzImage",
            n * 5,
            "c0ffee",
            0.0,
        )
    return kernels


def stand_in_machine(tmp_path):
    """A prepare for the orchestrator that builds nothing: the kernels and
    the base image stood in for."""

    def prepare(run, m):
        kernels = _stand_in_kernels(tmp_path)
        runrecord.record_builds(m, kernels, run.plan.resume)
        m.image = "d1g3st"
        spec = run.machine.boot_spec(kernels["vanilla"].image, "tcg")
        return orchestrate.Machine(kernels, _ramdisk(tmp_path), spec)

    return prepare


def request(argv):
    """The orchestrator's request for a command line, as cli makes it."""
    args = cli.build_parser().parse_args(argv)
    args.argv = argv
    return measure_cmd._request(
        args, measure_cmd._kernel_args(args), args.patches, {}
    )


@pytest.fixture
def exported(tmp_path):
    """`jobs export` of an A/B pageout run, 2 runs, with the kernels and
    the base image stood in for (nothing is built)."""
    out = tmp_path / "run"
    req = request(
        [
            "jobs",
            "export",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "2",
            "--out",
            str(out),
            "--artifacts-url",
            "http://lab.example/run",
        ]
    )
    text = orchestrate.export(req, stand_in_machine(tmp_path))
    assert "1 LAVA jobs (4 boots)" in text
    return out


def test_export_writes_valid_jobs_and_the_run_directory(exported):
    out = exported
    (path,) = (out / "lava" / "jobs").glob("*.yaml")
    import yaml

    job = yaml.safe_load(path.read_text())
    lava.validate(job)
    assert job["metadata"]["foliolab.boots"] == (
        "pageout/vanilla-000,pageout/patched-000,pageout/patched-001,"
        "pageout/vanilla-001"
    )
    for bid in job["metadata"]["foliolab.boots"].split(","):
        assert (out / "raw" / bid / "job.json").exists()
        assert not (out / "raw" / bid / "boot.json").exists()
    env = json.loads((out / "environment.json").read_text())
    assert env["executor"]["artifacts_url"] == "http://lab.example/run"
    assert env["executor"]["kind"] == "lava" and env["accel"] == "lava qemu"
    assert env["records_on"] == "console"


def test_collect_reads_a_lava_log_into_samples(exported, data, tmp_path):
    """A job's log with real pageout records on the console, one boot
    panicking: the others become valid samples with every timed metric,
    the panic an invalid one, and report reads the run."""
    out = exported
    records = (data / "pageout-results.txt").read_text()
    ids = [
        "pageout/vanilla-000",
        "pageout/patched-000",
        "pageout/patched-001",
        "pageout/vanilla-001",
    ]
    panic = [
        "[   12.0] Kernel panic - not syncing: sysrq triggered crash",
        "[   12.0] ---[ end Kernel panic - not syncing ]---",
    ]
    log = tmp_path / "job-17.log"
    log.write_text(
        _log(
            [
                (
                    i,
                    panic
                    if i == ids[2]
                    else [
                        "[    1.0] Run /init as init process",
                        *_framed(records, i),
                    ],
                )
                for i in ids
            ]
        )
    )
    text = orchestrate.collect(out, [log]).written.text
    assert "pageout_ms" in text
    samples = {
        s.rundir.rsplit("/", 2)[-2] + "/" + s.rundir.rsplit("/")[-1]: s
        for s in derive.load_samples(out)
    }
    assert len(samples) == 4
    # what the same records give through the results port
    w = WORKLOADS["pageout"]
    direct = w.derive(
        parse.parse_records(records.splitlines()).samples[0], w.resolve({})
    )
    assert direct.values and not direct.invalid
    for bid in (ids[0], ids[1], ids[3]):
        s = samples[bid]
        assert s.valid, s.reasons
        assert s.values == direct.values
    assert not samples[ids[2]].valid
    assert "panic" in samples[ids[2]].reasons[0]
    boot = json.loads((out / "raw" / ids[0] / "boot.json").read_text())
    assert boot["status"] == "ok" and boot["executor"]["kind"] == "lava"
    assert boot["ended"] == "exited" and boot["executor"]["log"] == str(log)
    assert (out / "raw" / ids[0] / "results.txt").read_text() == records


def test_collect_refuses_logs_it_cannot_place(exported, tmp_path):
    stray = tmp_path / "stray.log"
    stray.write_text(_log([("ksm-rmap/vanilla-000", ["x"])]))
    with pytest.raises(errors.UsageError, match="not one .* planned"):
        orchestrate.collect(exported, [stray])
    swapped = tmp_path / "swapped.log"
    swapped.write_text(
        _log([("pageout/patched-000", ["x"]), ("pageout/vanilla-000", ["y"])])
    )
    with pytest.raises(
        errors.UsageError,
        match="job pageout-0: its boot 1 is pageout/patched-000, the job has pageout/vanilla-000 there",
    ):
        orchestrate.collect(exported, [swapped])
    empty = tmp_path / "empty.log"
    empty.write_text("nothing\n")
    with pytest.raises(errors.UsageError, match="no boot of a foliolab job"):
        orchestrate.collect(exported, [empty])


def test_lava_run_output_and_a_server_log_read_alike():
    """lava-run writes one JSON object per line; a server's log download
    has the same objects as YAML list items. Both give the console, and
    LAVA's own lines (which quote the monitor's patterns, "Kernel panic"
    among them) never count as console."""
    served = _log([("pageout/a-000", ["[    1.0] Run /init as init process"])])
    served = served.replace(
        '"case": "job", "result": "pass"',
        '"case": "job", "result": "fail", "error_type": '
        '"Test", "error_msg": "lava-test-monitor timed '
        'out after 60 seconds"',
    )
    served = (
        '- {"dt": "x", "lvl": "info", "msg": "Waiting for start '
        "message: Run /init as init process|Kernel panic - not "
        'syncing"}\n'
    ) + served
    local = "".join(line[2:] + "\n" for line in served.splitlines())
    for text in (served, local):
        log = JobLog.read(text)
        lines = [x.text for b in log.boots for x in b.lines]
        assert len(lines) == 3 and "Kernel panic" not in "".join(lines)
        assert log.end is JobEnd.TIMEOUT
        assert log.why == "Test: lava-test-monitor timed out after 60 seconds"
    plain = JobLog.read("plain console\n")
    assert plain.end is JobEnd.CUT and plain.why.startswith("the log has no")


# --- a LAVA server, stood in for by a local HTTP server ---------------------


class FakeLab:
    """LAVA's REST API v0.2 as far as foliolab uses it: jobs finish after
    ``polls`` state queries (never, for ids in ``stuck``); a job's log
    shows each of its boots running ``records``."""

    def __init__(self, records: str, polls: int = 1, stuck=()):
        self.records, self.polls, self.stuck = records, polls, set(stuck)
        self.jobs: dict[int, dict] = {}
        self.asked: dict[int, int] = {}
        self.calls: list[str] = []
        self.cancelled: list[int] = []
        self.lost: set[int] = set()  # jobs whose log is gone
        self.flaky = 0  # state queries to fail first

    def handle(self, method, path, body, auth):
        import yaml

        self.calls.append(f"{method} {path}")
        if auth != "Token s3cret":
            return 401, {"detail": "Invalid token."}
        parts = path.strip("/").split("/")[2:]  # after api/v0.2
        if method == "POST" and parts == ["jobs"]:
            job_id = len(self.jobs) + 1
            self.jobs[job_id] = yaml.safe_load(body["definition"])
            return 201, {
                "message": "job(s) successfully submitted",
                "job_ids": [job_id],
            }
        job_id = int(parts[1])
        if len(parts) == 2 and self.flaky:
            self.flaky -= 1
            return 502, {"detail": "Bad gateway"}
        if len(parts) == 2:
            self.asked[job_id] = self.asked.get(job_id, 0) + 1
            done = job_id not in self.stuck and self.asked[job_id] > self.polls
            return 200, {
                "id": job_id,
                "actual_device": "qemu-01",
                "state": "Finished" if done else "Running",
                "health": "Complete" if done else "Unknown",
            }
        if parts[2] == "cancel":
            self.cancelled.append(job_id)
            return 200, {}
        if job_id in self.lost:
            return 404, {"detail": "Not found."}
        ids = self.jobs[job_id]["metadata"]["foliolab.boots"].split(",")
        return 200, _log(
            [
                (
                    i,
                    [
                        "[    1.0] Run /init as init process",
                        *_framed(self.records, i),
                    ],
                )
                for i in ids
            ]
        )


@pytest.fixture
def lab(data):
    import http.server
    import threading

    lab = FakeLab((data / "pageout-results.txt").read_text())

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self, method):
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n)) if n else None
            code, reply = lab.handle(
                method, self.path, body, self.headers.get("Authorization")
            )
            raw = (
                reply if isinstance(reply, str) else json.dumps(reply)
            ).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self):
            self._reply("GET")

        def do_POST(self):
            self._reply("POST")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    lab.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield lab
    server.shutdown()


def _lab_run(tmp_path, lab, runs=2, workloads=("pageout",)):
    from foliolab.boot import measure as run
    from foliolab.executors.lava import server as lavaserver

    kernels = _stand_in_kernels(tmp_path)
    out = tmp_path / "run"
    server = lavaserver.Server(
        lavaserver.Credentials(lab.url, "s3cret"), poll=0.01
    )
    ex = lavaserver.LavaServerExecutor(
        out,
        lava.Target(tags=("qemu-01",)),
        server,
        tmp_path / "served",
        "http://files.example/run",
    )
    spec = BootSpec(
        get_arch("x86_64"), kernels["vanilla"].image, console_results=True
    )
    return run.RunRequest(
        [WORKLOADS[w] for w in workloads],
        {},
        runs,
        kernels,
        _ramdisk(tmp_path),
        spec,
        out,
        executor=ex,
    )


def test_a_lab_gets_every_block_at_once_and_its_logs_become_samples(
    tmp_path, lab, data
):
    from foliolab.boot import measure as run

    req = _lab_run(tmp_path, lab, runs=4)
    res = run.run_workloads(req)
    # two ABBA blocks, both submitted before anything is waited for
    assert [c.split()[0] for c in lab.calls[:2]] == ["POST", "POST"]
    assert len(lab.jobs) == 2 and not res.failures
    for job in lab.jobs.values():
        lava.validate(job)
        assert job["tags"] == ["qemu-01"]
        kernel = job["actions"][0]["deploy"]["images"]["kernel"]
        assert kernel["url"].startswith("http://files.example/run/")
        name = kernel["url"].rsplit("/", 1)[1]
        assert (tmp_path / "served" / name).is_file()
    w = WORKLOADS["pageout"]
    records = (data / "pageout-results.txt").read_text()
    direct = w.derive(
        parse.parse_records(records.splitlines()).samples[0], w.resolve({})
    )
    assert len(res.samples) == 8
    assert all(s.valid and s.values == direct.values for s in res.samples)
    journal = (req.out / "lava" / "jobs.jsonl").read_text().splitlines()
    assert {json.loads(x).get("health") for x in journal} == {None, "Complete"}
    assert (req.out / "lava" / "logs" / "pageout-0.log").is_file()


def test_a_run_that_stops_early_cancels_its_jobs_on_the_lab(tmp_path, lab):
    lab.stuck = {2}
    req = _lab_run(tmp_path, lab, runs=4)
    from foliolab.boot import measure as run
    from foliolab.executors.base import BlockRequest

    boots = run.plan(req.workloads, {}, tuple(req.kernels), 4, 1, False)
    blocks = []
    result = run.RunResult()
    for i, group in enumerate(run.blocks(boots, 2)):
        blocks.append(
            BlockRequest(
                f"pageout-{i}",
                "pageout",
                tuple(run._request(req, b, result) for b in group),
            )
        )
    gen = req.executor.run(req.image, blocks)
    block, results = next(gen)
    assert block.name == "pageout-0"
    assert all(outcome.judge(c).clean for c in results)
    gen.close()  # e.g. Ctrl-C while waiting for job 2
    assert lab.cancelled == [2]


def test_a_lab_that_refuses_the_token_is_named(tmp_path, lab):
    from foliolab.executors.lava import server as lavaserver

    server = lavaserver.Server(lavaserver.Credentials(lab.url, "wrong"))
    with pytest.raises(
        errors.LavaError, match="HTTP 401.*Invalid token.*check the token"
    ):
        server.submit("job_name: x\n")


def test_credentials_come_from_lavacli_or_the_environment(
    tmp_path, monkeypatch
):
    from foliolab.executors.lava import server as lavaserver

    conf = tmp_path / "lavacli.yaml"
    conf.write_text(
        "default:\n  uri: https://lava.example.org/RPC2\n"
        "  username: me\n  token: t0k\nother:\n"
        "  uri: http://x\n"
    )
    monkeypatch.setattr(lavaserver, "LAVACLI_CONFIG", conf)
    monkeypatch.delenv("LAVA_TOKEN", raising=False)
    c = lavaserver.credentials("")
    assert (c.url, c.token, c.username) == (
        "https://lava.example.org",
        "t0k",
        "me",
    )
    monkeypatch.setenv("LAVA_TOKEN", "env")
    assert lavaserver.credentials("https://lab/").token == "env"
    assert lavaserver.credentials("", "other").url == "http://x"
    with pytest.raises(errors.UsageError, match="needs a LAVA server"):
        lavaserver.credentials("", "nobody")
    with pytest.raises(errors.UsageError, match="not an http"):
        lavaserver.credentials("lab.example.org")


# --- LAVA's dispatcher on this machine ----------------------------------------

needs_root = pytest.mark.skipif(
    __import__("os").geteuid() != 0,
    reason="LAVA's lava-run refuses to run unless root",
)


@needs_root
def test_the_board_job_passes_lava_run_validate(tmp_path):
    """The arm64 u-boot job of a block, checked by LAVA's dispatcher
    against a bcm2711-rpi-4-b device (the board tools a worker has --
    mkimage, udevadm, in.tftpd, telnet -- stubbed on PATH, and tftpd-hpa's
    /etc/default file given in a private mount namespace); a job the
    device cannot run fails the same check."""
    import os

    from foliolab.executors.lava import local as lavalocal

    d = lavalocal.dispatcher()
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for tool in ("mkimage", "udevadm", "in.tftpd", "telnet"):
        (stubs / tool).write_text("#!/bin/sh\nexit 0\n")
        (stubs / tool).chmod(0o755)
    etc_default = tmp_path / "etc-default"
    shutil.copytree("/etc/default", etc_default, symlinks=True)
    (etc_default / "tftpd-hpa").write_text(
        f'TFTP_DIRECTORY="{tmp_path / "tftp"}"\n'
    )
    (tmp_path / "tftp").mkdir()
    dtb = tmp_path / "bcm2711-rpi-4-b.dtb"
    dtb.write_bytes(b"\xd0\x0d\xfe\xed")
    store = lava.Artifacts(tmp_path / "art", (tmp_path / "art").as_uri())
    job = lava.block_job(
        _block(tmp_path, arch="arm64"),
        lava.Target("bcm2711-rpi-4-b", dtb=dtb),
        store,
        _ramdisk(tmp_path),
    )
    device = tmp_path / "device.yaml"
    device.write_text(
        d.device(
            "{% extends 'bcm2711-rpi-4-b.jinja2' %}"
            "{% set connection_command = 'telnet localhost 7000' %}"
            "{% set power_on_command = 'true' %}"
            "{% set power_off_command = 'true' %}"
            "{% set hard_reset_command = 'true' %}",
            job["context"],
        )
    )

    def validate(job, name):
        path = tmp_path / f"{name}.yaml"
        lava.write_job(path, job)
        env = {**d.environ(), "PATH": f"{stubs}:{os.environ['PATH']}"}
        cp = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                f'mount --bind "{etc_default}" /etc/default && exec "$@"',
                "sh",
                str(d.python),
                str(d.lava_run),
                "--job-id",
                "1",
                "--output-dir",
                str(tmp_path / "o"),
                "--device",
                str(device),
                "--validate",
                str(path),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        return cp.returncode, cp.stdout + cp.stderr

    rc, text = validate(job, "board")
    assert rc == 0, text[-2000:]
    assert '"case": "validate", "definition": "lava", "result": "pass"' in text
    for action in job["actions"]:
        if "boot" in action:
            action["boot"]["commands"] = "no-such-commands"
    rc, text = validate(job, "broken")
    assert rc != 0 and '"result": "fail"' in text


def test_a_lava_block_is_two_rounds_of_one_workload():
    from foliolab.boot import measure as run

    w = [WORKLOADS["pageout"], WORKLOADS["ksm-rmap"]]
    boots = run.plan(w, {}, ("a", "b"), 5, 1, counted=False)
    sizes = [
        (g[0].workload.name, "".join(b.kernel for b in g))
        for g in run.blocks(boots, 2)
    ]
    assert sizes == [
        ("pageout", "abba"),
        ("pageout", "abba"),
        ("pageout", "ab"),
        ("ksm-rmap", "abba"),
        ("ksm-rmap", "abba"),
        ("ksm-rmap", "ab"),
    ]
    assert [len(g) for g in run.blocks(boots, 0)] == [1] * 20


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--executor", "lava", "--count", "--accel", "tcg"],
            "--count needs foliolab's QEMU plugin in the QEMU that runs "
            "the guest; --executor lava runs LAVA's",
        ),
        (
            [
                "--executor",
                "lava-local",
                "--lava-device-type",
                "bcm2711-rpi-4-b",
                "--lava-dtb",
                "/etc/hostname",
            ],
            "runs LAVA's qemu device type",
        ),
        (
            ["--executor", "lava", "--lava-device-type", "bcm2711-rpi-4-b"],
            "boots with a device tree",
        ),
        (
            ["--executor", "lava", "--lava-url", "https://lab.example"],
            "--executor lava needs --artifacts-url",
        ),
        (
            [
                "--executor",
                "lava",
                "--lava-url",
                "https://lab.example",
                "--artifacts-url",
                "http://f.example",
                "--lava-poll",
                "0",
            ],
            "--lava-poll 0: under a second between questions",
        ),
        (
            ["--lava-poll", "5"],
            "--lava-poll is an option of --executor lava, "
            "not of --executor qemu",
        ),
    ],
)
def test_lava_executors_refuse_what_they_cannot_run(
    argv, message, tmp_path, capsys
):
    rc = cli.main(
        [
            "compare",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "2",
            "--out",
            str(tmp_path / "o"),
            *argv,
        ]
    )
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_job_whose_log_is_lost_loses_its_boots_not_the_run(tmp_path, lab):
    from foliolab.boot import measure as run

    lab.lost = {1}
    res = run.run_workloads(_lab_run(tmp_path, lab, runs=4))
    assert len(res.samples) == 8
    lost = [s for s in res.samples if not s.valid]
    assert len(lost) == 4 and all(s.run in (0, 1) for s in lost)
    assert "job 1 (Complete) has no log: LAVA server GET" in lost[0].reasons[0]
    assert sum(s.valid for s in res.samples) == 4


def test_a_lab_gets_the_whole_run_at_once_and_a_flaky_server_is_asked_again(
    tmp_path, lab
):
    from foliolab.boot import measure as run

    lab.flaky = 2
    res = run.run_workloads(
        _lab_run(tmp_path, lab, runs=2, workloads=("pageout", "ksm-rmap"))
    )
    # both workloads' jobs are queued before the first state query
    assert [c.split()[0] for c in lab.calls[:2]] == ["POST", "POST"]
    assert [j["metadata"]["foliolab.workload"] for j in lab.jobs.values()] == [
        "pageout",
        "ksm-rmap",
    ]
    pageout = [s for s in res.samples if s.workload == "pageout"]
    assert len(pageout) == 4 and all(s.valid for s in pageout)


def test_boots_a_job_never_ran_do_not_count_against_their_kernel(
    tmp_path, lab
):
    """A job that ends at one kernel's hang leaves the other kernel's later
    boots not-run: that kernel is not given up on for it."""
    from foliolab.boot import measure as run
    from foliolab.executors.base import BootCapture, Ended, NotRun

    class EndsEarly:
        kind = "fake"
        rounds_per_block = 2

        def run(self, image, blocks):
            for block in blocks:
                yield (
                    block,
                    [
                        BootCapture(
                            b.rundir,
                            Ended.EXITED
                            if k == 0
                            else Ended.TIMEOUT
                            if k == 1
                            else Ended.NOT_RUN,
                            b"",
                            "@@ exit 0\n" if k == 0 else "",
                            1.0,
                            not_run=NotRun.JOB_ENDED if k > 1 else None,
                        )
                        for k, b in enumerate(block.boots)
                    ],
                )

    req = _lab_run(tmp_path, lab, runs=8)
    req.executor = EndsEarly()
    res = run.run_workloads(req)
    # 4 blocks, each: vanilla ok, patched timeout, the rest not run; the
    # patched kernel is given up after 3 timeouts, vanilla never
    gave_up = [f for f in res.failures if "gave up" in f]
    assert gave_up == [
        "pageout patched (timed): gave up after 3 failed boots in a row"
    ]
    assert len(res.samples) == 4 * 4 - 2


def test_a_boots_end_logged_late_as_feedback_is_still_its_own(data):
    """LAVA may log the line a monitor ended on only when the job ends, as
    "feedback" of that boot's namespace, after later boots' consoles
    (measured: 2 of 8 pageout boots of /work/lava-local-aa): it goes back
    to its boot, and the boot's records are whole."""
    records = (data / "pageout-results.txt").read_text()
    ids = ["pageout/a-000", "pageout/b-000"]
    lines = _log(
        [
            (i, ["[    1.0] Run /init as init process", *_framed(records, i)])
            for i in ids
        ]
    ).splitlines()
    first_end = next(k for k, x in enumerate(lines) if "@@=end" in x)
    moved = [json.loads(lines[k][2:]) for k in (first_end, first_end + 1)]
    assert moved[1]["msg"] == "@@=done"
    del lines[first_end : first_end + 2]
    late = [
        "- "
        + json.dumps(
            {
                "dt": "2026-11-24T02:00:00",
                "lvl": "feedback",
                "msg": r["msg"],
                "ns": "boot00",
            }
        )
        for r in moved
    ]
    late.insert(
        0,
        '- {"dt": "2026-11-24T02:00:00", "lvl": "feedback", '
        '"msg": "poweroff"}',
    )
    text = "\n".join(lines[:-1] + late + lines[-1:]) + "\n"
    parts = JobLog.read(text).boots
    assert [p.boot_id for p in parts] == ids
    for part in parts:
        stream = parse.console_records(part.console())
        assert not stream.problems(), stream.problems()
        assert parse.parse_records(stream.lines).exit_code == 0
    # the late lines do not stretch the boot's time
    assert parts[0].elapsed < 3600


def test_make_executor_makes_each_executor_it_names(tmp_path, monkeypatch):
    from foliolab.executors import ExecutorOptions, make_executor
    from foliolab.executors.lava.job import LavaOptions
    from foliolab.executors.lava.local import LavaLocalExecutor
    from foliolab.executors.lava.server import LavaServerExecutor, Server
    from foliolab.executors.qemu import QemuExecutor

    monkeypatch.setenv("LAVA_TOKEN", "t0k")
    opts = ExecutorOptions(
        LavaServerExecutor,
        LavaOptions(
            url="https://lab.example", artifacts_url="https://files.example/a"
        ),
    )
    ex = make_executor(opts, tmp_path / "o")
    assert isinstance(ex, LavaServerExecutor)
    assert isinstance(ex.server, Server)
    assert ex.server.creds.url == "https://lab.example"
    assert ex.server.creds.token == "t0k"
    assert ex.store.base_url == "https://files.example/a"
    if __import__("os").geteuid() == 0:
        assert isinstance(
            make_executor(
                replace(opts, executor=LavaLocalExecutor, given=()),
                tmp_path / "o",
            ),
            LavaLocalExecutor,
        )
    assert isinstance(
        make_executor(ExecutorOptions(), tmp_path / "o"), QemuExecutor
    )
