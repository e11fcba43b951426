"""Recipe values out of range (issue 26, item 6): each trainer setting is checked against the range the library that
uses it draws (TRL, transformers' TrainingArguments and sampling, torch's AdamW), listed with the type errors (all at
once, naming the file and key), before anything is created; exit 2 without a traceback, in a dry run too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from phr.cli import app
from phr.training.config import RecipeError, parse_recipe
from tests.support.training import TINY_GRPO_RECIPE, grpo_corpus, sft_corpus

GRPO = TINY_GRPO_RECIPE
SFT = {"method": "sft", "model": {"tiny": {}}, "data": {"path": "corpus"}, "trainer": {"output_dir": "out"}}


def trainer(base: dict = GRPO, **values) -> dict:
    return {**base, "trainer": {**base["trainer"], **values}}


@pytest.mark.parametrize(
    "values,line",
    [
        ({"temperature": -1.0}, "trainer.temperature: expected float > 0, got -1.0 (input should be greater than 0)"),
        ({"temperature": 0}, "trainer.temperature: expected float > 0, got 0 (input should be greater than 0)"),
        ({"save_steps": -1}, "trainer.save_steps: expected float > 0, got -1 (input should be greater than 0)"),
        ({"learning_rate": "-1e-4"}, "trainer.learning_rate: expected float >= 0, got '-1e-4' (input should be "
                                     "greater than or equal to 0)"),
        ({"top_p": 1.5}, "trainer.top_p: expected float in (0, 1], got 1.5 (input should be less than or equal to 1)"),
        ({"min_p": -0.1}, "trainer.min_p: expected float in [0, 1] or null, got -0.1"),
        ({"top_k": -5}, "trainer.top_k: expected int >= 0, got -5"),
        ({"repetition_penalty": 0.0}, "trainer.repetition_penalty: expected float > 0, got 0.0"),
        ({"num_iterations": 0}, "trainer.num_iterations: expected int >= 1, got 0"),
        ({"max_completion_length": 0}, "trainer.max_completion_length: expected int >= 1 or null, got 0"),
        ({"beta": -0.04}, "trainer.beta: expected float >= 0, got -0.04"),
        ({"epsilon": -0.2}, "trainer.epsilon: expected float >= 0, got -0.2"),
        ({"steps_per_generation": 0}, "trainer.steps_per_generation: expected int >= 1 or null, got 0"),
        ({"per_device_train_batch_size": 0}, "trainer.per_device_train_batch_size: expected int >= 1, got 0"),
        ({"gradient_accumulation_steps": 0}, "trainer.gradient_accumulation_steps: expected int >= 1, got 0"),
        ({"logging_steps": 0}, "trainer.logging_steps: expected float > 0, got 0"),
        ({"warmup_steps": -1}, "trainer.warmup_steps: expected float >= 0, got -1"),
        ({"num_train_epochs": 0}, "trainer.num_train_epochs: expected float > 0, got 0"),
        ({"seed": -1}, "trainer.seed: expected int in [0, 4294967296), got -1"),
        ({"adam_beta1": 1.0}, "trainer.adam_beta1: expected float in [0, 1), got 1.0 (input should be less than 1)"),
        ({"weight_decay": -0.1}, "trainer.weight_decay: expected float >= 0, got -0.1"),
    ],
)  # fmt: skip
def test_each_value_out_of_range_is_named_with_file_key_range_and_value(values, line):
    with pytest.raises(RecipeError) as e:
        parse_recipe(trainer(**values), "r.yaml")
    assert str(e.value).startswith(f"r.yaml: {line}"), str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_sft_ranges_too():
    with pytest.raises(RecipeError) as e:
        parse_recipe(trainer(SFT, max_length=0, learning_rate=-2e-5), "s.yaml")
    assert str(e.value).splitlines() == [
        "s.yaml: trainer.max_length: expected int >= 1 or null, got 0 (input should be greater than or equal to 1)",
        "s.yaml: trainer.learning_rate: expected float >= 0, got -2e-05 (input should be greater than or equal to 0)",
    ]


def test_values_at_the_edges_of_the_ranges_are_accepted():
    edges = {"temperature": 0.01, "top_p": 1.0, "top_k": 0, "min_p": None, "save_steps": 0.5, "seed": 0,
             "eval_steps": None, "beta": 0.0, "learning_rate": 0, "adam_beta2": 0.0, "warmup_steps": 0}  # fmt: skip
    assert parse_recipe(trainer(**edges), "r.yaml").trainer["top_k"] == 0


def test_the_ranges_are_the_libraries_own(tmp_path):
    """Just outside these ranges the library that uses the value refuses it; just inside, it accepts it."""
    import numpy as np
    import torch
    from transformers import TrainingArguments
    from transformers.generation.logits_process import (
        MinPLogitsWarper,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    from phr.training.config import TRAINER_BOUNDS

    refused = {
        "temperature": lambda: TemperatureLogitsWarper(-1.0),
        "top_p": lambda: TopPLogitsWarper(1.5),
        "top_k": lambda: TopKLogitsWarper(-1),
        "min_p": lambda: MinPLogitsWarper(1.5),
        "repetition_penalty": lambda: RepetitionPenaltyLogitsProcessor(0.0),
        "learning_rate": lambda: torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=-1e-3),
        "weight_decay": lambda: torch.optim.AdamW([torch.zeros(1, requires_grad=True)], weight_decay=-0.1),
        "adam_beta1": lambda: torch.optim.AdamW([torch.zeros(1, requires_grad=True)], betas=(1.0, 0.9)),
        "seed": lambda: np.random.seed(-1),
        "logging_steps": lambda: TrainingArguments(output_dir=str(tmp_path), logging_steps=0, use_cpu=True),
        "warmup_steps": lambda: TrainingArguments(output_dir=str(tmp_path), warmup_steps=-1, use_cpu=True),
    }
    for key, make in refused.items():
        assert key in TRAINER_BOUNDS
        with pytest.raises(ValueError):
            make()
    inside = [TemperatureLogitsWarper(0.01), TopPLogitsWarper(1.0), MinPLogitsWarper(0.0), TopKLogitsWarper(1)]
    assert len(inside) == 4 and TrainingArguments(output_dir=str(tmp_path), save_steps=0.5, use_cpu=True).save_steps


def _recipe(tmp_path: Path, raw: dict, corpus: Path, out: Path) -> Path:
    raw = {**raw, "data": {"path": str(corpus)}, "trainer": {**raw["trainer"], "output_dir": str(out)}}
    p = tmp_path / "recipe.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return p


@pytest.mark.parametrize("dry_run", [True, False])
def test_the_cli_lists_every_range_problem_with_the_type_problems_and_creates_nothing(tmp_path, dry_run):
    corpus, out = grpo_corpus(tmp_path), tmp_path / "run"
    raw = trainer(temperature=-1.0, save_steps=-1, max_steps="two", num_generations=4)
    recipe = _recipe(tmp_path, raw, corpus, out)
    args = ["train", "grpo", "--stage", "1", "--config", str(recipe), "--data", str(corpus)]
    res = CliRunner().invoke(app, args + (["--dry-run"] if dry_run else []))
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().removeprefix("error: ").splitlines()
    assert [ln.split(": ")[1] for ln in lines] == ["trainer.temperature", "trainer.save_steps", "trainer.max_steps"]
    assert all(ln.startswith(f"{recipe}: ") for ln in lines) and "Traceback" not in res.output
    assert not out.exists()


def test_sft_cli_refuses_a_negative_learning_rate(tmp_path):
    corpus, out = sft_corpus(tmp_path), tmp_path / "run"
    recipe = _recipe(tmp_path, trainer(SFT, learning_rate=-1.0), corpus, out)
    res = CliRunner().invoke(app, ["train", "sft", "--config", str(recipe), "--data", str(corpus), "--dry-run"])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (
        f"error: {recipe}: trainer.learning_rate: expected float >= 0, got -1.0 (input should be greater than or "
        "equal to 0)"
    )
    assert not out.exists()
