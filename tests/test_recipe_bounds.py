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
        # every number finite (YAML's .inf / .nan, or a string read as one), and TRL's own ranges
        ({"temperature": float("inf")}, "trainer.temperature: expected float > 0, got inf (input should be a finite "
                                        "number)"),
        ({"temperature": "inf"}, "trainer.temperature: expected float > 0, got 'inf' (input should be a finite "
                                 "number)"),
        ({"max_grad_norm": float("nan")}, "trainer.max_grad_norm: expected float, got nan (input should be a "
                                          "finite number)"),
        ({"top_entropy_quantile": 1.5}, "trainer.top_entropy_quantile: expected float in [0, 1], got 1.5 (input "
                                        "should be less than or equal to 1)"),
        ({"max_steps": 0}, "trainer.max_steps: expected int >= 1, or -1 (off: num_train_epochs decides), got 0"),
        ({"max_steps": -2}, "trainer.max_steps: expected int >= 1, or -1 (off: num_train_epochs decides), got -2"),
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
             "eval_steps": None, "beta": 0.0, "learning_rate": 0, "adam_beta2": 0.0, "warmup_steps": 0,
             "top_entropy_quantile": 0.0, "max_steps": 1}  # fmt: skip
    assert parse_recipe(trainer(**edges), "r.yaml").trainer["top_k"] == 0
    for steps in (-1, 2):  # -1: TrainingArguments' default (num_train_epochs decides)
        assert parse_recipe(trainer(max_steps=steps), "r.yaml").trainer["max_steps"] == steps
    assert parse_recipe(trainer(top_entropy_quantile=1.0), "r.yaml").trainer["top_entropy_quantile"] == 1.0


def test_every_number_of_a_recipe_is_finite():
    """Numbers outside the trainer section too (the reward's own settings, the tiny model), each named once."""
    raw = {**GRPO, "model": {"tiny": {"format_warmup_lr": float("inf"), "hidden_size": float("nan")}},
           "reward": {"name": "hr1", "settings": {"lambda_div": float("inf"),
                                                  "diversity": {"lone_r_div": float("-inf")}}}}  # fmt: skip
    with pytest.raises(RecipeError) as e:
        parse_recipe(raw, "r.yaml")
    assert str(e.value).splitlines() == [
        "r.yaml: model.tiny.hidden_size: expected int, got nan (input should be a finite number)",
        "r.yaml: model.tiny.format_warmup_lr: expected a finite number, got inf",
        "r.yaml: reward.settings.lambda_div: expected a finite number, got inf",
        "r.yaml: reward.settings.diversity.lone_r_div: expected a finite number, got -inf",
    ]


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
    with pytest.raises(RuntimeError, match="q must be in the range"):  # GRPO masks by torch.quantile(x, 1 - q)
        torch.quantile(torch.zeros(3), 1 - 1.5)
    assert "top_entropy_quantile" in TRAINER_BOUNDS
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


# ---- issue 33 item 6: one definition per field, bounds everywhere ---------------------------------------------------


@pytest.mark.parametrize(
    "values,line",
    [
        ({"qa_max_tokens": 0}, "RewardConfig: qa_max_tokens=0: Input should be greater than or equal to 1"),
        ({"judge_max_tokens": -1}, "RewardConfig: judge_max_tokens=-1: Input should be greater than or equal to 1"),
        ({"fuzzy": "maybe"}, "RewardConfig: fuzzy='maybe': Input should be 'wrong' or 'correct'"),
        ({"lambda_div": -1}, "RewardConfig: lambda_div=-1: Input should be greater than or equal to 0"),
        ({"group_size": 0}, "RewardConfig: group_size=0: Input should be greater than or equal to 1"),
        ({"stage": 2}, "RewardConfig: the stage-2 reward needs a QA model spec (qa_model)"),
    ],
)
def test_the_reward_config_refuses_what_the_eval_config_refuses(values, line):
    """RewardConfig is built from the H-R1 config groups: a value `eval hr1` refuses is refused here too, in one
    line naming the field."""
    from phr.config.base import FieldError, resolve
    from phr.config.ops import EvalHr1Config
    from phr.training.rewards import RewardConfig

    with pytest.raises(FieldError) as e:
        RewardConfig(judge="openai:gpt-4o", **values)
    assert str(e.value) == line and isinstance(e.value, ValueError)
    shared = {k: v for k, v in values.items() if k in EvalHr1Config.model_fields}
    if shared:
        (name, value), *_ = shared.items()
        with pytest.raises(Exception, match=f"--{name.replace('_', '-')} {value!r}: Input should be"):
            resolve(EvalHr1Config, flags=shared)
        assert RewardConfig.model_fields[name] is EvalHr1Config.model_fields[name] or (
            RewardConfig.model_fields[name].metadata == EvalHr1Config.model_fields[name].metadata
            and RewardConfig.model_fields[name].default == EvalHr1Config.model_fields[name].default
        )


