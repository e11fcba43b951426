"""Tiny training corpora in the hr1-grpo / hr1-sft layouts and a deterministic reward (tests only)."""

from __future__ import annotations

from phr.hr1.corpora import sft_target
from phr.hr1.pipeline import paraphrase_prompt, qa_messages
from phr.training.rewards import HR1Reward, RewardConfig, completion_text
from tests.support.hr1_corpora import make_folder

QUESTIONS = [
    ("Where did roger marquis die", "Paris"),
    ("Who wrote the novel Hamlet", "Shakespeare"),
    ("What is the capital of Peru", "Lima"),
    ("Which river flows through Cairo", "Nile"),
]


#: the smallest GRPO recipe the preflight accepts (a tiny random model, the tag reward, CPU): tests vary one key
TINY_GRPO_RECIPE = {
    "method": "grpo",
    "stage": 1,
    "model": {"tiny": {}, "dtype": "float32"},
    "data": {"path": "corpus"},
    "reward": {"name": "paraphrase_tag"},
    "trainer": {"output_dir": "out", "num_generations": 4, "per_device_train_batch_size": 4, "use_cpu": True},
}


def grpo_rows(n: int = 4) -> list[dict]:
    rows = []
    for i in range(n):
        q, a = QUESTIONS[i % len(QUESTIONS)]
        rows.append(
            {
                "prompt_id": f"p{i:02d}",
                "question_id": f"simplequestions-train-{i}",
                "source": "simplequestions",
                "split": "train",
                "question": q,
                "answers": [a],
                "license": "CC-BY-3.0",
                "prompt": [{"role": "user", "content": paraphrase_prompt(q)}],
            }
        )
    return rows


def sft_rows(n: int = 8) -> list[dict]:
    system = qa_messages("x")[0].content
    rows = []
    for i in range(n):
        q, a = QUESTIONS[i % len(QUESTIONS)]
        para = f"{q}? (variant {i})"
        rows.append(
            {
                "id": f"simplequestions-train-{i}-p0",
                "question_id": f"simplequestions-train-{i}",
                "source": "simplequestions",
                "split": "train",
                "question": q,
                "paraphrase": para,
                "answer": a,
                "license": "CC-BY-3.0",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": para},
                    {"role": "assistant", "content": sft_target(a)},
                ],
            }
        )
    return rows


def grpo_corpus(tmp_path, n: int = 4):
    return make_folder(tmp_path, "hr1-grpo", grpo_rows(n))


def sft_corpus(tmp_path, n: int = 8):
    return make_folder(tmp_path, "hr1-sft", sft_rows(n))


class LengthReward:
    """Deterministic reward: the share of distinct characters in the completion, grouped by ``prompt_id`` (checks
    the dataset column arrives). Counts its calls like a judge-backed reward's ``stats()``."""

    __name__ = "length_reward"

    def __init__(self):
        self.calls = 0
        self.seen_prompt_ids: set[str] = set()

    async def __call__(self, prompts, completions, completion_ids=None, *, prompt_id, **kwargs):
        self.calls += len(completions)
        self.seen_prompt_ids.update(prompt_id)
        texts = [completion_text(c) for c in completions]
        return [len(set(t)) / (1 + len(t)) for t in texts]

    def stats(self) -> dict:
        return {"judge_calls": self.calls, "cache_hits": 0, "cost_usd": 0.0}


def length_reward(settings: dict, stage: int):
    """A reward factory as a recipe names it (``reward.name: tests.support.training:length_reward``)."""
    return LengthReward()


class TaggedHR1Reward:
    """The real stage-1 ``HR1Reward`` (judge ``openai:gpt-4o``: the local protocol server in tests) on the tiny
    model's completions put into ``<paraphrase>`` tags: the tiny model never writes the format, so without the
    tags the judge would never be asked."""

    def __init__(self, group_size: int = 4):
        fast = {"max_attempts": 2, "backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 5}
        self.inner = HR1Reward(RewardConfig(judge="openai:gpt-4o", stage=1, group_size=group_size, llm_options=fast))
        self.__name__ = self.inner.__name__

    async def __call__(self, prompts, completions, completion_ids=None, **kwargs):
        tagged = [f"<paraphrase>q {completion_text(c)}</paraphrase>" for c in completions]
        return await self.inner(prompts, tagged, completion_ids, **kwargs)

    def missing_reasons(self) -> dict[str, int]:
        return self.inner.missing_reasons()

    def stats(self) -> dict:
        return self.inner.stats()


def tagged_hr1_reward(settings: dict, stage: int):
    """``reward.name: tests.support.training:tagged_hr1_reward``."""
    return TaggedHR1Reward()
