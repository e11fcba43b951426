"""A local hub: a folder of git repositories laid out like the Hub, for offline publishing and tests.

Layout::

    HUBDIR/datasets/ORG/NAME -> .NAME.hub/v/N   a symlink to the current version: main's files and a .git whose
                                                refs (main, tags, pr/N) are this version's, so
                                                ``datasets.load_dataset("HUBDIR/datasets/ORG/NAME", "all")`` loads
                                                it and ``git -C HUBDIR/datasets/ORG/NAME ...`` reads its refs
    HUBDIR/datasets/ORG/.NAME.hub/store.git     a bare repository holding every object (versions borrow them
                                                through ``objects/info/alternates``) and the refs the last push
                                                published (what ``repair`` restores)
    HUBDIR/datasets/ORG/.NAME.hub/v/N           versions: the current one and the one before it (for readers that
                                                resolved the link just before a push), and any older one holding a
                                                tag the current one lacks (never removed)
    HUBDIR/datasets/ORG/.NAME.lock              the lock a push holds (``flock``; it records the holder's pid)
    HUBDIR/models/ORG/NAME                      the same for model repos

A push never edits what readers see, and never acts on a damaged repo: under the lock it first checks the state on
disk (``check_state``: the link names a complete version whose ``main`` names a commit; a missing link with a
recorded push is damage too) and refuses a damaged repo naming the repair (``phr-publish repair``). Then it

1. hashes the folder's files into the store and builds the new tree with a *temporary index*
   (``GIT_INDEX_FILE=store.git/phr-index-<pid>-*``);
2. compares that tree with ``main``'s: identical -> no commit (idempotent);
3. writes the commit (``git commit-tree``, a fixed author/committer identity so no git config is needed);
4. builds the next version beside the current one (``v/.build-<pid>-*``: the new refs, main's files checked out),
   renames it to ``v/N+1``, and swaps the link ``NAME`` to it with one ``rename``: refs and files change together;
5. records the new refs in the store (a push killed before that is recorded by the next one), and removes old
   versions, each first renamed to ``v/.gone-<pid>-N`` (never a half-removed version).

A kill at any point leaves ``NAME`` on the previous version or on the new one, complete. Whatever a killed push
left (a build folder, a numbered version never linked, a version being removed, a temporary index, a temporary
link, git's ref locks in the store) is invisible and is removed by the next push; the lock is released by the
kernel when its holder dies. A live holder is waited for (``PHR_HUB_LOCK_TIMEOUT`` seconds, default 600), then
refused with an error naming its pid. A repo created by an
older version (``NAME`` a plain git repository) is converted on its next push.
"""

from __future__ import annotations

import errno
import fcntl
import io
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal, NamedTuple, overload

from phr.config.ops import PushConfig
from phr.core.errors import EnvironmentFault
from phr.core.fs import pid_alive
from phr.hub.card import files_for_repo
from phr.hub.errors import (
    PublishError,
    PushFailedError,
    RepoNotFoundError,
    RevisionNotFoundError,
)
from phr.hub.gate import gate, refuse_links
from phr.hub.repo import (
    GITATTRIBUTES,
    PushResult,
    default_message,
    folder_files,
    install_into,
    other_type,
    repo_type_mismatch,
    tag_names_main,
    tag_names_other_commit,
)

log = logging.getLogger(__name__)

IDENTITY = {
    "GIT_AUTHOR_NAME": "phr-publish",
    "GIT_AUTHOR_EMAIL": "phr-publish@localhost",
    "GIT_COMMITTER_NAME": "phr-publish",
    "GIT_COMMITTER_EMAIL": "phr-publish@localhost",
}
LOCK_TIMEOUT_ENV = "PHR_HUB_LOCK_TIMEOUT"
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_PREFIX",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
)
_PID_NAME = re.compile(r"^(?:phr-index-|\.build-|\.link-|\.gone-)(\d+)(?:-|$)")


class LocalHubError(PublishError):
    pass


class RepoLockedError(LocalHubError):
    """Another live process holds the repo's lock (nothing is wrong with the input: exit 1)."""

    exit_code = 1


class GitFailedError(LocalHubError):
    """A git command failed (a full disk, a read-only or damaged hub, ...): an environment fault, exit 1."""

    exit_code = 1


class LocalHubDamagedError(LocalHubError):
    """The repo's state on disk is damaged (its current version missing, ``main`` broken): nothing was written;
    the message names the repair (``phr-publish repair``). An environment fault, exit 1."""

    exit_code = 1


def _git_exe() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise LocalHubError("the local hub needs the git command line: install git (https://git-scm.com)")
    return exe


@overload
def _git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: dict | None = None,
    check: Literal[True] = True,
    text: Literal[True] = True,
) -> str: ...
@overload
def _git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: dict | None = None,
    check: Literal[True] = True,
    text: Literal[False],
) -> bytes: ...
@overload
def _git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: dict | None = None,
    check: Literal[False],
    text: bool = True,
) -> subprocess.CompletedProcess[bytes]: ...
def _git(
    repo: Path, *args: str, input: bytes | None = None, env: dict | None = None, check: bool = True, text: bool = True
) -> str | bytes | subprocess.CompletedProcess[bytes]:
    """``git -C repo args`` with the hub's settings: its output as text (``text=False``: bytes), or the finished
    process when ``check=False`` (a failure is then the caller's to read)."""
    base_env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    cmd = [
        _git_exe(),
        "-C",
        str(repo),
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.safecrlf=false",
        "-c",
        "gc.auto=0",
        "-c",
        "core.hooksPath=/dev/null",
        *args,
    ]
    r = subprocess.run(
        cmd,
        input=input,
        capture_output=True,
        check=False,
        env={**base_env, **IDENTITY, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", **(env or {})},
    )
    if check and r.returncode != 0:
        raise GitFailedError(f"git {' '.join(args[:2])} failed in {repo}: {r.stderr.decode(errors='replace').strip()}")
    if not check:
        return r
    return r.stdout.decode() if text else r.stdout


def _rev(repo: Path, ref: str) -> str | None:
    r = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if r.returncode != 0:
        return None
    return r.stdout.decode().strip() or None


def _step(name: str) -> None:
    """A named point of a push ("staged", "committed", "built", "swapped", "moved-aside"): a no-op that the kill
    tests replace to stop a push there."""


def _stale(name: str) -> bool:
    """Whether a temporary entry named with its creator's pid belongs to a process that is gone (or to this one:
    under the repo lock, nothing of this process is in progress)."""
    m = _PID_NAME.match(name)
    return m is not None and (not pid_alive(pid := int(m.group(1))) or pid == os.getpid())


def _remove(p: Path) -> None:
    if p.is_symlink() or p.is_file():
        p.unlink(missing_ok=True)
    else:
        shutil.rmtree(p, ignore_errors=True)


def _remove_version(version: Path) -> None:
    """Remove a numbered version in one rename (to ``v/.gone-<pid>-N``), then its files: a kill while they are
    removed leaves a stale temporary the next push removes, never a half-removed version whose tags cannot be
    read (which the prune guard would keep forever)."""
    gone = version.with_name(f".gone-{os.getpid()}-{version.name}")
    _remove(gone)
    os.rename(version, gone)
    _remove(gone)


class LocalHub:
    """A local hub rooted at ``root`` (created on the first push)."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()

    def repo_path(self, repo_id: str, repo_type: str) -> Path:
        org, name = repo_id.split("/")
        return self.root / f"{repo_type}s" / org / name

    def exists(self, repo_id: str, repo_type: str) -> bool:
        return (self.repo_path(repo_id, repo_type) / ".git").is_dir()

    @contextmanager
    def lock(self, repo_id: str, repo_type: str, timeout: float | None = None) -> Iterator[None]:
        """Hold the repo's lock (waiting up to ``timeout`` s, default ``$PHR_HUB_LOCK_TIMEOUT`` or 600, for a live
        holder); the lock file records the holder's pid for the error message."""
        path = self.repo_path(repo_id, repo_type)
        path.parent.mkdir(parents=True, exist_ok=True)
        lockfile = path.parent / f".{path.name}.lock"
        if timeout is None:
            try:
                timeout = float(os.environ.get(LOCK_TIMEOUT_ENV) or 600)
            except ValueError:
                raise LocalHubError(
                    f"{LOCK_TIMEOUT_ENV} must be a number of seconds, not {os.environ[LOCK_TIMEOUT_ENV]!r}"
                ) from None
        with open(lockfile, "a+") as f:
            _acquire(f, lockfile, f"{repo_type} repo {repo_id}", timeout)
            f.seek(0)
            f.truncate()
            f.write(f"{os.getpid()}\n")
            f.flush()
            try:
                yield
            finally:
                f.seek(0)
                f.truncate()
                fcntl.flock(f, fcntl.LOCK_UN)

    def refs(self, repo_id: str, repo_type: str) -> dict[str, str]:
        """``{"refs/heads/main": sha, "refs/tags/v0.1.0": sha, ...}`` (tags peeled to their commit)."""
        path = self.repo_path(repo_id, repo_type)
        check_state(self, repo_id, repo_type)
        if not self.exists(repo_id, repo_type):
            raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {self.root}")
        out = _git(path, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)")
        refs = {}
        for line in out.splitlines():
            name, obj, *peeled = line.split(" ")
            refs[name] = peeled[0] if peeled and peeled[0] else obj
        return refs


