"""Diversity benchmark (App. A.1 scores and Table 1's Mean Div): batched once-per-text embedding vs naive per pair.

Builds --groups synthetic groups (an original question and --k paraphrases each, ~85% flagged consistent,
question-like texts from templates and made-up names, deterministic from --seed), then:

- batched: ``phr.hr1.diversity.score_groups`` with the real MiniLM (embedding cache cleared first, model
  already loaded): every distinct text embedded once, in one batched call, similarities by matrix products;
- naive: the same formulas, but each comparison embeds its two texts afresh (``model.encode`` of one text, no
  cache): every consistent pair (y, y') for S_embed and every (y, x) for Mean Div. BLEU and the ranking are
  the same code on both sides, so the ratio measures the embedding strategy.

The naive side is too slow for 2,000 groups on 2 cores, so it runs on the first --naive-groups groups and its
time is extrapolated per group to all groups (the output says so). Its values must equal the batched ones on
those groups (allclose, atol 1e-5). Goal: batched >= 5x faster.

    python bench/diversity.py [--groups 2000] [--k 8] [--naive-groups 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from phr.hr1.diversity import DEFAULT, DiversityScores, bleu, mean_div, r_div, score_groups
from phr.llm import embed as embed_module

SYLLABLES = "ka lo mi ra ten vor hal dun bre sil mar quo tes fin gar pel ros wen ul ix".split()
ORIGINALS = [
    "Who founded the city of {A}?",
    "In which year was {A} first published?",
    "What is the capital of {A}?",
    "Which river flows through {A}?",
    "Who wrote the novel {A}?",
    "What language is spoken in {A}?",
    "Which company manufactures the {A}?",
    "Where was {A} born?",
]
PARAPHRASES = [
    "Can you tell me {q}",
    "I would like to know: {q}",
    "{q} Please answer briefly.",
    "Do you know {q}",
    "Quick question about {A}: {q}",
    "Regarding {A}, {q}",
    "Tell me, {q}",
    "Out of curiosity, {q}",
    "Someone asked me {q}",
    "For a quiz on {A}: {q}",
    "Here is a question about {A}. {q}",
    "{q} I could not find it anywhere.",
]


def make_groups(n: int, k: int, seed: int) -> list[tuple[str, list[tuple[str | None, bool]]]]:
    """``n`` groups of an original question and ``k`` distinct paraphrases with consistency flags."""
    rng = np.random.default_rng(seed)
    groups = []
    for g in range(n):
        name = "".join(rng.choice(SYLLABLES, size=3)).capitalize() + f" {g}"
        original = ORIGINALS[g % len(ORIGINALS)].format(A=name)
        q = original[0].lower() + original[1:]
        picks = rng.choice(len(PARAPHRASES), size=k, replace=False)
        items = [(PARAPHRASES[p].format(q=q, A=name), bool(rng.random() < 0.85)) for p in picks]
        groups.append((original, items))
    return groups


def naive_group(original: str, items, model) -> list[DiversityScores]:
    """The App. A.1 scores, embedding both texts of every comparison afresh."""

    def cos(a: str, b: str) -> float:
        va, vb = (model.encode([t], normalize_embeddings=True, convert_to_numpy=True)[0] for t in (a, b))
        return float(np.dot(va.astype(np.float64), vb.astype(np.float64)))

    texts = [t for t, ok in items if ok and t is not None]
    n = len(texts)
    s_embed = [-sum(cos(t, u) for j, u in enumerate(texts) if j != i) for i, t in enumerate(texts)]
    s_bleu = [
        -sum(bleu(t, u) for j, u in enumerate(texts) if j != i) / 100 / (n - 1) if n > 1 else 0.0
        for i, t in enumerate(texts)
    ]
    ranks = r_div([(b + e) / 2 for b, e in zip(s_bleu, s_embed, strict=True)], DEFAULT)
    out, m = [], 0
    for t, ok in items:
        md = None if t is None else mean_div(bleu(t, original), cos(t, original))
        if ok and t is not None:
            out.append(DiversityScores(s_selfbleu=s_bleu[m], s_embed=s_embed[m], r_div=ranks[m], mean_div=md))
            m += 1
        else:
            out.append(DiversityScores(s_selfbleu=None, s_embed=None, r_div=0.0, mean_div=md))
    return out


def same(a: list[DiversityScores], b: list[DiversityScores]) -> bool:
    def vec(s: list[DiversityScores]) -> np.ndarray:
        return np.array([[np.nan if v is None else v for v in x.model_dump().values()] for x in s], float)

    return bool(np.allclose(vec(a), vec(b), atol=1e-5, equal_nan=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--naive-groups", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    groups = make_groups(args.groups, args.k, args.seed)
    texts = len({t for o, items in groups for t in (o, *(p for p, _ in items))})
    print(f"{args.groups} groups x {args.k} paraphrases, {texts} distinct texts")
    model = embed_module.load_model()
    model.encode(["warm up"], show_progress_bar=False)
    embed_module.clear_cache()
    t0 = time.perf_counter()
    batched = score_groups(groups)
    t_batched = time.perf_counter() - t0
    print(f"batched: {t_batched:.1f} s for {args.groups} groups ({1000 * t_batched / args.groups:.2f} ms/group)")
    sub = groups[: args.naive_groups]
    t0 = time.perf_counter()
    naive = [naive_group(o, items, model) for o, items in sub]
    t_sub = time.perf_counter() - t0
    t_naive = t_sub / len(sub) * args.groups
    print(
        f"naive:   {t_sub:.1f} s for the first {len(sub)} groups ({1000 * t_sub / len(sub):.2f} ms/group), "
        f"extrapolated per group to {args.groups} groups: {t_naive:.1f} s"
    )
    equal = all(same(a, b) for a, b in zip(naive, batched, strict=False))
    ratio = t_naive / t_batched
    print(f"equal values on the {len(sub)} naive groups (allclose, atol 1e-5): {equal}")
    print(f"speed-up batched vs naive: {ratio:.1f}x (goal >= 5x): {'PASS' if ratio >= 5 and equal else 'FAIL'}")
    assert equal, "batched and naive diversity scores differ"


if __name__ == "__main__":
    main()
