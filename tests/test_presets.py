"""Presets inside the config (issue 33, item 2): a preset is applied when the config is built, in Python, from a
YAML file or from flags alike; an explicit value overrides it; the plan prints the values the preset resolves to
and those overridden. `plan(EvalPhrbenchConfig(preset="paper", ...)).lines()` is what `eval phrbench --preset
paper --dry-run` prints. Nothing is called: the keys are dummies, the paper scorer an entry of a Hugging Face
cache folder."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from phr.api import plan
from phr.cli import app
from phr.config.base import resolve
from phr.config.ops import (
    PAPER_SCORER,
    BuildHr1GrpoConfig,
    BuildHr1ParaphrasesConfig,
    BuildHr1SftConfig,
    EvalHr1Config,
    EvalMergeConfig,
    EvalPhrbenchConfig,
    EvalScoreConfig,
    ScoreSubmissionConfig,
    SubmitConfig,
)

runner = CliRunner()

#: the required fields of each config that has presets
REQUIRED = {
    EvalPhrbenchConfig: {"model": "openai:gpt-4o"},
    EvalMergeConfig: {"shards": [Path("s1"), Path("s2")], "out": Path("m")},
    EvalScoreConfig: {"run": Path("r")},
    ScoreSubmissionConfig: {"submission": Path("s.jsonl")},
    SubmitConfig: {"submission": Path("s.jsonl"), "repo": "org/results"},
    EvalHr1Config: {},
    BuildHr1ParaphrasesConfig: {},
    BuildHr1SftConfig: {},
    BuildHr1GrpoConfig: {},
}
CASES = [(cls, name) for cls in REQUIRED for name in cls.presets]


def _plan_printed(output: str) -> list[str]:
    """The plan a --dry-run printed (its lines before the closing one)."""
    lines = output.splitlines()
    return lines[: lines.index("dry run: all checks passed; nothing was called")]


@pytest.fixture
def paper_models(fake_openai, monkeypatch, tmp_path):
    """The OpenAI key (a dummy; the local protocol server counts calls) and the paper's reference scorer in a
    Hugging Face cache folder (a config.json: enough for the preflight, which loads nothing)."""
    from tests.support.hf_cache import install_snapshot, use_cache

    install_snapshot(use_cache(monkeypatch, tmp_path / "hf"), PAPER_SCORER.removeprefix("hf:"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return fake_openai()


# ---- one mechanism: Python, YAML and flags build the same config ------------------------------------------------


@pytest.mark.parametrize("cls,name", CASES, ids=lambda v: getattr(v, "__name__", v))
def test_a_preset_is_applied_when_the_config_is_built(cls, name, tmp_path):
    import yaml

    required = REQUIRED[cls]
    python = cls(**required, preset=name)
    for field, value in cls.presets[name].items():
        assert getattr(python, field) == value, (field, value)
    assert python.model_fields_set == {*required, "preset"}  # the preset's values were not given
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({**{k: _plain(v) for k, v in required.items()}, "preset": name}))
    for other in (resolve(cls, flags={**required, "preset": name}), resolve(cls, file=f)):
        assert other == python and other.model_fields_set == python.model_fields_set
        assert other.record() == python.record() and other.rerun() == python.rerun()


def _plain(value):
    return [str(v) for v in value] if isinstance(value, list) else str(value)


def test_an_explicit_value_overrides_the_preset_and_the_line_says_so():
    cfg = EvalPhrbenchConfig(model="openai:gpt-4o", preset="paper", samples=2, scorer="none")
    assert (cfg.samples, cfg.temperature, cfg.max_tokens, cfg.scorer) == (2, 0.7, "model", "none")
    assert cfg.preset_overrides() == {"samples": 2, "scorer": "none"}
    assert cfg == resolve(EvalPhrbenchConfig, flags={"model": "openai:gpt-4o", "preset": "paper", "samples": 2,
                                                     "scorer": "none"})  # fmt: skip
    assert cfg.preset_line(shown={"max_tokens": "model (16384)"}) == (
        "preset: paper: temperature 0.7, max_tokens model (16384); overridden: samples 2 (preset: 10), "
        f"scorer none (preset: {PAPER_SCORER})"
    )
    assert EvalPhrbenchConfig(model="openai:gpt-4o").preset_line() == "preset: none (the defaults)"
    assert EvalHr1Config(preset="paper").preset_line() == "preset: paper: the defaults"
    # a value equal to the preset's is no override; the rerun names the preset, not its values
    same = EvalPhrbenchConfig(model="openai:gpt-4o", preset="paper", samples=10)
    assert same.preset_overrides() == {} and "--samples" not in same.rerun()
    assert cfg.rerun() == "phr-publish eval phrbench --model openai:gpt-4o --preset paper --samples 2 --scorer none"


def test_a_preset_switched_on_later_fills_only_what_was_not_given():
    cfg = EvalHr1Config(max_tokens=120).under_preset("mini")
    assert (cfg.preset, cfg.max_tokens, cfg.qa_max_tokens, cfg.k) == ("mini", 120, 16, 4)
    assert cfg.model_fields_set == {"max_tokens", "preset"}
    assert cfg.preset_line("the no-argument offline default, see --help") == (
        "preset: mini (the no-argument offline default, see --help): qa_max_tokens 16, judge_max_tokens 48, k 4; "
        "overridden: max_tokens 120 (preset: 96)"
    )


# ---- the plan: Python and the command print the same -----------------------------------------------------------


def test_python_paper_plan_is_the_dry_run_plan(paper_models, mini_folder, tmp_path):
    """Acceptance: plan(EvalPhrbenchConfig(preset="paper", ...)).lines() == `--preset paper --dry-run`'s plan: the
    model's maximum output (gpt-4o: 16,384, phr/llm/model_limits.toml) and the Qwen2.5-7B scorer, both ways."""
    cfg = EvalPhrbenchConfig(preset="paper", model="openai:gpt-4o", dataset=str(mini_folder), runs=tmp_path / "runs")
    lines = plan(cfg).lines()
    r = runner.invoke(app, ["eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset",
                            str(mini_folder), "--runs", str(tmp_path / "runs"), "--dry-run"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert _plan_printed(r.stdout) == lines
    assert lines[0] == f"preset: paper: samples 10, temperature 0.7, max_tokens model (16384), scorer {PAPER_SCORER}"
    assert "  170 prompts x 10 samples, max_tokens 16384" in lines
    assert paper_models.server.count == 0 and not (tmp_path / "runs").exists()
    # with overrides: the same again, and the line names them
    over = EvalPhrbenchConfig(preset="paper", model="openai:gpt-4o", dataset=str(mini_folder), runs=tmp_path / "runs",
                              samples=2, max_tokens=64)  # fmt: skip
    r = runner.invoke(app, ["eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset",
                            str(mini_folder), "--runs", str(tmp_path / "runs"), "--samples", "2", "--max-tokens",
                            "64", "--dry-run"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert _plan_printed(r.stdout) == plan(over).lines()
    assert plan(over).lines()[0] == (
        f"preset: paper: temperature 0.7, scorer {PAPER_SCORER}; overridden: samples 2 (preset: 10), "
        "max_tokens 64 (preset: model)"
    )


def test_python_paper_plan_without_the_scorer_stops_as_the_command_does(
    fake_openai, mini_folder, monkeypatch, tmp_path
):
    """No Qwen2.5-7B in the cache (and no network): the Python plan has the problem the command exits 2 with."""
    from tests.support.hf_cache import use_cache

    use_cache(monkeypatch, tmp_path / "empty-hf")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fake_openai()
    p = plan(EvalPhrbenchConfig(preset="paper", model="openai:gpt-4o", dataset=str(mini_folder)))
    assert [x for x in p.problems if x.startswith(f"scorer {PAPER_SCORER}")], p.problems
    r = runner.invoke(app, ["eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset",
                            str(mini_folder), "--dry-run"])  # fmt: skip
    assert r.exit_code == 2 and f"scorer {PAPER_SCORER}" in r.output


def test_score_paper_plan_is_the_dry_run_plan(paper_models, mini_folder, tmp_path):
    """`score --preset paper`: the paper scorer from Python as from the flag."""
    from phr.eval.dataset import load_eval_dataset

    ds = load_eval_dataset(mini_folder)
    sub = tmp_path / "sub.jsonl"
    rows = [{"instance_id": i.id, "sample": 0, "response": f"answer {i.id}"} for i in ds.select(("B", "B+T", "B+H"))]
    sub.write_text("".join(json.dumps(r) + "\n" for r in rows))
    given = {"dataset": str(mini_folder), "model": "org/m", "model_revision": "1", "judge": "openai:gpt-4o"}
    cfg = ScoreSubmissionConfig(submission=sub, preset="paper", **given)
    assert cfg.scorer == PAPER_SCORER
    lines = plan(cfg).lines()
    flags = [w for k, v in given.items() for w in (f"--{k.replace('_', '-')}", v)]
    r = runner.invoke(app, ["score", str(sub), "--preset", "paper", *flags, "--dry-run"])
    assert r.exit_code == 0, r.output
    assert _plan_printed(r.stdout) == lines and lines[0] == f"preset: paper: scorer {PAPER_SCORER}"
    submit = SubmitConfig(submission=sub, repo="org/results", preset="paper", **given)
    assert submit.scorer == PAPER_SCORER and plan(submit).lines() == lines
    assert paper_models.server.count == 0


# ---- what a run records ------------------------------------------------------------------------------------------


def test_the_run_records_the_preset_the_same_way_from_python_and_the_command(paper_models, mini_folder, tmp_path):
    """run.json's settings (the resolved config and its rerun command) are the same from both paths."""
    from phr.api import run

    args = {"model": "openai:gpt-4o", "dataset": str(mini_folder), "limit": 1, "samples": 1, "max_tokens": 8,
            "scorer": "none", "score": False}  # fmt: skip
    run(plan(EvalPhrbenchConfig(preset="paper", out=tmp_path / "py", **args)))
    flags = [w for k, v in args.items() if k != "score" for w in (f"--{k.replace('_', '-')}", str(v))]
    r = runner.invoke(
        app, ["eval", "phrbench", "--preset", "paper", *flags, "--no-score", "--out", str(tmp_path / "cli")]
    )
    assert r.exit_code == 0, r.output

    def settings(folder):
        st = json.loads((folder / "run.json").read_text())["settings"]
        st["config"].pop("out")
        return {**st, "rerun": st["rerun"].replace(str(folder), "OUT")}

    py, cli = settings(tmp_path / "py"), settings(tmp_path / "cli")
    assert py == cli
    assert py["config"]["preset"] == "paper" and py["config"]["temperature"] == 0.7
    assert "--preset paper" in py["rerun"] and "--temperature" not in py["rerun"]


def test_a_later_scoring_step_applies_another_preset_through_the_config():
    """`eval score --preset paper`: the preset's scorer when the run was started without it; the run's own
    scorer when it was started with it (the same preset); a scorer given wins either way."""
    from phr.ops.eval_merge import scoring_settings

    def meta(**config):
        return SimpleNamespace(settings={"config": config, "max_tokens_source": "default"})

    cfg = EvalScoreConfig(run=Path("r"), preset="paper")
    scoring, preset, _, changed = scoring_settings(meta(scorer="none"), cfg)
    assert (scoring.scorer, preset) == (PAPER_SCORER, "paper") and changed == {
        "preset": "paper",
        "scorer": PAPER_SCORER,
    }
    scoring, preset, _, changed = scoring_settings(meta(preset="paper", scorer="none"), cfg)
    assert (scoring.scorer, preset, changed) == ("none", "paper", {})
    given = EvalScoreConfig(run=Path("r"), preset="paper", scorer="local:smollm2")
    assert scoring_settings(meta(scorer="none"), given)[0].scorer == "local:smollm2"
