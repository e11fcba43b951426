"""Push to and pull from the Hugging Face Hub (or any server speaking its protocol: ``endpoint``) with ``HfApi``.

A push, in order (nothing is uploaded before step 4):

1. token: the ``token`` argument, else ``HF_TOKEN`` / the saved login (``huggingface_hub.get_token()``); none ->
   ``MissingTokenError`` naming both;
2. the local validation gate (``phr.hub.gate``), then the server's card check (``/api/validate-yaml``);
3. the repo's state: does it exist (as this type? as the other type -> refused), its ``main`` commit and tags
   (``list_repo_refs``), its files with their hashes (``list_repo_tree(recursive=True)`` at that commit: LFS/Xet
   files carry ``lfs.sha256``, regular files their git blob id);
4. ``create_repo(exist_ok=True)`` when missing, then ONE ``create_commit`` with every added or changed file and the
   deletion of every remote file missing from the folder (``.gitattributes`` kept), ``parent_commit`` = the main
   commit read in step 3 (a concurrent push makes it fail instead of being overwritten); no commit at all when
   nothing differs;
5. ``create_tag`` on the new commit (or on main when nothing changed and the tag is new).

A commit is atomic on the server: a failure leaves the repo at its previous version or at the new commit (the
Hub applied it and its reply was lost). After a failure from the commit on, main and the tags are read back, so the
error says which (main moved, the tag not created); it names what failed and the exact command to rerun, which
completes the push. Tokens never appear in messages.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from phr.config.ops import PushConfig
from phr.core.fs import sha256_file
from phr.core.secrets import redact
from phr.hub.card import files_for_repo, space_sdk
from phr.hub.errors import (
    MissingTokenError,
    PublishError,
    PushFailedError,
    RepoNotFoundError,
    RevisionNotFoundError,
    ValidationFailedError,
)
from phr.hub.gate import gate, refuse_links
from phr.hub.repo import (
    GITATTRIBUTES,
    PushResult,
    default_message,
    folder_files,
    git_blob_sha1,
    install_into,
    other_type,
    readme_text,
    repo_type_mismatch,
    tag_names_main,
    tag_names_other_commit,
)

if TYPE_CHECKING:  # pragma: no cover - huggingface_hub is imported where a push runs
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

log = logging.getLogger(__name__)


def _safe(text: object, token: str | None) -> str:
    text = redact(str(text))
    if token:
        text = text.replace(token, "***")
    return text


def _check_online() -> None:
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise PublishError(
            "HF_HUB_OFFLINE is set, so the Hub cannot be reached: unset it, or publish to a local "
            "hub with --hub HUBDIR (or PHR_HUB_DIR)"
        )


def resolve_token(token: str | None, *, required: bool = True) -> str | None:
    """The token to use: ``token``, else ``HF_TOKEN`` or the saved login. Missing and ``required`` -> a clear
    error (raised before anything is uploaded)."""
    if token:
        return token
    from huggingface_hub import get_token

    found = get_token()
    if not found and required:
        raise MissingTokenError(
            "pushing to the Hugging Face Hub needs a token with write access: set the "
            "environment variable HF_TOKEN, or log in once with `hf auth login`; offline, publish to a local hub "
            "with --hub HUBDIR (or PHR_HUB_DIR)"
        )
    return found


def _api(token: str | None, endpoint: str | None) -> HfApi:
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint, token=token)


def repo_url(api: HfApi, repo_id: str, repo_type: str) -> str:
    prefix = {"dataset": "datasets/", "space": "spaces/"}.get(repo_type, "")
    return f"{api.endpoint.rstrip('/')}/{prefix}{repo_id}"


def validate_card_remote(api: HfApi, folder: Path, repo_type: str, token: str | None) -> None:
    """POST the README to the server's ``/api/validate-yaml`` (the check ``HfApi.create_commit`` runs through its
    private ``_validate_yaml``), before any upload; refuse on errors. A server without the endpoint (404) is
    skipped with a log line."""
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    content = readme_text(folder)
    headers = build_hf_headers(token=token)
    r = get_session().post(
        f"{api.endpoint.rstrip('/')}/api/validate-yaml",
        json={"content": content, "repoType": repo_type},
        headers=headers,
    )
    if r.status_code == 404:
        log.info("the server has no /api/validate-yaml; skipped the remote card check")
        return
    try:
        body = r.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    for w in body.get("warnings") or []:
        log.warning("Hub card check: %s", w.get("message") if isinstance(w, dict) else w)
    if r.status_code == 400:
        errors = "\n".join(f"- {e.get('message') if isinstance(e, dict) else e}" for e in body.get("errors") or [])
        raise ValidationFailedError(
            f"refusing to push {folder}: the Hub rejects the card metadata of README.md "
            f"(nothing was uploaded):\n{_safe(errors or r.text, token)}"
        )
    hf_raise_for_status(r)


def _remote_state(api: HfApi, repo_id: str, repo_type: str) -> tuple[bool, str | None, dict[str, str]]:
    """(exists, main commit or None, {tag: commit})."""
    if not api.repo_exists(repo_id, repo_type=repo_type):
        return False, None, {}
    refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    head = next((b.target_commit for b in refs.branches if b.name == "main"), None)
    return True, head, {t.name: t.target_commit for t in refs.tags}


def _remote_files(api: HfApi, repo_id: str, repo_type: str, revision: str | None) -> dict[str, RepoFile]:
    from huggingface_hub.hf_api import RepoFile

    if revision is None:
        return {}
    return {
        f.path: f
        for f in api.list_repo_tree(repo_id, recursive=True, revision=revision, repo_type=repo_type)
        if isinstance(f, RepoFile)
    }


def differs(local: Path | bytes, remote: RepoFile) -> bool:
    """Whether a local file (or the bytes to upload) differs from a remote ``RepoFile`` (LFS/Xet: sha256;
    regular: git blob id)."""
    lfs = getattr(remote, "lfs", None)
    if isinstance(local, bytes):
        if lfs is not None:
            return hashlib.sha256(local).hexdigest() != lfs.sha256
        return hashlib.sha1(b"blob %d\0" % len(local) + local).hexdigest() != remote.blob_id
    if lfs is not None:
        size = getattr(lfs, "size", None)
        if size is not None and size != local.stat().st_size:
            return True
        return sha256_file(local) != lfs.sha256
    return git_blob_sha1(local) != remote.blob_id


def plan_operations(files: dict[str, Path | bytes], remote: dict) -> tuple[list, list[str], list[str]]:
    """(operations, added or changed paths, deleted paths) turning ``remote`` into ``files``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    changed = [rel for rel, p in files.items() if rel not in remote or differs(p, remote[rel])]
    deleted = sorted(rel for rel in remote if rel not in files and rel != GITATTRIBUTES)
    ops: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=f if isinstance(f := files[rel], bytes) else str(f))
        for rel in changed
    ]
    ops += [CommitOperationDelete(path_in_repo=rel) for rel in deleted]
    return ops, changed, deleted