def _acquire(f: IO[str], lockfile: Path, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waited = False
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = lockfile.read_text().strip() or "unknown"
        if time.monotonic() >= deadline:
            raise RepoLockedError(
                f"the local hub {what} is locked by another push (process {holder}, still running; lock file "
                f"{lockfile}): wait for it to finish and push again, or set {LOCK_TIMEOUT_ENV} to wait longer than "
                f"{timeout:g} s"
            )
        if not waited:
            log.warning("local hub: %s is locked by process %s; waiting up to %g s", what, holder, timeout)
            waited = True
        time.sleep(0.05)


# ---- layout ----------------------------------------------------------------------------------------------------


def _hub_dir(path: Path) -> Path:
    return path.with_name(f".{path.name}.hub")


def _store(path: Path) -> Path:
    return _hub_dir(path) / "store.git"


def _versions(path: Path) -> Path:
    return _hub_dir(path) / "v"


def _is_legacy(path: Path) -> bool:
    """A repo written by an older version: ``NAME`` itself a git repository, not a link to a version."""
    return not path.is_symlink() and (path / ".git").is_dir()


def _current(path: Path) -> Path | None:
    if not path.is_symlink():
        return None
    return (path.parent / os.readlink(path)).resolve()


def _ensure_store(path: Path) -> Path:
    store = _store(path)
    if not (store / "objects").is_dir():
        store.parent.mkdir(parents=True, exist_ok=True)
        _git(store.parent, "init", "-q", "--bare", store.name)
        _git(store, "config", "gc.pruneExpire", "never")  # never prune what versions borrow
    return store


def _published(path: Path) -> bool:
    """Whether the repo was ever published: its store records refs (each push records them after its swap), or it
    has a version numbered above 1 (the stores of older versions record none)."""
    store = _store(path)
    if (store / "objects").is_dir() and _read_refs(store):
        return True
    versions = _versions(path)
    return versions.is_dir() and any(p.name.isdigit() and int(p.name) > 1 for p in versions.iterdir())


def _main_problem(repo: Path) -> str | None:
    """What is wrong with ``repo``'s main branch, or None when it names a commit."""
    if _rev(repo, "refs/heads/main"):
        return None
    r = _git(repo, "rev-parse", "--verify", "--quiet", "refs/heads/main", check=False)
    named = r.stdout.decode().strip()
    if r.returncode == 0 and named:
        return f"its main branch names {named}, which is not a commit in the repo's store"
    return "its main branch (refs/heads/main) is missing or unreadable"


def _damage(path: Path) -> str | None:
    """What is wrong with the repo at ``path`` on disk, or None when it is sound, of an older layout, or absent
    (never pushed, or a first push killed before its link, which the next push removes)."""
    if _is_legacy(path):
        return None
    if path.is_symlink():
        current = _current(path)
        if current is None or not current.is_dir():
            return f"its current-version link {path} -> {os.readlink(path)} points to a version that does not exist"
        if not (current / ".git").is_dir():
            return f"its current version {current} has no .git"
        if not (_store(path) / "objects").is_dir():
            return f"its object store {_store(path)} is missing"
        if garbled := _garbled_refs(_store(path)):
            return f"the refs its store records are garbled ({', '.join(garbled[:3])} in {_store(path)})"
        if hand := _hand_refs(path, current):
            return (
                f"its current version {current} holds a commit made by hand in the served folder ("
                + ", ".join(f"{r.removeprefix('refs/heads/')} -> {sha}" for r, sha in sorted(hand.items()))
                + ": not a push, its objects are not in the store)"
            )
        return _main_problem(path)
    if os.path.lexists(path):
        return f"{path} is neither a link to a version nor a git repository (put there by hand?)"
    if _hub_dir(path).is_dir() and _published(path):
        return f"its current-version link {path} is missing (its versions and store are in {_hub_dir(path)})"
    return None


_REF_LINE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\n?$")
_PACKED_LINE = re.compile(r"^(?:#.*|\^(?:[0-9a-f]{40}|[0-9a-f]{64})|(?:[0-9a-f]{40}|[0-9a-f]{64}) refs/\S+)$")


def _garbled_refs(store: Path) -> list[str]:
    """The ref files of ``store`` (and ``packed-refs``) that git cannot read: each names one object id (or is a
    symbolic ``ref:``). Read from disk, without git (this runs before every push and read)."""
    bad: list[str] = []
    refs = store / "refs"
    for p in sorted(refs.rglob("*")) if refs.is_dir() else []:
        if p.name.endswith(".lock") or p.is_dir():
            continue
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError):
            text = ""
        if not (_REF_LINE.match(text) or text.startswith("ref: refs/")):
            bad.append(str(p.relative_to(store)))
    packed = store / "packed-refs"
    if packed.is_file():
        try:
            lines = packed.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            lines = ["?"]
        if not all(_PACKED_LINE.match(line) for line in lines if line):
            bad.append("packed-refs")
    return bad


def _own_objects(version: Path) -> bool:
    """Whether ``version``'s .git holds objects of its own (a push never writes any there: they all go to the
    store, which the version borrows from): the mark of a commit made by hand in the served folder."""
    objects = version / ".git" / "objects"
    try:
        names = os.listdir(objects)
        packs = os.listdir(objects / "pack") if "pack" in names else []
    except OSError:
        return False
    return any(n not in ("info", "pack") for n in names) or bool(packs)


def _missing_objects(store: Path, shas: list[str]) -> set[str]:
    """The object ids of ``shas`` that ``store`` does not hold."""
    if not shas:
        return set()
    out = _git(store, "cat-file", "--batch-check", input="".join(s + "\n" for s in shas).encode())
    return {line.split(" ", 1)[0] for line in out.splitlines() if line.endswith(" missing")}


