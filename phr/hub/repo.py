"""What every push and pull shares: repo ids, tags and types, the files a folder pushes, the push result and
installing a download into place."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from phr.config.ops import RepoType
from phr.core.fs import atomic_dir, folder_links, sha256_file
from phr.core.settings import hub_dir  # noqa: F401 (re-exported: where a push goes)
from phr.hub.errors import DestinationExistsError, PublishError, RepoTypeMismatchError, TagExistsError

REPO_TYPES: tuple[str, ...] = get_args(RepoType)
README = "README.md"
GITATTRIBUTES = ".gitattributes"
# never part of a pushed folder: git metadata, and the download metadata snapshot_download writes into local_dir
IGNORED_DIRS = (".git", ".cache/huggingface")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
REPO_ID_RE = re.compile(rf"^{_NAME}/{_NAME}$")
TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
RESERVED_TAGS = {"main", "HEAD", "head"}


# ---- result ----------------------------------------------------------------------------------------------------


@dataclass
class PushResult:
    """What a push did.

    ``revision`` is the new commit (``None`` when nothing changed), ``head`` the commit ``main`` (or the pull
    request) points at after the push, ``files`` the paths added or modified, ``deleted`` the paths removed.
    ``url`` is the repo's web address (online) or its folder (local hub); ``pr_url``/``pr_ref`` name the pull
    request when one was opened (local hub: the branch ``pr/N``).
    """

    repo_id: str
    repo_type: str
    revision: str | None
    url: str
    head: str | None = None
    tag: str | None = None
    tag_created: bool = False
    pr_url: str | None = None
    pr_ref: str | None = None
    changed: bool = False
    created: bool = False
    files: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    local: bool = False

    def lines(self) -> list[str]:
        """Human-readable summary (what the CLI prints)."""
        where = "local hub" if self.local else "Hub"
        out = []
        if self.created:
            out.append(f"created {self.repo_type} repo {self.repo_id} on the {where}")
        if self.changed:
            dest = f"pull request {self.pr_ref}" if self.pr_ref else "main"
            out.append(
                f"committed {self.revision} to {dest}: {len(self.files)} file(s) added or changed, "
                f"{len(self.deleted)} deleted"
            )
        else:
            out.append(f"no changes: {self.repo_id} already holds this folder (main at {self.head})")
        if self.tag:
            out.append(f"tag {self.tag} {'created' if self.tag_created else 'already there'} -> {self.head}")
        if self.pr_url:
            out.append(f"pull request: {self.pr_url}")
        out.append(f"{'path' if self.local else 'url'}: {self.url}")
        return out


# ---- checks ----------------------------------------------------------------------------------------------------


def repo_id_problem(repo_id: object, *, namespace: bool = True) -> str | None:
    """Why the Hub would refuse ``repo_id`` as ORG/NAME (or also NAME alone when ``namespace`` is false), or
    ``None``. The Hub's rules, each said in words: each part uses ASCII letters, digits, '.', '_', '-', starts and ends with a letter or
    digit, holds no '--' or '..', does not end with '.git' (in any case) and has at most 96 characters. huggingface_hub's own
    validator (``validate_repo_id``) then has the last word. The local hub keeps the same rule, so a name it
    accepts is one the Hub accepts too (and never a path that leaves its folder)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") > 1 or (namespace and repo_id.count("/") != 1):
        return "expected ORG/NAME" if namespace else "expected NAME or ORG/NAME"
    for part in repo_id.split("/"):
        if not re.fullmatch(_NAME, part):
            return f"{part!r} must use ASCII letters, digits, '.', '_' or '-' and start and end with a letter or digit"
        if "--" in part or ".." in part:
            return f"{part!r} cannot hold '--' or '..'"
        if part.lower().endswith(".git"):
            return f"{part!r} cannot end with '.git' in any case (the Hub refuses such names)"
        if len(part) > 96:
            return f"{part[:20]!r}... has {len(part)} characters (at most 96)"
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        return f"huggingface_hub refuses it: {e}"
    return None


def check_repo_id(repo_id: str) -> str:
    """``repo_id``, or a ``PublishError`` saying why the Hub would refuse it (see ``repo_id_problem``)."""
    problem = repo_id_problem(repo_id)
    if problem:
        raise PublishError(f"invalid repo id {repo_id!r}: {problem} (ORG/NAME: letters, digits, '.', '_', '-')")
    return repo_id


def check_repo_type(repo_type: str) -> str:
    if repo_type not in REPO_TYPES:
        raise PublishError(f"invalid repo type {repo_type!r}: use one of {', '.join(REPO_TYPES)}")
    return repo_type


