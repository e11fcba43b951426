"""A local hub: a folder of git repositories laid out like the Hub, for offline publishing and tests.

Layout::

    HUBDIR/datasets/ORG/NAME/   a git repository; its working tree holds main's files, so
                                ``datasets.load_dataset("HUBDIR/datasets/ORG/NAME", "all")`` loads it
    HUBDIR/models/ORG/NAME/     the same for model repos
    HUBDIR/datasets/ORG/.NAME.lock   a lock file held during a push

A push never edits the working tree file by file. It

1. hashes the folder's files into the repo's object store and builds the new tree with a *temporary index*
   (``GIT_INDEX_FILE``): the repo's refs, index and working tree are untouched;
2. compares that tree with ``main``'s: identical -> no commit (idempotent);
3. writes the commit (``git commit-tree``, a fixed author/committer identity so no git config is needed);
4. moves ``main`` (and creates the tag) in one ``git update-ref --stdin`` transaction that checks ``main`` still
   points where it did, then checks the working tree out (``git reset --hard``). If that checkout fails, the ref
   transaction is rolled back and the working tree restored, so a failure anywhere leaves the previous version.

A new repo is built in a temporary sibling folder and renamed into place at the end. ``create_pr`` puts the
commit on a new branch ``pr/N`` instead of ``main``. Tags are git tags and never move.
"""

from __future__ import annotations

import fcntl
import io
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from phr.publish import (
    GITATTRIBUTES,
    PublishError,
    PushFailedError,
    PushResult,
    RepoNotFoundError,
    RepoTypeMismatchError,
    RevisionNotFoundError,
    TagExistsError,
    default_message,
    folder_files,
    gate,
    install_into,
    other_type,
    rerun_command,
)

log = logging.getLogger(__name__)

IDENTITY = {
    "GIT_AUTHOR_NAME": "phr-publish", "GIT_AUTHOR_EMAIL": "phr-publish@localhost",
    "GIT_COMMITTER_NAME": "phr-publish", "GIT_COMMITTER_EMAIL": "phr-publish@localhost",
}
ZERO = "0" * 40
MARKER = "phr-push-in-progress"
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE",
                 "GIT_CEILING_DIRECTORIES", "GIT_PREFIX")


class LocalHubError(PublishError):
    pass


def _git_exe() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise LocalHubError("the local hub needs the git command line: install git (https://git-scm.com)")
    return exe


def _git(repo: Path, *args: str, input: bytes | None = None, env: dict | None = None, check: bool = True,
         text: bool = True):
    base_env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    cmd = [_git_exe(), "-C", str(repo), "-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
           "-c", "gc.auto=0", "-c", "core.hooksPath=/dev/null", *args]
    r = subprocess.run(cmd, input=input, capture_output=True, check=False,
                       env={**base_env, **IDENTITY, "GIT_TERMINAL_PROMPT": "0", **(env or {})})
    if check and r.returncode != 0:
        raise LocalHubError(f"git {' '.join(args[:2])} failed in {repo}: "
                            f"{r.stderr.decode(errors='replace').strip()}")
    if not check:
        return r
    return r.stdout.decode() if text else r.stdout


def _rev(repo: Path, ref: str) -> str | None:
    r = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if r.returncode != 0:
        return None
    return r.stdout.decode().strip() or None


class LocalHub:
    """A local hub rooted at ``root`` (created on the first push)."""

    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()

    def repo_path(self, repo_id: str, repo_type: str) -> Path:
        org, name = repo_id.split("/")
        return self.root / ("datasets" if repo_type == "dataset" else "models") / org / name

    def exists(self, repo_id: str, repo_type: str) -> bool:
        return (self.repo_path(repo_id, repo_type) / ".git").is_dir()

    @contextmanager
    def lock(self, repo_id: str, repo_type: str):
        path = self.repo_path(repo_id, repo_type)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / f".{path.name}.lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def refs(self, repo_id: str, repo_type: str) -> dict[str, str]:
        """``{"refs/heads/main": sha, "refs/tags/v0.1.0": sha, ...}`` (tags peeled to their commit)."""
        path = self.repo_path(repo_id, repo_type)
        if not self.exists(repo_id, repo_type):
            raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {self.root}")
        out = _git(path, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)")
        refs = {}
        for line in out.splitlines():
            name, obj, *peeled = line.split(" ")
            refs[name] = (peeled[0] if peeled and peeled[0] else obj)
        return refs


# ---- building a commit -----------------------------------------------------------------------------------------

