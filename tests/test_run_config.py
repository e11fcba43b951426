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
    "eval hr1": {
        "preset": "smoke",
        "dataset": ["popqa=p.jsonl"],
        "judge": "openai:x",
        "diversity": False,
        "partial": True,
    },
    "build phrbench": {"recipe": "paper", "judge": "none", "allow_short": True, "timeout": 30.0},
    "build hr1-paraphrases": {"source": ["popqa=a", "nq=b"], "k": 3, "max_tokens": 200},
    "build hr1-sft": {"source": ["simplequestions=s"], "eval_set": ["popqa=p"], "max_tokens": 128, "k": 2},
    "build hr1-grpo": {"source": ["simplequestions=s"], "qa_model": "hf:q", "preset": "smoke", "drop_leaking": True},
    "score": {"submission": "s.jsonl", "preset": "paper", "judge": "openai:x", "samples": 2, "plots": False},
    "submit": {"submission": "s.jsonl", "repo": "org/results", "model": "org/m", "create_pr": True, "grader": "none"},
    "push-results": {"results": ["r.json"], "repo": "org/results", "allow_partial": True, "message": "m"},
    "leaderboard": {"sources": ["runs"], "out": "lb", "allow_partial": True},
    "leaderboard-verify": {"sources": ["repo"], "datasets": ["phrbench", "org/phrbench"], "hub": "hub"},
    "leaderboard-queue": {"repo": "org/results", "dataset": "phrbench", "scorer": "none", "allow_weak_sandbox": True},
    "push": {"folder": "phrbench", "repo": "org/bench", "repo_type": "dataset", "tag": "v1", "message": "m"},
    "repair": {"repo": "org/bench", "repo_type": "model", "hub": "hub"},
    "validate": {"folder": "corpus", "eval_set": ["popqa=p"], "as_json": True},
    "review export": {"folder": "phrbench", "out": "sheet.csv", "include_baseline": True},
    "review import": {"sheet": "sheet.csv", "folder": "phrbench", "reviewer": "ana"},
    "pull": {"repo": "org/bench", "revision": "v1", "out": "dl", "hub": "hub", "overwrite": True},
    "report": {"results": ["runs"], "out": "rep", "access": ["org/m=open"], "title": "T"},
    "train grpo": {"recipe": "tiny-stage1", "max_steps": 2, "set": ["trainer.seed=3"], "eval_set": ["popqa=p"]},
    "train sft": {"recipe": "tiny-sft", "merge": False},
    "analyze predictor": {"results": ["r.json"], "dataset": "d", "folds": 3, "judge": "none"},
    "analyze paraphrases": {"corpus": "c", "model": "hf:m", "final_norm": False, "layer": 0},
    "llm ping": {"spec": "openai:gpt-4o", "max_tokens": 8, "cache_mode": "off"},
    "cache stats": {"as_json": True},
    "cache clear": {"model": "gpt-4o", "yes": True},
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
    if cls.command[0] != "train":
        assert _parse([*cls.command, "--config", str(f)]) == cfg
        return
    # training: --config is the recipe; its overrides reach the recipe as they would from the flags
    from phr.ops.train_grpo import recipe_overrides
    from phr.training.config import read_recipe

    again = _parse(_argv(cfg))
    raw, source = read_recipe(again.recipe, **recipe_overrides(again))
    assert source.endswith(f"config_{values['recipe']}.yaml")
    if "max_steps" in values:
        assert raw["trainer"]["max_steps"] == 2 and raw["trainer"]["seed"] == 3


# ---- presets: named, printed, never switched on silently (item 3) ---------------------------------------------


@pytest.fixture
def captured(monkeypatch):
    """``eval hr1`` up to the library call: the plan and K it would run with (no model is loaded)."""
    import phr.ops.eval_hr1 as runner_module

    seen = {}

    def evaluate(sets, **kw):
        seen.update(kw, sets=sets)
        raise SystemExit(0)

    monkeypatch.setattr(runner_module, "evaluate", evaluate)
    return seen


