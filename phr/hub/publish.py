"""``push`` and ``pull``: to and from the Hugging Face Hub, or a local hub folder (``hub``, else ``$PHR_HUB_DIR``),
for any artifact kind. Each takes its operation's config (``PushConfig``, ``PullConfig``): the same object the
command line resolves.

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

from phr.config.ops import PullConfig, PushConfig
from phr.hub.errors import PublishError
from phr.hub.local import pull_local, push_local
from phr.hub.online import pull_online, push_online
from phr.hub.repo import PushResult, check_repo_id, check_repo_type, check_tag, hub_dir, prepare_destination


def push(cfg: PushConfig, *, token: str | None = None, rerun: str | None = None) -> PushResult:
    """Push ``cfg.folder`` to ``cfg.repo``: to the local hub ``cfg.hub`` (or ``$PHR_HUB_DIR``), else to the Hub
    (``token``: else HF_TOKEN or the stored login; never a config field, so never in a rerun command).

    Validated (``gate``, with the review policy ``cfg.allow_unreviewed``) before anything is uploaded; one commit
    for all changes, or none when the repo already holds the folder; ``tag`` is created once and never moved;
    ``create_pr`` opens a pull request instead of committing to ``main``. Raises a ``PublishError`` saying what
    failed and how to rerun: ``rerun``, else the ``phr-publish push`` of ``cfg`` (a caller pushing a temporary folder
    it made passes its own command: a rerun names only paths that exist).
    """
    folder = Path(cfg.folder).expanduser().resolve()
    check_repo_id(cfg.repo)
    check_repo_type(cfg.repo_type)
    check_tag(cfg.tag)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder")
    if cfg.tag and cfg.create_pr:
        raise PublishError(
            "--tag and --create-pr do not go together: merge the pull request, then push again "
            "with --tag (a tag names a commit on main)"
        )
    local = hub_dir(cfg.hub)
    if rerun is None:
        rerun = cfg.model_copy(update={"folder": folder, "hub": local}).rerun()  # the hub it went to, said
    if local is not None:
        return push_local(cfg, folder, local, rerun)
    return push_online(cfg, folder, rerun, token)


def pull(cfg: PullConfig, *, token: str | None = None) -> Path:
    """Download ``cfg.repo`` at ``cfg.revision`` (tag, branch or commit; default ``main``) into ``cfg.out``
    (default: ``./NAME``) from the local hub ``cfg.hub`` (or ``$PHR_HUB_DIR``), else from the Hub. A non-empty
    destination is refused unless ``cfg.overwrite``. Returns the destination."""
    check_repo_id(cfg.repo)
    check_repo_type(cfg.repo_type)
    out = cfg.out if cfg.out is not None else Path.cwd() / cfg.repo.split("/")[1]
    dest = prepare_destination(out, cfg.overwrite)
    local = hub_dir(cfg.hub)
    if local is not None:
        return pull_local(cfg.repo, repo_type=cfg.repo_type, revision=cfg.revision, dest=dest, hub=local)
    return pull_online(
        cfg.repo, repo_type=cfg.repo_type, revision=cfg.revision, dest=dest, token=token, endpoint=cfg.endpoint
    )
