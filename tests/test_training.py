"""Training on TRL with the tiny random Llama (CPU, seconds): two GRPO steps per stage (stage 2 from stage 1), two
LoRA SFT steps with a merge, the answer-only labels mask, resume after an interruption, push of a checkpoint to a
local hub, `eval hr1` on the trained paraphraser, recipes and their errors."""

from __future__ import annotations

import json
import os
import threading

import pytest
from transformers import AutoModelForCausalLM, TrainerCallback

from phr.builders.hr1_mini import load_mini
from phr.config.ops import PushConfig
from phr.core.errors import UsageError
from phr.core.fs import sha256_file
from phr.hub import push
from phr.training.checkpoint import EMA_WEIGHT, MANIFEST, folder_hash
from phr.training.config import RecipeError, load_recipe, parse_recipe, recipe_names
from phr.training.grpo import train_grpo
from phr.training.sft import build_sft_trainer, train_sft
from tests.support.cli import invoke, run
from tests.support.hr1_fixtures import hr1_responder
from tests.support.training import LengthReward, grpo_corpus, sft_corpus

REWARD = "tests.support.training:length_reward"


def _grpo(tmp, stage, corpus, **model):
    return load_recipe(
        f"tiny-stage{stage}",
        data={"path": str(corpus)},
        trainer={"output_dir": str(tmp / f"stage{stage}")},
        **({"model": model} if model else {}),
        **({"reward": {"name": REWARD}} if stage == 1 else {}),
    )


@pytest.fixture(scope="module")
def grpo_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grpo")
    corpus = grpo_corpus(tmp)
    s1 = train_grpo(_grpo(tmp, 1, corpus))  # reward by name: module:factory
    injected = LengthReward()
    s2 = train_grpo(_grpo(tmp, 2, corpus, init_from=str(s1.final_dir)), reward_funcs=[injected])
    return corpus, s1, s2, injected


def _check_checkpoint(folder, method):
    AutoModelForCausalLM.from_pretrained(folder)  # loadable
    card = (folder / "README.md").read_text()
    assert "base_model: phr/tiny-random-llama" in card and "## Intended use" in card and "## Limitations" in card
    assert f"- {method}" in card
    assert (folder / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return json.loads((folder / MANIFEST).read_text()), json.loads((folder / "curves.json").read_text())


@pytest.mark.slow
def test_grpo_two_stages(grpo_runs):
    corpus, s1, s2, injected = grpo_runs
    assert (s1.global_step, s2.global_step) == (2, 2)
    m1, c1 = _check_checkpoint(s1.final_dir, "grpo")
    assert m1["stage"] == 1 and m1["data"]["folder_sha256"] == folder_hash(corpus) and m1["data"]["rows"] == 4
    assert m1["reference_policy"] == {"setting": "initial", "model": m1["start_from"], "revision": None, "beta": 0.04}
    assert m1["start_from"].endswith("stage1/tiny-base") and m1["seeds"] == {"seed": 0, "data_seed": None}
    assert m1["versions"]["trl"] and m1["reward"]["name"] == REWARD and m1["global_step"] == 2
    assert m1["trainer"]["num_generations"] == 4 and m1["trainer"]["temperature"] == 0.7
    reward = c1["metrics"]["reward"]
    assert reward["step"] == [1, 2] and c1["ema_weight"] == EMA_WEIGHT == 0.9
    assert reward["smoothed"] == pytest.approx([reward["raw"][0], 0.9 * reward["raw"][0] + 0.1 * reward["raw"][1]])
    assert "rewards/length_reward/mean" in c1["metrics"] and "loss" in c1["metrics"]
    ck1, _ = _check_checkpoint(s1.output_dir / "checkpoint-1", "grpo")  # every checkpoint has the three files
    assert ck1["global_step"] == 1
    # stage 2 starts from the stage-1 checkpoint, which is also its KL reference; the base model is carried over
    m2, _ = _check_checkpoint(s2.final_dir, "grpo")
    assert (
        m2["stage"] == 2
        and m2["start_from"] == str(s1.final_dir)
        and m2["reference_policy"]["model"] == str(s1.final_dir)
    )
    assert m2["base_model"] == "phr/tiny-random-llama" and m2["reward"]["functions"] == ["length_reward"]
    # traceable: the stage-1 checkpoint by manifest hash and step; the code's git state; the corpus by its manifest
    assert m2["start_checkpoint"]["path"] == str(s1.final_dir.resolve())
    assert m2["start_checkpoint"]["manifest_sha256"] == sha256_file(s1.final_dir / MANIFEST)
    assert (m2["start_checkpoint"]["global_step"], m2["start_checkpoint"]["stage"]) == (2, 1)
    assert m1["start_checkpoint"] is None and set(m1["git"]) == {"commit", "dirty"}
    assert m1["git"]["commit"] == m1["git_commit"] and isinstance(m1["git"]["dirty"], bool)
    assert m1["data"]["name"] == corpus.name and m1["data"]["manifest_sha256"] == sha256_file(corpus / "manifest.json")
    assert m1["objective_defaults"] == [] and m2["reward"]["resolved"] == [None]  # a plain reward function
    card = (s1.final_dir / "README.md").read_text()
    assert f"the local corpus folder `{corpus.name}` (manifest.json sha256 `{m1['data']['manifest_sha256']}`)" in card
    assert "license: apache-2.0" in card and "## Reward" in card and "| loss_type | dapo |" in card
    assert f"MODEL = '{s1.final_dir.resolve()}'" in card and "<paraphrase>(.*?)</paraphrase>" in card
    # 2 steps x 1 prompt x 4 generations; prompt_id arrives from the dataset columns
    assert injected.calls == 8 and injected.seen_prompt_ids <= {"p00", "p01", "p02", "p03"}
    assert s2.reward_stats == {"judge_calls": 8, "cache_hits": 0, "cost_usd": 0.0}


def _run_usage_snippet(folder, capsys) -> str:
    """Execute the python block of the card's Usage section as written; returns what it printed."""
    card = (folder / "README.md").read_text()
    code = card.split("## Usage", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, str(folder / "README.md"), "exec"), {"__name__": "__card__"})
    return capsys.readouterr().out


