"""`--executor lava`: a LAVA server runs the jobs. Submit them, wait for
them, fetch their logs, cancel what is no longer wanted. LAVA's REST API v0.2
(the one lava-server 2023.01 serves, and lavacli uses), through urllib.

The token comes from $LAVA_TOKEN, else from lavacli's configuration
(~/.config/lavacli.yaml: an identity with ``uri``, ``username``, ``token``),
so a lab user's existing lavacli setup is enough. The server is asked
about unfinished jobs at most once per poll interval (30 s by default):
a lab's scheduler has other users.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import yaml

from foliolab import __version__
from foliolab.errors import LavaError, UsageError
from foliolab.executors.base import (
    BlockRequest,
    BootCapture,
    ExecutorKind,
    ExecutorRecord,
    Flag,
    NotRun,
)
from foliolab.executors.lava.job import (
    ARTIFACTS_URL_FLAG,
    LAVA_LAB,
    LOGS_DIR,
    TARGET_FLAGS,
    TELLER,
    LavaJobs,
    LavaOptions,
    Target,
)
from foliolab.executors.lava.record import LavaRecord

log = logging.getLogger("foliolab")

POLL_SECONDS = 30.0

SERVER_GROUP = "LAVA server (--executor lava)"
SERVER_FLAGS = (
    Flag(
        "--lava-url",
        SERVER_GROUP,
        dict(
            default="",
            metavar="URL",
            help="the LAVA server (default: lavacli's identity's)",
        ),
    ),
    Flag(
        "--lava-identity",
        SERVER_GROUP,
        dict(
            default="default",
            metavar="NAME",
            help="lavacli identity in ~/.config/lavacli.yaml for the server "
            "and token ($LAVA_TOKEN wins)",
        ),
    ),
    Flag(
        "--lava-poll",
        SERVER_GROUP,
        dict(
            type=float,
            default=POLL_SECONDS,
            metavar="S",
            help="ask the server about unfinished jobs every S seconds "
            "(default 30, polite to a shared lab; a lab of your own can "
            "take 5)",
        ),
    ),
    Flag(
        "--artifacts-dir",
        SERVER_GROUP,
        dict(
            type=Path,
            metavar="DIR",
            help="where the artifacts are written, for you to serve at "
            "--artifacts-url (default OUT/lava/artifacts)",
        ),
    ),
)
MAX_POLL_FAILURES = 15  # in a row: about an hour at 30 s
LAVACLI_CONFIG = Path("~/.config/lavacli.yaml")


@dataclass(frozen=True)
class Credentials:
    url: str  # the server's root, e.g. https://lava.example.org
    token: str = ""
    username: str = ""


def credentials(url: str, identity: str = "default") -> Credentials:
    """The server and token to use: ``url`` (``--lava-url``) or lavacli's
    identity's URI; $LAVA_TOKEN or the identity's token."""
    ident: dict[str, Any] = {}
    path = LAVACLI_CONFIG.expanduser()
    if path.is_file():
        try:
            conf = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise UsageError(f"{path}: not YAML ({e})") from e
        found = conf.get(identity) if isinstance(conf, dict) else None
        if found is not None and not isinstance(found, dict):
            raise UsageError(
                f"{path}: identity {identity!r} is not a "
                "mapping of uri, username and token"
            )
        ident = found or {}
    uri = url or ident.get("uri", "")
    if not uri:
        raise UsageError(
            "--executor lava needs a LAVA server",
            hint="give --lava-url https://LAB, or a lavacli "
            f"identity {identity!r} in {path}",
        )
    root = uri.rstrip("/")
    if root.endswith("/RPC2"):  # lavacli keeps the XML-RPC endpoint
        root = root[: -len("/RPC2")]
    if not root.startswith(("http://", "https://")):
        raise UsageError(
            f"--lava-url {uri!r} is not an http(s) URL",
            hint="e.g. https://lava.example.org",
        )
    token = os.environ.get("LAVA_TOKEN", "") or ident.get("token", "")
    if not token:
        raise UsageError(
            f"--executor lava needs a token for {root}",
            hint="set $LAVA_TOKEN, or give a lavacli identity "
            f"with a token in {path}",
        )
    return Credentials(root, token, ident.get("username", ""))


class Server:
    def __init__(self, creds: Credentials, poll: float = POLL_SECONDS):
        self.creds = creds
        self.poll = poll

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        text: bool = False,
    ) -> Any:
        url = f"{self.creds.url}/api/v0.2/{path}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("User-Agent", f"foliolab/{__version__}")
        req.add_header("Accept", "application/json" if not text else "*/*")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.creds.token:
            req.add_header("Authorization", f"Token {self.creds.token}")
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            try:
                detail = json.loads(detail).get("message", detail)
            except (ValueError, AttributeError):
                pass
            hint = (
                "check the token ($LAVA_TOKEN or lavacli's config)"
                if e.code in (401, 403)
                else "see the server's message"
            )
            raise LavaError(
                f"LAVA server {method} {url}: HTTP {e.code}: "
                f"{str(detail).strip()[:300]}",
                hint=hint,
            ) from e
        except (urllib.error.URLError, OSError) as e:
            raise LavaError(
                f"LAVA server {url} unreachable: {e}",
                hint="check --lava-url and the network",
            ) from e
        if text:
            return raw.decode(errors="replace")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise LavaError(
                f"LAVA server {method} {url}: the answer is not "
                f"JSON ({raw[:80]!r})",
                hint="is --lava-url the server's root (not a "
                "proxy's login page)?",
            ) from e

    def submit(self, definition: str) -> int:
        """Submit a job's YAML; its id."""
        reply = self._call("POST", "jobs/", {"definition": definition})
        ids = reply.get("job_ids") or []
        if len(ids) != 1:
            raise LavaError(
                f"LAVA server answered a submission with job ids {ids!r}",
                hint="a foliolab job is one job, not a multinode one",
            )
        return int(ids[0])

    def job(self, job_id: int) -> dict[str, Any]:
        return cast(dict[str, Any], self._call("GET", f"jobs/{job_id}/"))

    def log(self, job_id: int) -> str:
        """The job's log as the server keeps it (YAML, one record per
        line)."""
        return cast(str, self._call("GET", f"jobs/{job_id}/logs/", text=True))

    def cancel(self, job_id: int) -> None:
        self._call("GET", f"jobs/{job_id}/cancel/")

    def wait(self, job_ids: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each job (with its state) as it finishes, polling politely; a
        server that does not answer is asked again, less often each time,
        for up to about an hour before foliolab gives up."""
        left = list(job_ids)
        failures = 0
        while left:
            try:
                for job_id in list(left):
                    state = self.job(job_id)
                    if state.get("state") == "Finished":
                        left.remove(job_id)
                        yield job_id, state
                failures = 0
            except LavaError as e:
                failures += 1
                if failures > MAX_POLL_FAILURES:
                    raise
                log.warning(
                    "LAVA server: %s (asking again, %d)", e.message, failures
                )
            if left:
                time.sleep(self.poll * min(2**failures, 8))


class LavaServerExecutor(LavaRecord, LavaJobs):
    """Each block a LAVA job on a lab: all submitted at once, collected as
    they finish; cancelled if foliolab is stopped."""

    kind = ExecutorKind("lava", LAVA_LAB, TELLER)
    summary = "a LAVA lab"
    flags: ClassVar[tuple[Flag, ...]] = (
        *TARGET_FLAGS,
        ARTIFACTS_URL_FLAG,
        *SERVER_FLAGS,
    )

    def __init__(
        self,
        out: Path,
        target: Target,
        server: Server,
        artifacts_dir: Path | None,
        artifacts_url: str,
    ) -> None:
        super().__init__(out, target, artifacts_dir, artifacts_url)
        self.server = server

    @classmethod
    def check(cls, opts: LavaOptions, count: bool) -> None:
        super().check(opts, count)
        if not opts.poll >= 1:
            raise UsageError(
                f"--lava-poll {opts.poll:g}: under a second "
                "between questions floods the server",
                hint="give 1 or more (default 30)",
            )
        if not opts.artifacts_url:
            raise UsageError(
                "--executor lava needs --artifacts-url: the "
                "lab's workers fetch kernels, ramdisk and job "
                "archives from it",
                hint="serve --artifacts-dir over HTTP and give its URL",
            )

    @classmethod
    def make(cls, opts: LavaOptions, out: Path) -> LavaServerExecutor:
        """The executor, with the lab's credentials read here, once."""
        creds = credentials(opts.url, opts.identity)
        return cls(
            out,
            opts.target,
            Server(creds, opts.poll),
            opts.artifacts_dir,
            opts.artifacts_url,
        )

    @classmethod
    def record(cls, opts: LavaOptions) -> ExecutorRecord:
        rec = super().record(opts)
        rec.details["server"] = opts.url or f"lavacli:{opts.identity}"
        rec.details["artifacts_url"] = opts.artifacts_url
        return rec

    def run(
        self, image: Path, blocks: Iterable[BlockRequest]
    ) -> Generator[tuple[BlockRequest, list[BootCapture]], None, None]:
        by_id: dict[int, BlockRequest] = {}
        done: set[int] = set()
        try:
            for block in blocks:
                job, path = self.job(image, block)
                job_id = self.server.submit(
                    yaml.safe_dump(job, sort_keys=False, width=1000)
                )
                by_id[job_id] = block
                self.journal(
                    {
                        "block": block.name,
                        "job_id": job_id,
                        "submitted": time.time(),
                    }
                )
                log.info("submitted %s as LAVA job %d", block.name, job_id)
            for job_id, state in self.server.wait(list(by_id)):
                done.add(job_id)
                yield (
                    by_id[job_id],
                    self._collect(by_id[job_id], job_id, state),
                )
        finally:
            self._cancel(set(by_id) - done)

    def _collect(
        self, block: BlockRequest, job_id: int, state: dict[str, Any]
    ) -> list[BootCapture]:
        log_path = self.out / LOGS_DIR / f"{block.name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # the server's times beside foliolab's: queueing and polling are
        # what a lab adds to the job's own run
        entry = {
            "block": block.name,
            "job_id": job_id,
            "health": state.get("health"),
            "device": state.get("actual_device"),
            "server_times": {
                k: state.get(f"{k}_time") for k in ("submit", "start", "end")
            },
            "finished": time.time(),
        }
        try:
            log_path.write_text(self.server.log(job_id))
        except LavaError as e:
            self.journal(entry)
            # one lost log loses that job's boots, not the run
            return self.not_run(
                block,
                NotRun.LOG_LOST,
                f"job {job_id} ({state.get('health')}) has "
                f"no log: {e.message}",
                self.server.creds.url,
            )
        captured = self.captures(block, log_path)
        self.journal(
            {**entry, "boot_seconds": [round(c.elapsed, 2) for c in captured]}
        )
        return captured

    def _cancel(self, job_ids: set[int]) -> None:
        for job_id in job_ids:
            # a well-behaved submitter frees the lab's devices
            try:
                self.server.cancel(job_id)
                log.warning("cancelled LAVA job %d", job_id)
            except LavaError as e:
                log.warning("could not cancel LAVA job %d: %s", job_id, e)
