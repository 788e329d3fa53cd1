"""`run`: boot a built kernel, run a command in it, print its output
(and, with --count, its exact counts)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from foliolab import executors
from foliolab.commands import Command, options
from foliolab.errors import FoliolabError, UsageError
from foliolab.guestdata import countwindows, parse
from foliolab.kernel import kconfig
from foliolab.run import command as runcommand
from foliolab.workloads.windows import RUN


def _run_options(s: argparse.ArgumentParser) -> None:
    options.common(s)
    options.machine(s)
    options.one_kernel(s)
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument(
        "--add",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="static binary to put in the guest's PATH (repeatable)",
    )
    s.add_argument(
        "--memory", type=options.positive_int, default=3072, metavar="MIB"
    )
    s.add_argument(
        "--timeout", type=options.positive_int, default=600, metavar="SECONDS"
    )
    s.add_argument(
        "--append",
        type=options.kernel_arg,
        action="append",
        default=[],
        metavar="ARG",
        help="extra kernel argument (repeatable)",
    )
    s.add_argument(
        "--count",
        action="store_true",
        help="count the guest kernel's work while CMD runs, "
        "exactly (TCG plugin), and print it like perf stat",
    )
    s.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="FUNCTION",
        help="with --count: also count FUNCTION with everything "
        "it calls (repeatable, up to 8)",
    )
    s.add_argument(
        "--top",
        type=options.positive_int,
        default=25,
        metavar="N",
        help="with --count: functions listed (default 25)",
    )
    options.executor(s)
    s.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")


def plan_run(args: argparse.Namespace) -> runcommand.CommandRequest:
    """`run`'s one planning step: every argument, file and spec it will
    use checked (runcommand.check_command), before any kernel source is
    fetched, unpacked or built; the request."""
    options.check_one_kernel(args)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd or not cmd[0].strip():
        raise UsageError(
            "foliolab run: no command given",
            hint="usage: foliolab run [options] -- CMD [ARGS]",
        )
    host_mib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    if args.memory > host_mib:
        raise UsageError(
            f"--memory {args.memory}: more than this host's {host_mib} MiB",
            hint="give the guest less memory (default 3072)",
        )
    for f in args.add:
        why = _not_a_binary(f)
        if why:
            raise UsageError(
                f"--add {f}: {why}",
                hint="give --add a static binary to put in the guest",
            )
    req = runcommand.CommandRequest(
        cmd,
        args.arch,
        args.variant,
        args.patches,
        args.config,
        args.accel,
        args.vcpus,
        args.memory,
        args.numa_nodes,
        args.timeout,
        args.cpu,
        tuple(args.append),
        args.records_on == "console",
        args.add,
        args.count,
        tuple(args.root),
        args.kernel or "",
        executors.options(args, args.argv),
    )
    runcommand.check_command(req)
    return req


def cmd_run(args: argparse.Namespace) -> int:
    req = plan_run(args)
    cmd = req.cmd
    res, variant = runcommand.boot_command(req)
    for line in parse.parse_records(res.records).output:
        print(line)
    if not res.clean:
        raise FoliolabError(f"guest {res.describe()}", log_path=res.console)
    if args.count:
        _print_counts(
            res.console.parent / "counts.txt",
            args.arch,
            cmd,
            variant,
            args.top,
        )
    return res.exit_code if res.exit_code is not None else 1


def _not_a_binary(f: Path) -> str | None:
    """Why ``f`` cannot be an --add binary, or None: checked before any
    kernel source is unpacked (a text file got as far as the build)."""
    if f.is_dir():
        return "a directory"
    if not f.exists():
        return "no such file"
    if not f.is_file():  # a FIFO would hang the read, a device never end
        return "not a regular file"
    try:
        with f.open("rb") as binary:
            magic = binary.read(4)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if magic != b"\x7fELF":
        return "not an executable (ELF) file"
    return None


def _print_counts(
    path: Path, arch: str, cmd: list[str], variant: str, top: int
) -> None:
    counts = countwindows.read_counts(path)
    windows = counts.tagged(RUN)
    if not windows:
        raise FoliolabError(
            "the counting window of the command did not close", log_path=path
        )
    print(
        f"\n Exact counts of the {variant} {arch} guest kernel while "
        f"'{' '.join(cmd)}' ran (QEMU TCG plugin, {path}):\n"
    )
    for w in windows:
        print(
            "\n".join(
                countwindows.stat_lines(w, arch, top, counts.switch_tracking)
            )
        )


COMMANDS = (
    Command(
        "run",
        "boot a built kernel and run CMD in it",
        _run_options,
        cmd_run,
        example="foliolab run --variant patched --add ./mytest -- mytest "
        "--fast",
    ),
)
