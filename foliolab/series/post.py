"""`foliolab post`: a series folder's postings (its `postings.toml`,
kernel/sources/series.py) written as b4 sends them, one mbox each.

What b4 0.16 writes with ``b4 send -o`` (read in its source, src/b4/ez.py
and src/b4/__init__.py, github mricon/b4; not copied):
- a cover letter ``[PREFIX 0/N] TITLE`` whose body is the cover text,
  ``---``, the shortlog and diffstat of the posting, ``---``,
  ``base-commit:`` and ``change-id:``, "Best regards," and the signature
  ``-- `` / ``Name <email>``; headers X-B4-Tracking (the gzipped tracking
  JSON) and X-Change-ID;
- each patch as ``git show --format=email`` gives it, ``[PREFIX k/N]``
  numbered within the posting (zero-padded to N's width), From: the
  sender (an author who is not the sender goes in the body as ``From:``),
  ending with a blank line, ``-- `` and git's version;
- Message-Id ``<DATE-NAME-vR-K-RANDOM@sender's domain>``, every patch
  In-Reply-To and References the cover; Date the series' time plus K s;
- To: the tree's get_maintainer.pl's people, Cc: its lists (b4's
  --auto-to-cc commands), and the people of each patch's trailers on that
  patch and on the cover;
- a posting of one patch has no cover: the cover's text goes below the
  patch's ``---``, base-commit and change-id at its end.
Not written: b4's X-Mailer (this is not b4) and a patatt signature.

The sender is git's configured identity (user.name, user.email), never
an invented one: it replaces the lab's placeholder (source.IDENTITY) in
From: and Signed-off-by:. Every other line of a patch is kept.
"""

from __future__ import annotations

import base64
import datetime as dt
import email.header
import email.policy
import email.utils
import gzip
import json
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from email.parser import BytesParser
from pathlib import Path

from foliolab import proc
from foliolab.errors import PatchApplyError, SourceError, UsageError
from foliolab.kernel import debian, debian_orig, source
from foliolab.kernel.sources.base import Source
from foliolab.kernel.sources.debian import DebianSource
from foliolab.kernel.sources.git import GitSource
from foliolab.kernel.sources.series import Credit, Posting

# The placeholder every patch of the lab is from and signed off by
PLACEHOLDER = (
    f"{source.IDENTITY['GIT_AUTHOR_NAME']} "
    f"<{source.IDENTITY['GIT_AUTHOR_EMAIL']}>"
)
# b4's commands for --auto-to-cc (ez.py, get_auto_to_cc_cmds()): the
# people (maintainers, reviewers) go to To:, the lists to Cc:. --nogit
# and its kin: no history is asked (Debian's tree is one commit, so
# there is none); --nofixes: the authors of the commits a Fixes: tag
# names are looked up in that history too, which it does not have.
GET_MAINTAINER = (
    "--nogit",
    "--nogit-fallback",
    "--nogit-chief-penguins",
    "--norolestats",
    "--nofixes",
)
TO_PEOPLE = ("--nol",)
CC_LISTS = ("--nom",)
# What get_maintainer.pl needs of a tree: its MAINTAINERS and .mailmap
# (names), and the files and folders by which it knows it is at the top
# of a kernel tree (top_of_kernel_tree())
_TREE_FILES = (
    "scripts/get_maintainer.pl",
    "MAINTAINERS",
    ".mailmap",
    ".get_maintainer.ignore",
    "COPYING",
    "CREDITS",
    "Kbuild",
    "Makefile",
    "README",
)
_TREE_DIRS = (
    "Documentation",
    "arch",
    "include",
    "drivers",
    "fs",
    "init",
    "ipc",
    "kernel",
    "lib",
    "scripts",
)
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
# a trailer naming a person: "Suggested-by: Name <addr>", "Cc: addr"
_PERSON_TRAILER = re.compile(r"^([A-Z][A-Za-z-]*(?:-by|-to)|Cc|To): (.+)$")


@dataclass(frozen=True)
class Sender:
    """Who sends the postings: git's configured user.name and
    user.email."""

    name: str
    email: str

    @property
    def address(self) -> str:
        return email.utils.formataddr((self.name, self.email), "utf-8")

    @property
    def plain(self) -> str:
        return f"{self.name} <{self.email}>"


