"""`phr-publish train grpo | sft`: GRPO (two stages) and LoRA SFT with TRL (docs/training.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from phr.cli.common import new_app
from phr.cli.options import DryRun, bind
from phr.config.base import command_line
from phr.config.ops import TrainGrpoConfig, TrainSftConfig
from phr.core.errors import UsageError
from phr.core.progress import still_working
from phr.core.ranks import current, decided_alike, is_main

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
    if is_main():  # under a launcher: rank 0 reports for every rank
        for line in res.lines():
            typer.echo(line)


def _checked_recipe(cfg, method: str, dry_run: bool, init_from: Path | None = None):
    """The recipe, checked in two steps: first, without heavy imports, that it reads, is a recipe of this command,
    that what it needs on disk exists (corpus folder, stage-1 checkpoint; naming the command that makes it), and
    the preflight (reward model specs and keys, extras), every problem listed; then every value against its type
    (imports TRL). Nothing is created before both pass; --dry-run then prints the plan."""
    from phr.training.config import METHODS, parse_recipe, read_recipe
    from phr.training.preflight import check_raw

    stage = getattr(cfg, "stage", None)
    raw, source = read_recipe(cfg.recipe, **_overrides(cfg.data, cfg.output_dir, cfg.max_steps, init_from, cfg.set))
    pf = None
    if isinstance(raw, dict):
        other = raw.get("method")
        if other in METHODS and other != method:
            raise UsageError(f"--config {cfg.recipe} is a {other} recipe: use phr-publish train {other}")
        if stage is not None and raw.get("stage") in (1, 2) and raw.get("stage") != stage:
            raise UsageError(f"--stage {stage}, but {source} is a stage-{raw.get('stage')} recipe")
        pf = check_raw(raw, source, eval_sets=cfg.eval_set)
        if pf.problems:
            pf.finish(dry_run, echo=typer.echo)  # raises, listing them all
    recipe = parse_recipe(raw, source)
    if pf is not None:
        pf.finish(dry_run, echo=typer.echo)
    return recipe


def _resume_hint(cfg) -> str:
    """The command that continues a stopped run: its settings plus ``--resume``."""
    line = command_line(cfg.model_copy(update={"resume": False})) + " --resume"
    world = current().world
    if world > 1:  # under a launcher: the same launch again
        line = f"accelerate launch --num_processes {world} -m phr.cli" + line.removeprefix("phr-publish")
    return "resume with: " + line


@train_app.command("grpo")
@bind(TrainGrpoConfig, config_option=False)
def grpo_cmd(cfg: TrainGrpoConfig, dry_run: DryRun = False) -> None:
    """One GRPO stage of a recipe; prints where it writes, progress, and a summary."""
    with still_working(f"checking {cfg.recipe} and importing TRL"):  # 10-30 s on a busy CPU
        with decided_alike():  # under a launcher: the same verdict on every rank, printed by rank 0
            recipe = _checked_recipe(cfg, "grpo", dry_run, cfg.init_from)
        if dry_run:
            return
        from phr.training.grpo import MissingRewardsStop, train_grpo

    if is_main():
        typer.echo(f"GRPO stage {recipe.stage}: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    try:
        res = train_grpo(recipe, resume=cfg.resume)
    except MissingRewardsStop as e:
        raise MissingRewardsStop(f"{e}\n{_resume_hint(cfg)}", e.checkpoint) from None
    _finish(res)


@train_app.command("sft")
@bind(TrainSftConfig, config_option=False)
def sft_cmd(cfg: TrainSftConfig, dry_run: DryRun = False) -> None:
    """(LoRA) SFT on an hr1-sft corpus, loss on the answer tokens only."""
    with still_working(f"checking {cfg.recipe} and importing TRL"):
        with decided_alike():
            recipe = _checked_recipe(cfg, "sft", dry_run)
        if dry_run:
            return
        from phr.training.sft import train_sft

    if is_main():
        typer.echo(f"SFT: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    _finish(train_sft(recipe, resume=cfg.resume, merge=cfg.merge))
