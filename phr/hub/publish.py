"""``push`` and ``pull``: to and from the Hugging Face Hub, or a local hub folder (``to`` / ``hub``, else
``$PHR_HUB_DIR``), for any artifact kind.

Every push is

- **validated**: the folder passes ``phr.hub.gate`` (card as the Hub reads it, content by its artifact kind) before
  anything is uploaded;
- **atomic**: online, one ``create_commit`` carries every change; on a local hub the new version becomes visible
  with one rename (docs/publishing.md says what a kill at any point leaves behind);
- **versioned**: ``tag`` creates an immutable tag, ``create_pr`` opens a pull request instead of committing to main;
- **idempotent**: a folder identical to the repo's ``main`` creates no commit.
"""

from __future__ import annotations

from pathlib import Path

from phr.hub.errors import PublishError
from phr.hub.local import pull_local, push_local
from phr.hub.online import pull_online, push_online
from phr.hub.repo import PushResult, check_repo_id, check_repo_type, check_tag, hub_dir, prepare_destination


def push(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    tag: str | None = None,
    private: bool = False,
    create_pr: bool = False,
    message: str | None = None,
    to: str | Path | None = None,
    token: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
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
        raise PublishError(
            "--tag and --create-pr do not go together: merge the pull request, then push again "
            "with --tag (a tag names a commit on main)"
        )
    local = hub_dir(to)
    if local is not None:
        return push_local(
            folder, repo_id, repo_type=repo_type, tag=tag, create_pr=create_pr, message=message, hub=local
        )
    return push_online(
        folder,
        repo_id,
        repo_type=repo_type,
        tag=tag,
        private=private,
        create_pr=create_pr,
        message=message,
        token=token,
        endpoint=endpoint,
    )


def pull(
    repo_id: str,
    *,
    repo_type: str = "dataset",
    revision: str | None = None,
    to: str | Path | None = None,
    hub: str | Path | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Download ``repo_id`` at ``revision`` (tag, branch or commit; default ``main``) into ``to`` (default:
    ``./NAME``) from the local hub ``hub`` (or ``$PHR_HUB_DIR``), else from the Hub. A non-empty destination is
    refused unless ``overwrite``. Returns the destination."""
    check_repo_id(repo_id)
    check_repo_type(repo_type)
    dest = prepare_destination(to if to is not None else Path.cwd() / repo_id.split("/")[1], overwrite)
    local = hub_dir(hub)
    if local is not None:
        return pull_local(repo_id, repo_type=repo_type, revision=revision, dest=dest, hub=local)
    return pull_online(repo_id, repo_type=repo_type, revision=revision, dest=dest, token=token, endpoint=endpoint)