@dataclass(frozen=True)
class BaseTree:
    """The tree the postings go on: a repository and its commit (the
    files get_maintainer.pl reads and the patches apply to), and the
    upstream commit the cover names in base-commit:."""

    repo: Path
    commit: str
    upstream: str
    described: str
    # debian:VERSION@orig: how the Debian tree measured on differs
    differences: debian_orig.Differences | None = None


@dataclass(frozen=True)
class Patch:
    """A patch file as the posting sends it."""

    title: str  # its subject without the [PATCH ...] prefix
    author: str  # From: as the file gives it
    message: str  # the commit message, trailers included
    rest: str  # after the '---' line: the diffstat and the diff


@dataclass(frozen=True)
class Written:
    """A posting as written: its mbox and its messages' subjects."""

    posting: Posting
    mbox: Path
    subjects: tuple[str, ...]
    to: tuple[str, ...]
    cc: tuple[str, ...]


def sender(cwd: Path) -> Sender:
    """git's configured identity where the user runs foliolab; one line
    refusing when it has none (an identity is never made up)."""
    got = {}
    for key in ("user.name", "user.email"):
        cp = proc.run(
            ["git", "config", "--get", key],
            cwd=cwd,
            check=False,
            error=UsageError,
        )
        got[key] = cp.stdout.strip()
    if not got["user.name"] or not got["user.email"]:
        missing = " and ".join(k for k, v in got.items() if not v)
        raise UsageError(
            f"git has no {missing} configured: the postings are from and "
            "signed off by the sender, and foliolab makes up no one",
            hint="git config --global user.name 'Your Name'; "
            "git config --global user.email you@example.com",
        )
    found = Sender(got["user.name"], got["user.email"])
    if found.plain == PLACEHOLDER:
        raise UsageError(
            f"git's identity is the lab's placeholder {PLACEHOLDER}",
            hint="configure your own user.name and user.email",
        )
    return found


def base_tree(spec: Source, upstream: str | None) -> BaseTree:
    """The repository and commit of ``--base`` (debian:VERSION, the
    cache's unpacked package, or git:PATH@REF, a commit of a clone): both
    only read. ``upstream``: --base-commit, the commit base-commit: names;
    a clone's commit is its own, a Debian package's must be given (its
    commit is the lab's, which no one upstream can resolve)."""
    if upstream is not None:
        upstream = upstream.strip().lower()
        if not _HEX40.match(upstream):
            raise UsageError(
                f"--base-commit {upstream} is not a commit id of 40 hex "
                "digits",
                hint="give upstream's full commit id of the release the "
                "postings go on",
            )
    if isinstance(spec, DebianSource) and spec.orig:
        return _orig_base(spec, upstream)
    if isinstance(spec, DebianSource):
        if upstream is None:
            raise UsageError(
                f"--base {spec.text} is a Debian package unpacked by the "
                "lab: its commit resolves nowhere upstream",
                hint="give --base-commit SHA, upstream's commit of the "
                f"release it packages, and --base {spec.text}@orig for "
                "that release's tree without Debian's patches",
            )
        pkg = debian.resolve_known(spec.version) or debian.resolve(
            spec.version
        )
        src = debian.prepare(pkg)
        return BaseTree(src.tree, src.commit, upstream, src.describe())
    if isinstance(spec, GitSource):
        commit = source.resolve_ref(spec.repo, spec.ref)
        return BaseTree(spec.repo, commit, upstream or commit, spec.text)
    raise UsageError(
        f"--base {spec.text}: post reads the tree the postings go on",
        hint="give debian:VERSION or git:PATH@REF",
    )