def _hand_refs(path: Path, current: Path) -> dict[str, str]:
    """The refs of the current version naming objects the store lacks (commits made by hand in the served
    folder), ``{}`` when there are none; git is run only when the version holds objects of its own."""
    if not _own_objects(current):
        return {}
    refs = _read_refs(current) or {}
    missing = _missing_objects(_store(path), sorted(set(refs.values())))
    return {r: sha for r, sha in refs.items() if sha in missing}


def repair_command(hub: LocalHub, repo_id: str, repo_type: str) -> str:
    return f"phr-publish repair {repo_id} --repo-type {repo_type} --hub {hub.root}"


def check_state(hub: LocalHub, repo_id: str, repo_type: str) -> None:
    """Refuse a repo whose state on disk is damaged, naming the cause and the repair."""
    problem = _damage(hub.repo_path(repo_id, repo_type))
    if problem:
        raise LocalHubDamagedError(
            f"the local hub {repo_type} repo {repo_id} is damaged: {problem}. Nothing was written. Repair it "
            f"with: {repair_command(hub, repo_id, repo_type)} (restores main, the tags and the pull requests its "
            "last push recorded), then rerun"
        )


def _tidy(path: Path) -> None:
    """Under the lock, before a push: finish or undo what a killed push left, remove its temporaries."""
    hub, aside = _hub_dir(path), _hub_dir(path) / "legacy"
    if not os.path.lexists(path):
        if aside.is_dir():  # a conversion killed between its two renames: put the old repo back
            os.rename(aside, path)
        elif hub.exists() and not _published(path):  # a first push killed before its link: nothing published
            shutil.rmtree(hub)
    elif aside.exists() and path.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    for p in path.parent.glob(f".{path.name}.new-*"):  # temporary repos of older versions (under the lock: stale)
        shutil.rmtree(p, ignore_errors=True)
    store = _store(path)
    if store.is_dir():
        for p in store.glob("phr-index-*"):
            if _stale(p.name):
                p.unlink(missing_ok=True)
        _unlock_refs(store)
    if path.is_symlink():
        if _damage(path) is None:  # a push killed between its link swap and its record: record now
            _record(path, _refs_of(path))
        _prune(path)


def _unlock_refs(store: Path) -> None:
    """Remove the ref locks a git command killed inside the store's ``update-ref`` left (under the repo lock no
    other git command writes the store); left there, they would make every later push fail to record its refs."""
    for p in [*(store / "refs").rglob("*.lock"), store / "packed-refs.lock", store / "HEAD.lock"]:
        p.unlink(missing_ok=True)


def _prune(path: Path) -> None:
    """Keep the current version, the one before it and any holding a published tag the current one lacks; remove
    other versions, dead builds and links."""
    current, versions = _current(path), _versions(path)
    if current is None or not current.is_dir() or current.parent != versions.resolve() or not current.name.isdigit():
        return  # not a link to one of our versions: touch nothing
    numbered = [int(p.name) for p in versions.iterdir() if p.name.isdigit()]
    previous = max((n for n in numbered if n < int(current.name)), default=None)
    for p in versions.iterdir():
        if p.name.isdigit() and p.name != current.name and int(p.name) != previous:
            if (held := _holds_published_tags(path, p, current)) is not None:
                log.warning("local hub: kept %s: %s", p, held)
                continue
            _remove_version(p)
        elif not p.name.isdigit() and _stale(p.name):
            _remove(p)
    for p in _hub_dir(path).glob(".link-*"):
        if _stale(p.name):
            p.unlink(missing_ok=True)


def _holds_published_tags(path: Path, version: Path, current: Path) -> str | None:
    """Why ``version`` must be kept, or None: it holds a published tag that ``current`` lacks (a tag of a version
    older than the current one, or one the store recorded: a version above the current one that no push recorded
    was never linked, a killed push built it), or its tags cannot be read."""
    tags = _read_refs(version, "refs/tags/") if (version / ".git").is_dir() else {}
    if tags is None:
        return "its tags cannot be read"
    have = _read_refs(current, "refs/tags/") or {}
    lost = {t: sha for t, sha in tags.items() if have.get(t) != sha}
    if not lost:
        return None
    if int(version.name) > int(current.name):
        recorded = _read_refs(_store(path), "refs/tags/") or {}
        if not any(recorded.get(t) == sha for t, sha in lost.items()):
            return None
    return f"it holds tags the current version lacks ({', '.join(sorted(t.removeprefix('refs/tags/') for t in lost))})"


# ---- building a commit -----------------------------------------------------------------------------------------


def _tree_of(repo: Path, commit: str | None) -> str:
    if commit is None:
        return _git(repo, "hash-object", "-t", "tree", "-w", "--stdin", input=b"").strip()
    return _git(repo, "rev-parse", f"{commit}^{{tree}}").strip()


def _mode(p: Path) -> str:
    return "100755" if os.stat(p).st_mode & 0o111 else "100644"


def _stage(repo: Path, files: dict[str, Path | bytes], *, base: str | None = None, keep_from: str | None = None) -> str:
    """The tree of ``files`` (repo path -> file or bytes), on top of commit ``base``'s tree when given (an
    overlay), else alone; ``keep_from``: a commit whose ``.gitattributes`` is kept when ``files`` lacks one.
    Objects go into the repo's object store; refs, index and working tree are untouched."""
    gitdir = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
    fd, index = tempfile.mkstemp(prefix=f"phr-index-{os.getpid()}-", dir=gitdir)
    os.close(fd)
    os.unlink(index)  # git creates it
    env = {"GIT_INDEX_FILE": index}
    try:
        if base is not None:
            _git(repo, "read-tree", base, env=env)
        entries: list[str] = []
        on_disk = [(rel, p) for rel, p in files.items() if isinstance(p, Path)]
        if on_disk:
            shas = _git(
                repo,
                "hash-object",
                "-w",
                "--no-filters",
                "--stdin-paths",
                input="\n".join(str(p) for _, p in on_disk).encode(),
            ).split()
            if len(shas) != len(on_disk):
                raise LocalHubError("git hash-object returned an unexpected number of ids")
            entries += [f"{_mode(p)} {sha}\t{rel}" for (rel, p), sha in zip(on_disk, shas)]
        for rel, data in files.items():
            if isinstance(data, bytes):
                sha = _git(repo, "hash-object", "-w", "--no-filters", "--stdin", input=data).strip()
                entries.append(f"100644 {sha}\t{rel}")
        if keep_from is not None and GITATTRIBUTES not in files:
            kept = _git(repo, "ls-tree", "-z", keep_from, "--", GITATTRIBUTES).rstrip("\0")
            if kept:  # "<mode> blob <sha>\t.gitattributes"
                mode, _, rest = kept.partition(" ")
                entries.append(f"{mode} {rest.partition(' ')[2]}")
        if entries:
            _git(
                repo,
                "update-index",
                "-z",
                "--add",
                "--index-info",
                input="".join(e + "\0" for e in entries).encode(),
                env=env,
            )
        return _git(repo, "write-tree", env=env).strip()
    finally:
        Path(index).unlink(missing_ok=True)
        Path(index + ".lock").unlink(missing_ok=True)


def _commit(repo: Path, tree: str, parent: str | None, message: str) -> str:
    args = ["commit-tree", tree] + (["-p", parent] if parent else []) + ["-F", "-"]
    return _git(repo, *args, input=message.encode()).strip()