@dataclass
class _Attempt:
    """How far an online push got: the step it is at (a failure names it), whether the Hub answered at all,
    whether the commit was sent (from then on, what the Hub holds is read back after a failure) and main's head."""

    step: str = "reading the repo's state"
    answered: bool = False
    sent: bool = False
    head: str | None = None


def _check_push(
    at: _Attempt, api: HfApi, cfg: PushConfig, folder: Path, token: str | None, *, exists: bool, tags: dict
) -> None:
    """The checks before anything is written: the publish gate, the card with the server, the name not taken by
    a repo of the other type, the tag naming no commit but main."""
    repo_id, repo_type, tag = cfg.repo, cfg.repo_type, cfg.tag
    gate(folder, repo_type, allow_unreviewed=cfg.allow_unreviewed)
    at.step = "checking the card with the server (/api/validate-yaml)"
    validate_card_remote(api, folder, repo_type, token)
    at.step = "reading the repo's state"
    if not exists and (other := other_type(repo_type)) and api.repo_exists(repo_id, repo_type=other):
        raise repo_type_mismatch(repo_id, repo_type, "on the Hub")
    if tag and tag in tags and tags[tag] != at.head:
        raise tag_names_other_commit(tag, repo_id, tags[tag], at.head)


def _send_commit(
    at: _Attempt,
    api: HfApi,
    cfg: PushConfig,
    folder: Path,
    plan: tuple[list, list[str], list[str]],
    result: PushResult,
) -> None:
    """Send the commit of ``plan`` (operations, changed and deleted paths; on main or as a pull request) and
    create the tag on it, recording the outcome in ``result``."""
    ops, changed, deleted = plan
    repo_id, repo_type, tag, create_pr = cfg.repo, cfg.repo_type, cfg.tag, cfg.create_pr
    at.step = f"committing {len(changed)} file(s) and {len(deleted)} deletion(s)"
    at.sent = True
    info = api.create_commit(
        repo_id,
        ops,
        commit_message=cfg.message or default_message(folder, repo_type, tag),
        repo_type=repo_type,
        create_pr=create_pr,
        parent_commit=at.head,
    )
    result.revision, result.changed, result.files, result.deleted = info.oid, True, changed, deleted
    result.head = info.oid
    if create_pr:
        result.pr_url = info.pr_url
        result.pr_ref = f"refs/pr/{info.pr_num}" if getattr(info, "pr_num", None) else None
    if tag:
        at.step = f"creating tag {tag} on the new commit {info.oid}"
        api.create_tag(repo_id, tag=tag, revision=info.oid, repo_type=repo_type)
        result.tag_created = True