def test_a_recipe_reward_setting_out_of_range_is_one_line_naming_the_key():
    from phr.training.grpo import hr1_reward_config

    with pytest.raises(RecipeError) as e:
        hr1_reward_config({"judge": "openai:gpt-4o", "qa_max_tokens": 0, "fuzzy": "maybe"}, 1, 8)
    assert str(e.value) == (
        "reward.settings.qa_max_tokens: 0: Input should be greater than or equal to 1; "
        "reward.settings.fuzzy: 'maybe': Input should be 'wrong' or 'correct'"
    )
    with pytest.raises(RecipeError, match=r"^reward.settings.diversity.tie_decimals: -1: Input should be"):
        hr1_reward_config({"judge": "openai:gpt-4o", "diversity": {"tie_decimals": -1}}, 1, 8)
    ok = hr1_reward_config({"judge": "openai:gpt-4o", "diversity": {"tie_decimals": 3}}, 2 - 1, 8)
    assert (ok.group_size, ok.diversity.tie_decimals, ok.fuzzy, ok.qa_max_tokens) == (8, 3, "wrong", 64)


@pytest.mark.parametrize(
    "args,line",
    [
        (["eval", "phrbench", "--model", "openai:gpt-4o", "--max-tokens", "-5"], "--max-tokens '-5': Input should be "
         "greater than or equal to 1, or be 'model' (Maximum new tokens (at least 1); 'model': the model's maximum"),
        (["eval", "phrbench", "--model", "openai:gpt-4o", "--temperature", "3"], "--temperature 3.0: Input should be "
         "less than or equal to 2"),
        (["eval", "hr1", "--qa-max-tokens", "0"], "--qa-max-tokens 0: Input should be greater than or equal to 1"),
        (["build", "hr1-paraphrases", "--fuzzy", "maybe"], "--fuzzy 'maybe': Input should be 'wrong' or 'correct'"),
        (["llm", "ping", "openai:gpt-4o", "--max-tokens", "0"], "--max-tokens 0: Input should be greater than"),
        (["analyze", "predictor", "--dataset", "d", "--seed", "-1"], "--seed -1: Input should be greater than or"),
    ],
)  # fmt: skip
def test_a_number_out_of_range_is_one_line_naming_the_flag(args, line, tmp_path):
    res = CliRunner().invoke(app, [*args, "--dry-run"] if args[0] != "llm" else args)
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: {line}") and len(res.stderr.strip().splitlines()) == 1, res.stderr


def _numeric_members(annotation, meta=()):
    """(type, bounds) of each int / float member of a field's annotation (``Annotated`` and ``| None`` opened)."""
    import types
    import typing

    from pydantic.fields import FieldInfo

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        inner = [m for x in extra for m in (x.metadata if isinstance(x, FieldInfo) else [x])]
        yield from _numeric_members(base, (*meta, *inner))
    elif origin in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            yield from _numeric_members(member, meta)
    elif annotation in (int, float):
        yield annotation, meta


def _settings_classes():
    import dataclasses
    import typing

    from phr.config import ops
    from phr.config.base import OpConfig
    from phr.hr1.diversity import DiversitySettings
    from phr.training import config as recipe
    from phr.training.rewards import RewardConfig
    from phr.training.tiny import TinySettings

    for cls in [c for c in vars(ops).values() if isinstance(c, type) and issubclass(c, OpConfig)] + [RewardConfig]:
        for name, f in cls.model_fields.items():
            yield f"{cls.__name__}.{name}", f.annotation, tuple(f.metadata)
    sections = (recipe.DataSection, recipe.LoraSection, recipe.MissingRewardsSection, TinySettings, DiversitySettings)
    for cls in sections:
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            yield f"{cls.__name__}.{f.name}", hints[f.name], ()


def test_every_numeric_setting_has_a_lower_bound():
    """Every int / float field of the operations' configs, the reward's config and the recipe sections (the
    trainer's: TRAINER_BOUNDS) says its range; none takes any number."""
    from annotated_types import Ge, Gt, Interval

    def bounded(meta) -> bool:
        return any(
            isinstance(m, (Ge, Gt)) or isinstance(m, Interval) and (m.ge is not None or m.gt is not None) for m in meta
        )

    free = [name for name, ann, meta in _settings_classes() for _, inner in _numeric_members(ann, meta)
            if not bounded(inner)]  # fmt: skip
    assert free == []
    assert len([n for n, a, m in _settings_classes() if list(_numeric_members(a, m))]) > 40  # the check sees them