def _init(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(path, "config", "core.autocrlf", "false")
    _git(path, "config", "gc.auto", "0")


def _tree_of(repo: Path, commit: str | None) -> str:
    if commit is None:
        return _git(repo, "hash-object", "-t", "tree", "-w", "--stdin", input=b"").strip()
    return _git(repo, "rev-parse", f"{commit}^{{tree}}").strip()


def _mode(p: Path) -> str:
    return "100755" if os.stat(p).st_mode & 0o111 else "100644"


def _stage(repo: Path, files: dict[str, Path | bytes], *, base: str | None = None,
           keep_from: str | None = None) -> str:
    """The tree of ``files`` (repo path -> file or bytes), on top of commit ``base``'s tree when given (an
    overlay), else alone; ``keep_from``: a commit whose ``.gitattributes`` is kept when ``files`` lacks one.
    Objects go into the repo's object store; refs, index and working tree are untouched."""
    gitdir = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
    fd, index = tempfile.mkstemp(prefix="phr-index-", dir=gitdir)
    os.close(fd)
    os.unlink(index)  # git creates it
    env = {"GIT_INDEX_FILE": index}
    try:
        if base is not None:
            _git(repo, "read-tree", base, env=env)
        entries: list[str] = []
        on_disk = [(rel, p) for rel, p in files.items() if isinstance(p, Path)]
        if on_disk:
            shas = _git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths",
                        input="\n".join(str(p) for _, p in on_disk).encode()).split()
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
            _git(repo, "update-index", "-z", "--add", "--index-info",
                 input="".join(e + "\0" for e in entries).encode(), env=env)
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
    changed, deleted = [], []
    for status, path in zip(parts[0::2], parts[1::2]):
        (deleted if status == "D" else changed).append(path)
    return sorted(changed), sorted(deleted)


def _checkout(repo: Path) -> None:
    """Make the working tree and index match ``main`` (HEAD)."""
    _git(repo, "reset", "-q", "--hard", "HEAD")


def _update_refs(repo: Path, lines: list[str]) -> None:
    script = "start\n" + "".join(line + "\n" for line in lines) + "prepare\ncommit\n"
    _git(repo, "update-ref", "--stdin", input=script.encode())


def _publish(repo: Path, commit: str, old: str | None, tag: str | None) -> None:
    """Move main to ``commit`` (and create ``tag``) in one transaction, then check the working tree out; if the
    checkout fails, roll the refs back and restore the working tree."""
    marker = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip()) / MARKER
    marker.write_text(f"{old or ZERO} {commit}\n")
    lines = [f"update refs/heads/main {commit} {old or ZERO}"]
    if tag:
        lines.append(f"create refs/tags/{tag} {commit}")
    _update_refs(repo, lines)
    try:
        _checkout(repo)
    except BaseException:
        back = [f"update refs/heads/main {old} {commit}" if old else f"delete refs/heads/main {commit}"]
        if tag:
            back.append(f"delete refs/tags/{tag} {commit}")
        _update_refs(repo, back)
        if old:
            _checkout(repo)
            _git(repo, "clean", "-q", "-fd")
        raise
    marker.unlink(missing_ok=True)


def _recover(repo: Path) -> None:
    """Finish a push that was killed between moving main and checking out the working tree."""
    marker = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip()) / MARKER
    if marker.exists():
        log.warning("local hub: %s: finishing an interrupted push (checking out main)", repo)
        if _rev(repo, "HEAD"):
            _checkout(repo)
            _git(repo, "clean", "-q", "-fd")
        marker.unlink(missing_ok=True)


def _check_clean(repo: Path) -> None:
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=all")
    if dirty.strip():
        shown = "\n".join("  " + line for line in dirty.splitlines()[:10])
        raise LocalHubError(
            f"the local hub repo {repo} has edits in its working tree (the working tree serves main's files and "
            f"is not edited by hand):\n{shown}\nrestore it with: git -C {repo} reset --hard && git -C {repo} "
            "clean -fd")


def _next_pr(repo: Path) -> int:
    names = _git(repo, "for-each-ref", "--format=%(refname:strip=3)", "refs/heads/pr/").split()
    nums = [int(n) for n in names if n.isdigit()]
    return max(nums, default=0) + 1


# ---- push ------------------------------------------------------------------------------------------------------