def _push_steps(
    at: _Attempt, api: HfApi, cfg: PushConfig, folder: Path, files: dict[str, Path | bytes], url: str, token: str | None
) -> PushResult:
    """The steps of ``push_online`` that talk to the Hub, recording in ``at`` how far they got."""
    repo_id, repo_type, tag = cfg.repo, cfg.repo_type, cfg.tag
    exists, at.head, tags = _remote_state(api, repo_id, repo_type)
    at.answered = True
    if exists and at.head is not None and (tag is None or tags.get(tag) == at.head):  # no tag to create or refuse
        at.step = "listing the repo's files"
        ops, _, _ = plan_operations(files, _remote_files(api, repo_id, repo_type, at.head))
        if not ops:  # a no-op push answers at once: nothing is uploaded, so nothing needs validating
            return PushResult(
                repo_id=repo_id, repo_type=repo_type, revision=None, url=url, head=at.head, tag=tag, created=False
            )
    _check_push(at, api, cfg, folder, token, exists=exists, tags=tags)
    result = PushResult(
        repo_id=repo_id, repo_type=repo_type, revision=None, url=url, head=at.head, tag=tag, created=not exists
    )
    if not exists:
        at.step = "creating the repo"
        sdk = space_sdk(folder) if repo_type == "space" else None
        api.create_repo(repo_id, repo_type=repo_type, private=cfg.private, exist_ok=True, space_sdk=sdk)
        exists, at.head, tags = _remote_state(api, repo_id, repo_type)
        result.head = at.head
    at.step = "listing the repo's files"
    remote = _remote_files(api, repo_id, repo_type, at.head)
    ops, changed, deleted = plan_operations(files, remote)
    if not ops:
        if tag and tag not in tags:
            at.step = f"creating tag {tag}"
            api.create_tag(repo_id, tag=tag, revision=at.head, repo_type=repo_type)
            result.tag_created = True
        return result
    if tag and tag in tags:
        raise tag_names_main(tag, repo_id, at.head)
    _send_commit(at, api, cfg, folder, (ops, changed, deleted), result)
    return result


def push_online(cfg: PushConfig, folder: Path, rerun: str, token: str | None) -> PushResult:
    """``phr.hub.push`` of ``folder`` (``cfg.folder`` resolved) to the Hub (see the module docstring for the
    steps); ``rerun``: the command that repeats it."""
    repo_id, repo_type, tag, create_pr, endpoint = cfg.repo, cfg.repo_type, cfg.tag, cfg.create_pr, cfg.endpoint
    _check_online()
    token = resolve_token(token)
    refuse_links(folder)  # first, before the folder is read
    files = files_for_repo(folder_files(folder), repo_id, repo_type)
    api = _api(token, endpoint)
    url = repo_url(api, repo_id, repo_type)
    at = _Attempt()
    try:
        return _push_steps(at, api, cfg, folder, files, url, token)
    except PublishError:
        raise
    except Exception as e:
        offline = "" if at.answered else " (no answer from the Hub: offline, publish to a local hub with --hub HUBDIR)"
        outcome = (
            _outcome(api, repo_id, repo_type, head=at.head, files=files, tag=tag, create_pr=create_pr)
            if at.sent
            else "The repo keeps its previous version (nothing was committed)."
        )
        raise PushFailedError(
            f"push to {url} failed while {at.step}: {type(e).__name__}: {_safe(e, token)}{offline}\n"
            f"{outcome} Rerun: {rerun}"
        ) from None


def _outcome(
    api: HfApi, repo_id: str, repo_type: str, *, head: str | None, files: dict, tag: str | None, create_pr: bool
) -> str:
    """What a push that failed after sending its commit left on the Hub, read back: the commit's (or the tag's)
    reply may have been lost after the Hub applied it."""
    if create_pr:
        return (
            "main is unchanged; the pull request may have been opened before its reply was lost: look at the "
            "repo's pull requests before rerunning (a rerun opens another)."
        )
    try:
        _, now, tags = _remote_state(api, repo_id, repo_type)
        holds = now != head and not plan_operations(files, _remote_files(api, repo_id, repo_type, now))[0]
    except Exception:  # noqa: BLE001 -- the Hub is still unreachable: say so, the rerun is safe either way
        return (
            "Whether the commit reached the Hub is unknown (its state could not be read back); the rerun completes "
            "the push either way: it commits only if main differs from this folder, and creates the tag on main."
        )
    if now == head:
        return f"The repo keeps its previous version (main is still {head}; a commit is all or nothing)."
    if not holds:
        return f"main moved to {now}, which does not hold this folder (another push?)."
    moved = f"The commit reached the Hub: main moved to the new commit {now} (this folder)"
    if tag is None:
        return moved + "; nothing is left to do (the rerun finds no changes)."
    if tags.get(tag) == now:
        return moved + f" and tag {tag} names it; nothing is left to do."
    return moved + f", but tag {tag} was not created; the rerun creates it on main without a second commit."


