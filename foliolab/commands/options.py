"""The option groups commands share (the machine, the kernels, what a
measured run takes) and the types of their values."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from foliolab import executors
from foliolab.arch import ARCHES
from foliolab.errors import UsageError
from foliolab.kernel import kconfig
from foliolab.paths import DEFAULT_PATCHES

FAULTS = ("panic", "hang")


# Bounds of the counts a run takes: far above any run that finishes here
# (ten runs of the seven workloads take hours under TCG), low enough that
# a typo is an error and not a plan of a hundred million boots.
MAX_RUNS = 1000
MAX_SAMPLES_PER_BOOT = 100
MAX_VCPUS = 64  # QEMU's TCG guest here; the machine has 2 cores


def patches_arg(value: str) -> Path | None:
    return None if value == "none" else Path(value)


# The most any count or number of seconds, MiB, ... may be: a 32-bit C
# int, what the guest's tools and QEMU take; past it a value is a typo
# (--memory 99999999999 unpacked a kernel source before QEMU refused it).
MAX_NUMBER = 2**31 - 1


def positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number"
        ) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    if n > MAX_NUMBER:
        raise argparse.ArgumentTypeError(
            f"{value!r} is more than {MAX_NUMBER}"
        )
    return n


def at_most(limit: int) -> Callable[[str], int]:
    """A count from 1 to ``limit``: a dry run of any accepted value
    answers in seconds (--runs 100000000 had a dry run plan boots for
    minutes, growing to gigabytes)."""

    def count(value: str) -> int:
        n = positive_int(value)
        if n > limit:
            raise argparse.ArgumentTypeError(f"{value!r} is more than {limit}")
        return n

    return count


def directory(value: str) -> Path:
    """A directory option's value: an empty one (``--out=``, ``--out
    "$UNSET"``) would be the current directory, which nobody meant."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty path; give a directory")
    return Path(value)


