"""Publish PHR artifacts (PHRBench datasets, trained models, leaderboard results) to the Hugging Face Hub or to a
local hub, and pull them back.

Every push is

- **validated**: the folder passes a gate before anything is uploaded (``gate``): a PHRBench dataset must pass
  ``phr.validation.folder.validate_folder`` and its card metadata must parse the way ``datasets`` reads it; a
  results repo must pass ``phr.leaderboard.repo.check_results_folder``; a model card must parse with
  ``huggingface_hub.ModelCard`` (model-index included) and its ``.eval_results/*.yaml`` must parse;
- **atomic**: online, one ``create_commit`` (atomic server-side) carries every change; on a local hub, the new
  commit is built with a temporary index and the next version (refs and files) replaces the current one with one
  rename;
- **versioned**: ``tag`` creates an immutable tag (an existing tag is never moved), ``create_pr`` opens a pull
  request (local hub: branch ``pr/N``) instead of committing to ``main``;
- **idempotent**: a folder identical to the repo's ``main`` creates no commit.

Where a push goes: ``to`` (a local hub folder), else the environment variable ``PHR_HUB_DIR``, else the Hub
(``endpoint``, default ``https://huggingface.co``). See docs/publishing.md.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from phr.core.errors import PHRError, UsageError

HUB_DIR_ENV = "PHR_HUB_DIR"
REPO_TYPES = ("dataset", "model")
README = "README.md"
GITATTRIBUTES = ".gitattributes"
# never part of a pushed folder: git metadata, and the download metadata snapshot_download writes into local_dir
IGNORED_DIRS = (".git", ".cache/huggingface")
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
REPO_ID_RE = re.compile(rf"^{_NAME}/{_NAME}$")
TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
RESERVED_TAGS = {"main", "HEAD", "head"}


# ---- errors ----------------------------------------------------------------------------------------------------

class PublishError(UsageError):
    """A push or pull that could not be done; the message says why and what to do."""


class ValidationFailedError(PublishError):
    """The folder failed the validation gate: nothing was uploaded."""

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report


class TagExistsError(PublishError):
    pass


class MissingTokenError(PublishError):
    pass


class RepoTypeMismatchError(PublishError):
    pass


class RepoNotFoundError(PublishError):
    pass


class RevisionNotFoundError(PublishError):
    pass


class DestinationExistsError(PublishError):
    pass


class PushFailedError(PublishError):
    """The push failed part-way (network, server, disk): the repo keeps its previous version."""

    exit_code = 1


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
            out.append(f"committed {self.revision} to {dest}: {len(self.files)} file(s) added or changed, "
                       f"{len(self.deleted)} deleted")
        else:
            out.append(f"no changes: {self.repo_id} already holds this folder (main at {self.head})")
        if self.tag:
            out.append(f"tag {self.tag} {'created' if self.tag_created else 'already there'} "
                       f"-> {self.head}")
        if self.pr_url:
            out.append(f"pull request: {self.pr_url}")
        out.append(f"{'path' if self.local else 'url'}: {self.url}")
        return out


# ---- checks ----------------------------------------------------------------------------------------------------

def check_repo_id(repo_id: str) -> str:
    if not isinstance(repo_id, str) or not REPO_ID_RE.match(repo_id) or ".." in repo_id:
        raise PublishError(f"invalid repo id {repo_id!r}: expected ORG/NAME (letters, digits, '.', '_', '-')")
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


def other_type(repo_type: str) -> str:
    return "model" if repo_type == "dataset" else "dataset"


def hub_dir(value: str | os.PathLike | None) -> Path | None:
    """The local hub to use: ``value``, else ``$PHR_HUB_DIR``, else ``None`` (the online Hub)."""
    if value is not None and str(value) != "":
        return Path(value).expanduser().resolve()
    env = os.environ.get(HUB_DIR_ENV)
    return Path(env).expanduser().resolve() if env else None


# ---- files and hashes ------------------------------------------------------------------------------------------

def folder_files(folder: str | Path) -> dict[str, Path]:
    """The files a push uploads: every regular file (symlinks followed) under ``folder`` by POSIX path relative to
    it, sorted, without ``.git/`` and ``.cache/huggingface/``."""
    folder = Path(folder)
    out: dict[str, Path] = {}
    for root, dirs, files in os.walk(folder, followlinks=True):
        rel_root = Path(root).relative_to(folder).as_posix()
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = sorted(d for d in dirs if (rel_root + d) not in IGNORED_DIRS and d != ".git")
        for name in files:
            p = Path(root) / name
            if p.is_file():
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


def sha256_file(path: Path) -> str:
    """SHA-256 of a file (what the Hub reports as ``lfs.sha256`` of an LFS/Xet file)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- the validation gate ---------------------------------------------------------------------------------------