def _download(
    repo_id: str,
    repo_type: str,
    revision: str | None,
    dest: Path,
    *,
    token: str | None,
    endpoint: str | None,
    patterns: list[str] | None = None,
) -> None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError
    from huggingface_hub.errors import RevisionNotFoundError as HfRevisionNotFound

    try:
        snapshot_download(
            repo_id,
            repo_type=repo_type,
            revision=revision,
            local_dir=dest,
            token=token,
            endpoint=endpoint,
            allow_patterns=patterns,
        )
    except HfRevisionNotFound:
        raise RevisionNotFoundError(f"revision {revision!r} not found in {repo_type} repo {repo_id}") from None
    except RepositoryNotFoundError:
        raise RepoNotFoundError(
            f"{repo_type} repo {repo_id} not found (or the token cannot read it): check the "
            "name and --repo-type, and HF_TOKEN / `hf auth login` for private repos"
        ) from None
    shutil.rmtree(dest / ".cache", ignore_errors=True)  # snapshot_download's own metadata


def pull_online(
    repo_id: str, *, repo_type: str, revision: str | None, dest: Path, token: str | None, endpoint: str | None
) -> Path:
    """``phr.hub.pull`` from the Hub: ``snapshot_download`` into a temporary sibling, moved into place."""
    _check_online()
    token = resolve_token(token, required=False)
    try:
        return install_into(
            dest, lambda tmp: _download(repo_id, repo_type, revision, tmp, token=token, endpoint=endpoint)
        )
    except PublishError:
        raise
    except Exception as e:
        raise PublishError(
            f"pull of {repo_type} repo {repo_id} failed: {type(e).__name__}: {_safe(e, token)}; "
            f"nothing was written to {dest} (offline, pull from a local hub with --hub HUBDIR or PHR_HUB_DIR)"
        ) from None


def read_files_online(
    repo_id: str, repo_type: str, *, patterns: list[str], token: str | None, endpoint: str | None
) -> dict[str, bytes]:
    """The files matching ``patterns`` on main, as ``{path: bytes}`` ({} when the repo does not exist)."""
    _check_online()
    token = resolve_token(token, required=False)
    tmp = Path(tempfile.mkdtemp(prefix="phr-read-"))
    try:
        try:
            _download(repo_id, repo_type, None, tmp, token=token, endpoint=endpoint, patterns=patterns)
        except RepoNotFoundError:
            return {}
        return {rel: p.read_bytes() for rel, p in folder_files(tmp).items()}
    except PublishError:
        raise
    except Exception as e:
        raise PublishError(
            f"reading {repo_type} repo {repo_id} failed: {type(e).__name__}: {_safe(e, token)}"
        ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def add_file_pr_online(
    repo_id: str, repo_type: str, path: str, data: bytes, *, message: str, token: str | None, endpoint: str | None
) -> PushResult:
    """Open a pull request adding (or replacing) one file; nothing when main already holds the same bytes."""
    import hashlib

    from huggingface_hub import CommitOperationAdd

    _check_online()
    token = resolve_token(token)
    api = _api(token, endpoint)
    url = repo_url(api, repo_id, repo_type)
    sent = False
    try:
        exists, head, _ = _remote_state(api, repo_id, repo_type)
        if not exists:
            raise RepoNotFoundError(f"{repo_type} repo {repo_id} not found (or the token cannot read it)")
        result = PushResult(repo_id=repo_id, repo_type=repo_type, revision=None, url=url, head=head)
        blob = hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()
        current = api.get_paths_info(repo_id, [path], revision=head, repo_type=repo_type)
        if current and getattr(current[0], "blob_id", None) == blob:
            return result
        sent = True
        info = api.create_commit(
            repo_id,
            [CommitOperationAdd(path_in_repo=path, path_or_fileobj=data)],
            commit_message=message,
            repo_type=repo_type,
            create_pr=True,
            parent_commit=head,
        )
        result.revision = result.head = info.oid
        result.changed, result.files = True, [path]
        result.pr_url = info.pr_url
        result.pr_ref = f"refs/pr/{info.pr_num}" if getattr(info, "pr_num", None) else None
        return result
    except PublishError:
        raise
    except Exception as e:
        outcome = (
            "main is unchanged; the pull request may have been opened before its reply was lost: look at the "
            "repo's pull requests before retrying"
            if sent
            else "the repo is unchanged"
        )
        raise PushFailedError(
            f"opening a pull request on {url} failed: {type(e).__name__}: {_safe(e, token)}; {outcome}"
        ) from None