def commit_files(hub: LocalHub, repo_id: str, repo_type: str,
                 files: dict[str, Path | bytes] | Callable[[], dict[str, Path | bytes]], *,
                 message: str, replace: bool, tag: str | None = None, create_pr: bool = False,
                 rerun: str = "", create: bool = True, validate=None) -> PushResult:
    """Commit ``files`` to a local hub repo: the whole new content (``replace=True``: files not listed are
    deleted, ``.gitattributes`` kept) or an overlay on main (``replace=False``). ``validate()`` runs (under the
    lock, after the cheap checks) before anything is written; ``files`` may be a function called after it (what
    was validated is what is pushed)."""
    path = hub.repo_path(repo_id, repo_type)
    with hub.lock(repo_id, repo_type):
        exists = hub.exists(repo_id, repo_type)
        if not exists:
            if hub.exists(repo_id, other_type(repo_type)):
                raise RepoTypeMismatchError(
                    f"{repo_id} exists in the local hub {hub.root} as a {other_type(repo_type)} repo, not a "
                    f"{repo_type} repo: pass --repo-type {other_type(repo_type)}, or pick another name")
            if not create:
                raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
        else:
            _recover(path)
            _check_clean(path)
        head = _rev(path, "refs/heads/main") if exists else None
        existing_tag = _rev(path, f"refs/tags/{tag}") if (exists and tag) else None
        if tag and existing_tag and existing_tag != head:
            raise TagExistsError(
                f"tag {tag} already exists in {repo_id} and names commit {existing_tag}, not main ({head}); "
                "tags are immutable: push with a new tag")
        if validate is not None:
            validate()
        if callable(files):
            files = files()
        work = path if exists else Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=path.parent))
        try:
            if not exists:
                _init(work)
            new_tree = _stage(work, files, base=None if replace else head, keep_from=head if replace else None)
            old_tree = _tree_of(work, head)
            url = str(path)
            result = PushResult(repo_id=repo_id, repo_type=repo_type, revision=None, url=url, head=head, tag=tag,
                                local=True, created=not exists)
            if new_tree == old_tree and exists:
                if tag and existing_tag is None:
                    _update_refs(work, [f"create refs/tags/{tag} {head}"])
                    result.tag_created = True
                return result
            if tag and existing_tag:
                raise TagExistsError(
                    f"tag {tag} already names main ({head}) of {repo_id}, and this folder differs from it; tags "
                    "are immutable: push with a new tag")
            changed, deleted = _diff(work, old_tree, new_tree)
            if create_pr:
                if head is None:  # a new repo: an empty initial commit on main, the pull request on top
                    head = _commit(work, old_tree, None, "Initial commit")
                    _update_refs(work, [f"create refs/heads/main {head}"])
                commit = _commit(work, new_tree, head, message)
                n = _next_pr(work)
                _update_refs(work, [f"create refs/heads/pr/{n} {commit}"])
                result.pr_ref = f"pr/{n}"
                result.pr_url = f"{path.as_uri()}#pr/{n}"
                result.head = commit
            else:
                commit = _commit(work, new_tree, head, message)
                _publish(work, commit, head, tag)
                result.head = commit
                result.tag_created = bool(tag)
            if not exists:
                os.chmod(work, 0o755)
                os.rename(work, path)
            result.revision, result.changed, result.files, result.deleted = commit, True, changed, deleted
            return result
        except PublishError:
            raise
        except Exception as e:
            raise PushFailedError(
                f"push to the local hub repo {path} failed ({type(e).__name__}: {e}); the repo keeps its previous "
                f"version." + (f" Rerun: {rerun}" if rerun else "")) from e
        finally:
            if not exists and work.exists():
                shutil.rmtree(work, ignore_errors=True)


def push_local(folder: Path, repo_id: str, *, repo_type: str, tag: str | None, create_pr: bool,
               message: str | None, hub: Path) -> PushResult:
    """``phr.publish.push`` to the local hub ``hub``."""
    folder = Path(folder)
    rerun = rerun_command(folder, repo_id, repo_type=repo_type, tag=tag, create_pr=create_pr, message=message,
                          to=hub)
    return commit_files(LocalHub(hub), repo_id, repo_type, lambda: folder_files(folder),
                        message=message or default_message(folder, repo_type, tag), replace=True, tag=tag,
                        create_pr=create_pr, rerun=rerun, validate=lambda: gate(folder, repo_type))


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
    raise RevisionNotFoundError(f"revision {rev!r} not found in {repo} (a tag, branch such as main or pr/1, "
                                "or a commit id)")


def read_tree(hub: LocalHub, repo_id: str, repo_type: str, revision: str | None = None) -> dict[str, bytes]:
    """All files of a repo at ``revision`` (small repos: results, model cards) as ``{path: bytes}``."""
    path = hub.repo_path(repo_id, repo_type)
    if not hub.exists(repo_id, repo_type):
        raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {hub.root}")
    sha = resolve_revision(path, revision)
    data = _git(path, "archive", "--format=tar", sha, text=False)
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.isfile():
                out[m.name] = tar.extractfile(m).read()
    return out


def pull_local(repo_id: str, *, repo_type: str, revision: str | None, dest: Path, hub: Path) -> Path:
    """``phr.publish.pull`` from the local hub ``hub``: the files of ``revision`` (no ``.git``) into ``dest``."""
    lh = LocalHub(hub)
    path = lh.repo_path(repo_id, repo_type)
    if not lh.exists(repo_id, repo_type):
        hint = (f" (it exists as a {other_type(repo_type)} repo: pass --repo-type {other_type(repo_type)})"
                if lh.exists(repo_id, other_type(repo_type)) else "")
        raise RepoNotFoundError(f"no {repo_type} repo {repo_id} in the local hub {lh.root}{hint}")
    sha = resolve_revision(path, revision)

    def fill(tmp: Path) -> None:
        proc = subprocess.Popen([_git_exe(), "-C", str(path), "archive", "--format=tar", sha],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(tmp, filter="data")
        err = proc.stderr.read().decode(errors="replace")
        if proc.wait() != 0:
            raise LocalHubError(f"git archive failed in {path}: {err.strip()}")

    return install_into(dest, fill)
