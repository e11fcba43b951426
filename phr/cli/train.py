"""`phr-publish train grpo | sft`: GRPO (two stages) and LoRA SFT with TRL (docs/training.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phr.cli.common import new_app
from phr.core.errors import UsageError

train_app = new_app("Train the Hallucination-R1 paraphraser (GRPO, two stages) or a LoRA SFT model, with TRL.")

Config = Annotated[
    str,
    typer.Option(
        "--config",
        metavar="FILE",
        help="A recipe YAML, or a packaged recipe name (e.g. paper-qwen2.5-3b-stage1, tiny-stage1, tiny-sft).",
    ),
]
Resume = Annotated[bool, typer.Option("--resume", help="Continue from the last checkpoint-N of the output folder.")]
Data = Annotated[Path | None, typer.Option("--data", metavar="DIR", help="Corpus folder (overrides data.path).")]
OutputDir = Annotated[
    Path | None, typer.Option("--output-dir", metavar="DIR", help="Run folder (overrides trainer.output_dir).")
]
MaxSteps = Annotated[int | None, typer.Option("--max-steps", min=1, help="Overrides trainer.max_steps.")]
Set = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="SECTION.KEY=VALUE",
        help="Override one recipe value (VALUE read as YAML), e.g. --set trainer.vllm_mode=server. Repeatable.",
    ),
]


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


def _checked_recipe(config: str, method: str, overrides: dict, stage: int | None = None):
    """The recipe, checked in two steps: first, without heavy imports, that it reads, is a recipe of this command
    and that what it needs on disk exists (corpus folder, stage-1 checkpoint; exit 2 naming the command that
    makes it); then every value against its type (imports TRL). Nothing is created before both pass."""
    from phr.training.config import METHODS, RecipeError, parse_recipe, prerequisite_problems, read_recipe

    raw, source = read_recipe(config, **overrides)
    if isinstance(raw, dict):
        other = raw.get("method")
        if other in METHODS and other != method:
            raise UsageError(f"--config {config} is a {other} recipe: use phr-publish train {other}")
        if stage is not None and raw.get("stage") in (1, 2) and raw.get("stage") != stage:
            raise UsageError(f"--stage {stage}, but {source} is a stage-{raw.get('stage')} recipe")
        problems = prerequisite_problems(raw, source)
        if problems:
            raise RecipeError("\n".join(problems))
    return parse_recipe(raw, source)


def _resume_hint(command: list[str]) -> str:
    """The command that continues a stopped run: the options it was given (``command``) plus ``--resume``."""
    import shlex

    return "resume with: " + shlex.join(["phr-publish", "train", *command, "--resume"])


def _options(**values) -> list[str]:
    """Command-line options as given (``--flag VALUE``; a list repeats the flag; None and False left out)."""
    out: list[str] = []
    for flag, value in values.items():
        for v in value if isinstance(value, list) else [value]:
            if v is not None and v is not False:
                out += [f"--{flag.replace('_', '-')}"] + ([] if v is True else [str(v)])
    return out


@train_app.command("grpo")
def grpo_cmd(
    config: Config,
    stage: Annotated[int, typer.Option("--stage", help="1 (R_stab) or 2 (R_train, from the stage-1 checkpoint).")],
    resume: Resume = False,
    data: Data = None,
    output_dir: OutputDir = None,
    init_from: Annotated[
        Path | None,
        typer.Option("--init-from", metavar="DIR", help="Stage 2: the stage-1 checkpoint (model.init_from)."),
    ] = None,
    max_steps: MaxSteps = None,
    set_: Set = None,
) -> None:
    """One GRPO stage of a recipe; prints where it writes, progress, and a summary."""
    recipe = _checked_recipe(config, "grpo", _overrides(data, output_dir, max_steps, init_from, set_), stage)
    from phr.training.grpo import MissingRewardsStop, train_grpo

    typer.echo(f"GRPO stage {stage}: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    try:
        res = train_grpo(recipe, resume=resume)
    except MissingRewardsStop as e:
        opts = _options(stage=stage, config=config, data=data, output_dir=output_dir, init_from=init_from,
                        max_steps=max_steps, set=set_)  # fmt: skip
        raise MissingRewardsStop(f"{e}\n{_resume_hint(['grpo', *opts])}", e.checkpoint) from None
    _finish(res)


@train_app.command("sft")
def sft_cmd(
    config: Config,
    resume: Resume = False,
    merge: Annotated[
        bool | None,
        typer.Option(
            "--merge/--no-merge",
            help="Also write merged/ (LoRA merged into a full model). Default: the recipe's lora.merge.",
        ),
    ] = None,
    data: Data = None,
    output_dir: OutputDir = None,
    max_steps: MaxSteps = None,
    set_: Set = None,
) -> None:
    """(LoRA) SFT on an hr1-sft corpus, loss on the answer tokens only."""
    recipe = _checked_recipe(config, "sft", _overrides(data, output_dir, max_steps, sets=set_))
    from phr.training.sft import train_sft

    typer.echo(f"SFT: writing to {Path(recipe.trainer['output_dir']).resolve()}", err=True)
    _finish(train_sft(recipe, resume=resume, merge=merge))