def _orig_base(spec: DebianSource, upstream: str | None) -> BaseTree:
    """debian:VERSION@orig: the orig tarball's tree, base-commit: the
    commit the tarball records (git archive's comment) or --base-commit;
    neither is refused, and one that differs from the other too."""
    pkg = debian.resolve_known(spec.version) or debian.resolve(spec.version)
    orig, diff = spec.prepare_orig(pkg)
    found = orig.release_commit
    if upstream is None and not found:
        raise UsageError(
            f"--base {spec.text}: {orig.tarball} records no upstream "
            "commit (Debian's repack keeps no git archive comment), and "
            "foliolab guesses none",
            hint=f"give --base-commit SHA, upstream's commit of Linux "
            f"{orig.upstream} (tag v{orig.upstream} of the stable tree)",
        )
    if upstream is not None and found and upstream != found:
        raise UsageError(
            f"--base-commit {upstream} is not the commit {orig.tarball} "
            f"records ({found})",
            hint="leave --base-commit out to use the tarball's",
        )
    return BaseTree(
        orig.tree, orig.commit, upstream or found, orig.describe(), diff
    )


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return proc.run(
        ["git", "-C", str(repo), *args],
        env=env,
        error=SourceError,
        what=f"git {args[0]}",
    ).stdout


def _objects(repo: Path) -> Path:
    where = Path(_git(repo, "rev-parse", "--git-path", "objects").strip())
    return where if where.is_absolute() else (repo / where).resolve()


def diffstat(
    base: BaseTree, posting: Posting, before: list[Path], scratch: Path
) -> str:
    """The posting's diffstat on the base with ``before`` (the patches of
    the postings it requires) applied, as `git diff --stat` gives it
    (b4's); applying it is the check that it applies there. Its index and
    objects are kept in ``scratch``: the base's repository is only
    read."""
    env = {
        "GIT_INDEX_FILE": str(scratch / "index"),
        "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(_objects(base.repo)),
    }
    (scratch / "objects").mkdir(parents=True, exist_ok=True)
    _git(base.repo, "read-tree", base.commit, env=env)
    start = base.commit
    for patches, what in (
        (before, "the postings it requires"),
        (
            list(posting.patches),
            "it",
        ),
    ):
        if not patches:
            continue
        cp = proc.run(
            ["git", "-C", str(base.repo), "apply", "--cached"]
            + [str(p) for p in patches],
            env=env,
            check=False,
            error=SourceError,
        )
        if cp.returncode != 0:
            why = (cp.stderr or cp.stdout).strip().splitlines()
            on = base.described + (
                " with the postings it requires" if before else ""
            )
            raise PatchApplyError(
                f"posting {posting.name}: {what} do(es) not apply on {on}: "
                + (why[-1] if why else "git apply failed"),
                hint="the postings go on --base (and those a posting "
                "requires); rebase the series there or name them in "
                "requires",
            )
        tree = _git(base.repo, "write-tree", env=env).strip()
        if patches is before:
            start = tree
    return _git(base.repo, "diff", "--stat", start, tree, env=env)


def patch_id(patch: Path) -> str:
    """`git patch-id --stable` of a patch file (b4's
    prerequisite-patch-id)."""
    out = proc.run(
        ["git", "patch-id", "--stable"],
        input=patch.read_text(),
        error=SourceError,
    ).stdout.split()
    if not out:
        raise UsageError(f"{source.shown(patch)} holds no diff")
    return out[0]


def required(posting: Posting, postings: tuple[Posting, ...]) -> list[Posting]:
    """The postings ``posting`` goes on, those they go on first, in the
    file's order."""
    by_name = {p.name: p for p in postings}
    want: set[str] = set()
    todo = list(posting.requires)
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            todo.extend(by_name[name].requires)
    return [p for p in postings if p.name in want]


def prerequisites(before: list[Posting]) -> str:
    """b4's prerequisite lines for the postings a posting goes on: each
    one's change-id and revision, and the patch-id of each of its
    patches."""
    lines = []
    for p in before:
        lines.append(f"prerequisite-change-id: {p.change_id}:v{p.revision}")
        lines += [f"prerequisite-patch-id: {patch_id(q)}" for q in p.patches]
    return "".join(line + "\n" for line in lines)


