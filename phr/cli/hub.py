"""`phr-publish push` / `pull` / `repair` / `push-results`: top-level commands over the hub operations
(``phr.ops.push``, ``pull``, ``repair``, ``push_results``: ``plan(cfg)`` then ``run(plan)``).

Tokens are never taken on the command line (they would end up in shell history): HF_TOKEN or `hf auth login`.
"""

from __future__ import annotations

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import bind
from phr.config.ops import PullConfig, PushConfig, PushResultsConfig, RepairConfig

hub_app = new_app("Publish to the Hub or a local hub.")


@hub_app.command("push")
@bind(PushConfig)
def push_cmd(cfg: PushConfig) -> None:
    """Validate FOLDER, then push it to the Hub or a local hub as one commit (none if nothing changed)."""
    for line in execute(cfg).lines():
        typer.echo(line)


@hub_app.command("pull")
@bind(PullConfig)
def pull_cmd(cfg: PullConfig) -> None:
    """Download a repo at a revision into a folder."""
    dest = execute(cfg)
    typer.echo(f"pulled {cfg.repo_type} {cfg.repo}@{cfg.revision or 'main'} into {dest}")


@hub_app.command("repair")
@bind(RepairConfig)
def repair_cmd(cfg: RepairConfig) -> None:
    """Restore a local hub repo whose current version is missing or whose main is broken, from its last push."""
    typer.echo(execute(cfg))


@hub_app.command("push-results")
@bind(PushResultsConfig)
def push_results_cmd(cfg: PushResultsConfig) -> None:
    """Add scored submissions to a leaderboard results repo and rebuild its leaderboard config; a partial result
    is refused unless --allow-partial (then recorded, and shown partial and unranked)."""
    for line in execute(cfg).lines():
        typer.echo(line)
