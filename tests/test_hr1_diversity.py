"""App. A.1 diversity and Table 1's Mean Div against hand-computed values (docs/hr1.md, "Diversity (App. A.1)").

Texts are chosen so sacrebleu's BLEU is hand-computable: identical 4-token texts score 100, disjoint texts 0,
and "a b c d" vs "a b c e" scores 100 * (3/4 * 2/3 * 1/2 * 1/2)^(1/4) = 100 * 0.125^0.25 (the 4-gram has no
match: "exp" smoothing gives it 1 / (2 * 1)). The injected embedder maps each text to a fixed unit vector.
"""

from __future__ import annotations

import numpy as np
import pytest

from phr.hr1.diversity import DiversitySettings, average_ranks, bleu, mean_div, score_groups, score_results
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult

PARTIAL = 100 * 0.125**0.25  # BLEU("a b c d", ["a b c e"])
VECTORS = {"a b c d": [1.0, 0.0], "a b c e": [0.6, 0.8], "p q r s": [0.0, 1.0], "w x y z": [0.8, -0.6]}


class FakeEmbedder:
    """Deterministic unit vectors; records every call."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([VECTORS[t] for t in texts], np.float32)


def test_bleu_settings_hand_computed():
    assert bleu("a b c d", "a b c e") == pytest.approx(PARTIAL)
    assert bleu("a b c d", "a b c d") == pytest.approx(100.0)
    assert bleu("a b c d", "p q r s") == 0.0


def test_average_ranks_ties():
    assert average_ranks([0.3, -1.0, 0.3, 0.0]).tolist() == [2.5, 0.0, 2.5, 1.0]


def test_r_div_with_ties_and_an_inconsistent_member():
    emb = FakeEmbedder()
    items = [("a b c d", True), ("a b c d", True), ("a b c e", True), ("w x y z", False)]
    (scores,) = score_groups([("a b c e", items)], embed=emb)
    # S_SelfBLEU: mean over the 2 peers, /100, negated
    assert scores[0].s_selfbleu == pytest.approx(-(100 + PARTIAL) / 200)
    assert scores[1].s_selfbleu == pytest.approx(-(100 + PARTIAL) / 200)
    assert scores[2].s_selfbleu == pytest.approx(-(2 * PARTIAL) / 200)
    # S_embed: -sum of cosines to the peers: y1 -> 1 + 0.6, y3 -> 0.6 + 0.6
    assert scores[0].s_embed == pytest.approx(-1.6)
    assert scores[2].s_embed == pytest.approx(-1.2)
    # ascending: y1, y2 tied at positions 0 and 1 (average 0.5), y3 last (2): R_div = rank / (3 - 1)
    assert [s.r_div for s in scores] == pytest.approx([0.25, 0.25, 1.0, 0.0])
    assert scores[3].s_selfbleu is None and scores[3].s_embed is None
    # Mean Div vs the original "a b c e": 1 - (BLEU/100 + cos)/2
    assert scores[0].mean_div == pytest.approx(1 - (PARTIAL / 100 + 0.6) / 2)
    assert scores[2].mean_div == pytest.approx(0.0, abs=1e-6)
    assert scores[3].mean_div == pytest.approx(1.0, abs=1e-6)  # BLEU 0, cos 0; inconsistent ones get Mean Div too
    assert emb.calls == [["a b c e", "a b c d", "w x y z"]]  # each distinct text once, one call


def test_group_of_one_two_and_none():
    emb = FakeEmbedder()
    groups = [
        ("p q r s", [("a b c d", True), ("w x y z", False), (None, False)]),
        ("p q r s", [("a b c d", True), ("w x y z", True)]),
        ("p q r s", [("a b c d", False), (None, True)]),  # no text: never ranked, even if flagged
    ]
    lone, pair, empty = score_groups(groups, embed=emb)
    assert [s.r_div for s in lone] == [0.0, 0.0, 0.0]
    assert (lone[0].s_selfbleu, lone[0].s_embed) == (0.0, 0.0)
    assert lone[2].mean_div is None and lone[0].mean_div == pytest.approx(1.0)
    # pair: S_embed both -0.8, BLEU both 0 -> tie -> both rank 0.5 -> R_div 0.5
    assert [s.r_div for s in pair] == [0.5, 0.5]
    assert [s.r_div for s in empty] == [0.0, 0.0]
    assert len(emb.calls) == 1 and sorted(emb.calls[0]) == ["a b c d", "p q r s", "w x y z"]
    assert score_groups(groups, embed=emb, settings=DiversitySettings(lone_r_div=1.0))[0][0].r_div == 1.0


def test_pair_order_most_diverse_last():
    (scores,) = score_groups(
        [("p q r s", [("a b c d", True), ("a b c e", True), ("p q r s", True)])], embed=FakeEmbedder()
    )
    # S_embed: y1 -(0.6+0) ; y2 -(0.6+0.8) ; y3 -(0+0.8); S_SelfBLEU: y1, y2 -PARTIAL/200, y3 0
    avg = [(-PARTIAL / 200 - 0.6) / 2, (-PARTIAL / 200 - 1.4) / 2, -0.4]
    assert np.argsort(avg).tolist() == [1, 0, 2]
    assert [s.r_div for s in scores] == [0.5, 0.0, 1.0]


def test_mean_div_formula():
    assert mean_div(100.0, 1.0) == 0.0
    assert mean_div(0.0, 0.0) == 1.0
    assert mean_div(50.0, 0.2) == pytest.approx(0.65)


def test_score_results_fills_records():
    q = HQuestion(id="t-1", source="truthfulqa", split="test", source_row_id="1", question="a b c e",
                  answers=("x",), license="apache-2.0")  # fmt: skip
    paras = [ParaphraseResult(k=0, text="a b c d", consistent=True), ParaphraseResult(k=1, text="w x y z")]
    (out,) = score_results([QuestionResult(question=q, paraphrases=paras)], embed=FakeEmbedder())
    assert out.paraphrases[0].r_div == 0.0 and out.paraphrases[0].s_embed == 0.0
    assert out.paraphrases[1].s_selfbleu is None and out.paraphrases[1].mean_div == pytest.approx(1.0, abs=1e-6)


def test_real_minilm_default_path():
    groups = [("What is the capital of France?", [("Which city is France's capital?", True),
              ("Name the capital city of France.", True), ("How tall is Mount Everest?", False)])]  # fmt: skip
    (scores,) = score_groups(groups)
    assert [s.r_div for s in scores[:2]] in ([0.0, 1.0], [1.0, 0.0]) and scores[2].r_div == 0.0
    assert scores[0].s_embed == pytest.approx(scores[1].s_embed) and -1 < scores[0].s_embed < -0.5
    assert 0 < scores[0].mean_div < 1 and scores[2].mean_div > scores[0].mean_div  # off-topic is more "diverse"
