"""A user's own workload folder (foliolab/workloads/user.py): the
manual's example loads and is the example folder, each malformed folder
is refused in one line before anything is built, its samples are
derived from the program's metric lines, its job runs the program in a
shell, and a run directory keeps it."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from foliolab import cli, workloads
from foliolab.errors import DamagedRunError, UsageError
from foliolab.guestdata.parse import GuestSample, parse_records
from foliolab.manifest import RunManifest
from foliolab.workloads import user
from foliolab.workloads.model import GuestFile

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "shmem-fill"
MANUAL = ROOT / "docs" / "manual.md"
LIB_SH = ROOT / "foliolab" / "guest" / "lib.sh"


@pytest.fixture(autouse=True)
def no_user_workloads_yet(monkeypatch):
    """Each test starts with no user workload loaded in the process."""
    monkeypatch.setattr(user, "_LOADED", {})


def manual_section() -> str:
    text = MANUAL.read_text()
    start = text.index("### Your own workload")
    return text[start : text.index("\n## ", start)]


def test_the_manuals_example_is_the_example_folder_and_under_30_lines():
    blocks = re.findall(r"```(toml|sh)\n(.*?)```", manual_section(), re.S)
    assert [kind for kind, _ in blocks] == ["toml", "sh"]
    toml, sh = (text for _, text in blocks)
    assert toml == (EXAMPLE / "workload.toml").read_text()
    assert sh == (EXAMPLE / "run.sh").read_text()
    assert len((toml + sh).splitlines()) < 30


def test_the_example_loads_into_a_workload():
    (w,) = workloads.get_workloads(str(EXAMPLE))
    assert w.name == "shmem-fill"
    assert w.params["size_mb"].kind == "integer 1..1024"
    assert w.resolve({}) == {"size_mb": "128"}
    assert [(m.key, m.better, m.unit, m.primary) for m in w.metrics] == [
        ("fill_ms", "lower", "ms", True),
        ("free_ms", "lower", "ms", False),
    ]
    assert workloads.find("shmem-fill") is w
    point = workloads.find("shmem-fill@size_mb=4")
    assert point is not None and point.point_value("size_mb") == "4"


# ---- refusals ----------------------------------------------------------------


def good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mywl"
    shutil.copytree(EXAMPLE, folder)
    return folder


def edit(folder: Path, old: str, new: str) -> None:
    path = folder / user.DECLARATION
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def no_declaration(f: Path) -> None:
    (f / user.DECLARATION).unlink()


def no_script_key(f: Path) -> None:
    edit(f, 'script = "run.sh"\n', "")


def script_missing(f: Path) -> None:
    (f / "run.sh").unlink()


def not_executable(f: Path) -> None:
    (f / "run.sh").chmod(0o644)


def bash_script(f: Path) -> None:
    script = f / "run.sh"
    script.write_text(script.read_text().replace("#!/bin/sh", "#!/bin/bash"))


def no_direction(f: Path) -> None:
    edit(f, 'free_ms = { better = "lower", ', "free_ms = { ")


def bad_direction(f: Path) -> None:
    edit(f, 'free_ms = { better = "lower"', 'free_ms = { better = "down"')


def default_out_of_range(f: Path) -> None:
    edit(f, "default = 128", "default = 4096")


def builtin_name(f: Path) -> None:
    edit(f, "script =", 'name = "pageout"\nscript =')


def unknown_top_key(f: Path) -> None:
    edit(f, "script =", "scirpt = 1\nscript =")


def unknown_metric_key(f: Path) -> None:
    edit(f, 'unit = "ms" }', 'unit = "ms", lower = true }')


def no_lead_metric(f: Path) -> None:
    edit(f, ", lead = true", "")


def not_toml(f: Path) -> None:
    edit(f, "[metrics]", "[metrics")


def integer_without_bounds(f: Path) -> None:
    edit(f, "max = 1024\n", "")


def script_outside(f: Path) -> None:
    edit(f, 'script = "run.sh"', 'script = "../run.sh"')


def script_name_for_a_shell(f: Path) -> None:
    shutil.copy(f / "run.sh", f / "run;reboot")
    edit(f, 'script = "run.sh"', 'script = "run;reboot"')


def dynamic_binary(f: Path) -> None:
    shutil.copy(shutil.which("true") or "/bin/true", f / "run.sh")


def arm64_binary(f: Path) -> None:
    """A static ELF header for machine 183 (aarch64), no program headers:
    what elf_info reads of an arm64 static binary."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[18:20] = (183).to_bytes(2, "little")
    (f / "run.sh").write_bytes(bytes(header))