def _diff(repo: Path, old_tree: str, new_tree: str) -> tuple[list[str], list[str]]:
    out = _git(repo, "diff-tree", "-r", "-z", "--no-renames", "--name-status", old_tree, new_tree)
    parts = out.split("\0")
    changed: list[str] = []
    deleted: list[str] = []
    for status, path in zip(parts[0::2], parts[1::2]):
        (deleted if status == "D" else changed).append(path)
    return sorted(changed), sorted(deleted)


# ---- versions: what readers see --------------------------------------------------------------------------------


def _refs_of(repo: Path) -> dict[str, str]:
    """Every ref of ``repo`` -> the object it names (annotated tags not peeled)."""
    out = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def _read_refs(repo: Path, pattern: str = "") -> dict[str, str] | None:
    """The refs of ``repo`` under ``pattern`` (e.g. ``refs/tags/``) as ``_refs_of``; None when git cannot read
    them (a damaged or missing repository)."""
    r = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", *([pattern] if pattern else []), check=False)
    if r.returncode != 0:
        return None
    return dict(line.split(" ", 1) for line in r.stdout.decode().splitlines())


def _record(path: Path, refs: dict[str, str]) -> None:
    """Record in the store the refs just published, so a repo whose current version is lost can be restored
    (``repair``) and its objects stay named. Nothing is deleted: no push removes a ref, and a tag is forever."""
    store = _store(path)
    old = _refs_of(store)
    lines = [f"update {r} {sha}" for r, sha in sorted(refs.items()) if old.get(r) != sha]
    if lines:
        _update_refs(store, lines)


def _update_refs(repo: Path, lines: list[str]) -> None:
    script = "start\n" + "".join(line + "\n" for line in lines) + "prepare\ncommit\n"
    _git(repo, "update-ref", "--stdin", input=script.encode())


def _checkout(repo: Path) -> None:
    """Write ``main``'s files (HEAD) into a version being built, with its index."""
    _git(repo, "reset", "-q", "--hard", "HEAD")


def _build_version(path: Path, refs: dict[str, str]) -> Path:
    """A complete new version ``v/N`` (``refs`` and main's files) beside the current one, not yet visible."""
    versions = _versions(path)
    versions.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=versions))
    try:
        _git(build, "init", "-q", "--template=")
        (build / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        info = build / ".git" / "objects" / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "alternates").write_text(os.path.relpath(_store(path) / "objects", info.parent) + "\n")
        _update_refs(build, [f"create {ref} {sha}" for ref, sha in sorted(refs.items())])
        _checkout(build)
        os.chmod(build, 0o755)
        _step("built")
        final = versions / str(max((int(p.name) for p in versions.iterdir() if p.name.isdigit()), default=0) + 1)
        os.rename(build, final)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return final


def _swap(path: Path, version: Path) -> None:
    """Point ``NAME`` at ``version`` with one rename (a plain repo of an older version is first moved aside)."""
    link = _hub_dir(path) / f".link-{os.getpid()}"
    link.unlink(missing_ok=True)
    os.symlink(os.path.relpath(version, path.parent), link)
    aside = _hub_dir(path) / "legacy"
    if _is_legacy(path):
        os.rename(path, aside)
        _step("moved-aside")
    os.replace(link, path)
    _step("swapped")
    if aside.exists():
        shutil.rmtree(aside, ignore_errors=True)


def _release(path: Path, refs: dict[str, str]) -> None:
    """Make ``refs`` (and main's files) what readers of ``NAME`` see, in one rename; then drop old versions."""
    _swap(path, _build_version(path, refs))
    try:  # published already: what fails here is redone by the next push
        _record(path, refs)
        _prune(path)
    except (OSError, LocalHubError) as e:
        log.warning("local hub: after publishing %s, could not record its refs or remove an old version: %s", path, e)


def _convert(path: Path) -> None:
    """Turn a repo of an older version (a plain git repository at ``NAME``) into a store and a first version with
    the same refs; main's files are checked out again from main."""
    log.warning("local hub: converting %s to versioned folders (its working tree is rebuilt from main)", path)
    store = _ensure_store(path)
    _copy_objects(path / ".git" / "objects", store)
    refs = _refs_of(path)
    if "refs/heads/main" not in refs:
        raise LocalHubError(f"the local hub repo {path} has no main branch: it cannot be converted")
    _release(path, refs)


def _copy_objects(src: Path, store: Path) -> None:
    """Put the objects of the object folder ``src`` into ``store`` (hard links: objects are immutable)."""
    for root, _, names in os.walk(src):
        if Path(root) == src / "info":
            continue  # alternates: what src borrows, not objects
        dest = store / "objects" / Path(root).relative_to(src)
        dest.mkdir(parents=True, exist_ok=True)
        for n in names:
            if not (dest / n).exists():
                try:
                    os.link(Path(root) / n, dest / n)  # objects are immutable: share them
                except OSError:
                    shutil.copy2(Path(root) / n, dest / n)


def _check_clean(repo: Path) -> None:
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=all")
    if dirty.strip():
        shown = "\n".join("  " + line for line in dirty.splitlines()[:10])
        raise LocalHubError(
            f"the local hub repo {repo} has edits in its working tree (the working tree serves main's files and "
            f"is not edited by hand):\n{shown}\nrestore it with: git -C {repo} reset --hard && git -C {repo} "
            "clean -fd"
        )


def _next_pr(repo: Path | None) -> int:
    if repo is None:
        return 1
    names = _git(repo, "for-each-ref", "--format=%(refname:strip=3)", "refs/heads/pr/").split()
    nums = [int(n) for n in names if n.isdigit()]
    return max(nums, default=0) + 1


# ---- push ------------------------------------------------------------------------------------------------------


def _open_repo(hub: LocalHub, repo_id: str, repo_type: str, path: Path, *, create: bool) -> bool:
    """Whether the repo exists, after the checks that come before a push: the name is not taken by a repo of
    the other type, a missing repo may be created, an older layout's repo is sound (and is converted), and the
    working tree has no hand edits."""
    exists = hub.exists(repo_id, repo_type)
    if not exists:
        if (other := other_type(repo_type)) and hub.exists(repo_id, other):
            raise repo_type_mismatch(repo_id, repo_type, f"in the local hub {hub.root}")
        if not create:
            raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
    elif _is_legacy(path):
        if problem := _main_problem(path):
            raise LocalHubDamagedError(
                f"the local hub {repo_type} repo {repo_id} (a plain git repository of an older layout) is "
                f"damaged: {problem}. Nothing was written. Point main back at its last commit (`git -C {path} "
                f"log --all --oneline` lists them) with: git -C {path} update-ref refs/heads/main COMMIT, then "
                "rerun"
            )
        gitdir = path / ".git"
        if not ((gitdir / "phr-push-in-progress").exists() or (gitdir / "index.lock").exists()):
            _check_clean(path)  # hand edits are refused; the leftovers of a killed push are rebuilt
        _convert(path)
    else:
        _check_clean(path)
    return exists


def _existing_tag(path: Path, repo_id: str, tag: str | None, *, exists: bool, head: str | None) -> str | None:
    """The commit ``tag`` names in the repo (None when there is no such tag); :class:`TagExistsError` when it
    names a commit other than main (tags are immutable)."""
    existing_tag = _rev(path, f"refs/tags/{tag}") if (exists and tag) else None
    if tag and existing_tag and existing_tag != head:
        raise tag_names_other_commit(tag, repo_id, existing_tag, head)
    return existing_tag