def maintainers(
    base: BaseTree, posting: Posting, scratch: Path
) -> tuple[list[str], list[str]]:
    """(To, Cc) for the posting from the base's own get_maintainer.pl and
    MAINTAINERS, at the base commit: the files it reads are taken from
    the repository (git archive) into ``scratch``, so neither the tree
    nor its checkout (which may be at another commit) is touched."""
    top = scratch / "tree"
    top.mkdir(parents=True, exist_ok=True)
    have = _git(
        base.repo, "ls-tree", "--name-only", base.commit, "--", *_TREE_FILES
    ).split()
    if "scripts/get_maintainer.pl" not in have:
        raise UsageError(
            f"{base.described} has no scripts/get_maintainer.pl",
            hint="give a Linux tree as --base",
        )
    archive = scratch / "tree.tar"
    _git(base.repo, "archive", "-o", str(archive), base.commit, "--", *have)
    proc.run(["tar", "-xf", str(archive), "-C", str(top)], error=SourceError)
    for d in _TREE_DIRS:
        (top / d).mkdir(exist_ok=True)
    out = []
    for which in (TO_PEOPLE, CC_LISTS):
        cp = proc.run(
            [
                "perl",
                "scripts/get_maintainer.pl",
                *GET_MAINTAINER,
                *which,
                *(str(p) for p in posting.patches),
            ],
            cwd=top,
            error=SourceError,
            what="scripts/get_maintainer.pl",
        )
        found = email.utils.getaddresses(cp.stdout.splitlines())
        out.append([_addr(n, a) for n, a in found if "@" in a])
    return out[0], out[1]


def _addr(name: str, address: str) -> str:
    return email.utils.formataddr((name, address))


def read_patch(path: Path) -> Patch:
    """A format-patch file: its title, author, message and the rest."""
    msg = BytesParser(policy=email.policy.default).parsebytes(
        path.read_bytes()
    )
    subject = re.sub(r"\s+", " ", str(msg.get("Subject", ""))).strip()
    title = re.sub(r"^\[[^\]]*\]\s*", "", subject)
    body = msg.get_content() if not msg.is_multipart() else ""
    assert isinstance(body, str)
    # the signature git adds (its version) goes: the posting adds its own
    cut = body.rfind("\n-- \n")
    if cut >= 0:
        body = body[: cut + 1]
    m = re.search(r"^---$", body, re.M)
    if not m or not title:
        raise UsageError(
            f"{source.shown(path)} is not a patch as git format-patch "
            "writes it (a Subject: and a '---' line)",
        )
    return Patch(
        title,
        str(msg.get("From", "")),
        body[: m.start()].rstrip("\n") + "\n",
        body[m.end() :].lstrip("\n"),
    )


def signed_by(message: str, who: Sender) -> str:
    """``message`` with the placeholder's Signed-off-by: the sender's;
    every other line as it is."""
    return message.replace(
        f"Signed-off-by: {PLACEHOLDER}\n", f"Signed-off-by: {who.plain}\n"
    )


def person_trailers(message: str, who: Sender) -> list[str]:
    """The addresses of the people a message's trailers name (b4 Cc's
    them on that patch and on the cover); not the sender."""
    out = []
    for line in message.splitlines():
        m = _PERSON_TRAILER.match(line)
        if not m:
            continue
        # what follows " #" is a note, not the address: "Cc:
        # stable@vger.kernel.org # 6.1.x" (stable-kernel-rules.rst)
        who_text = m.group(2).split(" #", 1)[0]
        name, addr = email.utils.parseaddr(who_text)
        if "@" in addr and addr != who.email:
            out.append(_addr(name, addr))
    return out


def cover_text(posting: Posting, series_cover: Path) -> str:
    """The cover letter's text: the posting's own cover file, else the
    blurb of the series' cover letter (until each posting has its own)."""
    if posting.cover is not None:
        text = posting.cover.read_text().strip("\n")
    elif series_cover.is_file():
        _, text = source.cover_parts(series_cover.read_text())
        text = text.strip("\n")
    else:
        raise UsageError(
            f"posting {posting.name} has no cover and the series has no "
            f"{series_cover.name}",
            hint="give the posting a cover = FILE",
        )
    for c in posting.credits:
        if c.link not in text:
            text += f"\n\nThis carries the design of {c.name}, " + (
                f'"{c.design}": {c.link}'
            )
    return text + "\n"


def shortlog(who: Sender, patches: list[Patch]) -> str:
    """`git shortlog` of the posting: every patch is the sender's."""
    lines = [f"{who.name} ({len(patches)}):"]
    lines += [f"      {p.title}" for p in patches]
    return "\n".join(lines) + "\n"


def _today() -> str:
    return dt.date.today().strftime("%Y%m%d")


