"""`phr-publish train grpo | sft`: GRPO (two stages) and LoRA SFT with TRL (docs/training.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from phr.cli.common import new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import TrainGrpoConfig, TrainSftConfig
from phr.core.errors import UsageError

train_app = new_app("Train the Hallucination-R1 paraphraser (GRPO, two stages) or a LoRA SFT model, with TRL.")


def _sets(items: list[str] | None) -> dict:
    import yaml

    out: dict = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        section, dot, field = key.partition(".")
        if not eq or not dot or not section or not field:
            raise UsageError(f"--set {item}: expected SECTION.KEY=VALUE (e.g. trainer.learning_rate=1e-6)")
        out.setdefault(section, {})[field] = yaml.safe_load(value)
    return out


def _overrides(
    data: Path | None, output_dir: Path | None, max_steps: int | None, init_from: Path | None = None, sets=None
):
    out: dict = _sets(sets)
    if data is not None:
        out["data"] = {**out.get("data", {}), "path": str(data), "repo_id": None}
    trainer = out.get("trainer", {})
    if output_dir is not None:
        trainer["output_dir"] = str(output_dir)
    if max_steps is not None:
        trainer["max_steps"] = max_steps
    if trainer:
        out["trainer"] = trainer
    if init_from is not None:
        out["model"] = {**out.get("model", {}), "init_from": str(init_from)}
    return out


def _finish(res) -> None:
    for line in res.lines():
        typer.echo(line)


def _recipe(cfg, init_from: Path | None = None):
    from phr.training.config import load_recipe

    return load_recipe(cfg.recipe, **_overrides(cfg.data, cfg.output_dir, cfg.max_steps, init_from, cfg.set))


def _preflight(recipe, dry_run: bool) -> None:
    """The recipe's checks (reward models and keys, corpus, extras) and plan; --dry-run stops here."""
    from phr.training.preflight import check_recipe

    check_recipe(recipe).finish(dry_run, echo=typer.echo)


@train_app.command("grpo")
@bind(TrainGrpoConfig, config_option=False)
def grpo_cmd(cfg: TrainGrpoConfig, dry_run: DryRun = False) -> None:
    """One GRPO stage of a recipe; prints where it writes, progress, and a summary."""
    recipe = _recipe(cfg, cfg.init_from)
    if recipe.method != "grpo":
        raise UsageError(f"--config {cfg.recipe} is a {recipe.method} recipe: use phr-publish train {recipe.method}")
    if cfg.stage is not None and recipe.stage != cfg.stage:
        raise UsageError(f"--stage {cfg.stage}, but {recipe.source} is a stage-{recipe.stage} recipe")
    _preflight(recipe, dry_run)
    if dry_run:
        return
    from phr.training.grpo import train_grpo

    typer.echo(f"GRPO stage {recipe.stage}: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    _finish(train_grpo(recipe, resume=cfg.resume))


@train_app.command("sft")
@bind(TrainSftConfig, config_option=False)
def sft_cmd(cfg: TrainSftConfig, dry_run: DryRun = False) -> None:
    """(LoRA) SFT on an hr1-sft corpus, loss on the answer tokens only."""
    recipe = _recipe(cfg)
    if recipe.method != "sft":
        raise UsageError(f"--config {cfg.recipe} is a {recipe.method} recipe: use phr-publish train {recipe.method}")
    _preflight(recipe, dry_run)
    if dry_run:
        return
    from phr.training.sft import train_sft

    typer.echo(f"SFT: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    _finish(train_sft(recipe, resume=cfg.resume, merge=cfg.merge))
