"""CLI behaviour on bad input: one line, named cause, the right exit code."""

import json

import pytest

from foliolab import cli, errors


def run(capsys, *argv):
    rc = cli.main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_error_line(err: str) -> str:
    lines = [
        line
        for line in err.splitlines()
        if line.startswith("foliolab: error:")
    ]
    assert len(lines) == 1, err
    return lines[0]


def test_unknown_workload(capsys):
    rc, _, err = run(capsys, "compare", "--workloads", "pagein")
    assert rc == errors.UsageError.exit_code
    assert "unknown workload 'pagein'" in one_error_line(err)
    assert "pageout" in err


def test_unknown_option_value(capsys):
    rc, _, err = run(capsys, "compare", "--config", "fast")
    assert rc == errors.UsageError.exit_code
    assert "invalid choice: 'fast'" in one_error_line(err)


@pytest.mark.parametrize(
    "command", ["compare", "build", "run", "test", "check", "setup"]
)
def test_unknown_arch(capsys, command):
    rc, _, err = run(capsys, command, "--arch", "sparc")
    assert rc == errors.UsageError.exit_code
    line = one_error_line(err)
    assert "unknown --arch 'sparc'" in line
    assert "choose one of: x86_64, arm64" in line


@pytest.mark.parametrize("command", ["compare", "run", "test", "check"])
def test_kvm_for_arm64_is_refused_before_any_work(
    capsys, command, monkeypatch
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    rc, _, err = run(
        capsys,
        command,
        "--arch",
        "arm64",
        "--accel",
        "kvm",
        *(["--", "true"] if command == "run" else []),
    )
    assert rc == errors.UsageError.exit_code
    assert "--accel kvm is not available for --arch arm64" in one_error_line(
        err
    )


@pytest.mark.parametrize("command", ["compare", "run"])
def test_cpu_model_with_kvm_is_refused_before_any_work(
    capsys, command, monkeypatch, tmp_path
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    out = tmp_path / "out"
    rc, _, err = run(
        capsys,
        command,
        "--accel",
        "kvm",
        "--cpu",
        "max",
        *(["--out", str(out)] if command == "compare" else ["--", "true"]),
    )
    assert rc == errors.UsageError.exit_code
    assert "--cpu max applies to TCG only" in one_error_line(err)
    assert not out.exists()


@pytest.mark.parametrize("command", ["compare", "run", "test"])
def test_count_with_kvm_is_refused_before_any_work(
    capsys, command, monkeypatch, tmp_path
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    out = tmp_path / "out"
    rc, _, err = run(
        capsys,
        command,
        "--accel",
        "kvm",
        "--count",
        *(["--out", str(out)] if command != "run" else ["--", "true"]),
    )
    assert rc == errors.UsageError.exit_code
    assert "--count needs TCG" in one_error_line(err)
    assert not out.exists()


@pytest.mark.parametrize(
    "command", ["compare", "build", "run", "test", "check", "setup"]
)
def test_arch_arm64_is_accepted(command):
    args = cli.build_parser().parse_args([command, "--arch", "arm64"])
    assert args.arch == "arm64"
    cli.check_args(args)


def test_bad_runs(capsys):
    rc, _, err = run(capsys, "compare", "--runs", "zero")
    assert rc == 2 and "'zero' is not a number" in one_error_line(err)


def test_unknown_subcommand(capsys):
    rc, _, err = run(capsys, "frobnicate")
    assert rc == 2 and "invalid choice" in one_error_line(err)


def test_bad_param(capsys):
    rc, _, err = run(
        capsys,
        "compare",
        "--workloads",
        "pageout",
        "--param",
        "pageout.bogus=1",
    )
    assert rc == 2 and "no parameter 'bogus'" in one_error_line(err)


def test_param_of_the_wrong_type_stops_before_any_build(capsys, tmp_cache):
    """Tried as a new user would: nothing is built for a bad value."""
    rc, _, err = run(
        capsys,
        "compare",
        "--workloads",
        "pageout",
        "--param",
        "pageout.size_mb=abc",
    )
    assert rc == 2 and "an integer from 1 to 2048" in one_error_line(err)
    assert not tmp_cache.exists() or not any(tmp_cache.iterdir())


def test_missing_patch_dir(capsys, tmp_path, tmp_cache):
    rc, _, err = run(
        capsys,
        "build",
        "--patches",
        str(tmp_path / "nope"),
        "--variant",
        "patched",
    )
    assert rc == 2 and "does not exist" in one_error_line(err)


def test_run_without_command(capsys):
    rc, _, err = run(capsys, "run", "--")
    assert rc == 2 and "no command given" in one_error_line(err)


def test_report_of_non_results_dir(capsys, tmp_path):
    rc, _, err = run(capsys, "report", str(tmp_path))
    assert rc == 2 and "holds no foliolab results" in one_error_line(err)


def test_export_without_dev_tree(capsys, tmp_path, tmp_cache):
    rc, _, err = run(capsys, "export", "--patches", str(tmp_path / "p"))
    assert rc == 2 and "no developer tree" in one_error_line(err)
    assert not tmp_cache.exists()  # the kernel was not unpacked first


def test_report_rewrites_from_disk(capsys, tmp_path):
    """`foliolab report DIR` recomputes everything from the saved samples."""
    env = {"workloads": ["pageout"], "runs": 3, "arch": "x86_64"}
    (tmp_path / "environment.json").write_text(json.dumps(env))
    rows = []
    for i, (variant, v) in enumerate(
        [("vanilla", 10.0), ("patched", 5.0)] * 3
    ):
        rows.append(
            {
                "workload": "pageout",
                "variant": variant,
                "run": i // 2,
                "values": {"pageout_ms": v + i * 0.01},
                "valid": True,
                "reasons": [],
                "boot": "ok",
                "rundir": "x",
            }
        )
    rows.append(
        {
            "workload": "pageout",
            "variant": "patched",
            "run": 3,
            "values": {"pageout_ms": 999.0},
            "valid": False,
            "reasons": ["boot panic"],
            "boot": "panic",
            "rundir": "y",
        }
    )
    (tmp_path / "samples.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    rc, out, _ = run(capsys, "report", str(tmp_path))
    assert rc == 0
    assert "pageout_ms" in out and "1 of 4 samples INVALID" in out
    res = json.loads((tmp_path / "results.json").read_text())
    (row,) = [r for r in res["summary"] if r["metric"] == "pageout_ms"]
    assert row["n_vanilla"] == 3 and row["n_patched"] == 3
    assert (row["n_baseline"], row["n_kernel"]) == (3, 3)
    assert (row["baseline_mean"], row["kernel_mean"]) == (
        row["vanilla_mean"],
        row["patched_mean"],
    )
    assert row["ratio"] == pytest.approx(0.5, rel=0.01)
    assert {"workload", "variant", "run", "metric", "value", "valid"} <= set(
        res["samples"][0]
    )
    assert (tmp_path / "report.md").exists()
    assert (tmp_path / "plots" / "pageout.png").stat().st_size > 1000


def test_check_of_empty_series(capsys, tmp_path):
    (tmp_path / "series").write_text("# nothing yet\n")
    rc, _, err = run(capsys, "check", "--patches", str(tmp_path))
    assert rc == 2 and "the series is empty" in one_error_line(err)


def test_every_error_class_has_an_exit_code_of_its_own():
    """A shell script can tell the stage that failed from the code alone."""
    from foliolab import errors

    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type)
        and issubclass(c, errors.FoliolabError)
        and "exit_code" in vars(c)
    ]
    codes = [c.exit_code for c in classes]
    assert len(codes) == len(set(codes)), sorted(
        (c.exit_code, c.__name__) for c in classes
    )


@pytest.mark.parametrize(
    "extra, says",
    [
        ([], "--root names a function to count"),
        (
            [
                "--count",
                "--root",
                "a",
                "--root",
                "b",
                "--root",
                "c",
                "--root",
                "d",
                "--root",
                "e",
                "--root",
                "f",
                "--root",
                "g",
            ],
            "pageout would count 10 roots with --root",
        ),
    ],
)
def test_compare_root_is_refused_before_any_work(
    capsys, monkeypatch, tmp_path, extra, says
):
    from foliolab.kernel import build

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    out = tmp_path / "out"
    rc, _, err = run(
        capsys,
        "compare",
        "--workloads",
        "pageout",
        "--root",
        "collapse_file",
        *extra,
        "--out",
        str(out),
    )
    assert rc == errors.UsageError.exit_code
    assert says in one_error_line(err)
    assert not out.exists()


def test_version_and_workloads_listing(capsys):
    import pytest as _pytest

    from foliolab import __version__

    with _pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"foliolab {__version__}\n"
    assert cli.main(["workloads", "ksm-rmap"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ksm-rmap: ") and "vmas " in out
    assert cli.main(["workloads", "nosuch"]) == 2


# ---- the bad inputs of the newcomer trial (issue 38, item 5) ---------------


def only_line(err: str) -> str:
    """The whole of stderr is one line, with no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def no_build(monkeypatch):
    from foliolab.kernel import build
    from foliolab.run import orchestrate

    monkeypatch.setattr(
        build, "build_kernel", lambda *a: pytest.fail("built a kernel")
    )
    monkeypatch.setattr(
        orchestrate, "prepare", lambda *a: pytest.fail("prepared the kernels")
    )


@pytest.mark.parametrize(
    "command",
    [
        [
            "compare",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "4",
        ],
        [
            "compare",
            "--patches",
            "none",
            "--workloads",
            "pageout",
            "--runs",
            "4",
            "--dry-run",
        ],
        ["attribute", "--at", "1", "--workloads", "pageout", "--runs", "4"],
        ["jobs", "export", "--patches", "none", "--workloads", "pageout"],
        ["test"],
        ["check"],
        [
            "bisect",
            "--repo",
            "/tmp",
            "--good",
            "a",
            "--bad",
            "b",
            "--workload",
            "pageout",
            "--metric",
            "kernel_insns",
            "--below",
            "1",
        ],
    ],
)
@pytest.mark.parametrize(
    "out, says",
    [
        (
            "/proc/x",
            "--out /proc/x: no directory can be made in /proc (No such "
            "file or directory)",
        ),
        ("{file}/x", "--out {file}/x: {file} is a file, not a directory"),
    ],
)
def test_an_out_dir_that_cannot_be_written_is_one_line(
    capsys, monkeypatch, tmp_path, tmp_cache, command, out, says
):
    no_build(monkeypatch)
    (tmp_path / "file").write_text("")
    out = out.replace("{file}", str(tmp_path / "file"))
    says = says.replace("{file}", str(tmp_path / "file"))
    rc, _, err = run(capsys, *command, "--out", out)
    assert rc == errors.UsageError.exit_code
    assert only_line(err) == (
        f"foliolab: error: {says}; give --out a "
        "directory you can write, e.g. under your "
        "home or /tmp"
    )
    assert not tmp_cache.exists()


def test_a_writable_out_dir_is_tried_and_left_as_it_was(tmp_path):
    from foliolab.paths import unwritable

    assert unwritable(tmp_path / "a" / "b" / "c") is None
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "here").mkdir()
    assert unwritable(tmp_path / "here") is None
    assert list((tmp_path / "here").iterdir()) == []


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["compare", "--frob"],
            "compare: unrecognized arguments: --frob; see "
            "`foliolab compare --help`",
        ),
        (
            ["compare", "--runs", "x"],
            "compare: argument --runs: 'x' is not a "
            "number; see `foliolab compare --help`",
        ),
        (
            ["jobs", "export", "--frob"],
            "jobs export: unrecognized arguments: "
            "--frob; see `foliolab jobs export "
            "--help`",
        ),
        (
            ["--frob"],
            "the following arguments are required: command; see "
            "`foliolab --help`",
        ),
    ],
)
def test_a_parser_error_names_the_program_once(capsys, argv, says):
    rc, _, err = run(capsys, *argv)
    assert rc == errors.UsageError.exit_code
    assert only_line(err) == f"foliolab: error: {says}"


@pytest.mark.parametrize(
    "repo, says",
    [
        ("/tmp", "--repo /tmp is not a git repository"),
        ("/no/such/dir", "--repo /no/such/dir does not exist"),
    ],
)
def test_bisect_repo_that_is_no_git_repository(capsys, tmp_cache, repo, says):
    rc, _, err = run(
        capsys,
        "bisect",
        "--repo",
        repo,
        "--good",
        "a",
        "--bad",
        "b",
        "--workload",
        "pageout",
        "--metric",
        "kernel_insns",
        "--below",
        "1",
    )
    assert rc == errors.UsageError.exit_code
    line = only_line(err)
    assert line.startswith(f"foliolab: error: {says}; give --repo PATH")
    assert "git:PATH@REF" not in line
    assert not tmp_cache.exists()


def test_report_of_a_cut_results_json_says_so(capsys, caplog, tmp_path, data):
    import re
    import shutil

    out = tmp_path / "run"
    shutil.copytree(data / "run-pageout-aa", out)
    assert cli.main(["report", str(out)]) == 0
    whole = (out / "results.json").read_text()
    (out / "results.json").write_text(whole[: len(whole) // 2])
    caplog.clear()
    assert cli.main(["report", str(out)]) == 0
    said = [m for m in caplog.messages if "results.json" in m]
    assert len(said) == 1 and re.fullmatch(
        f"foliolab: {re.escape(str(out))}/results.json was damaged \\(not "
        "JSON \\(.* at line \\d+\\): cut short\\?\\); rebuilt from "
        "environment.json and the boots under raw/",
        said[0],
    ), said
    assert json.loads((out / "results.json").read_text())  # whole again
    caplog.clear()
    assert cli.main(["report", str(out)]) == 0
    assert not any("damaged" in m for m in caplog.messages)


@pytest.mark.parametrize(
    "command", [["compare"], ["test"], ["check"], ["bisect", "--repo", "/tmp"]]
)
def test_an_empty_out_is_refused_not_taken_for_here(
    capsys, tmp_cache, command
):
    """--out= (or --out "$UNSET") would be the current directory."""
    rc, _, err = run(capsys, *command, "--out=")
    assert rc == errors.UsageError.exit_code
    assert only_line(err) == (
        f"foliolab: error: {command[0]}: argument --out: an empty path; "
        f"give a directory; see `foliolab {command[0]} --help`"
    )
    assert not tmp_cache.exists()


def test_a_test_kernel_not_name_spec_is_refused_before_apt(
    capsys, monkeypatch, tmp_cache
):
    from foliolab.kernel import upstream_selftests

    monkeypatch.setattr(
        upstream_selftests,
        "plan",
        lambda *a: pytest.fail("looked up the upstream selftests' source"),
    )
    rc, _, err = run(capsys, "test", "--kernel", "debian:7.3")
    assert rc == errors.UsageError.exit_code
    assert only_line(err).startswith(
        "foliolab: error: --kernel 'debian:7.3' is not NAME=SPEC"
    )
    assert not tmp_cache.exists()


def test_numa_nodes_that_do_not_divide_the_vcpus_are_a_usage_error(capsys):
    rc = cli.main(
        [
            "compare",
            "--workloads",
            "pageout",
            "--numa-nodes",
            "8",
            "--vcpus",
            "2",
            "--dry-run",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "--numa-nodes 8: 2 vCPUs do not split into 8 nodes" in err[0]


def test_sigterm_ends_a_command_in_one_line(tmp_path):
    """SIGTERM outside a measuring run: one line, 128 + 15, as SIGINT
    gives one line and 130 (a command stood in for by a long sleep)."""
    import signal
    import subprocess
    import sys

    code = (
        "import time\n"
        "from foliolab import cli\n"
        "def command(args):\n"
        "    print('started', flush=True)\n"
        "    time.sleep(60)\n"
        "cli.HANDLERS['workloads'] = command\n"
        "raise SystemExit(cli.main(['workloads']))\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the signal when the command runs, not while Python still starts (a
    # loaded machine takes seconds to import)
    assert p.stdout is not None and p.stdout.readline() == "started\n"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143
    assert err.strip().splitlines() == ["foliolab: stopped by SIGTERM"]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--runs", "100000000"], "'100000000' is more than 1000"),
        (["--samples-per-boot", "1000"], "'1000' is more than 100"),
        (["--vcpus", "4096"], "'4096' is more than 64"),
    ],
)
def test_counts_have_bounds(argv, says, capsys):
    """A count beyond its bound is refused at once, so no dry run plans
    a hundred million boots."""
    rc = cli.main(["compare", "--workloads", "pageout", "--dry-run", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and says in err[-1], err


def test_a_cache_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv("FOLIOLAB_CACHE", str(f))
    for argv in (["compare", "--workloads", "pageout"], ["workloads"]):
        rc = cli.main([*argv, "--dry-run"] if argv[0] == "compare" else argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1, err
        assert f"the cache {f} is a file, not a directory" in err[0]


@pytest.mark.parametrize("text", ['{"environment"', "[1, 2]", "{}"])
def test_diff_of_a_damaged_results_json_is_one_line(tmp_path, capsys, text):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(text)
    rc = cli.main(["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == errors.DamagedRunError.exit_code and len(err) == 1, err
    assert "results.json: " in err[0] and "foliolab report" in err[0]


@pytest.mark.parametrize(
    "argv, says",
    [
        (["build", "--patches", "/nonexistent"], "does not exist"),
        (["run", "--add", "/nonexistent", "--", "true"], "no such file"),
        (["run", "--add", "/", "--", "true"], "--add /: a directory"),
    ],
)
def test_a_bad_path_is_refused_before_any_work(argv, says, capsys, tmp_cache):
    """Nothing unpacked or built first (build --patches /nonexistent
    unpacked 1.17 GB of source before it answered)."""
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and says in err[0], err
    assert not tmp_cache.exists() or not any(tmp_cache.rglob("*.unpack"))
    assert not (tmp_cache / "linux").exists()


def test_foliolab_alone_lists_the_commands(capsys):
    rc = cli.main([])
    out = capsys.readouterr().out
    assert rc == 2
    for name in ("compare", "report", "test", "check", "run", "build"):
        assert f"\n    {name} " in out, name


def test_every_command_has_an_example_that_parses():
    """Each command's --help ends with an example; each example is a
    command line the parser takes as it is."""
    import shlex

    from foliolab.cli import COMMANDS

    for c in COMMANDS:
        assert c.example.startswith(f"foliolab {c.name}"), c.name
        args = cli.build_parser().parse_args(shlex.split(c.example)[1:])
        assert args.command == c.name


def test_a_dry_run_of_debian_kernels_fetches_nothing(
    tmp_cache, monkeypatch, capsys, caplog
):
    """--dry-run with debian: specs and no package lists yet: no apt-get
    update (it reached the network and took 14 s), one line per kernel
    saying when it is looked up, and nothing in the cache."""
    from foliolab.kernel import debian

    def no_fetch(*a, **k):
        raise AssertionError("a dry run fetched Debian's package lists")

    monkeypatch.setattr(debian, "update_lists", no_fetch)
    with caplog.at_level("INFO", "foliolab"):
        rc = cli.main(
            [
                "compare",
                "--kernel",
                "up=debian:7.3",
                "--kernel",
                "next=debian:7.3+patches/7.3",
                "--workloads",
                "pageout",
                "--runs",
                "4",
                "--dry-run",
            ]
        )
    assert rc == 0, capsys.readouterr().err
    assert (
        "kernel next: debian:7.3 is looked up in Debian's archive when "
        "the run starts (a dry run fetches nothing)" in caplog.text
    )
    assert not tmp_cache.exists()


def test_help_lists_every_command_once_in_the_named_order():
    assert [c.name for c in cli.COMMANDS] == list(cli.ORDER)
    spare = cli.Command("spare", "a command ORDER does not name", None, None)
    with pytest.raises(AssertionError, match="spare"):
        cli._in_order(cli.COMMANDS, (spare,))
    with pytest.raises(AssertionError, match="is not the commands"):
        cli._in_order(cli.COMMANDS[:-1])


@pytest.mark.parametrize(
    "command",
    [
        ["test"],
        ["check"],
        ["run"],
        ["bisect", "--repo", "r", "--good", "a", "--bad", "b"]
        + ["--workload", "pageout", "--metric", "kernel_insns"],
    ],
)
def test_every_booting_command_takes_the_executor_as_compare_does(command):
    """--executor with compare's choices and every executor's own flags:
    the executor the user chose runs the command's boots."""
    from foliolab import executors

    parser = cli.build_parser()
    compare = parser.parse_args(["compare", "--executor", "lava"])
    args = parser.parse_args(
        [
            *command,
            *("--executor", "lava", "--lava-url", "https://lab.example"),
            *("--artifacts-url", "http://f.example", "--lava-tags", "a,b"),
        ]
    )
    assert args.executor == compare.executor == "lava"
    opts = executors.options(args, ["--lava-url", "--artifacts-url"])
    assert opts.kind.text == "lava"
    assert opts.own.url == "https://lab.example"
    assert opts.own.target.tags == ("a", "b")
    assert parser.parse_args(command).executor == "qemu"
    with pytest.raises(Exception, match="invalid choice: 'lava-export'"):
        parser.parse_args([*command, "--executor", "lava-export"])


@pytest.mark.parametrize(
    "argv, says",
    [
        (
            ["compare", "--kernel", "a=git:~nosuchuser/x@v1", "--dry-run"],
            "kernel a: git ~nosuchuser/x: there is no user 'nosuchuser'",
        ),
        (
            ["compare", "--kernel", "a=image:~nosuchuser/bz", "--dry-run"],
            "kernel a: image ~nosuchuser/bz: there is no user 'nosuchuser'",
        ),
        (
            ["attribute", "--workloads", "~nosuchuser/w", "--at", "1"],
            "--workloads ~nosuchuser/w: there is no user 'nosuchuser'",
        ),
        (
            ["check", "--since", "git:~nosuchuser/x@v1"],
            "~nosuchuser/x: there is no user 'nosuchuser'",
        ),
    ],
)
def test_a_path_of_a_user_the_machine_lacks_is_one_line(argv, says, capsys):
    """A ~user path inside an option's text (a kernel spec, --workloads,
    --since) is refused in one line, as a path option's is: Python's
    expanduser raises RuntimeError for it (found by the hostile suite's
    generated invocations, 2026-11-30)."""
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == errors.UsageError.exit_code, err
    assert says in err and "Traceback" not in err