def _same_as_main(path: Path, files: Callable[[], dict[str, Path | bytes]], *, replace: bool, head: str | None) -> bool:
    """Whether the content to push equals main's (asked before ``validate()``: a no-op push validates nothing)."""
    store = _ensure_store(path)
    staged = _stage(store, files(), base=None if replace else head, keep_from=head if replace else None)
    return staged == _tree_of(store, head)


def _new_commit(
    store: Path,
    refs: dict[str, str],
    result: PushResult,
    *,
    path: Path,
    exists: bool,
    trees: tuple[str, str],
    head: str | None,
    message: str,
    create_pr: bool,
    tag: str | None,
) -> str:
    """Commit the new tree (``trees``: old, new) on main (with ``tag``) or as the next pull request (on an
    empty initial commit for a new repo), setting the refs to publish in ``refs``; the new commit."""
    old_tree, new_tree = trees
    if create_pr:
        if head is None:  # a new repo: an empty initial commit on main, the pull request on top
            head = refs["refs/heads/main"] = _commit(store, old_tree, None, "Initial commit")
        commit = _commit(store, new_tree, head, message)
        n = _next_pr(path if exists else None)
        refs[f"refs/heads/pr/{n}"] = commit
        result.pr_ref = f"pr/{n}"
        result.pr_url = f"{path.as_uri()}#pr/{n}"
    else:
        commit = refs["refs/heads/main"] = _commit(store, new_tree, head, message)
        if tag:
            refs[f"refs/tags/{tag}"] = commit
        result.tag_created = bool(tag)
    return commit


def _write_push(
    path: Path,
    files: dict[str, Path | bytes],
    *,
    repo_id: str,
    repo_type: str,
    message: str,
    replace: bool,
    exists: bool,
    head: str | None,
    tag: str | None,
    existing_tag: str | None,
    create_pr: bool,
) -> PushResult:
    """Stage ``files``, commit them (on main, or as a pull request) and publish the refs; a push whose content
    equals main's only creates its new tag."""
    store = _ensure_store(path)
    new_tree = _stage(store, files, base=None if replace else head, keep_from=head if replace else None)
    _step("staged")
    old_tree = _tree_of(store, head)
    refs = _refs_of(path) if exists else {}
    result = PushResult(
        repo_id=repo_id,
        repo_type=repo_type,
        revision=None,
        url=str(path),
        head=head,
        tag=tag,
        local=True,
        created=not exists,
    )
    if new_tree == old_tree and exists:
        assert head is not None  # an existing repo has a main
        if tag and existing_tag is None:
            _release(path, {**refs, f"refs/tags/{tag}": head})
            result.tag_created = True
        return result
    if tag and existing_tag:
        raise tag_names_main(tag, repo_id, head)
    changed, deleted = _diff(store, old_tree, new_tree)
    commit = _new_commit(
        store,
        refs,
        result,
        path=path,
        exists=exists,
        trees=(old_tree, new_tree),
        head=head,
        message=message,
        create_pr=create_pr,
        tag=tag,
    )
    _step("committed")
    _release(path, refs)
    result.head = commit
    result.revision, result.changed, result.files, result.deleted = commit, True, changed, deleted
    return result


def commit_files(
    hub: LocalHub,
    repo_id: str,
    repo_type: str,
    files: dict[str, Path | bytes] | Callable[[], dict[str, Path | bytes]],
    *,
    message: str,
    replace: bool,
    tag: str | None = None,
    create_pr: bool = False,
    rerun: str = "",
    create: bool = True,
    validate: Callable[[], object] | None = None,
) -> PushResult:
    """Commit ``files`` to a local hub repo: the whole new content (``replace=True``: files not listed are
    deleted, ``.gitattributes`` kept) or an overlay on main (``replace=False``). ``validate()`` runs (under the
    lock, after the cheap checks) before anything is written; ``files`` may be a function called after it (what
    was validated is what is pushed). A push to an existing repo whose content equals main's (and creates no tag)
    answers before ``validate()`` runs: nothing is written, so there is nothing to validate.

    A damaged repo (``check_state``) is refused before anything is written. A failure of the environment (a full
    disk, a read-only hub: an ``OSError`` or a failed git command) is a ``PushFailedError`` (exit 1) saying the repo
    keeps its previous version, with the rerun."""
    path = hub.repo_path(repo_id, repo_type)
    with _push_failures(path, rerun), hub.lock(repo_id, repo_type):
        _tidy(path)
        check_state(hub, repo_id, repo_type)
        exists = _open_repo(hub, repo_id, repo_type, path, create=create)
        head = _rev(path, "refs/heads/main") if exists else None
        existing_tag = _existing_tag(path, repo_id, tag, exists=exists, head=head)
        if (
            validate is not None
            and exists
            and callable(files)
            and not (tag and existing_tag is None)
            and _same_as_main(path, files, replace=replace, head=head)
        ):  # a no-op push: same content as main, no tag to create
            return PushResult(
                repo_id=repo_id, repo_type=repo_type, revision=None, url=str(path), head=head, tag=tag, local=True
            )
        if validate is not None:
            validate()
        if callable(files):
            files = files()
        published = False
        try:
            result = _write_push(
                path,
                files,
                repo_id=repo_id,
                repo_type=repo_type,
                message=message,
                replace=replace,
                exists=exists,
                head=head,
                tag=tag,
                existing_tag=existing_tag,
                create_pr=create_pr,
            )
            published = True
            return result
        except Exception as e:
            if isinstance(e, PublishError) and not isinstance(e, GitFailedError):
                raise
            raise _push_failed(path, e, rerun, existed=exists) from e
        finally:
            if not exists and not published and not os.path.lexists(path):
                shutil.rmtree(_hub_dir(path), ignore_errors=True)


@contextmanager
def _push_failures(path: Path, rerun: str) -> Iterator[None]:
    """An environment failure inside (an ``OSError``, a failed git command) is the ``PushFailedError`` of
    ``_push_failed``."""
    existed = os.path.lexists(path)
    try:
        yield
    except (OSError, GitFailedError) as e:
        raise _push_failed(path, e, rerun, existed=existed) from e