def msgid_template(posting: Posting, who: Sender) -> str:
    """b4's Message-Id: the change-id's name with today's date, the
    revision, the message's number and 12 random hex digits (not
    predictable, as b4 wants), at the sender's domain."""
    name = posting.change_id.rsplit("-", 1)[0].split("-", 1)[1]
    domain = who.email.rsplit("@", 1)[1]
    rand = uuid.uuid4().hex[:12]
    return f"<{_today()}-{name}-v{posting.revision}-{{k}}-{rand}@{domain}>"


def subject(posting: Posting, k: int, n: int, title: str) -> str:
    words = [posting.prefix]
    if posting.revision > 1:
        words.append(f"v{posting.revision}")
    if n > 1:
        words.append(f"{str(k).zfill(len(str(n)))}/{n}")
    return f"[{' '.join(words)}] {title}"


def tracking(posting: Posting) -> str:
    """b4's X-B4-Tracking: its tracking JSON, gzipped, in base64."""
    data = {
        "series": {
            "revision": posting.revision,
            "change-id": posting.change_id,
            "prefixes": [w for w in posting.prefix.split() if w != "PATCH"],
            "presubject": "",
        }
    }
    packed = gzip.compress(json.dumps(data).encode(), mtime=0)
    b64 = base64.b64encode(packed).decode()
    # b4 wraps it at 75 columns with spaces, where the header folds
    return "v=1; b=" + " ".join(
        b64[i : i + 68] for i in range(0, len(b64), 68)
    )


def _header(name: str, value: str) -> str:
    """A header line, RFC 2047 where not ASCII, else folded at spaces
    before 78 columns as git format-patch folds (a word longer stays
    whole)."""
    if not value.isascii():
        encoded = email.header.Header(value, "utf-8", header_name=name)
        return f"{name}: {encoded.encode(linesep=chr(10))}\n"
    lines = [f"{name}:"]
    for word in value.split(" "):
        if len(lines[-1]) + 1 + len(word) > 78 and lines[-1] != f"{name}:":
            lines.append(f" {word}")
        else:
            lines[-1] += f" {word}"
    return "\n".join(lines) + "\n"


def _addresses(name: str, addrs: list[str]) -> str:
    out = []
    for a in addrs:
        n, e = email.utils.parseaddr(a)
        out.append(email.utils.formataddr((n, e), "utf-8"))
    return f"{name}: " + ",\n    ".join(out) + "\n"


def _unique(addrs: list[str], leave: set[str]) -> list[str]:
    out, seen = [], set(leave)
    for a in addrs:
        key = email.utils.parseaddr(a)[1].lower()
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _mbox_entry(headers: list[str], body: str) -> str:
    """One message of an mboxrd (b4's): its From_ line, headers, body
    with '>'-quoted From_ lines."""
    body = re.sub(r"^(>*From )", r">\1", body, flags=re.M)
    return (
        "From mboxrd@z Thu Jan  1 00:00:00 1970\n"
        + "".join(headers)
        + "\n"
        + body
        + ("" if body.endswith("\n") else "\n")
        + "\n"
    )


def git_version() -> str:
    out = proc.run(["git", "--version"], error=SourceError).stdout.split()
    return out[-1]


