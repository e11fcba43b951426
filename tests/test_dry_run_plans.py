"""The plan of every command that calls models or trains (issue 18, item 4): `--dry-run` prints the calls per
model (exact where the prompt is known before the run, estimated where the run writes it), tokens and cost, and
the training preflight screens the corpus for split leakage. Nothing is called: the local OpenAI-protocol server
counts the requests."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from phr.cli import app

runner = CliRunner()


def cli(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_build_phrbench_paper_plans_the_generator_and_judge_calls(fake_openai, monkeypatch, tmp_path):
    """The paper recipe (460 base questions): 360 science questions x (1 T + 10 H) + 100 code x (1 T + 3 H) =
    4,360 premise slots; one T and one H request per question (the generator picks each H premise's type) = 920
    requests; one judge verdict per slot, estimated."""
    from tests.support.paper_fixtures import write_sources

    srv = fake_openai()
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    write_sources(tmp_path / "src")
    out = tmp_path / "pb"
    r = cli("build", "phrbench", "--recipe", "paper", "--source-dir", tmp_path / "src", "--out", out, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "460 base questions, 4360 premise slots; up to 3 regeneration round(s)" in r.output
    assert "openai:gpt-4o: 920 requests, 4360 samples (cached 0/4360)" in r.output
    # every slot's completion at the recipe's max_tokens 512: 4,360 x 512 = 2,232,320
    assert "<= 2,232,320 completion tokens" in r.output
    assert "google:gemini-3-pro-preview: 4360 requests, 4360 samples (cached unknown; 4360 estimated" in r.output
    assert srv.server.count == 0 and not out.exists()


def test_eval_hr1_plans_each_role(fake_openai, tmp_path):
    """Hallucination-R1-mini (52 questions, K 4) with a paraphraser under test: 52 Listing B.1 requests of 4
    samples (exact), 208 B.2 verdicts (estimated); the QA model answers the 52 questions (exact) and at most
    the 208 paraphrases (estimated); alias-match grading: no B.3 call."""
    srv = fake_openai()
    out = tmp_path / "o"
    r = cli("eval", "hr1", "--paraphraser", "openai:gpt-4o", "--judge", "openai:gpt-4o", "--out", out, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "52 questions x K 4 paraphrases" in r.output
    # certain: the 52 paraphrase requests and the 52 original questions; the rest is a bound with its condition
    assert (
        "openai:gpt-4o: 52 requests + up to 208 that depend on earlier answers (only paraphrases that parse;"
        in r.output
    )
    assert "416 samples (cached 0/208; 208 estimated" in r.output
    assert "local:smollm2: 52 requests + up to 208 that depend on earlier answers (Algorithm 1 asks" in r.output
    assert "260 samples (cached " in r.output and "/52; 208 estimated" in r.output
    # a Table 7 judge adds one B.2 verdict per paraphrase and needs its key
    more = cli("eval", "hr1", "--paraphraser", "openai:gpt-4o", "--judge", "openai:gpt-4o", "--judges",
               "anthropic:claude-x", "--out", out, "--dry-run")  # fmt: skip
    assert more.exit_code == 2 and "judge 2 anthropic:claude-x: needs an API key" in more.output
    assert srv.server.count == 0 and not out.exists()
    # the no-argument default: the curated paraphrases are known, so the QA model's requests are exact: the 52
    # questions and the 196 consistent paraphrases (208 less the 12 labelled inconsistent)
    for args in (["eval", "hr1"], ["build", "hr1-paraphrases"]):
        mini = cli(*args, "--out", out, "--dry-run")
        assert mini.exit_code == 0, mini.output
        assert "local:smollm2: 52 requests + up to 196 that depend on earlier answers" in mini.output
        assert "248 samples (cached 0/248)" in mini.output


def _mini_grpo(tmp_path):
    out = tmp_path / "g"
    r = cli("build", "hr1-grpo", "--out", out)
    assert r.exit_code == 0, r.output
    return out


def test_train_dry_run_plans_the_reward_calls(fake_openai, monkeypatch, tmp_path):
    """The paper's stage-1 recipe on the 14-prompt mini corpus (allowed with data.allow_smaller; the base model in
    the Hugging Face cache): 14 x 8 generations = 112 completions, in batches of 32 (4 steps); one DeepSeek B.2
    verdict per completion."""
    from tests.support.hf_cache import install_snapshot, use_cache

    install_snapshot(use_cache(monkeypatch, tmp_path / "hf"), "Qwen/Qwen2.5-3B-Instruct")
    srv = fake_openai()
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")
    corpus = _mini_grpo(tmp_path)
    args = ["train", "grpo", "--config", "paper-qwen2.5-3b-stage1", "--data", corpus, "--set", "trainer.use_vllm=false"]
    r = cli(*args, "--set", "data.allow_smaller=true", "--output-dir", tmp_path / "run", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "warning: data.path" in r.output and "(data.allow_smaller: true; recorded" in r.output
    assert (
        "completions: at most 112 (8 generations per prompt, 1 epoch(s)), 4 optimizer step(s) of 32 completions"
        in r.output
    )
    assert "#deepseek-chat: 112 requests, 112 samples (cached unknown; 112 estimated" in r.output
    assert "split-leakage screen: passed when" in r.output
    assert srv.server.count == 0 and not (tmp_path / "run").exists()


def test_train_dry_run_screens_the_corpus_for_split_leakage(tmp_path):
    """With --eval-set the corpus's prompts are screened now (3 of the mini's 14 stand-in train questions are
    among the first 40 rows of the SimpleQuestions test file, one of them written there with a trailing space:
    the same after normalisation); without, the screen its build recorded: a corpus
    built without one is refused."""
    from tests.support.data import SHARED, missing

    if missing("simplequestions"):
        pytest.skip(missing("simplequestions"))
    corpus = _mini_grpo(tmp_path)
    sq = tmp_path / "sq"
    sq.mkdir()
    shutil.copy(SHARED / "simplequestions" / "reverse_vocab_wikidata_en.json", sq)
    lines = (SHARED / "simplequestions" / "annotated_wd_data_test_answerable.txt").read_text().split("\n")[:40]
    (sq / "annotated_wd_data_test_answerable.txt").write_text("\n".join(lines))
    args = ["train", "grpo", "--config", "tiny-stage1", "--data", corpus, "--output-dir", tmp_path / "run"]
    leak = cli(*args, "--eval-set", f"simplequestions={sq}", "--dry-run")
    assert leak.exit_code == 2, leak.output
    assert "split leakage: 3 training row(s) overlap simplequestions" in leak.output
    manifest = json.loads((corpus / "manifest.json").read_text())
    (corpus / "manifest.json").write_text(json.dumps({**manifest, "leakage_checked": False}))
    unscreened = cli(*args, "--dry-run")
    assert unscreened.exit_code == 2 and "built without the split-leakage screen" in unscreened.output
    # the real command stops at the same check, before it loads a model
    assert cli(*args).exit_code == 2 and not (tmp_path / "run").exists()


def test_train_dry_run_refuses_old_reward_setting_names(monkeypatch, tmp_path):
    """The hr1 reward's settings are named as in build and eval: a recipe with the old `qa` is refused by the
    preflight, naming the new name."""
    import yaml

    from phr.training.config import resolve_recipe_path

    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")
    raw = yaml.safe_load(resolve_recipe_path("paper-qwen2.5-3b-stage2").read_text())
    raw["reward"]["settings"]["qa"] = raw["reward"]["settings"].pop("qa_model")
    recipe = tmp_path / "old.yaml"
    recipe.write_text(yaml.safe_dump(raw))
    r = cli("train", "grpo", "--config", recipe, "--dry-run")
    assert r.exit_code == 2
    assert "reward.settings.qa: now qa_model (the name build and eval use)" in r.output
    assert "stage 2 needs reward.settings.qa_model" in r.output


def test_merge_and_score_dry_runs_plan_the_judge_calls(fake_openai, mini_folder, monkeypatch, tmp_path):
    """3 base questions of PHRBench-mini (15 prompts, 9 of them B+H) x 2 samples in 3 shards: the merge's
    preflight joins them in memory (30 responses) and plans 18 resolution verdicts, exactly; after the real
    merge scored them, a rescore finds all 18 in the call cache. A judge without its key stops the merge before
    anything is written."""
    srv = fake_openai()
    common = ["eval", "phrbench", "--model", "openai:gpt-4o", "--dataset", mini_folder, "--limit", 3, "--samples", 2]
    common += ["--max-tokens", 32, "--scorer", "none", "--judge", "openai:gpt-4o-mini", "--no-plots"]
    shards = [tmp_path / f"s{i}" for i in (1, 2, 3)]
    for i, s in enumerate(shards, 1):
        assert cli(*common, "--shard", f"{i}/3", "--out", s).exit_code == 0
    before, merged = srv.server.count, tmp_path / "m"
    plan = cli("eval", "merge", *shards, "--out", merged, "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "3 shards join into one run (30 responses)" in plan.output and "30 responses to score" in plan.output
    assert "openai:gpt-4o-mini: 18 requests, 18 samples (cached 0/18)" in plan.output
    assert srv.server.count == before and not merged.exists()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    keyless = cli("eval", "merge", *shards, "--out", merged, "--judge", "anthropic:claude-x")
    assert keyless.exit_code == 2 and "ANTHROPIC_API_KEY" in keyless.output and not merged.exists()
    assert cli("eval", "merge", *shards, "--out", merged, "--no-plots").exit_code == 0
    again = cli("eval", "score", merged, "--dry-run")
    assert again.exit_code == 0 and "openai:gpt-4o-mini: 18 requests, 18 samples (cached 18/18)" in again.output


def test_score_a_submission_dry_run_plans_the_judge_calls(fake_openai, mini_folder, tmp_path):
    """A submission of PHRBench-mini (34 B, 34 B+T, 102 B+H instances) x 2 samples: 340 responses, 204
    resolution verdicts (the B+H ones), exactly; nothing is scored or written."""
    from phr.eval.dataset import load_eval_dataset

    srv = fake_openai()
    ds = load_eval_dataset(mini_folder)
    sub = tmp_path / "sub.jsonl"
    lines = [{"instance_id": i.id, "sample": s, "response": f"answer {s}"} for i in ds.instances for s in range(2)]
    sub.write_text("".join(json.dumps(r) + "\n" for r in lines))
    args = ["score", sub, "--dataset", mini_folder, "--model", "org/m", "--model-revision", "r1", "--samples", 2]
    args += ["--scorer", "none"]
    r = cli(*args, "--judge", "openai:gpt-4o", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "340 responses to score (170 instances x 2 samples" in r.output
    assert "openai:gpt-4o: 204 requests, 204 samples (cached 0/204)" in r.output
    assert srv.server.count == 0 and not (tmp_path / "sub.scored").exists()


def test_the_training_plan_reads_trls_own_defaults():
    """The plan reads a trainer setting the recipe leaves out as TRL's default, without importing TRL: the table it
    keeps is TRL's (num_train_epochs is 3 there, not 1)."""
    from trl import GRPOConfig

    from phr.training.preflight import TRL_DEFAULTS, _completions

    fields = GRPOConfig.__dataclass_fields__
    assert TRL_DEFAULTS == {k: fields[k].default for k in TRL_DEFAULTS}
    # 10 prompts x 8 generations x 3 epochs; with max_steps 5: 5 x 8 per step
    assert (_completions({}, 10), _completions({"max_steps": 5}, 10)) == (240, 40)