def a_file(f: Path) -> None:
    shutil.rmtree(f)
    f.write_text("not a folder\n")


REFUSALS = {
    "not a directory": (a_file, []),
    "no workload.toml": (no_declaration, []),
    "no script named": (no_script_key, []),
    "script run.sh not found": (script_missing, []),
    "is not executable": (not_executable, []),
    "neither a #!/bin/sh script nor a binary": (bash_script, []),
    "metrics.free_ms has no direction": (no_direction, []),
    "metrics.free_ms: better = 'down'": (bad_direction, []),
    "default 4096 is out of its range": (default_out_of_range, []),
    "is a built-in workload's": (builtin_name, []),
    "unknown key(s) in workload.toml: scirpt": (unknown_top_key, []),
    "unknown key(s) in metrics.free_ms: lower": (unknown_metric_key, []),
    "no lead metric": (no_lead_metric, []),
    "is not TOML": (not_toml, []),
    "needs integer min and max": (integer_without_bounds, []),
    "is not a file name in the folder": (script_outside, []),
    "script 'run;reboot' is not a file name": (script_name_for_a_shell, []),
    "is not a static 64-bit binary": (dynamic_binary, []),
    "a binary for machine 183, not for the x86_64 guest": (arm64_binary, []),
    "bad value '4096' for mywl.size_mb": (
        lambda f: None,
        ["--param", "mywl.size_mb=4096"],
    ),
}


@pytest.mark.parametrize("why", REFUSALS)
def test_a_malformed_folder_is_refused_in_one_line_before_any_build(
    why, tmp_path, nothing_built, capsys
):
    spoil, options = REFUSALS[why]
    folder = good_folder(tmp_path)
    spoil(folder)
    out = tmp_path / "out"
    rc = cli.main(
        [
            "compare",
            "--workloads",
            f"pageout,{folder}",
            "--runs",
            "1",
            "--out",
            str(out),
            *options,
        ]
    )
    err = capsys.readouterr().err
    lines = [
        line for line in err.splitlines() if not line.startswith("WARNING")
    ]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("foliolab: error: ")
    assert why in lines[0]
    assert nothing_built == []
    assert not out.exists()


def test_a_path_that_is_no_folder_is_named(tmp_path, capsys):
    rc = cli.main(["workloads", str(tmp_path / "nowhere")])
    assert rc == 2
    assert "no such folder" in capsys.readouterr().err