def _disk_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has (almost) no room left: git does not always say so (a checkout
    on a full disk says "Could not reset index file")."""
    for p in (path, *path.parents):
        if p.is_dir():
            try:
                return shutil.disk_usage(p).free < 64 * 1024
            except OSError:
                return False
    return False


def _push_failed(path: Path, e: BaseException, rerun: str, *, existed: bool | None = None) -> PushFailedError:
    """The error of a push that failed on its environment: what failed, what the repo holds now (its previous
    version; none for a repo this push was creating) and the rerun."""
    text = str(e)
    if existed is None:
        existed = os.path.lexists(path)
    state = (
        "the repo keeps its previous version"
        if existed
        else "the repo was not created (it did not exist before, and nothing of it is left)"
    )
    again = f" Rerun: {rerun}" if rerun else ""
    full = (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or "No space left on device" in text
    if full or _disk_full(path.parent):
        return PushFailedError(
            f"push to the local hub repo {path} failed: No space left on device (the disk holding the local hub is "
            f"full); {state}. The disk is full: free space on it first.{again}"
        )
    if (isinstance(e, OSError) and e.errno in (errno.EROFS, errno.EACCES)) or any(
        m in text for m in ("Read-only file system", "Permission denied")
    ):
        remedy = f" The hub is not writable: make {path.parent} writable first."
    else:
        remedy = ""
    return PushFailedError(
        f"push to the local hub repo {path} failed ({type(e).__name__}: {text}); {state}.{remedy}{again}"
    )


_SET_ASIDE = "refs/phr/set-aside/"  # hand commits set aside by ``repair``: kept in the store, never published


def _published_refs(refs: dict[str, str]) -> dict[str, str]:
    return {r: sha for r, sha in refs.items() if not r.startswith("refs/phr/")}


def _last_refs(path: Path) -> tuple[dict[str, str], str]:
    """The refs to restore a damaged repo to, and where they come from: the store's record of the last push, else
    the newest version whose main names a commit (only refs naming objects the store holds)."""
    store = _store(path)
    if (store / "objects").is_dir() and not _garbled_refs(store):
        refs = _published_refs(_read_refs(store) or {})
        if refs and _rev(store, "refs/heads/main") and not _missing_objects(store, sorted(set(refs.values()))):
            return refs, "the refs its last push recorded"
    versions = _versions(path)
    numbered = (
        sorted((int(p.name) for p in versions.iterdir() if p.name.isdigit()), reverse=True) if versions.is_dir() else []
    )
    for n in numbered:
        v = versions / str(n)
        if (v / ".git").is_dir() and _rev(v, "refs/heads/main") and (store / "objects").is_dir():
            refs = _refs_of(v)
            missing = _missing_objects(store, sorted(set(refs.values())))
            refs = {r: sha for r, sha in refs.items() if sha not in missing}
            if "refs/heads/main" in refs:
                return refs, f"version {n}, its newest complete version (rerun the pushes made after it)"
    current = _current(path)
    served = current if current is not None and (current / ".git").is_dir() else None
    copy = (
        f"copy the files it serves first (cp -r {served} COPY && rm -rf COPY/.git: they are all that is left), "
        if served is not None
        else ""
    )
    raise LocalHubDamagedError(
        f"the local hub repo {path} cannot be repaired: neither its store nor any of its versions names a main "
        f"commit the store holds, so its history is lost; {copy}remove {path} and {_hub_dir(path)}, then push "
        + ("the copy again" if served is not None else "again")
    )


def _rebuild_store_refs(path: Path) -> dict[str, str]:
    """Write the store's refs again from the versions (their refs naming objects the store holds; the current
    version first, then the newest: a tag only an older version holds is kept), replacing garbled ones."""
    store, versions, current = _store(path), _versions(path), _current(path)
    numbered = sorted((p for p in versions.iterdir() if p.name.isdigit()), key=lambda p: -int(p.name))
    order = sorted(numbered, key=lambda p: p != current)  # stable: the current version first
    found = [refs for v in order if (v / ".git").is_dir() and (refs := _read_refs(v))]
    (store / "packed-refs").unlink(missing_ok=True)  # first: git reads them before any command in the store
    shutil.rmtree(store / "refs", ignore_errors=True)
    for d in ("heads", "tags"):
        (store / "refs" / d).mkdir(parents=True, exist_ok=True)
    missing = _missing_objects(store, sorted({sha for refs in found for sha in refs.values()}))
    rebuilt: dict[str, str] = {}
    for refs in found:
        for r, sha in _published_refs(refs).items():
            if sha not in missing:
                rebuilt.setdefault(r, sha)
    if rebuilt:
        _update_refs(store, [f"create {r} {sha}" for r, sha in sorted(rebuilt.items())])
    return rebuilt


def _is_ancestor(repo: Path, old: str, new: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def _take_hand_commit(hub: LocalHub, repo_id: str, repo_type: str, path: Path, current: Path) -> str:
    """Adopt the commits made by hand in the served folder (``_hand_refs``) when they keep the published history
    (each a descendant of what the last push recorded, on main or a pull request branch; no tag lost) and pass the
    checks a push makes; else set them aside (kept in the store under ``refs/phr/set-aside/N/``) and serve the last
    push again. Returns what was done."""
    store = _store(path)
    hand = _hand_refs(path, current)
    recorded = _published_refs(_read_refs(store) or {})
    _copy_objects(current / ".git" / "objects", store)  # nothing made by hand is lost, whatever happens next
    served = _published_refs(_refs_of(current))
    reasons = []
    for r, sha in sorted(hand.items()):
        if not (r == "refs/heads/main" or re.fullmatch(r"refs/heads/pr/\d+", r)):
            reasons.append(f"{r} is not main or a pull request branch")
        elif r in recorded and not _is_ancestor(store, recorded[r], sha):
            reasons.append(f"it does not descend from {recorded[r]}, the last push's {r.removeprefix('refs/heads/')}")
    lost = sorted(
        t.removeprefix("refs/tags/")
        for t, sha in recorded.items()
        if t.startswith("refs/tags/") and served.get(t) != sha
    )
    if lost:
        reasons.append(f"it drops or moves tags ({', '.join(lost)})")
    if not reasons:
        try:
            gate(current, repo_type)
        except PublishError as e:
            reasons.append(f"it fails the checks a push makes ({str(e).splitlines()[0]})")
    commits = ", ".join(f"{r.removeprefix('refs/heads/')} {sha}" for r, sha in sorted(hand.items()))
    if not reasons:
        _release(path, served)
        return f"adopted the commit made by hand ({commits}): it keeps the history and passes the checks a push makes"
    taken = [int(p.name) for p in (store / _SET_ASIDE).glob("*") if p.name.isdigit()]
    n = max(taken, default=0) + 1
    _update_refs(store, [f"create {_SET_ASIDE}{n}/{r.removeprefix('refs/')} {sha}" for r, sha in sorted(hand.items())])
    restore, source = _last_refs(path)
    _release(path, restore)
    sha = hand.get("refs/heads/main") or next(iter(hand.values()))
    return (
        f"set aside the commit made by hand ({commits}; {'; '.join(reasons)}): the repo serves {source} again "
        f"(main {restore['refs/heads/main']}); the hand commit is kept in its store as {_SET_ASIDE}{n}/. To publish "
        f"its files, pull them (phr-publish pull {repo_id} --repo-type {repo_type} --hub {hub.root} --revision "
        f"{sha} --out DIR), then push DIR (phr-publish push DIR --repo {repo_id} --repo-type {repo_type} --hub "
        f"{hub.root})"
    )


def repair(hub: LocalHub, repo_id: str, repo_type: str) -> str:
    """Restore a damaged local hub repo (``check_state``: its current version missing, ``main`` broken, its store's
    refs garbled, a commit made by hand in the served folder) to the refs its last push recorded, as a new version;
    returns what was done. Garbled store refs are rebuilt from the versions; a hand commit is adopted or set aside
    (``_take_hand_commit``). A sound repo is left as it is."""
    path = hub.repo_path(repo_id, repo_type)
    if not os.path.lexists(path) and not _hub_dir(path).exists():  # nothing there: no lock file created either
        raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
    with hub.lock(repo_id, repo_type):
        _tidy(path)
        done: list[str] = []
        for _ in range(4):  # each step mends one damage; a repo may have several
            problem = _damage(path)
            if problem is None:
                break
            if os.path.lexists(path) and not path.is_symlink():
                raise LocalHubDamagedError(
                    f"the local hub {repo_type} repo {repo_id} is damaged: {problem}. Move {path} away, then run "
                    f"{repair_command(hub, repo_id, repo_type)}"
                )
            store, current = _store(path), _current(path)
            if (store / "objects").is_dir() and _garbled_refs(store):
                refs = _rebuild_store_refs(path)
                tags = sorted(r.removeprefix("refs/tags/") for r in refs if r.startswith("refs/tags/"))
                done.append(
                    f"({problem}): rebuilt its store's refs from its versions: main "
                    f"{refs.get('refs/heads/main', 'none')}, tags: {', '.join(tags) or 'none'}"
                )
            elif current is not None and (current / ".git").is_dir() and _hand_refs(path, current):
                done.append(f"({problem}): " + _take_hand_commit(hub, repo_id, repo_type, path, current))
            else:
                refs, source = _last_refs(path)
                _release(path, refs)
                tags = sorted(r.removeprefix("refs/tags/") for r in refs if r.startswith("refs/tags/"))
                done.append(
                    f"({problem}) from {source}: main {refs['refs/heads/main']}, tags: {', '.join(tags) or 'none'}"
                )
        else:
            raise LocalHubDamagedError(
                f"the local hub {repo_type} repo {repo_id} is still damaged after repair: {_damage(path)}. Move "
                f"{path} and {_hub_dir(path)} aside (copy the files it serves first), then push again"
            )
        if not done:
            if not hub.exists(repo_id, repo_type):
                raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
            return f"{repo_type} repo {repo_id} on the local hub {hub.root} is sound: nothing to repair"
        return f"repaired {repo_type} repo {repo_id} on the local hub " + "; then ".join(done)


def push_local(cfg: PushConfig, folder: Path, hub: Path, rerun: str) -> PushResult:
    """``phr.hub.push`` of ``folder`` (``cfg.folder`` resolved) to the local hub ``hub``; ``rerun``: the command
    that repeats it."""
    refuse_links(folder)  # first, before the folder is read
    return commit_files(
        LocalHub(hub),
        cfg.repo,
        cfg.repo_type,
        lambda: files_for_repo(folder_files(folder), cfg.repo, cfg.repo_type),
        message=cfg.message or default_message(folder, cfg.repo_type, cfg.tag),
        replace=True,
        tag=cfg.tag,
        create_pr=cfg.create_pr,
        rerun=rerun,
        validate=lambda: gate(folder, cfg.repo_type, allow_unreviewed=cfg.allow_unreviewed),
    )


# ---- pull ------------------------------------------------------------------------------------------------------


def resolve_revision(repo: Path, revision: str | None) -> str:
    rev = revision or "main"
    candidates = [rev]
    if rev.startswith("refs/pr/"):
        candidates.insert(0, "refs/heads/pr/" + rev.removeprefix("refs/pr/"))
    for c in (f"refs/tags/{rev}", f"refs/heads/{rev}", *candidates):
        sha = _rev(repo, c)
        if sha:
            return sha
    named = _refs_of(repo)
    for c in (f"refs/tags/{rev}", f"refs/heads/{rev}"):
        if c in named:  # the ref is there, its commit is not: the store lost objects
            raise EnvironmentFault(
                f"{c} in {repo} names commit {named[c]}, which the local hub's object store ({_store(repo)}) does "
                "not hold: the store is damaged: restore the hub from a backup, or push the folder again"
            )
    raise RevisionNotFoundError(
        f"revision {rev!r} not found in {repo} (a tag, branch such as main or pr/1, or a commit id)"
    )


def read_tree(hub: LocalHub, repo_id: str, repo_type: str, revision: str | None = None) -> dict[str, bytes]:
    """All files of a repo at ``revision`` (small repos: results, model cards) as ``{path: bytes}``."""
    path = hub.repo_path(repo_id, repo_type)
    check_state(hub, repo_id, repo_type)
    if not hub.exists(repo_id, repo_type):
        raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
    sha = resolve_revision(path, revision)
    out: dict[str, bytes] = {}
    if not _git(path, "ls-tree", sha).strip():  # an empty tree (main is the empty commit a first pull request made)
        return out
    data = _git(path, "archive", "--format=tar", sha, text=False)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            member = tar.extractfile(m) if m.isfile() else None
            if member is not None:
                out[m.name] = member.read()
    return out


def pull_local(repo_id: str, *, repo_type: str, revision: str | None, dest: Path, hub: Path) -> Path:
    """``phr.hub.pull`` from the local hub ``hub``: the files of ``revision`` (no ``.git``) into ``dest``."""
    lh = LocalHub(hub)
    path = lh.repo_path(repo_id, repo_type)
    check_state(lh, repo_id, repo_type)
    if not lh.exists(repo_id, repo_type):
        other = other_type(repo_type)
        hint = (
            f" (it exists as a {other} repo: pass --repo-type {other})" if other and lh.exists(repo_id, other) else ""
        )
        raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {lh.root}{hint}")
    sha = resolve_revision(path, revision)

    def fill(tmp: Path) -> None:
        proc = subprocess.Popen(
            [_git_exe(), "-C", str(path), "archive", "--format=tar", sha],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None  # both piped
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                tar.extractall(tmp, filter="data")
        except tarfile.TarError:
            proc.stdout.close()  # git's archive stopped short: its own message says why
        err = proc.stderr.read().decode(errors="replace")
        if proc.wait() != 0:
            raise EnvironmentFault(
                f"git archive failed in {path}: {'; '.join(err.strip().splitlines())}: the local hub's object store "
                f"({_store(path)}) is missing objects or damaged: restore {lh.root} from a backup, or push the "
                "folder again to a new hub"
            )

    return install_into(dest, fill)


# ---- pull requests (phr.hub.prs) -------------------------------------------------------------------------------
#
# A pull request is the branch ``pr/N`` (``commit_files(..., create_pr=True)`` opens it on main's head). Its base is
# the merge base of ``pr/N`` and main: a merge adds one commit on main whose only parent is main, so the base of a
# pull request never moves. Its status and comments live in ``PR_STATE`` beside the store (``phr.hub.prs``), outside
# every version: a push, ``_tidy``, ``check_state`` and ``repair`` never read or touch it.

PR_STATE = "prs.json"
_ZERO = "0" * 40


class LocalPullRequest(NamedTuple):
    num: int
    head: str  # the commit pr/N names
    base: str  # the main commit it was opened on
    title: str  # the subject of its first commit


def pr_state_path(hub: LocalHub, repo_id: str, repo_type: str) -> Path:
    """The file ``phr.hub.prs`` keeps the status and comments of the repo's pull requests in."""
    return _hub_dir(hub.repo_path(repo_id, repo_type)) / PR_STATE


