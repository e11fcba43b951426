"""Run settings (issue 18 items 1-4): typed configs, --config + flags, run folders that remember their settings,
named presets, and the preflight (--dry-run). Models: the local OpenAI-protocol server."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from phr.cli import app
from phr.config.base import ConfigError, command_line, resolve
from phr.config.ops import OPERATIONS, EvalPhrbenchConfig

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _results(folder):
    return json.loads((folder / "scores" / "results.json").read_text())


def test_sharded_paper_run_merges_into_the_unsharded_results(fake_openai, mini_folder, tmp_path):
    """A --preset paper run in 3 shards, merged with no scoring option, scores exactly as the unsharded run: the
    merge reads the run's preset, judge, BUF direction and max_tokens source from the shards."""
    srv = fake_openai()
    common = ["eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset", mini_folder]
    common += ["--limit", 3, "--samples", 2, "--scorer", "none", "--judge", "openai:gpt-4o-mini"]
    common += ["--kl-direction", "later_reference", "--no-plots", "--runs", tmp_path / "runs"]
    whole = cli(*common, "--out", tmp_path / "whole")
    assert whole.exit_code == 0, whole.output
    assert "preset: paper" in whole.output
    for i in (1, 2, 3):
        r = cli(*common, "--shard", f"{i}/3", "--out", tmp_path / f"s{i}")
        assert r.exit_code == 0, r.output
    merged = cli("eval", "merge", *(tmp_path / f"s{i}" for i in (3, 1, 2)), "--out", tmp_path / "merged", "--no-plots")
    assert merged.exit_code == 0, merged.output
    assert "scoring with the settings the run was started with" in merged.output
    a, b = _results(tmp_path / "whole"), _results(tmp_path / "merged")
    assert a == b
    st = a["settings"]
    assert st["preset"] == "paper" and st["max_tokens"] == 16384 and st["max_tokens_source"] == "model"
    assert st["kl_direction"] == "later_reference" and st["resolution_judge"] == "openai:gpt-4o-mini"
    assert st["reference_scorer"] is None
    stored = json.loads((tmp_path / "merged" / "run.json").read_text())["settings"]
    assert stored["config"]["preset"] == "paper" and stored["config"]["shard"] is None
    # a later `eval score` keeps the run's settings unless asked; what is asked is recorded
    again = cli("eval", "score", tmp_path / "merged", "--no-plots")
    assert again.exit_code == 0 and _results(tmp_path / "merged") == a
    other = cli("eval", "score", tmp_path / "merged", "--judge", "none", "--no-plots")
    assert other.exit_code == 0 and "judge=none" in other.output
    c = _results(tmp_path / "merged")
    assert c["settings"]["resolution_judge"] is None and c["config"]["rescored_with"] == {"judge": "none"}
    assert srv.server.count > 0


def test_merge_refuses_shards_started_with_other_settings(fake_openai, mini_folder, tmp_path):
    fake_openai()
    common = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 2]
    common += ["--samples", 1, "--scorer", "none", "--no-plots"]
    assert cli(*common, "--shard", "1/2", "--out", tmp_path / "s1").exit_code == 0
    assert cli(*common, "--shard", "2/2", "--out", tmp_path / "s2", "--judge", "openai:gpt-4o").exit_code == 0
    r = cli("eval", "merge", tmp_path / "s1", tmp_path / "s2", "--out", tmp_path / "m")
    assert r.exit_code == 2 and "other settings" in r.output and not (tmp_path / "m").exists()


def test_config_file_and_flags(tmp_path):
    f = tmp_path / "run.yaml"
    f.write_text("model: openai:gpt-4o\npreset: paper\nsamples: 3\n")
    cfg = resolve(EvalPhrbenchConfig, file=f, flags={"samples": 5, "temperature": None})
    assert (cfg.samples, cfg.temperature, cfg.max_tokens, cfg.scorer) == (
        5,
        0.7,
        "model",
        "hf:Qwen/Qwen2.5-7B-Instruct",
    )
    f.write_text("model: openai:gpt-4o\nsampels: 3\n")
    with pytest.raises(ConfigError, match=r"run.yaml: unknown key 'sampels' for `eval phrbench`"):
        resolve(EvalPhrbenchConfig, file=f)
    f.write_text("model: openai:gpt-4o\nsamples: zero\n")
    with pytest.raises(ConfigError, match=r"run.yaml: samples: 'zero'"):
        resolve(EvalPhrbenchConfig, file=f)
    with pytest.raises(ConfigError, match=r"--samples 0: Input should be greater than or equal to 1"):
        resolve(EvalPhrbenchConfig, flags={"model": "x:y", "samples": 0})
    with pytest.raises(ConfigError, match=r"--preset 'fast': unknown preset \(known: paper\)"):
        resolve(EvalPhrbenchConfig, flags={"model": "x:y", "preset": "fast"})
    r = cli("eval", "phrbench", "--config", f, "--dry-run")
    assert r.exit_code == 2 and "samples" in r.output and "run.yaml" in r.output


def _argv(cfg) -> list[str]:
    import shlex

    return shlex.split(command_line(cfg))[1:]


def _parse(argv: list[str]):
    """What the real command line parser binds ``argv`` to, as the command's config."""
    import typer

    from phr.cli.options import config_from_params

    group = typer.main.get_command(app)
    ctx = group.make_context("phr-publish", list(argv), resilient_parsing=True)
    cmd, words = group, list(argv)
    while words and hasattr(cmd, "commands") and words[0] in cmd.commands:
        cmd = cmd.commands[words.pop(0)]
    sub = cmd.make_context(cmd.name, words, parent=ctx)
    return config_from_params(cmd.callback.config_class, sub.params)


EXAMPLES = {
    "eval phrbench": {"model": "openai:gpt-4o", "preset": "paper", "samples": 3, "judge": "anthropic:claude-x"},
    "eval merge": {"shards": ["a", "b"], "out": "m", "judge": "none", "plots": False},
    "eval score": {"run": "r", "kl_direction": "later_reference", "preset": "paper"},
    "eval hr1": {"preset": "smoke", "dataset": ["popqa=p.jsonl"], "judge": "openai:x", "diversity": False},
    "build phrbench": {"recipe": "paper", "judge": "none", "allow_short": True, "timeout": 30.0},
    "build hr1-paraphrases": {"source": ["popqa=a", "nq=b"], "k": 3, "max_tokens": 200},
    "build hr1-sft": {"source": ["simplequestions=s"], "eval_set": ["popqa=p"], "max_tokens": 128, "k": 2},
    "build hr1-grpo": {"source": ["simplequestions=s"], "qa_model": "hf:q", "preset": "smoke", "drop_leaking": True},
    "train grpo": {"recipe": "tiny-stage1", "max_steps": 2, "set": ["trainer.seed=3"]},
    "train sft": {"recipe": "tiny-sft", "merge": False},
    "analyze predictor": {"results": ["r.json"], "folds": 3},
    "analyze paraphrases": {"corpus": "c", "final_norm": False},
}


@pytest.mark.parametrize("cls", OPERATIONS, ids=lambda c: " ".join(c.command))
def test_round_trip_yaml_config_flags(cls, tmp_path):
    """recipe / YAML -> config -> command line -> the same config, for every operation."""
    import yaml

    values = EXAMPLES[" ".join(cls.command)]
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(values))
    cfg = resolve(cls, file=f)
    assert _parse(_argv(cfg)) == cfg
    assert _parse([*cls.command, "--config", str(f)]) == cfg
