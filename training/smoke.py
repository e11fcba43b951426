"""The offline GRPO smoke reward: a named stand-in for Hallucination-R1's consistency term, defined without a judge.

``reward: {name: "phr.training.smoke:consistency_stand_in"}`` in a recipe. Per completion: the last
``<paraphrase>`` (``phr.hr1.parse.parse_paraphrase``); none -> 0.0; else the MiniLM cosine between the question
(the GRPO corpus's ``question`` column) and the paraphrase (``phr.llm.embed``, all-MiniLM-L6-v2, offline), in
[-1, 1]. No B.2 judge, no diversity rank, no QA term in either stage: **a smoke stand-in, not the paper's reward**
(its TRL name ``smoke_consistency_stand_in`` says so in the logs, the checkpoint manifest and the model card). It
is graded, so the completions of one prompt get different rewards and GRPO has a signal to learn from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from phr.hr1.parse import parse_paraphrase
from phr.training.rewards import completion_text

STAND_IN = "smoke_consistency_stand_in"


def consistency_scores(questions: list[str], completions: list, embed: Callable | None = None) -> list[float]:
    """0.0 without a ``<paraphrase>``, else cos(MiniLM(question), MiniLM(paraphrase)); texts embedded in one call."""
    paras = [parse_paraphrase(completion_text(c))[0] for c in completions]
    todo = [i for i, p in enumerate(paras) if p]
    out = [0.0] * len(paras)
    if todo:
        if embed is None:
            from phr.llm.embed import embed as minilm  # the MiniLM model loads on first use

            embed = minilm
        vecs = embed([t for i in todo for t in (questions[i], paras[i] or "")])
        for j, i in enumerate(todo):
            out[i] = float(np.dot(vecs[2 * j], vecs[2 * j + 1]))
    return out


def consistency_stand_in(settings: dict, stage: int) -> Callable:
    """The recipe factory (``module:factory``): the same stand-in in both stages; ``settings`` must be empty."""
    if settings:
        from phr.training.config import RecipeError

        raise RecipeError(f"reward.settings: the smoke stand-in takes none (got {', '.join(sorted(settings))})")

    def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Any] | None = None,
        *,
        question: Sequence[str],
        **kwargs: Any,
    ) -> list[float]:
        return consistency_scores(list(question), list(completions))

    reward.__name__ = STAND_IN
    return reward