def local_pull_requests(
    hub: LocalHub, repo_id: str, repo_type: str, only: int | None = None
) -> dict[int, LocalPullRequest]:
    """Every pull request of the repo (branches ``pr/N``; ``only``: just that one, if it exists), by number (a
    damaged or missing repo is refused as by ``LocalHub.refs``)."""
    path = hub.repo_path(repo_id, repo_type)
    refs = hub.refs(repo_id, repo_type)
    main = refs.get("refs/heads/main")
    out: dict[int, LocalPullRequest] = {}
    for ref, head in refs.items():
        num = ref.removeprefix("refs/heads/pr/")
        if not (ref.startswith("refs/heads/pr/") and num.isdigit()) or main is None or only not in (None, int(num)):
            continue
        base = _git(path, "merge-base", main, head).strip()
        subjects = _git(path, "log", "--format=%s", f"{base}..{head}").splitlines()
        out[int(num)] = LocalPullRequest(int(num), head, base, subjects[-1] if subjects else "")
    return out


def _raw_diff(repo: Path, old: str, new: str) -> dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]]:
    """``{path: ((mode, blob) before or None, (mode, blob) after or None)}`` for every path that differs."""
    parts = _git(repo, "diff-tree", "-r", "-z", "--no-renames", old, new).split("\0")
    out: dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]] = {}
    for meta, rel in zip(parts[0::2], parts[1::2]):
        old_mode, new_mode, old_sha, new_sha, _ = meta.lstrip(":").split(" ")
        out[rel] = (
            None if old_sha == _ZERO else (old_mode, old_sha),
            None if new_sha == _ZERO else (new_mode, new_sha),
        )
    return out


