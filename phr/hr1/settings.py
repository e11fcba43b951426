"""The request parameters of one Hallucination-R1 step (App. A.3, Listing A.1) and the grading rule (docs/hr1.md).

The lengths are the config's (``phr.config.ops.HR1Decoding``): a run's ``RunPlan`` makes these from its config's
decoding group; the paper's fixed sampling values (temperature, top_p, top_k) are stated here once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from phr.config.defaults import PARAPHRASE_MAX_TOKENS, QA_MAX_TOKENS
from phr.config.ops import DEFAULT_FUZZY, Fuzzy
from phr.llm.types import GenerationParams


@dataclass(frozen=True)
class Decoding:
    """Paraphraser sampling, Listing A.1: do_sample=True, temperature 0.7, top_p 0.95, top_k 0 (disabled:
    ``GenerationParams.top_k`` None), max_tokens 1024."""

    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 0  # 0 = disabled, as in the paper (HF semantics)
    max_tokens: int = PARAPHRASE_MAX_TOKENS

    def params(self, seed: int | None = None) -> GenerationParams:
        return GenerationParams(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k or None,
            max_tokens=self.max_tokens,
            seed=seed,
        )


@dataclass(frozen=True)
class QADecoding:
    """QA decoding (App. A.3, C.5): deterministic (greedy). ``max_tokens``: the paper gives none; 64 holds a
    short factual answer in tags."""

    max_tokens: int = QA_MAX_TOKENS

    def params(self) -> GenerationParams:
        return GenerationParams(temperature=0.0, max_tokens=self.max_tokens)


#: the config's ``fuzzy`` choice (``phr.config.ops.Fuzzy``)
FuzzyRule = Fuzzy


@dataclass(frozen=True)
class Grading:
    """How a QA answer is graded (Table 5): PopQA by exact match against any of ``possible_answers`` (the PopQA
    protocol: the normalised answer contains a normalised gold alias), the others by the B.3 judge.
    ``fuzzy``: does B.3 score 1 (fuzzy match) count as wrong? Default ``wrong``, as the stage-2 reward
    (Eq. 10: R_halluc != 0 is a failure)."""

    fuzzy: FuzzyRule = DEFAULT_FUZZY
    exact_match_sources: tuple[str, ...] = ("popqa",)

    def as_dict(self) -> dict:
        return asdict(self)