@pytest.mark.slow
def test_grpo_card_usage_snippet_runs(grpo_runs, capsys):
    _, s1, _, _ = grpo_runs
    card = (s1.final_dir / "README.md").read_text()
    assert "Original question: {question}" in card and "temperature=0.7, top_p=0.95, top_k=0" in card
    printed = _run_usage_snippet(s1.final_dir, capsys)
    assert printed.strip() == "None"  # the random model writes no <paraphrase> tag: parsed as a failure


@pytest.mark.slow
def test_push_checkpoint_to_local_hub(grpo_runs, tmp_path):
    _, s1, _, _ = grpo_runs
    res = push(PushConfig(folder=s1.final_dir, repo="org/tiny-hr1", repo_type="model", hub=tmp_path / "hub"))
    assert res.revision and "model.safetensors" in res.files and MANIFEST in res.files


@pytest.mark.slow
def test_eval_hr1_on_trained_paraphraser(grpo_runs, fake_openai, tmp_path):
    _, _, s2, _ = grpo_runs
    qs = [q for ld in load_mini().loads for q in ld.questions[:2]]  # no --dataset: the mini preset, 2 per source
    srv = fake_openai(hr1_responder({q.question: q.answer for q in qs}))
    env = {k: os.environ[k] for k in ("OPENAI_BASE_URL", "PHR_CACHE")} | {"OPENAI_API_KEY": "sk-test-0123456789"}
    res = run("eval", "hr1", "--limit", "2", "--paraphraser", f"hf:{s2.final_dir}", "--qa-model", "openai:gpt-4o",
              "--judge", "openai:gpt-4o", "--k", "2", "--no-diversity", "--out", str(tmp_path / "run"), env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    records = [
        json.loads(line) for p in (tmp_path / "run" / "records").glob("*") for line in p.read_text().splitlines()
    ]
    paras = [p for r in records for p in r["paraphrases"]]
    assert len(records) == 4 and len(paras) == 8  # garbage paraphrases are recorded as parse errors, not dropped
    assert all(p["parse_error"] for p in paras if not p["text"]) and srv.server.count > 0


# ---- SFT -------------------------------------------------------------------------------------------------------


def _sft(tmp, corpus, name):
    return load_recipe("tiny-sft", data={"path": str(corpus)}, trainer={"output_dir": str(tmp / name)})


@pytest.mark.slow
def test_sft_labels_mask_covers_the_answer_only(tmp_path):
    corpus = sft_corpus(tmp_path)
    trainer, _, _, _ = build_sft_trainer(_sft(tmp_path, corpus, "mask"))
    batch = next(iter(trainer.get_train_dataloader()))
    tok = trainer.processing_class
    answers = {"Paris", "Shakespeare", "Lima", "Nile"}
    for ids, labels in zip(batch["input_ids"], batch["labels"]):
        kept = labels[labels != -100]
        assert tok.decode(kept) in {f"<answer>{a}</answer><|im_end|>\n" for a in answers}
        first = (labels != -100).nonzero()[0].item()
        assert (labels[:first] == -100).all() and (
            labels[first:][labels[first:] != -100] == ids[first:][: len(kept)]
        ).all()
        assert tok.decode(ids[:first]).endswith("<|im_start|>assistant\n")  # system + user + role header: masked


class _Interrupt(Exception):
    pass


def _progress_threads() -> list[str]:
    """The live threads of progress displays (``phr.core.progress``)."""
    return [t.name for t in threading.enumerate() if t.name == "phr-progress"]


class _StopAfterFirstSave(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise _Interrupt(f"interrupted after checkpoint-{state.global_step}")


@pytest.mark.slow
def test_sft_lora_merge_and_resume(tmp_path, capsys):
    corpus = sft_corpus(tmp_path)
    full = train_sft(_sft(tmp_path, corpus, "full"))
    assert full.global_step == 2 and (full.final_dir / "adapter_config.json").is_file()
    manifest, curves = _check_checkpoint(full.merged_dir, "sft")  # the merged full model loads
    assert manifest["recipe"]["lora"]["r"] == 4 and curves["metrics"]["loss"]["step"] == [1, 2]
    assert "library_name: peft" in (full.final_dir / "README.md").read_text()
    for folder in (full.final_dir, full.merged_dir):  # SFT cards: LoRA settings, data named, no reward
        card = (folder / "README.md").read_text()
        assert (
            "reward" not in card.lower() and "## LoRA" in card and "| r | 4 |" in card and "| lora_alpha | 8 |" in card
        )
        assert f"the local corpus folder `{corpus.name}`" in card and "license: apache-2.0" in card
        assert "do_sample=False, max_new_tokens=64" in card and "Listing B.4" in card
    assert "holds a LoRA adapter" in (full.final_dir / "README.md").read_text()
    assert isinstance(_run_usage_snippet(full.merged_dir, capsys), str)  # the QA snippet runs on the merged model

    recipe = _sft(tmp_path, corpus, "interrupted")
    with pytest.raises(_Interrupt):
        train_sft(recipe, callbacks=[_StopAfterFirstSave()])
    assert not (tmp_path / "interrupted" / "final").exists()  # nothing half-written
    assert not _progress_threads()  # its [progress] lines ended with it
    with pytest.raises(UsageError, match="pass resume=True"):
        train_sft(recipe)
    resumed = train_sft(recipe, resume=True)
    assert resumed.global_step == full.global_step == 2 and resumed.resumed_from.endswith("checkpoint-1")

    def loss(r):
        return json.loads((r.final_dir / "curves.json").read_text())["metrics"]["loss"]["raw"]

    assert loss(resumed) == pytest.approx(loss(full), rel=1e-4)  # same data order, same losses


# ---- recipes and CLI ---------------------------------------------------------------------------------------------


def test_packaged_recipes_parse():
    names = recipe_names()
    for name in ("paper-qwen2.5-3b-stage1", "paper-qwen2.5-3b-stage2", "paper-qwen2.5-1.5b-stage1", "paper-qwen2.5-1.5b-stage2",
                 "paper-qwen3-8b-lora-sft", "tiny-stage1", "tiny-stage2", "tiny-sft"):  # fmt: skip
        load_recipe(names[name])
    r = load_recipe("paper-qwen2.5-3b-stage1")
    assert (r.data.limit, r.trainer["temperature"], r.trainer["top_p"], r.trainer["top_k"]) == (1536, 0.7, 0.95, 0)
    assert r.trainer["max_completion_length"] == 1024 and r.trainer["vllm_mode"] == "colocate"


def test_paper_recipes_build_the_hr1_rewards(monkeypatch):
    from phr.training.grpo import make_rewards

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")  # the judge's key is checked when the reward is built
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-0123456789")  # the DeepSeek judge's (hosted) key
    stage1 = make_rewards(load_recipe("paper-qwen2.5-3b-stage1"))[0]
    stage2 = make_rewards(load_recipe("paper-qwen2.5-3b-stage2"))[0]
    assert (stage1.__name__, stage1.config.stage, stage1.config.group_size, stage1.config.lambda_div) == (
        "r_stab",
        1,
        8,
        1.0,
    )
    assert (stage2.__name__, stage2.config.stage, stage2.config.qa_model) == (
        "r_train",
        2,
        "hf:Qwen/Qwen2.5-3B-Instruct",
    )
    assert stage2.config.judge.endswith("#deepseek-chat")
    base = {"method": "grpo", "stage": 1, "model": {"tiny": {}}, "data": {"path": "x"}, "trainer": {"output_dir": "o"}}
    with pytest.raises(RecipeError, match="unknown key.*judg"):
        make_rewards(parse_recipe({**base, "reward": {"name": "hr1", "settings": {"judg": "x"}}}, "r.yaml"))
    custom = parse_recipe({**base, "trainer": {"output_dir": "o", "num_generations": 4},
                           "reward": {"name": "hr1", "settings": {"judge": "openai:gpt-4o", "fuzzy": "correct", "qa_max_tokens": 32}}}, "r.yaml")  # fmt: skip
    r = make_rewards(custom)[0]
    assert r.config.group_size == 4 and r.config.grading.fuzzy == "correct" and r.config.qa_decoding.max_tokens == 32
    # the names of build and eval: a recipe with the old ones is refused naming the new one
    old = {"judge": "openai:gpt-4o", "qa": "openai:gpt-4o", "qa_decoding": {"max_tokens": 8}}
    with pytest.raises(
        RecipeError, match="reward.settings.qa: now qa_model .*reward.settings.qa_decoding: now qa_max_tokens"
    ):
        make_rewards(parse_recipe({**base, "reward": {"name": "hr1", "settings": old}}, "r.yaml"))


def test_recipe_errors_name_the_key(tmp_path):
    base = {"method": "grpo", "stage": 1, "model": {"tiny": {}}, "data": {"path": "x"}, "reward": {"name": "hr1"},
            "trainer": {"output_dir": "o"}}  # fmt: skip
    with pytest.raises(RecipeError, match="trainer.max_seq_length is not a field of trl.GRPOConfig"):
        parse_recipe({**base, "trainer": {"output_dir": "o", "max_seq_length": 8}}, "r.yaml")
    with pytest.raises(RecipeError, match="r.yaml: unknown key 'modle'"):
        parse_recipe({**base, "modle": {}}, "r.yaml")
    with pytest.raises(RecipeError, match="model.path: unknown key"):
        parse_recipe({**base, "model": {"path": "x"}}, "r.yaml")
    with pytest.raises(RecipeError, match="set model.init_from"):
        parse_recipe({**base, "stage": 2}, "r.yaml")
    bad = invoke("train", "grpo", "--stage", "2", "--config", "tiny-stage1")
    assert bad.returncode == 2 and "stage-1 recipe" in bad.stderr
    bad_set = invoke(
        "train", "sft", "--config", "tiny-sft", "--data", str(tmp_path), "--set", "trainer.max_seq_length=8"
    )
    assert bad_set.returncode == 2 and "trainer.max_seq_length is not a field of trl.SFTConfig" in bad_set.stderr
    missing = invoke("train", "sft", "--config", "no-such-recipe")
    assert missing.returncode == 2 and "no packaged recipe" in missing.stderr
    no_name = invoke("train", "grpo", "--config", "tiny-stage1", "--eval-set", "=x")  # EvalSets: NAME=PATH
    assert no_name.returncode == 2 and no_name.stderr.strip().splitlines() == [
        "error: --eval-set ['=x']: Value error, '=x': expected NAME=PATH (a source name, then its released files)"
    ]


@pytest.mark.slow
def test_grpo_interrupted_after_its_first_checkpoint_resumes_to_the_same_end(grpo_runs, tmp_path):
    corpus, s1, _, _ = grpo_runs
    recipe = _grpo(tmp_path, 1, corpus)
    with pytest.raises(_Interrupt):
        train_grpo(recipe, callbacks=[_StopAfterFirstSave()])
    assert not (tmp_path / "stage1" / "final").exists()  # nothing half-written
    assert not _progress_threads()  # its [progress] lines ended with it (they went on every 10 s for the session)
    resumed = train_grpo(recipe, resume=True)
    assert resumed.global_step == s1.global_step == 2 and resumed.resumed_from.endswith("checkpoint-1")
    steps = json.loads((resumed.final_dir / "curves.json").read_text())["metrics"]["reward"]["step"]
    assert steps[-1] == 2