def _dataset_card_rejections(folder: Path):
    """Card metadata as the Hub and ``datasets`` read it: DatasetCard YAML, ``configs`` with valid ``data_files``
    naming files that exist."""
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    from phr.core.report import Rejection

    try:
        card = DatasetCard.load(folder / README, ignore_metadata_errors=False)
        configs = MetadataConfigs.from_dataset_card_data(card.data)
        for cfg in configs.values():
            MetadataConfigs._raise_if_data_files_field_not_valid(cfg)
    except Exception as e:  # any parser complaint is a card failure
        return [Rejection(README, "card", f"card metadata does not parse: {e}")], {}
    out = []
    for name, cfg in configs.items():
        for df in cfg.get("data_files") or []:
            paths = df["path"] if isinstance(df, dict) and isinstance(df.get("path"), list) else \
                [df["path"] if isinstance(df, dict) else df]
            out += [Rejection(README, "card", f"config {name!r} names {p}, which matches no file")
                    for p in paths if not any(folder.glob(p))]
    return out, configs


def _model_card_rejections(folder: Path):
    import yaml
    from huggingface_hub import ModelCard

    from phr.core.report import Rejection

    out = []
    try:
        card = ModelCard.load(folder / README, ignore_metadata_errors=False)
        card.data.to_dict()
    except Exception as e:
        out.append(Rejection(README, "card", f"model card metadata does not parse: {e}"))
    for p in sorted((folder / ".eval_results").glob("*.yaml")):
        rel = p.relative_to(folder).as_posix()
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
            if not isinstance(data, list):
                raise ValueError("expected a YAML list of results")
            try:
                from huggingface_hub import parse_eval_result_entries
            except ImportError:  # older huggingface_hub: check the documented keys by hand
                for item in data:
                    item["dataset"]["id"], item["value"]
            else:
                parse_eval_result_entries(data)
        except Exception as e:
            out.append(Rejection(rel, "eval_results", f"does not parse as .eval_results entries: {e!r}"))
    return out


_PASSED: dict[str, object] = {}  # content digest -> report of a folder that passed the gate in this process


def content_digest(folder: Path, repo_type: str) -> str:
    """SHA-256 over the repo type and every file's path and content: two folders with the same digest push the
    same repo content."""
    h = hashlib.sha256(repo_type.encode() + b"\0")
    for rel, p in folder_files(folder).items():
        h.update(rel.encode() + b"\0" + sha256_file(p).encode() + b"\0")
    return h.hexdigest()


# Content validators for dataset folders, first match wins: (name, matches(folder, card configs), validate(folder)
# -> ValidationReport). A dataset folder that matches none is validated as PHRBench (validate_folder), so an
# unknown kind of dataset is refused rather than pushed unchecked; other builders register theirs here.
DATASET_VALIDATORS: list[tuple[str, Callable, Callable]] = []


def register_dataset_validator(name: str, matches: Callable, validate: Callable) -> None:
    """Let ``gate`` validate dataset folders for which ``matches(folder, configs)`` holds with ``validate``."""
    DATASET_VALIDATORS[:] = [v for v in DATASET_VALIDATORS if v[0] != name]
    DATASET_VALIDATORS.insert(0, (name, matches, validate))


def dataset_validator(folder: Path, configs) -> Callable:
    from phr.leaderboard.repo import check_results_folder, is_results_folder

    for _, matches, validate in [*DATASET_VALIDATORS, ("results", is_results_folder, check_results_folder)]:
        if matches(folder, configs):
            return validate
    from phr.validation.folder import validate_folder

    return validate_folder


