"""`phr-publish train grpo | sft`: a training config -> its checked recipe (``plan``) -> the run (``run``).

    from phr.api import plan, run
    from phr.config.ops import TrainGrpoConfig

    p = plan(TrainGrpoConfig(recipe="tiny-stage1", data=Path("hr1-grpo"), max_steps=2))
    result = run(p)                       # a RunResult: where it wrote, the summary (result.lines())

The recipe YAML is the training config of its own sections (docs/training.md, "Recipes"); the config's flags
override its values (``--data`` -> data.path, ``--output-dir`` -> trainer.output_dir, ``--max-steps``,
``--init-from`` -> model.init_from, ``--set SECTION.KEY=VALUE``). ``plan`` checks it in two steps: first, without
heavy imports, that it reads, is a recipe of this command, that what it needs on disk exists (corpus folder,
stage-1 checkpoint; naming the command that makes it), and the preflight (reward model specs and keys, extras),
every problem listed; then every value against its type (imports TRL). Nothing is created before both pass.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phr.config.ops import TrainConfig, TrainGrpoConfig, TrainSftConfig
from phr.core.errors import UsageError
from phr.core.progress import still_working
from phr.core.ranks import ReplicaStop, decided_alike, is_main
from phr.llm.preflight import PreflightError
from phr.ops.plan import Plan
from phr.training.config import METHODS, Recipe, parse_recipe, read_recipe
from phr.training.preflight import check_raw

if TYPE_CHECKING:  # training.run imports transformers: the plan's first checks run without it
    from phr.training.run import RunResult


def _sets(items: list[str]) -> dict[str, dict[str, Any]]:
    """``--set SECTION.KEY=VALUE`` (VALUE read as YAML) as sections of overrides."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, eq, value = item.partition("=")
        section, dot, name = key.partition(".")
        if not eq or not dot or not section or not name:
            raise UsageError(f"--set {item}: expected SECTION.KEY=VALUE (e.g. trainer.learning_rate=1e-6)")
        out.setdefault(section, {})[name] = yaml.safe_load(value)
    return out


def recipe_overrides(cfg: TrainConfig) -> dict[str, dict[str, Any]]:
    """The recipe sections ``cfg``'s flags override (``read_recipe``'s ``section_overrides``)."""
    out = _sets(cfg.set)
    if cfg.data is not None:
        out["data"] = {**out.get("data", {}), "path": str(cfg.data), "repo_id": None}
    trainer = out.get("trainer", {})
    if cfg.output_dir is not None:
        trainer["output_dir"] = str(cfg.output_dir)
    if cfg.max_steps is not None:
        trainer["max_steps"] = cfg.max_steps
    if trainer:
        out["trainer"] = trainer
    init_from = getattr(cfg, "init_from", None)
    if init_from is not None:
        out["model"] = {**out.get("model", {}), "init_from": str(init_from)}
    return out


def method_of(cfg: TrainConfig) -> str:
    """``grpo`` or ``sft``: the command's method."""
    return cfg.command[-1]


@dataclass
class TrainPlan(Plan[TrainConfig]):
    """A training run resolved: its recipe, checked (None only in a plan with problems)."""

    recipe: Recipe | None = None


def plan(cfg: TrainConfig) -> TrainPlan:
    """Read the recipe with the flags' overrides and check it (see the module's docstring); nothing is created.
    Under a launcher every rank reads the same recipe, files and environment and reaches the same verdict: rank 0
    reports it, the other ranks stop quietly with the same exit code (docs/scaling.md)."""
    with still_working(f"checking {cfg.recipe} and importing TRL"), decided_alike():  # 10-30 s on a busy CPU
        p = _plan(cfg)
        if p.problems and not is_main():
            raise ReplicaStop(PreflightError.exit_code)
        return p


def _plan(cfg: TrainConfig) -> TrainPlan:
    method = method_of(cfg)
    stage = getattr(cfg, "stage", None)
    raw, source = read_recipe(cfg.recipe, **recipe_overrides(cfg))
    p = TrainPlan(config=cfg)
    if isinstance(raw, dict):
        other = raw.get("method")
        if other in METHODS and other != method:
            raise UsageError(f"--config {cfg.recipe} is a {other} recipe: use phr-publish train {other}")
        if stage is not None and raw.get("stage") in (1, 2) and raw.get("stage") != stage:
            raise UsageError(f"--stage {stage}, but {source} is a stage-{raw.get('stage')} recipe")
        check_raw(raw, source, p.preflight, eval_sets=cfg.eval_set)
        if p.problems:
            return p
    p.recipe = parse_recipe(raw, source)
    _check_reward(p, source)
    return p


def _check_reward(p: TrainPlan, source: str) -> None:
    """The hr1 reward's settings, checked as the run will build them (their ranges, stage 2's QA model)."""
    recipe = p.recipe
    if recipe is None or recipe.reward is None or recipe.reward.name != "hr1" or recipe.stage is None:
        return
    from phr.training.grpo import hr1_reward_config, recipe_num_generations

    settings, stage = recipe.reward.settings, recipe.stage
    p.preflight.check(source, lambda: hr1_reward_config(settings, stage, recipe_num_generations(recipe)))


def run(p: TrainPlan) -> RunResult:
    """Train the planned recipe (GRPO stage or SFT); where it writes goes to stderr first. Interrupted (Ctrl-C,
    SIGTERM) once the run folder holds a checkpoint, the CLI's rerun line carries ``--resume`` (without it the
    rerun is refused; with none, ``--resume`` is)."""
    recipe = p.recipe
    assert recipe is not None
    where = Path(recipe.trainer["output_dir"]).expanduser().resolve()
    try:
        done = _run(p, recipe, where)
    except KeyboardInterrupt as e:
        from phr.core.interrupt import resume_with
        from phr.training.run import checkpoints

        if checkpoints(where):
            resume_with(e, "--resume")
        raise
    done.rerun = p.rerun_command()
    return done


def _run(p: TrainPlan, recipe: Recipe, where: Path) -> RunResult:
    cfg, rerun = p.config, p.rerun_command()
    if isinstance(cfg, TrainSftConfig):
        from phr.training.sft import train_sft

        if is_main():  # under a launcher: rank 0 reports
            print(f"SFT: writing to {where}", file=sys.stderr, flush=True)
        return train_sft(recipe, resume=cfg.resume, merge=cfg.merge, rerun=rerun)
    assert isinstance(cfg, TrainGrpoConfig)
    from phr.training.grpo import MissingRewardsStop, train_grpo

    if is_main():
        print(f"GRPO stage {recipe.stage}: writing to {where}", file=sys.stderr, flush=True)
    try:
        return train_grpo(recipe, resume=cfg.resume, rerun=rerun)
    except MissingRewardsStop as e:  # the command that continues it: its settings plus --resume
        resume = replace(p, config=cfg.model_copy(update={"resume": False})).rerun_command("--resume")
        raise MissingRewardsStop(f"{e}\nresume with: {resume}", e.checkpoint) from None