def spec_arg(value: str) -> str:
    """A kernel source spec: not blank (``--since ""`` was no --since, and
    the check went on without the history it was asked for)."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "an empty spec; give debian:VERSION or git:PATH@REF"
        )
    return value


def kernel_arg(value: str) -> str:
    """A kernel command-line argument: one word that starts as a
    parameter's name does (``--append ""`` or ``,,,`` went on to build a
    kernel to boot with nothing it could read)."""
    if (
        not value.strip()
        or any(c.isspace() for c in value)
        or not (
            value[0].isascii() and (value[0].isalnum() or value[0] in "_.")
        )
    ):
        raise argparse.ArgumentTypeError(
            f"{value!r}: give one kernel argument, e.g. loglevel=7"
        )
    return value


def seed_list(value: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a comma-separated list of numbers"
        ) from None
    if any(n < 0 or n > 2**32 - 1 for n in seeds):
        raise argparse.ArgumentTypeError(
            f"{value!r}: seeds are from 0 to {2**32 - 1}"
        )
    return seeds


def prefix_list(value: str) -> tuple[int, ...]:
    """``4,10,19`` -> (4, 10, 19): increasing patch counts."""
    try:
        at = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a comma-separated list of patch counts"
        ) from None
    if any(n < 1 for n in at) or list(at) != sorted(set(at)):
        raise argparse.ArgumentTypeError(
            f"{value!r}: give increasing patch counts from 1, e.g. 4,10,25"
        )
    return at


def arch(p: argparse.ArgumentParser) -> None:
    # Checked by getarch() after parsing, for its one-line error.
    p.add_argument(
        "--arch",
        default="x86_64",
        metavar="|".join(ARCHES),
        help="guest architecture (default x86_64; arm64 is "
        "cross-built and runs under TCG only)",
    )


def common(p: argparse.ArgumentParser, patches: bool = True) -> None:
    arch(p)
    if patches:
        p.add_argument(
            "--patches",
            type=patches_arg,
            default=DEFAULT_PATCHES,
            metavar="DIR|none",
            help="series directory with a `series` file; `none` "
            "compares vanilla with vanilla (default "
            "patches/6.12)",
        )


def base(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--base",
        default="base",
        metavar="SPEC",
        help=f"{what}: base (the pinned 6.12), git:PATH@REF or "
        "debian:VERSION (default base)",
    )


def one_kernel(p: argparse.ArgumentParser, several: bool = False) -> None:
    """The one kernel of `run` and `test`: a variant of the pinned base,
    or any source spec (``several``: --kernel repeatable, a list, for a
    mode that takes more than one: test --mm-ci)."""
    p.add_argument(
        "--variant",
        choices=("vanilla", "patched"),
        default="patched",
        action=_Given,
    )
    p.set_defaults(variant_given=False)
    p.add_argument(
        "--kernel",
        type=spec_arg,
        metavar="NAME=SPEC",
        action="append" if several else "store",
        help="the kernel to build and boot, by any source spec "
        "compare takes (base, git:PATH@REF, debian:VERSION, "
        "each +DIR[:N] or not); replaces --variant"
        + ("; repeatable with --mm-ci" if several else ""),
    )


def check_one_kernel(args: argparse.Namespace) -> None:
    """--kernel replaces --variant: both given, one would be dropped
    without a word."""
    if args.kernel and getattr(args, "variant_given", False):
        raise UsageError(
            f"--variant {args.variant} beside --kernel: --kernel names "
            "the kernel, and --variant would be ignored",
            hint="give one of them",
        )


def measure(s: argparse.ArgumentParser) -> None:
    """What compare and attribute share: machine, workloads, repetitions."""
    machine(s)
    s.add_argument(
        "--workloads",
        metavar="NAME|./DIR,...",
        help="comma-separated workloads (default: all); a folder of "
        "your own by its path, ./DIR (docs/manual.md, 'Your own "
        "workload')",
    )
    s.add_argument(
        "--runs",
        type=at_most(MAX_RUNS),
        default=10,
        help="samples per kernel and workload (default 10)",
    )
    s.add_argument(
        "--samples-per-boot",
        type=at_most(MAX_SAMPLES_PER_BOOT),
        default=1,
        help="samples taken in one boot (default 1: a fresh "
        "boot per sample, see docs/manual.md)",
    )
    s.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="[WORKLOAD.]NAME=VALUE",
        help="override a workload parameter (repeatable)",
    )
    s.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="[WORKLOAD.]PARAM=V1,V2,...",
        help="run the workload at each value, each a point of its own "
        "(WORKLOAD@PARAM=V), and report how each kernel's cost grows "
        "with PARAM: a table, a log-log plot and the growth exponent; "
        "PARAM may be vcpus (repeatable: two sweeps of one workload "
        "make every combination; see docs/manual.md)",
    )
    s.add_argument("--config", choices=kconfig.PURPOSES, default="perf")
    s.add_argument(
        "--out",
        type=directory,
        help="output directory (default results/<timestamp>)",
    )
    s.add_argument(
        "--timeout",
        type=positive_int,
        metavar="SECONDS",
        help="host-side limit per boot (default: per workload)",
    )
    s.add_argument(
        "--count",
        action="store_true",
        help="add a counting boot per sample: exact guest-kernel "
        "instruction, TLB-invalidation and IPI counts from "
        "a QEMU TCG plugin (see docs/manual.md)",
    )
    s.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="FUNCTION",
        help="with --count: also count FUNCTION with everything "
        "it calls, in every workload (repeatable; a workload "
        "follows at most 8 roots, its own included)",
    )
    s.add_argument(
        "--fault",
        choices=FAULTS,
        help="testing aid: make every sample of every kernel but "
        "the baseline panic or hang, to exercise foliolab's "
        "error paths",
    )
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="print the builds and QEMU command lines the run "
        "would execute, and execute nothing",
    )
    s.add_argument(
        "--monitors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sample /proc/vmstat and /proc/interrupts every "
        "second of each timed window into the run "
        "directory (default on; see docs/manual.md)",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="finish the interrupted run in --out DIR: its "
        "finished boots are kept, the rest run (the same "
        "kernels, workloads and parameters)",
    )
    s.add_argument(
        "--force",
        action="store_true",
        help="--out DIR holds a run: delete its boots and samples and "
        "start anew (without it such an --out is refused)",
    )


class _Given(argparse.Action):
    """Stores the value and that it was given (``DEST_given``): a
    default and the same value given are not the same thing to a check
    of conflicting options (--vcpus beside a sweep of vCPUs)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def machine(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("guest machine")
    g.add_argument(
        "--accel",
        default="auto",
        choices=("auto", "tcg", "kvm"),
        help="auto: KVM only if a short probe boot is fast, else "
        "TCG (default auto)",
    )
    g.add_argument(
        "--vcpus", type=at_most(MAX_VCPUS), default=2, action=_Given
    )
    p.set_defaults(vcpus_given=False)
    g.add_argument("--numa-nodes", type=at_most(MAX_VCPUS), default=1)
    g.add_argument(
        "--cpu",
        default="",
        metavar="MODEL",
        help="QEMU CPU model under TCG (default max); e.g. "
        "neoverse-n1, an arm64 CPU without range TLBIs",
    )
    g.add_argument(
        "--records-on",
        choices=("port", "console"),
        default="port",
        help="where the guest sends its records: a virtio port "
        "of their own (default), or framed on the console "
        "as on a board or in a LAVA job",
    )


def executor(p: argparse.ArgumentParser) -> None:
    """Who runs the boots of test, check, run and bisect, as of compare:
    ``--executor`` and every executor's own flags (executors.add_flags);
    an executor that cannot run the command's boots is refused before
    anything is built."""
    executors.add_flags(p)