def check_tag(tag: str | None) -> str | None:
    if tag is None:
        return None
    if not TAG_RE.match(tag) or tag in RESERVED_TAGS or ".." in tag or tag.endswith((".lock", ".")):
        raise PublishError(f"invalid tag {tag!r}: use something like v0.1.0 (letters, digits, '.', '_', '-', '+')")
    return tag


def other_type(repo_type: str) -> str | None:
    """The type whose repos share names with ``repo_type``'s (datasets and models); a Space shares none."""
    return {"dataset": "model", "model": "dataset"}.get(repo_type)


def repo_type_mismatch(repo_id: str, repo_type: str, where: str) -> RepoTypeMismatchError:
    """The refusal of a push to ``repo_id`` as a ``repo_type`` repo that ``where`` (``on the Hub``, ``in the local
    hub ROOT``) holds as the other type."""
    other = other_type(repo_type) or "other"
    return RepoTypeMismatchError(
        f"{repo_id} exists {where} as a {other} repo, not a {repo_type} repo: pass --repo-type {other}, or pick "
        "another name"
    )


def tag_names_other_commit(tag: str, repo_id: str, commit: str, head: str | None) -> TagExistsError:
    """The refusal of a push whose ``tag`` names ``commit``, not main (``head``): tags are immutable."""
    return TagExistsError(
        f"tag {tag} already exists in {repo_id} and names commit {commit}, not main ({head}); tags are immutable: "
        "push with a new tag"
    )


def tag_names_main(tag: str, repo_id: str, head: str | None) -> TagExistsError:
    """The refusal of a push whose ``tag`` already names main (``head``) while the folder differs from it: tags
    are immutable."""
    return TagExistsError(
        f"tag {tag} already names main ({head}) of {repo_id}, and this folder differs from it; tags are immutable: "
        "push with a new tag"
    )


# ---- files and hashes ------------------------------------------------------------------------------------------


def link_message(folder: Path, links: list[tuple[str, str]]) -> str:
    shown = "\n".join(f"  {rel}: {what}" for rel, what in links[:20])
    more = f"\n  ... and {len(links) - 20} more" if len(links) > 20 else ""
    return (
        f"{folder} holds {len(links)} link(s) out of the folder; links are never followed or published (they "
        f"could publish files from elsewhere on this machine). Replace each with a copy of the file it names, or "
        f"remove it:\n{shown}{more}"
    )


def folder_files(folder: str | Path) -> dict[str, Path]:
    """The files a push uploads: every regular file under ``folder`` by POSIX path relative to it, sorted, without
    ``.git/`` and ``.cache/huggingface/``. A symbolic link, or a file hard-linked from outside the folder, raises
    ``PublishError`` naming every one (links are never followed)."""
    folder = Path(folder)
    links = folder_links(folder, IGNORED_DIRS)
    if links:
        raise PublishError(link_message(folder, links))
    out: dict[str, Path] = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        rel_root = Path(root).relative_to(folder).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if (rel_root + d) not in IGNORED_DIRS and d != ".git")
        for name in files:
            p = Path(root) / name
            if p.is_file() and not p.is_symlink():
                rel = rel_root + name
                if "\n" in rel or "\r" in rel:
                    raise PublishError(f"file name with a line break cannot be published: {rel!r}")
                out[rel] = p
    return dict(sorted(out.items()))


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file (what the Hub reports as ``blob_id`` of a regular, non-LFS file)."""
    size = path.stat().st_size
    h = hashlib.sha1(f"blob {size}\0".encode())
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def prepare_destination(dest: str | Path, overwrite: bool) -> Path:
    given = Path(dest).expanduser()
    if given.is_symlink():
        raise DestinationExistsError(
            f"{given} is a symbolic link (to {os.readlink(given)!r}): refusing to pull into it, since replacing it "
            "would empty the folder it points to; give a real folder or a new path (--out)"
        )
    dest = given.resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not overwrite:
        raise DestinationExistsError(
            f"{dest} exists and is not empty: pass overwrite=True to replace it, or pull somewhere else (out=...)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest


def install_into(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Create ``dest`` by ``fill(tmp)`` in a temporary sibling, then move it into place (replacing ``dest``)."""
    with atomic_dir(dest) as tmp:
        fill(tmp)
    return dest


def default_message(folder: Path, repo_type: str, tag: str | None) -> str:
    return f"Upload {repo_type} {folder.name} with phr-publish" + (f" ({tag})" if tag else "")


def readme_text(folder: Path) -> str:
    return (folder / README).read_text(encoding="utf-8")


def content_digest(folder: Path, repo_type: str) -> str:
    """SHA-256 over the repo type and every file's path and content: two folders with the same digest push the
    same repo content."""
    h = hashlib.sha256(repo_type.encode() + b"\0")
    for rel, p in folder_files(folder).items():
        h.update(rel.encode() + b"\0" + sha256_file(p).encode() + b"\0")
    return h.hexdigest()
