"""`phr-publish train grpo | sft`: GRPO (two stages) and LoRA SFT with TRL (docs/training.md); the operation is
``phr.ops.train_grpo`` (the recipe checked by ``plan``, trained by ``run``)."""

from __future__ import annotations

import typer

from phr.cli.common import execute, new_app
from phr.cli.options import DryRun, bind
from phr.config.ops import TrainGrpoConfig, TrainSftConfig
from phr.core.ranks import is_main

train_app = new_app("Train the Hallucination-R1 paraphraser (GRPO, two stages) or a LoRA SFT model, with TRL.")


def _train(cfg: TrainGrpoConfig | TrainSftConfig, dry_run: bool) -> None:
    """Run (or with ``dry_run`` only check) the training operation; rank 0 prints its summary lines."""
    result = execute(cfg, dry_run=dry_run)
    for line in result.lines() if result is not None and is_main() else []:  # under a launcher: rank 0 reports
        typer.echo(line)


@train_app.command("grpo")
@bind(TrainGrpoConfig, config_option=False)
def grpo_cmd(cfg: TrainGrpoConfig, dry_run: DryRun = False) -> None:
    """One GRPO stage of a recipe; prints where it writes, progress, and a summary."""
    _train(cfg, dry_run)


@train_app.command("sft")
@bind(TrainSftConfig, config_option=False)
def sft_cmd(cfg: TrainSftConfig, dry_run: DryRun = False) -> None:
    """(LoRA) SFT on an hr1-sft corpus, loss on the answer tokens only."""
    _train(cfg, dry_run)