def gate(folder: str | Path, repo_type: str):
    """Validate ``folder`` for a push as ``repo_type``; return the ``ValidationReport`` or raise
    ``ValidationFailedError`` (its message holds the rendered report). A folder whose exact content already
    passed in this process is not validated again."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder")
    digest = content_digest(folder, repo_type)
    if digest in _PASSED:
        return _PASSED[digest]
    report = _gate(folder, repo_type)
    _PASSED[digest] = report
    return report


def _gate(folder: Path, repo_type: str):
    from phr.core.report import Rejection, ValidationReport

    report = ValidationReport()
    if not (folder / README).is_file():
        report.extend([Rejection(README, "card", "missing README.md (the repo card)")])
    elif repo_type == "dataset":
        rejections, configs = _dataset_card_rejections(folder)
        report.extend(rejections)
        if not rejections:
            full = dataset_validator(folder, configs)(folder)
            report.extend(full.rejections)
            report.rows = full.rows
    else:
        report.extend(_model_card_rejections(folder))
    if not report.ok:
        raise ValidationFailedError(
            f"refusing to push {folder}: it fails validation (nothing was uploaded)\n{report.render()}", report)
    return report


def readme_text(folder: Path) -> str:
    return (folder / README).read_text(encoding="utf-8")


# ---- destinations ----------------------------------------------------------------------------------------------

def prepare_destination(dest: str | Path, overwrite: bool) -> Path:
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())) and not overwrite:
        raise DestinationExistsError(f"{dest} exists and is not empty: pass overwrite=True (--overwrite) to "
                                     "replace it, or pull somewhere else (--to)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest


def install_into(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Create ``dest`` by ``fill(tmp)`` in a temporary sibling, then move it into place (replacing ``dest``)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.pull-", dir=dest.parent))
    try:
        fill(tmp)
        os.chmod(tmp, 0o755)
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def rerun_command(folder: str | Path, repo_id: str, *, repo_type: str = "dataset", tag: str | None = None,
                  private: bool = False, create_pr: bool = False, message: str | None = None,
                  to: str | Path | None = None, endpoint: str | None = None) -> str:
    """The ``phr-publish push`` command line that repeats a push (never with a token)."""
    parts = ["phr-publish", "push", str(folder), "--repo", repo_id]
    if repo_type != "dataset":
        parts += ["--repo-type", repo_type]
    if tag:
        parts += ["--tag", tag]
    if private:
        parts.append("--private")
    if create_pr:
        parts.append("--create-pr")
    if message:
        parts += ["--message", message]
    if to:
        parts += ["--to", str(to)]
    if endpoint:
        parts += ["--endpoint", endpoint]
    return shlex.join(parts)


def default_message(folder: Path, repo_type: str, tag: str | None) -> str:
    return f"Upload {repo_type} {folder.name} with phr-publish" + (f" ({tag})" if tag else "")


# ---- entry points ----------------------------------------------------------------------------------------------

def push(folder: str | Path, repo_id: str, *, repo_type: str = "dataset", tag: str | None = None,
         private: bool = False, create_pr: bool = False, message: str | None = None,
         to: str | Path | None = None, token: str | None = None, endpoint: str | None = None) -> PushResult:
    """Push ``folder`` to ``repo_id``: to the local hub ``to`` (or ``$PHR_HUB_DIR``), else to the Hub.

    Validated (``gate``) before anything is uploaded; one commit for all changes, or none when the repo already
    holds the folder; ``tag`` is created once and never moved; ``create_pr`` opens a pull request instead of
    committing to ``main``. Raises a ``PublishError`` saying what failed and how to rerun.
    """
    folder = Path(folder).expanduser().resolve()
    check_repo_id(repo_id)
    check_repo_type(repo_type)
    check_tag(tag)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder")
    if tag and create_pr:
        raise PublishError("--tag and --create-pr do not go together: merge the pull request, then push again "
                           "with --tag (a tag names a commit on main)")
    local = hub_dir(to)
    if local is not None:
        from phr.publish.local_hub import push_local

        return push_local(folder, repo_id, repo_type=repo_type, tag=tag, create_pr=create_pr, message=message,
                          hub=local)
    from phr.publish.hub import push_online

    return push_online(folder, repo_id, repo_type=repo_type, tag=tag, private=private, create_pr=create_pr,
                       message=message, token=token, endpoint=endpoint)


def pull(repo_id: str, *, repo_type: str = "dataset", revision: str | None = None, to: str | Path | None = None,
         hub: str | Path | None = None, token: str | None = None, endpoint: str | None = None,
         overwrite: bool = False) -> Path:
    """Download ``repo_id`` at ``revision`` (tag, branch or commit; default ``main``) into ``to`` (default:
    ``./NAME``) from the local hub ``hub`` (or ``$PHR_HUB_DIR``), else from the Hub. A non-empty destination is
    refused unless ``overwrite``. Returns the destination."""
    check_repo_id(repo_id)
    check_repo_type(repo_type)
    dest = prepare_destination(to if to is not None else Path.cwd() / repo_id.split("/")[1], overwrite)
    local = hub_dir(hub)
    if local is not None:
        from phr.publish.local_hub import pull_local

        return pull_local(repo_id, repo_type=repo_type, revision=revision, dest=dest, hub=local)
    from phr.publish.hub import pull_online

    return pull_online(repo_id, repo_type=repo_type, revision=revision, dest=dest, token=token, endpoint=endpoint)


_LAZY = {
    "write_model_card": "phr.publish.model_card",
    "load_training_metadata": "phr.publish.model_card",
    "LocalHub": "phr.publish.local_hub",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'phr.publish' has no attribute {name!r}")


__all__ = [
    "PushResult", "PublishError", "ValidationFailedError", "TagExistsError", "MissingTokenError",
    "RepoTypeMismatchError", "RepoNotFoundError", "RevisionNotFoundError", "DestinationExistsError",
    "PushFailedError", "push", "pull", "gate", "folder_files", "HUB_DIR_ENV", "register_dataset_validator",
    "write_model_card",
    "load_training_metadata", "LocalHub",
]