def test_a_non_smoke_run_judged_by_the_offline_model_keeps_full_lengths(captured, tmp_path):
    r = runner.invoke(
        app, ["eval", "hr1", "--preset", "paper", "--judge", "local:smollm2", "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 0, r.output
    assert "preset: paper" in r.output
    plan = captured["plan"]
    assert (plan.decoding.max_tokens, plan.qa_decoding.max_tokens, plan.judges.max_tokens) == (1024, 64, 512)
    assert plan.k == 5  # the table's K, not the smoke run's 4


def test_the_no_argument_default_runs_the_named_mini_preset(captured, tmp_path):
    r = runner.invoke(app, ["eval", "hr1", "--out", str(tmp_path / "o"), "--max-tokens", "120"])
    assert r.exit_code == 0, r.output
    assert "preset: mini (the no-argument offline default" in r.output
    plan = captured["plan"]
    assert (plan.decoding.max_tokens, plan.qa_decoding.max_tokens, plan.judges.max_tokens) == (120, 16, 48)
    assert plan.k == 4 and captured["paraphraser"] == "curated" and captured["judge"] == "none"
    assert {k: len(v) for k, v in captured["sets"].items()} == {"simplequestions": 28, "truthfulqa": 24}


def test_a_paraphraser_without_a_source_runs_the_named_smoke_preset(captured, tmp_path):
    r = runner.invoke(
        app,
        ["eval", "hr1", "--paraphraser", "local:smollm2", "--judge", "local:smollm2", "--out", str(tmp_path / "o")],
    )
    assert r.exit_code == 0, r.output
    assert "preset: mini (the no-argument offline default" in r.output
    plan = captured["plan"]
    assert (plan.decoding.max_tokens, plan.qa_decoding.max_tokens, plan.judges.max_tokens) == (96, 16, 48)
    assert captured["paraphraser"] == "local:smollm2" and captured["paraphrases"] is None


def test_presets_are_listed_in_help():
    def help_of(*cmd):
        return " ".join(runner.invoke(app, [*cmd, "--help"]).output.split())  # unwrapped

    out = help_of("eval", "hr1")
    assert "--preset [paper|smoke|mini]" in out and "smoke: {'max_tokens': 96, 'qa_max_tokens': 24" in out
    assert "Presets: paper: {'samples': 10, 'temperature': 0.7, 'max_tokens': 'model'" in help_of("eval", "phrbench")


# ---- preflight (item 4) -------------------------------------------------------------------------------------------


def test_train_grpo_dry_run_without_the_deepseek_key_stops_before_any_call(fake_openai, monkeypatch, tmp_path):
    srv = fake_openai()
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    r = cli("train", "grpo", "--config", "paper-qwen2.5-3b-stage1", "--dry-run")
    assert r.exit_code == 2
    assert "set the environment variable OPENAI_COMPATIBLE_API_KEY" in r.output
    assert "no corpus folder hr1-grpo (data.path)" in r.output  # every problem is listed, not the first one
    assert srv.server.count == 0 and not (tmp_path / "runs").exists()


def test_eval_dry_run_prints_calls_tokens_and_cost(fake_openai, mini_folder, tmp_path, monkeypatch):
    from tests.support.hf_cache import install_snapshot, use_cache

    install_snapshot(use_cache(monkeypatch, tmp_path / "hf"), "Qwen/Qwen2.5-7B-Instruct")  # the paper's scorer
    srv = fake_openai()
    r = cli("eval", "phrbench", "--preset", "paper", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--dry-run")
    assert r.exit_code == 0, r.output
    # 170 prompts of PHRBench-mini x 10 samples, each at most gpt-4o's 16,384 output tokens ($10 / 1M)
    assert "170 prompts x 10 samples, max_tokens 16384" in r.output
    assert "openai:gpt-4o: 170 requests, 1700 samples (cached 0/1700)" in r.output
    assert "<= 27,852,800 completion tokens" in r.output and "<= $2" in r.output
    assert srv.server.count == 0 and not (tmp_path / "runs").exists()
    # the share already cached: generate the first question's 5 prompts (B, B+T, B+H premises), then plan 2
    small = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 1, "--samples", 2]
    small += ["--max-tokens", 32, "--scorer", "none", "--no-plots", "--runs", tmp_path / "runs"]
    assert cli(*small).exit_code == 0
    again = cli(*small, "--limit", 2, "--dry-run")
    assert "openai:gpt-4o: 10 requests, 20 samples (cached 10/20)" in again.output, again.output


def test_preflight_lists_every_problem(monkeypatch, mini_folder, tmp_path):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_COMPATIBLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    r = cli(
        "eval", "phrbench", "--preset", "paper", "--model", "openai-compatible:https://api.example.org/v1#big",
        "--judge", "anthropic:claude-x", "--grader", "google:gemini-x", "--dataset", mini_folder, "--dry-run",
    )  # fmt: skip
    assert r.exit_code == 2
    assert "set the environment variable OPENAI_COMPATIBLE_API_KEY" in r.output
    assert "set the environment variable ANTHROPIC_API_KEY" in r.output
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in r.output
    assert "maximum output length of openai-compatible:https://api.example.org/v1#big is not known" in r.output
    assert "scorer hf:Qwen/Qwen2.5-7B-Instruct: model 'Qwen/Qwen2.5-7B-Instruct' is not installed" in r.output
    assert "preflight found 5 problem(s)" in r.output
    # a local server may have no key; its limit comes from $PHR_MODEL_LIMITS; the paper's scorer installed
    from tests.support.hf_cache import install_snapshot, use_cache

    install_snapshot(use_cache(monkeypatch, tmp_path / "hf"), "Qwen/Qwen2.5-7B-Instruct")
    limits = tmp_path / "limits.toml"
    limits.write_text('[limits]\n"openai-compatible:*#small" = { max_output_tokens = 777, source = "test" }\n')
    monkeypatch.setenv("PHR_MODEL_LIMITS", str(limits))
    ok = cli("eval", "phrbench", "--preset", "paper", "--model", "openai-compatible:http://127.0.0.1:9/v1#small",
             "--dataset", mini_folder, "--limit", 1, "--dry-run")  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "max_tokens 777" in ok.output and "(cached unknown)" not in ok.output


def test_a_hosted_openai_compatible_endpoint_needs_its_key(monkeypatch):
    from phr.core.errors import MissingAPIKeyError
    from phr.llm.spec import make_provider

    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="OPENAI_COMPATIBLE_API_KEY"):
        make_provider("openai-compatible:https://api.deepseek.com/v1#deepseek-chat")
    assert make_provider("openai-compatible:http://localhost:8000/v1#m")._api_key == "EMPTY"
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-deepseek-0123456789")
    assert make_provider("openai-compatible:https://api.deepseek.com/v1#deepseek-chat")._api_key.startswith("sk-deep")


def test_a_provider_registers_itself(monkeypatch):
    from phr.llm import spec
    from phr.llm.preflight import Preflight

    monkeypatch.setattr(spec, "PROVIDERS", spec.PROVIDERS.copy())

    @spec.provider("echo", "echo:<model>", keys=("ECHO_KEY",))
    def _echo(rest, **options):
        return spec.PROVIDERS["openai"].make(rest, api_key="sk-echo-0123456789", **options)

    assert spec.make_provider("echo:m").model == "m"
    monkeypatch.delenv("ECHO_KEY", raising=False)
    pf = Preflight()
    assert pf.model("judge", "echo:m") is False and pf.problems == [
        "judge echo:m: needs an API key: set the environment variable ECHO_KEY"
    ]
    assert "echo:<model>" in str(pytest.raises(Exception, spec.make_provider, "nope:x").value)


def test_a_reward_registers_itself(monkeypatch):
    """Rewards use the providers' idiom (phr.core.registry): a new one is a decorated factory, named in a recipe."""
    from phr.training import grpo
    from phr.training.config import RecipeError, parse_recipe

    monkeypatch.setattr(grpo, "REWARDS", grpo.REWARDS.copy())

    @grpo.REWARDS.register("constant")
    def _constant(settings, stage, num_generations):
        def constant(prompts, completions, **kwargs):
            return [settings["value"] * stage] * len(completions)

        return constant

    base = {"method": "grpo", "stage": 2, "model": {"tiny": {}, "init_from": "s1"}, "data": {"path": "x"}}
    base |= {"trainer": {"output_dir": "o", "num_generations": 4}}
    (reward,) = grpo.make_rewards(parse_recipe({**base, "reward": {"name": "constant", "settings": {"value": 0.25}}}))
    assert reward([], ["a", "b"]) == [0.5, 0.5]
    with pytest.raises(RecipeError, match=r"a registered reward \(hr1, paraphrase_tag, constant\) or module:factory"):
        grpo.make_rewards(parse_recipe({**base, "reward": {"name": "nope"}}))


def test_a_scorer_registers_itself_and_runs_after_the_built_in_ones(monkeypatch, mini_folder):
    from phr.config.ops import Scoring
    from phr.eval import scorers
    from phr.eval.dataset import load_eval_dataset
    from phr.eval.scoring import score_responses

    monkeypatch.setattr(scorers, "SCORERS", scorers.SCORERS.copy())
    seen = []

    class Counting:
        name = "counting"
        config = None

        def score(self, batch):
            seen.extend((it.instance.id, it.scored.get("correct")) for it in batch)
            return [{} for _ in batch]

    scorers.SCORERS.register("counting")(lambda run, progress: Counting())
    made = scorers.build_scorers(Scoring(scorer="none"), progress=False)
    assert [s.name for s in made] == ["accuracy", "counting"]
    inst = load_eval_dataset(mini_folder).instances[0]
    score_responses([inst], {(inst.id, 0): "x"}, samples=1, scoring=Scoring(scorer="none"), progress=False)
    assert seen == [(inst.id, False)]  # it ran after accuracy and read what accuracy set


def test_one_rule_for_no_model():
    from phr.config.defaults import is_no_model

    assert [is_no_model(s) for s in (None, "none", "None", "off", "", "local:smollm2")] == [True] * 5 + [False]


@pytest.mark.slow
def test_build_phrbench_judge_off_is_no_judge(tmp_path):
    r = cli("build", "phrbench", "--judge", "off", "--out", tmp_path / "b")
    assert r.exit_code == 0, r.output
    manifest = json.loads(next((tmp_path / "b").glob("**/manifest.json")).read_text())
    assert "off" not in json.dumps(manifest.get("judge"))


# ---- reference docs (item 7) --------------------------------------------------------------------------------------


def test_reference_pages_are_generated_and_up_to_date():
    from pathlib import Path

    from phr.config.reference import render, stale

    folder = Path(__file__).resolve().parent.parent / "docs" / "reference"
    assert stale(folder) == [], "run: python scripts/gen_reference.py"
    page = render(EvalPhrbenchConfig)
    assert "| `--samples` | `samples` | `10` | Samples per prompt. | App. B.1 |" in page
    assert "- `paper`: `samples` = `10`, `temperature` = `0.7`, `max_tokens` = `model`" in page


def _sq(tmp_path, rows: int = 8):
    """The first ``rows`` questions of the released SimpleQuestions file (the shared benchmark data)."""
    import shutil

    from tests.support.data import SHARED, missing

    if missing("simplequestions"):
        pytest.skip(missing("simplequestions"))
    sq = tmp_path / "sq"
    sq.mkdir()
    shutil.copy(SHARED / "simplequestions" / "reverse_vocab_wikidata_en.json", sq)
    lines = (SHARED / "simplequestions" / "annotated_wd_data_test_answerable.txt").read_text().split("\n")[:rows]
    (sq / "annotated_wd_data_test_answerable.txt").write_text("\n".join(lines))
    return sq


def test_a_corpus_build_screens_split_leakage_before_any_call(fake_openai, tmp_path):
    """`build hr1-grpo --dry-run`: the training questions (the even rows, as a stand-in train split) are screened
    against an evaluation set that holds them: refused, every problem listed, and no call made."""
    srv = fake_openai()
    sq = _sq(tmp_path)
    args = ["build", "hr1-grpo", "--source", f"simplequestions={sq}", "--stand-in-split", "even-train-odd-test"]
    args += ["--qa-model", "openai:gpt-4o", "--judge", "openai:gpt-4o", "--out", tmp_path / "g", "--dry-run"]
    leak = cli(*args, "--eval-set", f"simplequestions={sq}")
    assert leak.exit_code == 2 and "split leakage: 4 training row(s) overlap" in leak.output, leak.output
    clean = cli(*args, "--eval-set", "stand-in")
    assert clean.exit_code == 0 and "4 training questions pass the split-leakage screen (0 dropped)" in clean.output
    dropped = cli(*args, "--eval-set", f"simplequestions={sq}", "--drop-leaking")
    assert dropped.exit_code == 0 and "0 training questions pass the split-leakage screen (4 dropped)" in dropped.output
    assert srv.server.count == 0 and not (tmp_path / "g").exists()


# ---- the resolved settings are recorded with the artifact (item 1) --------------------------------------------


def test_corpus_manifest_and_eval_results_record_the_resolved_config(captured, tmp_path):
    out = tmp_path / "grpo"
    r = runner.invoke(app, ["build", "hr1-grpo", "--out", str(out)])
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["command"] == "build hr1-grpo" and config["preset"] == "mini"
    assert config["qa_max_tokens"] == 64 and "out" not in config and "overwrite" not in config
    r = runner.invoke(app, ["eval", "hr1", "--out", str(tmp_path / "o"), "--k", "3"])
    assert r.exit_code == 0, r.output
    rec = captured["config"]
    assert rec["command"] == "eval hr1" and rec["preset"] == "mini" and rec["k"] == 3 and rec["qa_max_tokens"] == 16
    assert not {"out", "overwrite", "partial", "timeout", "max_retry_after"} & set(rec)


def test_the_rerun_command_keeps_a_value_given_even_when_it_equals_the_default():
    from phr.config.base import resolve
    from phr.config.ops import EvalHr1Config

    cfg = resolve(EvalHr1Config, flags={"preset": "mini", "paraphraser": "hf:x", "judge": "local:smollm2"})
    line = cfg.rerun()
    assert "--judge local:smollm2" in line and "--paraphraser hf:x" in line and "--preset mini" in line
    assert "--qa-max-tokens" not in line  # the preset's value, not asked for


def test_the_phrbench_manifest_records_the_resolved_config(tmp_path):
    out = tmp_path / "pb"
    r = runner.invoke(app, ["build", "phrbench", "--out", str(out), "--judge", "none"])
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert (config["command"], config["recipe"], config["judge"], config["prompts"]) == (
        "build phrbench",
        "mini",
        "none",
        "paper",
    )
    assert "out" not in config and "overwrite" not in config and "timeout" not in config
