"""`phr-publish push` / `pull` / `push-results`: top-level commands over the hub layer.

Tokens are never taken on the command line (they would end up in shell history): HF_TOKEN or `hf auth login`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli.common import new_app
from phr.cli.options import bind
from phr.config.ops import PushConfig, PushResultsConfig, RepairConfig

RepoType = Annotated[str, typer.Option("--repo-type", help="dataset or model.")]


hub_app = new_app("Publish to the Hub or a local hub.")


@hub_app.command("push")
@bind(PushConfig)
def push_cmd(cfg: PushConfig) -> None:
    """Validate FOLDER, then push it to the Hub or a local hub as one commit (none if nothing changed)."""
    from phr.core.progress import still_working

    with still_working(f"validating and pushing {cfg.folder}"):  # the checks take 15-30 s: a line every 10 s
        from phr.hub import push
        from phr.hub.kinds import register_kind, unregister_kind
        from phr.validation.folder import PHRBENCH_UNREVIEWED

        if cfg.allow_unreviewed:  # the phrbench kind without its review requirement, for this push only
            register_kind(PHRBENCH_UNREVIEWED)
        try:
            res = push(cfg.folder, cfg.repo, **cfg.model_dump(exclude={"folder", "repo", "allow_unreviewed"}))
        finally:
            if cfg.allow_unreviewed:
                unregister_kind(PHRBENCH_UNREVIEWED.name)
    for line in res.lines():
        typer.echo(line)


@hub_app.command("pull")
def pull_cmd(
    repo: Annotated[str, typer.Argument(metavar="ORG/NAME", help="The repo to download.")],
    repo_type: RepoType = "dataset",
    revision: Annotated[str | None, typer.Option("--revision", help="Tag, branch (main, pr/1) or commit.")] = None,
    to: Annotated[Path | None, typer.Option("--to", help="Destination folder (default: ./NAME).")] = None,
    hub: Annotated[
        Path | None, typer.Option("--hub", help="Local hub folder (default: $PHR_HUB_DIR; unset: the Hub).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty destination.")] = False,
    endpoint: Annotated[str | None, typer.Option("--endpoint", help="Hub endpoint.")] = None,
) -> None:
    """Download a repo at a revision into a folder."""
    from phr.hub import pull

    dest = pull(repo, repo_type=repo_type, revision=revision, to=to, hub=hub, overwrite=overwrite, endpoint=endpoint)
    typer.echo(f"pulled {repo_type} {repo}@{revision or 'main'} into {dest}")


@hub_app.command("repair")
@bind(RepairConfig)
def repair_cmd(cfg: RepairConfig) -> None:
    """Restore a local hub repo whose current version is missing or whose main is broken, from its last push."""
    from phr.core.errors import UsageError
    from phr.hub.local import LocalHub, repair
    from phr.hub.repo import check_repo_id, hub_dir

    check_repo_id(cfg.repo)
    root = hub_dir(cfg.hub)
    if root is None:
        raise UsageError("repair works on a local hub: pass --hub HUBDIR or set PHR_HUB_DIR")
    typer.echo(repair(LocalHub(root), cfg.repo, cfg.repo_type))


@hub_app.command("push-results")
@bind(PushResultsConfig)
def push_results_cmd(cfg: PushResultsConfig) -> None:
    """Add scored submissions to a leaderboard results repo and rebuild its leaderboard config; a partial result
    is refused unless --allow-partial (then recorded, and shown partial and unranked)."""
    from phr.leaderboard.repo import push_results

    res = push_results(
        cfg.results,
        cfg.repo,
        benchmark_eval_yaml=cfg.eval_yaml,
        replace=cfg.replace,
        create_pr=cfg.create_pr,
        message=cfg.message,
        to=cfg.to,
        endpoint=cfg.endpoint,
        allow_partial=cfg.allow_partial,
    )
    for line in res.lines():
        typer.echo(line)
