"""The GRPO rewards (training/rewards.py) against the local OpenAI-protocol server, with hand-computed values.

Paraphrases are two disjoint words each, so every pairwise BLEU is the same and the diversity ranking is decided
by the injected embedding (S_embed = -sum of cosines to the consistent peers):
    a = (1, 0, 0), b = (0.8, 0.6, 0), c = (0, 1, 0), d = (0, 0, 1)
    a.b = 0.8, b.c = 0.6, every other pair 0:  S_embed a = -0.8, b = -1.4, c = -0.6, d = 0.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from phr.hr1.pipeline import judge_consistency, paraphrase_prompt
from phr.training.rewards import HR1Reward, RewardConfig, completion_text

VECTORS = {
    "aa bb": (1.0, 0.0, 0.0),
    "cc dd": (0.8, 0.6, 0.0),
    "ee ff": (0.0, 1.0, 0.0),
    "gg hh": (0.0, 0.0, 1.0),
    "cc yy": (0.8, 0.6, 0.0),  # b's vector, answered fuzzily
    "ee zz": (0.0, 1.0, 0.0),  # c's vector, answered wrongly
}
QUESTION, GOLD = "What is the capital of France?", "Paris"


def embed(texts):
    return np.array([VECTORS.get(t, (0.0, 0.0, 0.0)) for t in texts])


def responder(model, messages, k):
    """B.2: inconsistent when the paraphrase says "who else", never valid JSON for "broken"; QA: "Paris",
    "Paris area" for texts with "yy", "Nobody" for "zz"; B.3: 0 equal, 1 one contains the other, 2 else."""
    first = messages[0][1]
    if first.startswith("Please help me determine"):
        para = re.search(r"paraphrased question: (.*?)\n", first).group(1)
        if "broken" in para:
            return "I cannot say."
        return json.dumps({"think": "checked", "result": 0 if "who else" in para else 1})
    if first.startswith("Your task is to evaluate whether"):
        ref = re.search(r"Reference Answer: (.*?)\n", first).group(1).strip().lower()
        resp = re.search(r"Model Response: (.*?)\n", first).group(1).strip().lower()
        return json.dumps({"think": "compared", "result": 0 if ref == resp else 1 if ref in resp else 2})
    if first.startswith("You are a strict question"):
        last = messages[-1][1]
        return "<answer>" + ("Nobody" if "zz" in last else "Paris area" if "yy" in last else "Paris") + "</answer>"
    raise AssertionError(f"unexpected prompt: {first[:80]!r}")


def para(text: str) -> str:
    return f"<think>Rephrase.</think><paraphrase>{text}</paraphrase>"


def make(fake_openai, stage=1, latency=0.0, **cfg):
    fo = fake_openai(responder, latency=latency)
    llm = fo.llm(max_attempts=2)
    config = RewardConfig(judge="openai:gpt-4o", qa_model="openai:gpt-4o" if stage == 2 else None, stage=stage, **cfg)
    return fo, llm, HR1Reward(config, judge_llm=llm, qa_llm=llm, embed=embed)


def call(reward, texts, pids=None, step=None, source=None):
    n = len(texts)
    kw = {"source": source * n} if source else {}
    return asyncio.run(
        reward(
            prompts=[[{"role": "user", "content": paraphrase_prompt(QUESTION)}]] * n,
            completions=[para(t) if t is not None else "I won't." for t in texts],
            completion_ids=[[0]] * n,
            prompt_id=pids or ["p1"] * n,
            question=[QUESTION] * n,
            answers=[[GOLD]] * n,
            trainer_state=SimpleNamespace(global_step=step) if step is not None else None,
            **kw,
        )
    )


def test_stage1_ranks_the_consistent_set_and_the_gate_and_a_missing_tag_give_0(fake_openai):
    _fo, _llm, reward = make(fake_openai)
    # Y = {a, b, c}: ranks b 0, a 1, c 2 -> R_div a 0.5, b 0, c 1; R_stab = 1 + R_div
    out = call(reward, ["aa bb", "cc dd", "who else ee", "ee ff", None])
    assert out == pytest.approx([1.5, 1.0, 0.0, 2.0, 0.0])
    s = reward.stats()
    assert (s["completions"], s["malformed"], s["inconsistent"], s["consistent"], s["missing"]) == (5, 1, 1, 3, 0)
    assert s["judge_calls"] == 4 and s["mean_reward"] == pytest.approx(4.5 / 5)
    assert reward.__name__ == "r_stab"


def test_groups_follow_prompt_id_not_batch_position(fake_openai):
    _fo, _llm, reward = make(fake_openai)
    # p1 = {a, b, c, d} interleaved with p2 = {a, d}: R_div p1 a 1/3, b 0, c 2/3, d 1; p2 a, d tie (0.5 each)
    out = call(
        reward, ["aa bb", "aa bb", "cc dd", "ee ff", "gg hh", "gg hh"], pids=["p1", "p2", "p1", "p1", "p2", "p1"]
    )
    assert out == pytest.approx([1 + 1 / 3, 1.5, 1.0, 1 + 2 / 3, 1.5, 2.0])


def test_a_group_split_over_two_calls_is_ranked_as_one_group(fake_openai):
    _fo, _llm, whole = make(fake_openai, group_size=4)
    expected = call(whole, ["aa bb", "cc dd", "ee ff", "gg hh"], step=7)
    assert expected == pytest.approx([1 + 1 / 3, 1.0, 1 + 2 / 3, 2.0])
    _fo, _llm, split = make(fake_openai, group_size=4)
    first = call(split, ["aa bb", "cc dd"], step=7)  # ranked on what was seen so far: a, b tie
    second = call(split, ["ee ff", "gg hh"], step=7)  # ranked within {a, b, c, d}
    assert first == pytest.approx([1.5, 1.5]) and second == pytest.approx(expected[2:])
    # the group was complete: the same prompt in the next step, or a full group again, starts afresh
    assert call(split, ["ee ff", "gg hh"], step=8) == pytest.approx([1.5, 1.5])
    # without the buffer (no round, no group size) the second half alone would tie
    _fo, _llm, plain = make(fake_openai)
    assert call(plain, ["ee ff", "gg hh"]) == pytest.approx([1.5, 1.5])


def test_stage2_rewards_only_consistent_paraphrases_the_qa_model_gets_wrong(fake_openai):
    fo, _llm, reward = make(fake_openai, stage=2)
    # Y = {a, b', c'} (vectors of a, b, c): R_div a 0.5, b' 0, c' 1. QA: a correct (R_halluc 0 -> 0),
    # b' fuzzy (1): 1 + 0 + 1 = 2, c' wrong (2): 1 + 1 + 2 = 4; "who else zz" would be wrong but is inconsistent
    out = call(reward, ["aa bb", "cc yy", "ee zz", "who else zz", None])
    assert out == pytest.approx([0.0, 2.0, 4.0, 0.0, 0.0])
    asked = [r["json"]["messages"][-1]["content"] for r in fo.server.requests if len(r["json"]["messages"]) == 2]
    assert sorted(asked) == ["aa bb", "cc yy", "ee zz"]  # the QA model never saw the inconsistent paraphrase
    s = reward.stats()
    assert (s["r_halluc_0"], s["r_halluc_1"], s["r_halluc_2"], s["missing"]) == (1, 1, 1, 0)
    assert reward.__name__ == "r_train"


def test_stage2_popqa_is_graded_by_exact_match(fake_openai):
    fo, _llm, reward = make(fake_openai, stage=2)
    # "Paris area" contains the gold alias: correct under the PopQA protocol, so R_halluc 0; "Nobody" is wrong
    # (Y = {b', c'}, cosine 0.6 each: tied, R_div 0.5): 1 + 0.5 + 2
    assert call(reward, ["cc yy", "ee zz"], source=["popqa"]) == pytest.approx([0.0, 3.5])
    assert not [r for r in fo.server.requests if "Reference Answer" in r["json"]["messages"][0]["content"]]


def test_a_judge_that_never_gives_a_verdict_or_a_failing_call_gives_none(fake_openai, caplog):
    fo, _llm, reward = make(fake_openai, stage=2)
    fo.server.script(
        "/v1/chat/completions",
        [("status", 500)] * 4,
        match=lambda body: body["messages"][-1]["content"] == "gg hh",  # the QA call of d fails twice
    )
    fo.server.script(  # the B.2 call of "ee ff" fails twice (max_attempts 2)
        "/v1/chat/completions",
        [("status", 503)] * 2,
        match=lambda body: "question: ee ff\n" in body["messages"][0]["content"],
    )
    # Y = {b', d} (cosine 0: tied, R_div 0.5 each); b' fuzzy: 1 + 0.5 + 1
    out = call(reward, ["aa bb broken", "cc yy", "gg hh", "who else zz", "ee ff"])
    assert out[0] is None and out[1] == pytest.approx(2.5) and out[2] is None and out[3] == 0.0 and out[4] is None
    s = reward.stats()
    assert s["missing"] == 3 and s["llm_failures"] == {"invalid_output": 1, "server_error": 2}
    assert s["missing_reasons"] == reward.missing_reasons() == {"unparseable verdict": 1, "server_error": 2}
    assert s["mean_reward"] == pytest.approx(2.5 / 2)
    assert sum("reward missing" in r.message for r in caplog.records) == 3


def test_a_failed_b3_judge_call_gives_a_missing_reward_not_a_crash(fake_openai, caplog):
    """The answer judge's call fails after its retries: the grade is ``failed`` (a missing value), the reward
    None with the reason, never a KeyError or a wrong answer."""
    fo, _llm, reward = make(fake_openai, stage=2)
    fo.server.script(  # the B.3 call grading "Nobody" (the answer to "ee zz") fails on both attempts
        "/v1/chat/completions",
        [("status", 503)] * 2,
        match=lambda body: "Model Response: Nobody\n" in body["messages"][0]["content"],
    )
    out = call(reward, ["aa bb", "cc yy", "ee zz"])
    assert out[0] == 0.0 and out[1] == pytest.approx(2.0) and out[2] is None
    assert reward.stats()["missing"] == 1 and reward.missing_reasons() == {"server_error": 1}
    assert any("factual judge: server_error" in r.message for r in caplog.records)


def test_a_reward_reuses_the_corpus_codes_cached_judgement(fake_openai):
    fo, llm, reward = make(fake_openai)
    [v] = judge_consistency(llm, [("corpus-row", QUESTION, "aa bb")])  # as the corpus builders judge it
    assert v.verdict.result == 1
    before = fo.server.count
    assert call(reward, ["aa bb"]) == [1.0]  # a lone consistent paraphrase: R_div 0
    assert fo.server.count == before
    assert (reward.stats()["judge_calls"], reward.stats()["judge_cache_hits"]) == (0, 1)


def test_conversational_completions_are_read_like_text():
    msg = [{"role": "assistant", "content": para("aa bb")}]
    parts = [{"role": "assistant", "content": [{"type": "text", "text": para("aa bb")}]}]
    assert completion_text(msg) == completion_text(parts) == para("aa bb")


def test_the_judge_calls_of_one_batch_run_concurrently(fake_openai):
    """No clock: the server answers only once all 8 judge calls of the batch wait at once (a barrier)."""
    barrier = threading.Barrier(8, timeout=120)  # the timeout only ends a failing run

    def together(model, messages, k):
        barrier.wait()
        return responder(model, messages, k)

    fo = fake_openai(together)
    llm = fo.llm(max_attempts=1, timeout=300)
    reward = HR1Reward(RewardConfig(judge="openai:gpt-4o", stage=1), judge_llm=llm, qa_llm=llm, embed=embed)
    texts = [f"w{i} x{i}" for i in range(8)]
    out = asyncio.run(
        reward(
            prompts=[""] * 8,
            completions=[[{"role": "assistant", "content": para(t)}] for t in texts],
            prompt_id=[f"p{i}" for i in range(8)],
            question=[QUESTION] * 8,
            answers=[[GOLD]] * 8,
        )
    )
    assert out == [1.0] * 8 and reward.stats()["judge_calls"] == 8 and fo.server.count == 8


def test_config_refuses_what_cannot_work():
    with pytest.raises(ValueError, match="QA model"):
        RewardConfig(judge="openai:gpt-4o", stage=2)
    with pytest.raises(ValueError, match="stage must be 1 or 2"):
        RewardConfig(judge="openai:gpt-4o", stage=3)  # type: ignore[arg-type]