def _ls_tree(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """``{path: (mode, blob)}`` of every file of ``commit``."""
    out: dict[str, tuple[str, str]] = {}
    for line in _git(repo, "ls-tree", "-r", "-z", commit).split("\0"):
        if line:
            meta, rel = line.split("\t", 1)
            mode, _, sha = meta.split(" ")
            out[rel] = (mode, sha)
    return out


def _blobs(repo: Path, shas: list[str]) -> list[bytes]:
    """The contents of the blobs ``shas`` (one ``git cat-file --batch``)."""
    if not shas:
        return []
    data = _git(repo, "cat-file", "--batch", input="".join(s + "\n" for s in shas).encode(), text=False)
    out, pos = [], 0
    for _ in shas:
        end = data.index(b"\n", pos)
        size = int(data[pos:end].split(b" ")[2])
        out.append(data[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1
    return out


def pr_diff(hub: LocalHub, repo_id: str, repo_type: str, base: str, head: str) -> tuple[dict[str, bytes], list[str]]:
    """``({path: content at head}`` of the files added or changed from ``base`` to ``head``, deleted paths)."""
    path = hub.repo_path(repo_id, repo_type)
    changes = _raw_diff(path, base, head)
    kept = sorted((rel, new[1]) for rel, (_, new) in changes.items() if new is not None)
    contents = _blobs(path, [sha for _, sha in kept])
    return dict(zip([rel for rel, _ in kept], contents)), sorted(rel for rel, (_, new) in changes.items() if not new)


def _update_branch(
    hub: LocalHub,
    repo_id: str,
    repo_type: str,
    ref: str,
    build: Callable[[Path, dict[str, str]], tuple[str, str]],
    *,
    message: str,
    rerun: str,
) -> tuple[str, bool]:
    """Under the repo's lock, after the checks a push makes: ``build(store, refs)`` -> (parent commit, new tree);
    a tree that differs from the parent's becomes a commit on it that ``ref`` names, published as a new version
    (as ``commit_files`` does). Returns (``ref``'s head, whether a commit was made)."""
    path = hub.repo_path(repo_id, repo_type)
    with _push_failures(path, rerun), hub.lock(repo_id, repo_type):
        _tidy(path)
        check_state(hub, repo_id, repo_type)
        if not hub.exists(repo_id, repo_type):
            raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
        if _is_legacy(path):
            if problem := _main_problem(path):
                raise LocalHubDamagedError(
                    f"the local hub {repo_type} repo {repo_id} (a plain git repository of an older layout) is "
                    f"damaged: {problem}. Nothing was written."
                )
            _check_clean(path)
            _convert(path)
        else:
            _check_clean(path)
        try:
            store = _ensure_store(path)
            refs = _refs_of(path)
            parent, tree = build(store, refs)
            if tree == _tree_of(store, parent):
                return parent, False
            refs[ref] = commit = _commit(store, tree, parent, message)
            _step("committed")
            _release(path, refs)
            return commit, True
        except Exception as e:
            if isinstance(e, PublishError) and not isinstance(e, GitFailedError):
                raise
            raise _push_failed(path, e, rerun) from e


def _pr_head(refs: dict[str, str], repo_id: str, repo_type: str, num: int) -> str:
    head = refs.get(f"refs/heads/pr/{num}")
    if head is None:
        raise RevisionNotFoundError(
            f"no pull request #{num} (branch pr/{num}) in the local hub {repo_type} repo {repo_id}"
        )
    return head


def commit_to_pr_branch(
    hub: LocalHub,
    repo_id: str,
    repo_type: str,
    num: int,
    files: dict[str, Path | bytes],
    *,
    message: str,
    validate: Callable[[], None] | None = None,
    rerun: str = "",
) -> str | None:
    """Commit ``files`` as an overlay on pull request ``num``'s head (branch ``pr/N``); None when it already holds
    them. ``validate()`` runs under the lock before anything is written (it raises to refuse)."""
    ref = f"refs/heads/pr/{num}"

    def build(store: Path, refs: dict[str, str]) -> tuple[str, str]:
        head = _pr_head(refs, repo_id, repo_type, num)
        if validate is not None:
            validate()
        return head, _stage(store, files, base=head)

    commit, made = _update_branch(hub, repo_id, repo_type, ref, build, message=message, rerun=rerun)
    return commit if made else None


def _with_entries(store: Path, commit: str, entries: dict[str, tuple[str, str] | None]) -> str:
    """The tree of ``commit`` with ``entries`` set (``(mode, blob)``) or removed (None)."""
    fd, index = tempfile.mkstemp(prefix=f"phr-index-{os.getpid()}-", dir=store)
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        _git(store, "read-tree", commit, env=env)
        lines = [f"{e[0]} {e[1]}\t{rel}" if e else f"0 {_ZERO}\t{rel}" for rel, e in sorted(entries.items())]
        if lines:
            _git(store, "update-index", "-z", "--index-info", input="".join(x + "\0" for x in lines).encode(), env=env)
        return _git(store, "write-tree", env=env).strip()
    finally:
        Path(index).unlink(missing_ok=True)
        Path(index + ".lock").unlink(missing_ok=True)


def _merge_conflicts(
    ours: dict[str, tuple[str, str]], changes: dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]]
) -> list[str]:
    """The paths a pull request changed that main changed too, differently (or a file where the other side has a
    folder)."""
    both = {rel for rel, (old, new) in changes.items() if ours.get(rel) not in (old, new)}
    merged = {rel for rel in ours if rel not in changes} | {rel for rel, (_, new) in changes.items() if new}
    folders = {rel.rsplit("/", i)[0] for rel in merged for i in range(1, rel.count("/") + 1)}
    return sorted(both | (merged & folders))


def merge_pr_branch(
    hub: LocalHub,
    repo_id: str,
    repo_type: str,
    num: int,
    *,
    message: str,
    validate: Callable[[list[str]], None] | None = None,
    rerun: str = "",
) -> tuple[str, bool]:
    """Merge pull request ``num`` into main: main's tree plus the pull request's changes against its base (the main
    commit it was opened on) as one new commit on main, published as a new version. ``validate(conflicts)`` runs
    under the lock before anything is written, with the paths main and the pull request both changed, differently,
    since the base: it raises to refuse (without it, a conflict is a ``LocalHubError``). Returns (main's head,
    whether a commit was made: none when main already holds the changes)."""

    def build(store: Path, refs: dict[str, str]) -> tuple[str, str]:
        main, head = refs["refs/heads/main"], _pr_head(refs, repo_id, repo_type, num)
        base = _git(store, "merge-base", main, head).strip()
        changes = _raw_diff(store, base, head)
        conflicts = _merge_conflicts(_ls_tree(store, main), changes)
        if validate is not None:
            validate(conflicts)
        elif conflicts:
            raise LocalHubError(
                f"pull request #{num} of the local hub {repo_type} repo {repo_id} conflicts with main: both changed "
                + ", ".join(conflicts)
            )
        return main, _with_entries(store, main, {rel: new for rel, (_, new) in changes.items()})

    return _update_branch(hub, repo_id, repo_type, "refs/heads/main", build, message=message, rerun=rerun)
