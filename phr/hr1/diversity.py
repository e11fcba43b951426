"""Group-relative diversity (paper App. A.1, Eqs. 5-7) and Table 1's per-paraphrase "Mean Div" score.

Plain functions over plain data, so the GRPO rewards (training) and the Table 1 metrics (eval) share them.
For one question's group of paraphrases, only the consistent ones (the set Y) are ranked:

- ``S_SelfBLEU(y) = -(1/(|Y|-1)) * sum_{y' in Y, y' != y} BLEU(y, [y']) / 100`` (Eq. 5; peers exclude y itself);
- ``S_embed(y) = -sum_{y' in Y, y' != y} cos(phi(y), phi(y'))`` (Eq. 6, a sum; the printed squared norms are
  a typo for the cosine; phi = all-MiniLM-L6-v2, unit vectors, so cos is a dot product);
- rank ascending by ``(S_SelfBLEU + S_embed) / 2`` (most similar first, most diverse last, 0-indexed; tied
  scores share their average rank), and ``R_div = Rank / (|Y| - 1)``; 0 for inconsistent paraphrases.

``mean_div(y, x) = 1 - (BLEU(y, [x]) / 100 + cos(phi(y), phi(x))) / 2`` against the original question x is
Table 1's score (the paper never defines it; docs/hr1.md "Diversity (App. A.1)"); it is not R_div.

``score_groups`` embeds every distinct text of the run once, in one batched call, and gets the similarities
of a group by one matrix product. The embedder is injectable (tests use a deterministic one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated

import numpy as np
from annotated_types import Ge, Interval
from pydantic import BaseModel, ConfigDict

from phr.hr1.records import QuestionResult
from phr.llm.embed import embed as minilm_embed

if TYPE_CHECKING:  # pragma: no cover - sacrebleu is imported on first use
    from sacrebleu.metrics import BLEU

Embedder = Callable[[list[str]], np.ndarray]
# One group: (original question text, [(paraphrase text or None, consistent flag), ...]) in sample order.
Group = tuple[str, Sequence[tuple[str | None, bool]]]


@dataclass(frozen=True)
class DiversitySettings:
    """The choices App. A.1 leaves open (docs/hr1.md, "Diversity (App. A.1)").

    ``tokenize`` / ``smooth``: sacrebleu sentence BLEU (13a tokenizer, "exp" smoothing, effective order, the
    sacrebleu sentence-BLEU defaults). ``lone_r_div``: R_div of the only consistent paraphrase of a group
    (|Y| = 1, Eq. 7 divides by zero): 0, as there is no peer to be more diverse than. ``tie_decimals``: scores
    equal after rounding to this many decimals are tied (float noise of the matrix products)."""

    tokenize: str = "13a"
    smooth: str = "exp"
    lone_r_div: Annotated[float, Interval(ge=0, le=1)] = 0.0  # an R_div: in [0, 1]
    tie_decimals: Annotated[int, Ge(0)] = 9


DEFAULT = DiversitySettings()


class DiversityScores(BaseModel):
    """The scores of one paraphrase. ``s_selfbleu`` / ``s_embed``: None when it is not ranked (inconsistent or
    no text); 0.0 for a lone consistent paraphrase (no peers). ``mean_div``: None without text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    s_selfbleu: float | None
    s_embed: float | None
    r_div: float
    mean_div: float | None


@lru_cache(maxsize=8)
def _bleu(tokenize: str, smooth: str) -> BLEU:
    from sacrebleu.metrics import BLEU  # imported on first use

    return BLEU(tokenize=tokenize, smooth_method=smooth, effective_order=True)


def bleu(hyp: str, ref: str, settings: DiversitySettings = DEFAULT) -> float:
    """Sentence BLEU of ``hyp`` against the single reference ``ref``, in [0, 100]."""
    return float(_bleu(settings.tokenize, settings.smooth).sentence_score(hyp, [ref]).score)


def average_ranks(scores: Sequence[float], decimals: int = 9) -> np.ndarray:
    """0-indexed ascending ranks; scores equal after rounding share the mean of their positions."""
    keyed = np.round(np.asarray(scores, np.float64), decimals)
    order = np.argsort(keyed, kind="stable")
    ranks = np.empty(len(keyed), np.float64)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and keyed[order[j + 1]] == keyed[order[i]]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2
        i = j + 1
    return ranks


