"""The Hallucination-R1 GRPO rewards (paper §3.1-3.2, App. A.1-A.2, Eqs. 4-10) as one TRL reward function.

    reward = HR1Reward(RewardConfig(judge="openai:deepseek-chat", qa_model="hf:Qwen/Qwen2.5-3B-Instruct", stage=2))
    GRPOTrainer(..., reward_funcs=[reward])     # TRL awaits it: ``async def __call__``

Per completion: the ``<paraphrase>`` is parsed (none: reward 0, counted ``malformed``); the B.2 judge decides
consistency (a hard gate: inconsistent -> 0 in both stages); consistent paraphrases are ranked for diversity
within their group (the completions sharing a ``prompt_id``); stage 1 returns R_stab = 1 + lambda_div * R_div
(Eq. 8); stage 2 asks the QA model (greedy) the paraphrase, grades the answer (B.3 judge, or exact match for
PopQA) and returns R_train = R_stab + R_halluc when R_halluc != 0, else 0 (Eq. 10; the gate wins over a literal
Eq. 10: an inconsistent paraphrase is never asked). A judge or QA call still failing after the LLM layer's
retries, or a verdict still unparseable after re-asks, gives ``None`` (TRL: missing), logged and counted.

Every model call goes through ``phr.hr1.pipeline`` (the same requests as the corpus builders and ``eval hr1``),
so a judgement made while building a corpus and the same judgement made here are one cache entry. The calls of
one reward batch are one request list per step (judge, QA, grade), run concurrently under the LLM layer's
concurrency and rate limits. docs/training.md, "Rewards", states the grouping rule for groups split over calls.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError, field_validator, model_validator

from phr.config.base import one_line, setting
from phr.config.ops import HR1Grading, HR1JudgeDecoding, HR1QADecoding
from phr.hr1.diversity import DiversitySettings, score_groups
from phr.hr1.parse import parse_paraphrase
from phr.hr1.pipeline import (
    Grade,
    Judges,
    agrade,
    ajudge_consistency,
    counts_as_correct,
    qa_answer,
    qa_requests,
)
from phr.hr1.records import HQuestion
from phr.hr1.settings import Grading, QADecoding
from phr.llm.client import LLM
from phr.llm.embed import embed as minilm_embed
from phr.llm.summary import RunSummary
from phr.llm.types import CallFailure

__all__ = ["HR1Reward", "RewardConfig", "completion_text", "settings_problems"]

log = logging.getLogger("phr.training.rewards")

Embedder = Callable[[list[str]], np.ndarray]
HALLUC_OF: dict[str, int] = {"correct": 0, "fuzzy": 1, "wrong": 2}  # Eq. 9: M_halluc in {0, 1, 2}


class RewardConfig(HR1Grading, HR1QADecoding, HR1JudgeDecoding):
    """What a reward run uses (recorded, resolved, in the checkpoint manifest via :meth:`as_dict`).

    Built from the Hallucination-R1 config groups of ``build hr1-*`` / ``eval hr1`` (phr.config.ops): ``fuzzy``
    (what B.3 score 1 counts as), ``qa_max_tokens`` (the QA model's greedy decoding) and ``judge_max_tokens``
    (the cap on each judge reply) are those fields, with their one default and their bounds. ``judge`` /
    ``qa_model`` are model specs (the paper: DeepSeek-V3 for both judges, Qwen2.5-3B as QA); unlike the builds,
    a reward has no offline default judge, and ``qa_model`` is needed in stage 2 only. ``judge_max_reasks``: as
    ``phr.hr1.pipeline.Judges``. ``group_size``: GRPO's ``num_generations`` (the trainer sets it): a prompt's
    group is complete once that many completions of its ``prompt_id`` were seen; None: groups are never closed by
    size. ``llm_options``: keywords for ``phr.llm.LLM`` (concurrency, requests_per_minute, cache, timeout, ...)."""

    judge: str = setting(..., "Judge of Listings B.2 and B.3 (M_consis, M_halluc; paper: DeepSeek-V3).", paper="§3.2")
    qa_model: str | None = setting(None, "The QA model (greedy); stage 2 only (paper: Qwen2.5-3B).", paper="App. A.3")
    stage: Literal[1, 2] = setting(1, "1: R_stab (Eq. 8); 2: R_train (Eq. 10).", paper="§3.2")
    lambda_div: float = setting(1.0, "Weight of R_div in R_stab (Eq. 8).", paper="App. A.1", ge=0)
    judge_max_reasks: int = setting(Judges.max_reasks, "Re-asks of a judge whose verdict does not parse.", ge=0)
    diversity: DiversitySettings = setting(DiversitySettings(), "The choices App. A.1 leaves open.")
    group_size: int | None = setting(None, "GRPO's num_generations: a diversity group's size.", ge=1)
    llm_options: dict[str, Any] = setting({}, "Keywords of phr.llm.LLM.")

    def __init__(self, **data: Any) -> None:
        """As a pydantic model, refusing a bad value with one line naming the field (``FieldError``, a
        ``ValueError``, with each field's error for a caller that names the recipe key)."""
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise one_line(type(self).__name__, e) from None

    @field_validator("stage", mode="before")
    @classmethod
    def _stage(cls, value: Any) -> Any:
        if isinstance(value, bool) or value not in (1, 2):
            raise ValueError(f"reward stage must be 1 or 2, got {value!r}")
        return value

    @model_validator(mode="after")
    def _qa_in_stage_2(self) -> RewardConfig:
        if self.stage == 2 and not self.qa_model:
            raise ValueError("the stage-2 reward needs a QA model spec (qa_model)")
        return self

    @property
    def grading(self) -> Grading:
        return Grading(fuzzy=self.fuzzy)

    @property
    def qa_decoding(self) -> QADecoding:
        return QADecoding(max_tokens=self.qa_max_tokens)

    def judges(self) -> Judges:
        return Judges(max_tokens=self.judge_max_tokens, max_reasks=self.judge_max_reasks)

    def as_dict(self) -> dict:
        d = self.model_dump(mode="python")
        d["llm_options"] = {k: str(v) for k, v in self.llm_options.items()}
        return d


#: reward settings named as in build and eval since the run configs (phr.config.ops): the old name -> the new one
RENAMED = {"qa": "qa_model", "qa_decoding": "qa_max_tokens", "grading": "fuzzy"}


def settings_problems(settings: Mapping[str, Any]) -> list[str]:
    """What is wrong with a recipe's ``reward.settings`` for the hr1 reward (old names, unknown keys), one line
    each; checked by the preflight before anything heavy is imported, and again when the reward is made."""
    names = set(RewardConfig.model_fields)
    out = [f"reward.settings.{k}: now {v} (the name build and eval use)" for k, v in RENAMED.items() if k in settings]
    unknown = sorted(set(settings) - names - set(RENAMED) - {"stage"})
    if unknown:
        out.append(f"reward.settings: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(names))})")
    return out


def completion_text(completion: Any) -> str:
    """A TRL completion as text: a string (standard format), or the content of the assistant messages of a
    conversational completion (``[{"role": "assistant", "content": ...}]``; content as text or text parts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    parts = []
    for m in completion or ():
        if m.get("role", "assistant") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
        parts.append(content or "")
    return "\n".join(parts)


@dataclass
class _Item:
    """One completion of a reward call on its way to a reward."""

    pid: str
    question: str
    answers: tuple[str, ...]
    source: str
    text: str | None  # the parsed paraphrase (None: malformed)
    consistent: bool | None = None  # None: not judged (malformed) or unjudged (failure)
    failed: str | None = None  # why the reward is missing
    reason: str | None = None  # ... in one word: a CallFailure reason (auth, connection, ...) or "unparseable verdict"
    r_div: float = 0.0


class HR1Reward:
    """The stage-1 (R_stab) or stage-2 (R_train) reward as an async TRL reward function (``__name__`` is
    ``r_stab`` or ``r_train``, the name TRL logs). ``judge_llm`` / ``qa_llm``: ready ``LLM`` objects (tests);
    ``embed``: the sentence embedder of the diversity scores (default: the offline MiniLM)."""

    def __init__(
        self,
        config: RewardConfig,
        *,
        judge_llm: LLM | None = None,
        qa_llm: LLM | None = None,
        embed: Embedder | None = None,
    ):
        self.config = config
        self.__name__ = "r_stab" if config.stage == 1 else "r_train"
        opts = {"progress": False, "show_summary": False, **config.llm_options}
        self.judge_llm = judge_llm or LLM(config.judge, **opts)
        self.qa_llm: LLM | None = None
        if config.stage == 2:
            qa = str(config.qa_model)  # set in stage 2 (RewardConfig checks it)
            self.qa_llm = qa_llm or (self.judge_llm if qa_llm is None and qa == config.judge else LLM(qa, **opts))
        self.embed = embed or minilm_embed
        self.judges = config.judges()
        self.judge_summary = RunSummary()  # the B.2 and B.3 judge calls
        self.qa_summary = RunSummary()  # the QA model's calls (stage 2)
        self.counts: Counter = Counter()
        self.missing_by_reason: Counter = Counter()  # missing rewards by reason (auth, connection, ...)
        self._reward_sum = 0.0
        # Group-relative diversity across calls (docs/training.md, "Rewards"): the open groups of the round.
        self._round: Any = None
        self._open: dict[str, list[tuple[str | None, bool]]] = {}

    # ---- the TRL interface ---------------------------------------------------------------------------------

    async def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        *,
        prompt_id: Sequence[str],
        question: Sequence[str],
        answers: Sequence[Sequence[str] | str],
        source: Sequence[str] | None = None,
        trainer_state: Any = None,
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """One reward per completion, in order (None: missing, see the module docstring)."""
        n = len(completions)
        for name, col in (("prompt_id", prompt_id), ("question", question), ("answers", answers), ("source", source)):
            if col is not None and len(col) != n:
                raise ValueError(f"reward column {name!r} has {len(col)} values for {n} completions")
        items = []
        for i, c in enumerate(completions):
            text, _why = parse_paraphrase(completion_text(c))
            answer = answers[i]
            gold: tuple[str, ...] = (answer,) if isinstance(answer, str) else tuple(answer)
            items.append(_Item(str(prompt_id[i]), question[i], gold, source[i] if source else "", text))
        await self._judge_consistency(items)
        self._diversity(items, getattr(trainer_state, "global_step", None))
        halluc = await self._halluc(items) if self.config.stage == 2 else {}
        rewards = [self._reward(i, it, halluc) for i, it in enumerate(items)]
        self._count(items, rewards, halluc)
        if log_metric is not None:
            for key in ("malformed", "inconsistent", "missing"):
                log_metric(f"{self.__name__}/{key}_frac", sum(self._flag(it, key) for it in items) / max(n, 1))
        return rewards

    # ---- the steps -----------------------------------------------------------------------------------------

    async def _judge_consistency(self, items: list[_Item]) -> None:
        todo = [it for it in items if it.text is not None]
        verdicts = await ajudge_consistency(
            self.judge_llm,
            [(f"{it.pid}/consistency", it.question, it.text) for it in todo if it.text is not None],
            self.judges,
            self.judge_summary,
        )
        for it, v in zip(todo, verdicts, strict=True):
            if v.verdict is None:
                it.failed = "consistency judge: " + ("; ".join(v.errors[-1:]) or "no verdict")
                it.reason = v.failure.reason if v.failure is not None else "unparseable verdict"
            else:
                it.consistent = v.verdict.result == 1

    def _diversity(self, items: list[_Item], round_key: Any) -> None:
        """R_div (Eq. 7) of each consistent paraphrase, ranked within its prompt_id group (see the docs for the
        rule joining a group split over calls)."""
        if round_key != self._round:
            self._round, self._open = round_key, {}
        size = self.config.group_size
        buffering = round_key is not None or size is not None
        by_pid: dict[str, list[_Item]] = defaultdict(list)
        for it in items:
            by_pid[it.pid].append(it)
        groups: list[tuple[str, list[tuple[str | None, bool]], list[_Item]]] = []
        for pid, members in by_pid.items():
            earlier = self._open.get(pid, []) if buffering else []
            if size is not None and len(earlier) + len(members) > size:
                earlier = []  # the open group cannot take these: they start a new group
            group = earlier + [(it.text, it.consistent is True) for it in members]
            if buffering and (size is None or len(group) < size):
                self._open[pid] = group
            else:
                self._open.pop(pid, None)  # complete
            groups.append((members[0].question, group, members))
        ranked = [(q, [(t, True) for t, ok in g if ok], m) for q, g, m in groups if sum(ok for _, ok in g) > 1]
        scores = score_groups([(q, g) for q, g, _ in ranked], self.embed, self.config.diversity) if ranked else []
        r_of: dict[tuple[str, str], float] = {}
        for (_q, g, m), sc in zip(ranked, scores, strict=True):
            for (text, _), s in zip(g, sc, strict=True):
                r_of[(m[0].pid, str(text))] = s.r_div
        for _q, g, members in groups:
            lone = sum(ok for _, ok in g) == 1
            for it in members:
                if it.consistent is True:
                    it.r_div = self.config.diversity.lone_r_div if lone else r_of[(it.pid, str(it.text))]

    async def _halluc(self, items: list[_Item]) -> dict[int, int]:
        """R_halluc (Eq. 9) of each consistent paraphrase, by item position; a failed QA call or an unjudged
        grade marks the item failed instead."""
        asked = [(i, it) for i, it in enumerate(items) if it.consistent is True]
        if not asked:
            return {}
        assert self.qa_llm is not None  # stage 2
        results = await self.qa_llm.agenerate(
            qa_requests([(f"{it.pid}/qa", str(it.text)) for _, it in asked], self.config.qa_decoding),
            "answering",
            self.qa_summary,
        )
        to_grade = []
        for (i, it), res in zip(asked, results, strict=True):
            sample = res.samples[0]
            if isinstance(sample, CallFailure):
                it.failed = f"QA model: {sample.reason}: {sample.message}"
                it.reason = sample.reason
            else:
                to_grade.append((i, it, qa_answer(sample)))
        grades: list[Grade] = await agrade(
            self.judge_llm,
            [(f"{it.pid}/grade", _question(it), a) for _, it, a in to_grade],
            self.config.grading,
            self.judges,
            self.judge_summary,
        )
        out = {}
        for (i, it, _a), g in zip(to_grade, grades, strict=True):
            if g.correctness == "failed":  # the judge call failed after retries: a missing reward
                it.failed = f"factual judge: {(g.failed or '').removeprefix('grading: ')}"
                it.reason = it.failed.removeprefix("factual judge: ").split(":")[0] or "other"  # "<reason>: <message>"
            elif g.correctness == "unjudged":
                it.failed = "factual judge: no valid verdict"
                it.reason = "unparseable verdict"
            else:
                out[i] = 0 if counts_as_correct(g.correctness, self.config.grading) else HALLUC_OF[g.correctness]
        return out

    def _reward(self, i: int, it: _Item, halluc: dict[int, int]) -> float | None:
        if it.text is None or it.consistent is False:
            return 0.0  # malformed, or the hard gate (Eq. 4)
        if it.failed is not None:
            log.warning("reward missing for prompt %s: %s", it.pid, it.failed[:300])
            return None
        r_stab = 1.0 + self.config.lambda_div * it.r_div  # Eq. 8 with R_consis = 1
        if self.config.stage == 1:
            return r_stab
        return r_stab + halluc[i] if halluc[i] != 0 else 0.0  # Eq. 10

    # ---- accounting ----------------------------------------------------------------------------------------

    @staticmethod
    def _flag(it: _Item, key: str) -> bool:
        if key == "malformed":
            return it.text is None
        if key == "inconsistent":
            return it.consistent is False
        return it.failed is not None and it.consistent is not False

    def _count(self, items: list[_Item], rewards: list[float | None], halluc: dict[int, int]) -> None:
        c = self.counts
        c["calls"] += 1
        c["completions"] += len(items)
        for it in items:
            c["malformed"] += self._flag(it, "malformed")
            c["inconsistent"] += it.consistent is False
            c["consistent"] += it.consistent is True
        c["missing"] += sum(r is None for r in rewards)
        for it, r in zip(items, rewards, strict=True):
            if r is None:
                self.missing_by_reason[it.reason or "other"] += 1
        for v in halluc.values():
            c[f"r_halluc_{v}"] += 1
        done = [r for r in rewards if r is not None]
        c["rewarded"] += len(done)
        self._reward_sum += math.fsum(done)

    def missing_reasons(self) -> dict[str, int]:
        """Missing (None) rewards since construction by reason: a failed call's reason (``auth``,
        ``connection``, ``rate_limit``, ``timeout``, ...) or ``unparseable verdict``."""
        return dict(self.missing_by_reason)

    @property
    def summary(self) -> RunSummary:
        """All LLM calls of this reward (judge and QA), per model."""
        return RunSummary().merge(self.judge_summary).merge(self.qa_summary)

    def stats(self) -> dict[str, Any]:
        """Counts since construction: reward calls, completions, malformed, consistent, inconsistent, missing
        (None rewards: unjudged or failed calls), R_halluc values (stage 2), judge and QA calls and cache hits,
        estimated cost, and the mean of the rewards given."""
        c = self.counts
        total = self.summary
        costs = [m.cost_usd for m in total.models.values()]
        known = [x for x in costs if x is not None]
        return {
            "reward": self.__name__,
            "calls": c["calls"],
            "completions": c["completions"],
            "malformed": c["malformed"],
            "consistent": c["consistent"],
            "inconsistent": c["inconsistent"],
            "missing": c["missing"],
            "missing_reasons": self.missing_reasons(),
            **({f"r_halluc_{v}": c[f"r_halluc_{v}"] for v in (0, 1, 2)} if self.config.stage == 2 else {}),
            "judge_calls": self.judge_summary.calls,
            "judge_cache_hits": self.judge_summary.cache_hits,
            "qa_calls": self.qa_summary.calls + self.qa_summary.batches,
            "qa_cache_hits": self.qa_summary.cache_hits,
            "cache_hits": total.cache_hits,
            "llm_failures": dict(total.failures),
            "estimated_cost_usd": round(sum(known), 6) if len(known) == len(costs) else None,
            "mean_reward": self._reward_sum / c["rewarded"] if c["rewarded"] else None,
        }


def _question(it: _Item) -> HQuestion:
    """The grading view of a corpus row (``grade`` reads source, answers and the reference answers[0])."""
    return HQuestion(
        id=it.pid,
        source=it.source or "unknown",
        split="train",
        source_row_id=it.pid,
        question=it.question,
        answers=it.answers,
        license="unknown",
    )