def test_a_name_without_a_slash_is_a_built_in_name(tmp_path, capsys):
    rc = cli.main(["workloads", "mywl"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown workload 'mywl'" in err
    assert "by its path (./NAME)" in err


def test_two_different_folders_of_one_name_are_refused(tmp_path):
    a = good_folder(tmp_path)
    b = tmp_path / "b" / "mywl"
    shutil.copytree(a, b)
    edit(b, "default = 128", "default = 64")
    workloads.get_workloads(str(a))
    with pytest.raises(UsageError, match="differ"):
        workloads.get_workloads(str(b))


def test_a_folder_given_twice_is_refused(tmp_path):
    a = good_folder(tmp_path)
    with pytest.raises(UsageError, match="twice"):
        workloads.get_workloads(f"{a},{a}")


# ---- samples -----------------------------------------------------------------


VMSTAT = "nr_free_pages 1000\noom_kill 0\n"


def sample(metrics: dict[str, float]) -> GuestSample:
    return GuestSample(
        files={"vmstat.before": VMSTAT, "vmstat.after": VMSTAT},
        metrics=metrics,
    )


def test_declared_metrics_are_taken_and_undeclared_or_missing_lead_ones_make_it_invalid():
    (w,) = workloads.get_workloads(str(EXAMPLE))
    params = w.resolve({})
    good = w.derive(sample({"fill_ms": 70, "free_ms": 10}), params)
    assert good.values == {"fill_ms": 70, "free_ms": 10}
    assert good.invalid == []
    # a secondary metric may be missing
    assert w.derive(sample({"fill_ms": 70}), params).invalid == []
    extra = w.derive(sample({"fill_ms": 70, "fil_ms": 1}), params)
    assert extra.invalid == ["metric fil_ms is not declared"]
    no_lead = w.derive(sample({"free_ms": 10}), params)
    assert no_lead.invalid == ["no lead metric fill_ms"]
    # the program's own verdicts, and the common checks, hold as well
    failed = sample({"fill_ms": 70})
    failed.invalid.append("/foliolab/user/shmem-fill/run.sh exited with 1")
    assert w.derive(failed, params).invalid == failed.invalid
    assert w.derive(GuestSample(metrics={"fill_ms": 1}), params).invalid


def test_a_guest_file_is_written_by_the_job_lines_byte_for_byte(tmp_path):
    data = bytes(range(256)) * 3 + b"no newline at the end"
    target = tmp_path / "d" / "prog"
    lines = GuestFile(str(target), data, 0o755).shell()
    subprocess.run(["sh", "-c", lines], check=True)
    assert target.read_bytes() == data
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_the_job_runs_the_program_between_the_snapshots(tmp_path, monkeypatch):
    """The job as the guest gets it, run by the host's sh with the guest
    paths moved under tmp_path: its records derive a valid sample with
    the parameter the program was given."""
    folder = good_folder(tmp_path)
    (folder / "run.sh").write_text(
        "#!/bin/sh\n"
        'echo "@@ metric fill_ms $FL_SIZE_MB"\n'
        'echo "a line of its own: $(pwd)"\n'
    )
    guest = tmp_path / "guest"
    monkeypatch.setattr(user, "GUEST_HOME", str(guest / "user"))
    monkeypatch.setattr(user, "GUEST_SCRIPTS", str(guest / "workloads"))
    (w,) = workloads.get_workloads(str(folder))
    params = workloads.parse_params(["mywl.size_mb=7"], [w])["mywl"]
    job = w.job(w.resolve(params), 2).replace(
        ". /foliolab/lib.sh", f". {LIB_SH}"
    )
    job = job.replace("/foliolab/workloads/", f"{guest}/workloads/")
    done = subprocess.run(
        ["sh", "-c", job],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    records = parse_records(done.stdout.splitlines())
    assert len(records.samples) == 2
    assert "a line of its own: /tmp" in records.output
    for s in records.samples:
        d = w.derive(s, w.resolve(params))
        assert d.invalid == [] and d.values == {"fill_ms": 7.0}


# ---- the run directory keeps it ----------------------------------------------


def test_a_run_directory_keeps_the_folder_and_reads_back_without_it(
    tmp_path, monkeypatch
):
    folder = good_folder(tmp_path)
    (w,) = workloads.get_workloads(str(folder))
    out = tmp_path / "out"
    out.mkdir()
    workloads.keep_user_workloads(out, ["pageout", "mywl@size_mb=4"])
    kept = out / user.KEPT / "mywl"
    assert sorted(p.name for p in kept.iterdir()) == [
        "run.sh",
        "workload.toml",
    ]
    assert os.access(kept / "run.sh", os.X_OK)
    shutil.rmtree(folder)
    monkeypatch.setattr(user, "_LOADED", {})
    assert workloads.find("mywl") is None
    (out / "environment.json").write_text(
        '{"workloads": ["mywl"], "runs": 1}\n'
    )
    RunManifest.read(out)
    again = workloads.find("mywl")
    assert again is not None and again.metrics == w.metrics


def test_a_kept_folder_that_no_longer_loads_is_a_damaged_run(tmp_path):
    out = tmp_path / "out"
    (out / user.KEPT / "mywl").mkdir(parents=True)
    (out / "environment.json").write_text('{"workloads": ["mywl"]}\n')
    with pytest.raises(DamagedRunError, match="kept"):
        RunManifest.read(out)


def test_bisect_refuses_a_user_workload_before_anything(
    tmp_path, nothing_built, capsys
):
    """bisect counts, and a user workload marks no window to count in."""
    folder = good_folder(tmp_path)
    rc = cli.main(
        [
            "bisect",
            "--repo",
            str(tmp_path),
            "--good",
            "a",
            "--bad",
            "b",
            "--workload",
            str(folder),
            "--metric",
            "fill_ms",
            "--below",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "bisect: the workload mywl" in err
    assert "no counting window" in err
    assert nothing_built == []