def r_div(scores: Sequence[float], settings: DiversitySettings = DEFAULT) -> list[float]:
    """Eq. 7 for the consistent set Y, given each member's average similarity score (S_SelfBLEU + S_embed)/2."""
    n = len(scores)
    if n == 0:
        return []
    if n == 1:
        return [settings.lone_r_div]
    return [float(r) / (n - 1) for r in average_ranks(scores, settings.tie_decimals)]


def mean_div(bleu_to_original: float, cos_to_original: float) -> float:
    """Table 1's score: 1 - (BLEU(y, [x]) / 100 + cos(phi(y), phi(x))) / 2."""
    return 1.0 - (bleu_to_original / 100.0 + cos_to_original) / 2.0


def _score_group(
    original: str,
    items: Sequence[tuple[str | None, bool]],
    vectors: np.ndarray,
    row: dict[str, int],
    settings: DiversitySettings,
) -> list[DiversityScores]:
    ranked = [i for i, (text, ok) in enumerate(items) if ok and text is not None]
    texts = [text for text, ok in items if ok and text is not None]  # the texts of ``ranked``, in order
    sims = vectors[[row[t] for t in texts]] @ vectors[[row[t] for t in texts]].T if texts else np.zeros((0, 0))
    s_embed = -(sims.sum(axis=1) - np.diag(sims)) if texts else np.zeros(0)
    peers = len(texts) - 1
    s_bleu = [
        -sum((bleu(t, u, settings) for j, u in enumerate(texts) if j != i), 0.0) / 100.0 / peers if peers else 0.0
        for i, t in enumerate(texts)
    ]
    rewards = r_div([(b + float(e)) / 2 for b, e in zip(s_bleu, s_embed, strict=True)], settings)
    by_index = {i: (s_bleu[n], float(s_embed[n]), rewards[n]) for n, i in enumerate(ranked)}
    with_text = [t for t, _ in items if t is not None]
    to_original = vectors[[row[t] for t in with_text]] @ vectors[row[original]] if with_text else np.zeros(0)
    cos_of = dict(zip(with_text, (float(c) for c in to_original), strict=True))
    out = []
    for i, (text, _) in enumerate(items):
        sb, se, rd = by_index.get(i, (None, None, 0.0))
        md = None if text is None else mean_div(bleu(text, original, settings), cos_of[text])
        out.append(DiversityScores(s_selfbleu=sb, s_embed=se, r_div=rd, mean_div=md))
    return out


def score_groups(
    groups: Sequence[Group], embed: Embedder = minilm_embed, settings: DiversitySettings = DEFAULT
) -> list[list[DiversityScores]]:
    """The scores of every paraphrase of every group, in order. Every distinct text (originals and paraphrases)
    is embedded once, in one call of ``embed`` (unit rows expected, as ``phr.llm.embed.embed`` returns)."""
    distinct = list(
        dict.fromkeys(t for original, items in groups for t in (original, *(p for p, _ in items)) if t is not None)
    )
    vectors = np.asarray(embed(distinct), np.float64) if distinct else np.zeros((0, 0))
    row = {t: i for i, t in enumerate(distinct)}
    return [_score_group(original, items, vectors, row, settings) for original, items in groups]


def score_results(
    results: Sequence[QuestionResult], embed: Embedder = minilm_embed, settings: DiversitySettings = DEFAULT
) -> list[QuestionResult]:
    """Copies of ``results`` with each paraphrase's s_selfbleu, s_embed, r_div and mean_div filled (a paraphrase
    is in Y when ``consistent`` is True and it has text)."""
    groups = [(r.question.question, [(p.text, p.consistent is True) for p in r.paraphrases]) for r in results]
    out = []
    for result, scores in zip(results, score_groups(groups, embed, settings), strict=True):
        paras = [p.model_copy(update=s.model_dump()) for p, s in zip(result.paraphrases, scores, strict=True)]
        out.append(result.model_copy(update={"paraphrases": paras}))
    return out