def write_posting(
    posting: Posting,
    postings: tuple[Posting, ...],
    base: BaseTree,
    who: Sender,
    series_cover: Path,
    out: Path,
    scratch: Path,
) -> Written:
    """The posting's mbox in ``out``, b4's way (see the module's doc)."""
    patches = [read_patch(p) for p in posting.patches]
    if base.differences is not None:
        # measured on Debian's tree, posted on the orig's: the same files?
        debian_orig.say_series_on_both(
            base.differences, posting.patches, f"posting {posting.name}"
        )
    before = required(posting, postings)
    stat = diffstat(
        base,
        posting,
        [p for b in before for p in b.patches],
        scratch / "apply",
    )
    to, cc = maintainers(base, posting, scratch)
    # b4 Cc's nobody it already sends to: get_maintainer's reviewers come
    # with --nol and with --nom
    to = _unique(to, set())
    cc = _unique(
        cc + [_addr(c.name, c.email) for c in posting.credits],
        {email.utils.parseaddr(a)[1].lower() for a in to},
    )
    per_patch = [
        person_trailers(signed_by(p.message, who), who) for p in patches
    ]
    n = len(patches)
    tpl = msgid_template(posting, who)
    now = int(time.time())
    gitver = git_version()
    basement = (
        f"base-commit: {base.upstream}\n"
        f"change-id: {posting.change_id}\n{prerequisites(before)}\n"
        "Best regards,\n"
        f"-- \n{who.plain}\n"
    )
    text = cover_text(posting, series_cover)
    everyone = set()
    for a in to + cc:
        everyone.add(email.utils.parseaddr(a)[1].lower())
    messages = []
    subjects = []
    cover_id = tpl.format(k=0)
    if n > 1:
        extra = _unique([a for p in per_patch for a in p], everyone)
        csub = subject(posting, 0, n, posting.title)
        body = (
            f"{text}\n---\n{shortlog(who, patches)}\n{stat.rstrip()}\n"
            f"---\n{basement}"
        )
        headers = _common(who, now, csub, cover_id, to, cc + extra)
        headers.append(_header("X-B4-Tracking", tracking(posting)))
        headers.append(_header("X-Change-ID", posting.change_id))
        messages.append(_mbox_entry(headers, body))
        subjects.append(csub)
    for k, (patch, mine) in enumerate(zip(patches, per_patch), start=1):
        message = signed_by(patch.message, who)
        if email.utils.parseaddr(patch.author)[1] not in (
            who.email,
            source.IDENTITY["GIT_AUTHOR_EMAIL"],
        ):
            message = f"From: {patch.author}\n\n{message}"
        rest = patch.rest
        if n == 1:
            # b4's mixin_cover(): the cover's text below the '---', the
            # base and change-id after the diff
            rest = f"{text}---\n{rest}"
            body = f"{message}---\n{rest}---\n{basement}"
        else:
            # b4 appends "\n-- \nGITVERSION" to git show's output
            body = f"{message}---\n{rest}\n-- \n{gitver}\n"
        psub = subject(posting, k, n, patch.title)
        headers = _common(
            who,
            now + k,
            psub,
            tpl.format(k=k),
            to,
            cc + _unique(mine, everyone),
        )
        if n > 1:
            headers.append(_header("In-Reply-To", cover_id))
            headers.append(_header("References", cover_id))
        else:
            headers.append(_header("X-B4-Tracking", tracking(posting)))
            headers.append(_header("X-Change-ID", posting.change_id))
        messages.append(_mbox_entry(headers, body))
        subjects.append(psub)
    mbox = out / f"{posting.name}.mbox"
    mbox.write_text("".join(messages))
    return Written(posting, mbox, tuple(subjects), tuple(to), tuple(cc))


def _common(
    who: Sender,
    when: int,
    subj: str,
    msgid: str,
    to: list[str],
    cc: list[str],
) -> list[str]:
    headers = [
        _header("From", who.address),
        _header("Date", email.utils.formatdate(when, localtime=True)),
        _header("Subject", subj),
        "MIME-Version: 1.0\n",
        "Content-Type: text/plain; charset=utf-8\n",
        "Content-Transfer-Encoding: 8bit\n",
        _header("Message-Id", msgid),
    ]
    if to:
        headers.append(_addresses("To", to))
    if cc:
        headers.append(_addresses("Cc", cc))
    return headers


def refuse_existing(out: Path) -> None:
    """post writes into a new directory only: one that exists is
    refused before anything is read."""
    if out.exists():
        raise UsageError(
            f"{out} exists: post writes into a new directory only",
            hint="give --out a path that does not exist yet",
        )


def write_postings(
    postings: tuple[Posting, ...],
    base: BaseTree,
    who: Sender,
    series_cover: Path,
    out: Path,
) -> list[Written]:
    """Every posting's mbox in ``out``, the directory this makes; removed
    again if a posting cannot be written."""
    refuse_existing(out)
    scratch = Path(tempfile.mkdtemp(prefix="foliolab-post-"))
    out.mkdir(parents=True)
    try:
        return [
            write_posting(
                p, postings, base, who, series_cover, out, scratch / p.name
            )
            for p in postings
        ]
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def credit_line(c: Credit) -> str:
    return f"{c.name} <{c.email}>: {c.design} ({c.link})"
