"""Hallucination-R1 diagnostics (eval/hr1_diagnostics.py): Eq. 11-16 by hand, spaCy depth, and the hidden-state
distances and logit lens on a tiny random Llama against plain transformers."""

import json
import math

import pytest

from phr.config.ops import AnalyzeParaphrasesConfig
from phr.eval.hr1_diagnostics import (
    SPACY_MODEL,
    analyze,
    distance,
    final_token_states,
    first_token,
    lens_rows,
    load_spacy,
    logit_lens,
    profile_doc,
    read_paraphrase_corpus,
    select_samples,
    standardize,
    surface,
    tree_depth,
)
from phr.hr1.records import HQuestion, ParaphraseResult, QuestionResult
from phr.llm.spec import make_provider
from tests.support.cli import run
from tests.support.hr1_corpora import make_folder, para

ORIG = "Who wrote Hamlet?"  # words Who(3) wrote(5) Hamlet(6): |W| = 3, |C| = 14
PARAS = [
    ("Who was the writer of Hamlet?", "wrong", "Marlowe"),  # |W| 6, |C| 3+3+3+6+2+6 = 23
    ("Hamlet was written by whom?", "correct", "Shakespeare"),  # |W| 5, |C| 6+3+7+2+4 = 22
    ("Who is the author of the play Hamlet?", "correct", "Shakespeare"),  # |W| 8, |C| 3+2+3+6+2+3+4+6 = 29
]


def _result(correctness="correct", paras=PARAS, qid="truthfulqa-validation-0"):
    q = HQuestion(
        id=qid, source="truthfulqa", split="validation", source_row_id="0", question=ORIG, answers=("Shakespeare",),
        license="Apache-2.0",
    )  # fmt: skip
    ps = [
        ParaphraseResult(k=k, text=t, consistent=True, qa_answer=a, correctness=c) for k, (t, c, a) in enumerate(paras)
    ]
    return QuestionResult(question=q, qa_answer="Shakespeare", correctness=correctness, paraphrases=ps)


# ---- Eq. 11-16 ----------------------------------------------------------------------------------------------


def test_surface_formulas_by_hand():
    sel = select_samples([_result()])
    assert [s.label for s in sel.samples] == ["RF", "RP", "RP"]
    summaries = {f.feature: f for f in surface(sel.samples, SPACY_MODEL)}
    # Eq. 11: ΔWC = |W_para| - |W_orig|
    assert [s.delta["word_count"] for s in sel.samples] == [3, 2, 5]
    # Eq. 12: ΔAWL = |C_para|/|W_para| - |C_orig|/|W_orig| (characters of the words only)
    for s, expected in zip(sel.samples, [23 / 6 - 14 / 3, 22 / 5 - 14 / 3, 29 / 8 - 14 / 3]):
        assert s.delta["avg_word_length"] == pytest.approx(expected)
    wc = summaries["word_count"]
    # Eq. 13: μ = 10/3; Eq. 14 (population): σ² = ((1/3)² + (4/3)² + (5/3)²) / 3 = 14/9
    assert wc.mu == pytest.approx(10 / 3)
    assert wc.sigma == pytest.approx(math.sqrt(14) / 3)  # the sample std would be sqrt(7/3)
    # Eq. 15: z = (-1/3, -4/3, 5/3) / σ = (-1, -4, 5) / sqrt(14)
    assert [s.z["word_count"] for s in sel.samples] == pytest.approx([v / math.sqrt(14) for v in (-1, -4, 5)])
    # Eq. 16: z̄_RF = -1/sqrt(14); z̄_RP = mean(-4, 5)/sqrt(14) = 0.5/sqrt(14)
    assert wc.z_rf == pytest.approx(-1 / math.sqrt(14))
    assert wc.z_rp == pytest.approx(0.5 / math.sqrt(14))
    assert wc.mean_delta_rf == 3 and wc.mean_delta_rp == 3.5


def test_standardize_zero_spread_and_population_std():
    assert standardize([2.0, 2.0]) == (2.0, 0.0, [0.0, 0.0])
    mu, sigma, z = standardize([1.0, 3.0])
    assert (mu, sigma, z) == (2.0, 1.0, [-1.0, 1.0])


def test_selection_rules():
    # an originally-wrong question contributes nothing; a fuzzy paraphrase answer counts as wrong (default)
    # and an unjudged one is left out and counted
    fuzzy = [("Who penned Hamlet?", "fuzzy", "Ben"), ("Hamlet's author?", "unjudged", "x")]
    sel = select_samples([_result("wrong", qid="q-wrong"), _result(paras=fuzzy)])
    assert sel.originally_correct == 1 and sel.questions == 2
    assert [(s.k, s.label) for s in sel.samples] == [(0, "RF")]
    assert sel.skipped_not_graded == 1


def test_dependency_depth_and_profile_on_parsed_sentences():
    nlp = load_spacy(SPACY_MODEL)
    doc = nlp("Where did Roger Marquis die?")
    # die (root, 0) <- Marquis (nsubj, 1) <- Roger (compound, 2); Where, did, ? hang off the root (1)
    assert [t.head.text for t in doc] == ["die", "die", "Marquis", "die", "die", "die"]
    assert tree_depth(doc) == 2
    p = profile_doc(nlp("What is the nationality of the author of Hamlet?"))
    # is (root) <- nationality <- of <- author <- of <- Hamlet: depth 5
    assert p.dep_depth == 5
    assert p.word_count == 9
    assert p.noun_ratio == pytest.approx(3 / 9)  # nationality, author, Hamlet
    assert p.nominalization == pytest.approx(1 / 9)  # nationality (-ity)


# ---- hidden states on a tiny random model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from training.tiny import TinySettings, build_tiny_model

    texts = [ORIG, *(t for t, _, _ in PARAS), "Question: Answer: Shakespeare Marlowe <answer>"] * 4
    folder = build_tiny_model(texts, tmp_path_factory.mktemp("tiny") / "model", TinySettings(num_hidden_layers=3))
    provider = make_provider(f"hf:{folder}", device="cpu")
    return provider, folder


@pytest.fixture(scope="module")
def reference(tiny):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny[1]).eval()

    def run(ids):
        with torch.no_grad():
            return model(input_ids=torch.tensor([ids]), output_hidden_states=True)

    return model, run


@pytest.mark.slow
def test_final_token_states_and_distances_match_transformers(tiny, reference):
    import torch

    provider, _ = tiny
    _, run = reference
    texts = [f"Question: {ORIG}", f"Question: {PARAS[2][0]}", f"Question: {PARAS[0][0]} Answer: Marlowe"]
    for layer in range(provider.num_layers() + 1):
        emb = final_token_states(provider, texts, layer, batch_size=3)  # one padded batch
        for t in texts:
            direct = run(provider.encode(t).ids).hidden_states[layer][0, -1]
            assert torch.allclose(emb[t], direct, atol=1e-5), (layer, t)
    a, b = emb[texts[0]], emb[texts[1]]
    expected = torch.linalg.vector_norm(a / a.norm() - b / b.norm())
    assert distance(a, b) == pytest.approx(float(expected), abs=1e-6)
    assert distance(a, b, "none") == pytest.approx(float((a - b).norm()), abs=1e-5)


@pytest.mark.slow
def test_logit_lens_one_value_per_layer_matches_direct_computation(tiny, reference):
    import torch

    provider, _ = tiny
    model, run = reference
    n = provider.num_layers()
    rows = [lens_rows(provider, ORIG, "<answer>"), lens_rows(provider, PARAS[2][0], "<answer>")]
    pair = (first_token(provider, "Shakespeare"), first_token(provider, "Marlowe"))
    assert pair[0] != pair[1]
    for final_norm in (True, False):
        values = logit_lens(provider, rows, [pair, pair], final_norm)
        assert [len(v) for v in values] == [n + 1, n + 1]
        for row, got in zip(rows, values):
            out = run(row)
            direct = []
            for layer in range(n + 1):
                h = out.hidden_states[layer][0, -1]
                with torch.no_grad():
                    h = model.model.norm(h) if final_norm and layer < n else h
                    lp = torch.log_softmax(model.lm_head(h), dim=-1)
                direct.append(float(lp[pair[0]] - lp[pair[1]]))
            assert got == pytest.approx(direct, abs=1e-4)
            # the last layer is the model's own next-token distribution
            lp = torch.log_softmax(out.logits[0, -1], dim=-1)
            assert got[-1] == pytest.approx(float(lp[pair[0]] - lp[pair[1]]), abs=1e-4)


def _corpus_rows():
    rows = []
    for i, paras in enumerate([PARAS, PARAS[::-1]]):
        ps = []
        for k, (t, c, a) in enumerate(paras):
            ps.append({**para(k, t), "qa_answer": a, "qa_extraction": "tag", "factual_score": 0, "correctness": c})
        ps.append(para(len(paras), "Who invented Hamlet?", consistent=False))
        rows.append(
            {
                "id": f"truthfulqa-validation-{i}",
                "source": "truthfulqa",
                "split": "validation",
                "source_row_id": str(i),
                "question": ORIG,
                "answers": ["Shakespeare"],
                "license": "Apache-2.0",
                "meta": [],
                "qa_answer": "Shakespeare",
                "qa_extraction": "tag",
                "factual_score": 0,
                "correctness": "correct",
                "paraphrases": ps,
            }
        )
    return rows


@pytest.mark.slow
def test_analyze_paraphrases_cli_writes_plots_json_and_summary(tiny, tmp_path):
    provider, folder = tiny
    corpus = make_folder(tmp_path, "hr1-paraphrases", _corpus_rows())
    results = read_paraphrase_corpus(corpus)
    assert len(results) == 2 and results[0].paraphrases[3].consistent is False

    out = tmp_path / "diag"
    args = [
        "analyze",
        "paraphrases",
        "--corpus",
        str(corpus),
        "--model",
        f"hf:{folder}",
        "--layer",
        "2",
        "--out",
        str(out),
    ]
    plan = run(*args, "--dry-run")  # the corpus read, the model spec checked; nothing loaded or written
    assert plan.returncode == 0 and "2 questions, 8 paraphrases: hidden states" in plan.stdout, plan.stdout
    assert not out.exists()
    res = run(*args)  # the installed phr-publish, as a user runs it
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 RF and 4 RP" in res.stdout + res.stderr
    names = {p.name for p in out.iterdir()}
    assert names == {
        "fig2_surface.png", "fig7_profile.png", "fig8_embedding.png", "logit_lens.png", "diagnostics.json", "summary.md"
    }  # fmt: skip
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "diagnostics.json").read_text())
    assert report["layer"] == 2 and report["num_layers"] == 3 and report["counts"] == {"RF": 2, "RP": 4}
    assert len(report["lens"]) == 2 and all(len(c["original"]) == 4 for c in report["lens"])
    for s in report["samples"]:
        assert s["drift"] == pytest.approx(s["d_qa"] - s["d_q"])
    assert "| word_count |" in (out / "summary.md").read_text()
    # the library call gives the same numbers as the command
    diag = analyze(results, provider, AnalyzeParaphrasesConfig(corpus=corpus, model=f"hf:{folder}", layer=2))
    assert [s.d_qa for s in diag.samples] == pytest.approx([s["d_qa"] for s in report["samples"]], abs=1e-6)
    # an existing folder is not replaced without --overwrite
    again = run(*args)
    assert again.returncode == 2 and "--overwrite" in again.stderr


@pytest.mark.timeout(1800)  # one forward pass per layer (31) of the real model: minutes on a loaded machine
def test_logit_lens_last_layer_is_the_models_own_distribution_smollm2(smollm2):
    """On the real local model (final RMSNorm with learned weights): the last layer's Δlogp is the model's own
    next-token log-prob difference after ``<answer>``, and the final norm changes the lower layers."""
    row = lens_rows(smollm2, "What is the capital of France?", "<answer>")
    pair = (first_token(smollm2, "Paris"), first_token(smollm2, "London"))
    normed, raw = logit_lens(smollm2, [row], [pair], True)[0], logit_lens(smollm2, [row], [pair], False)[0]
    assert len(normed) == smollm2.num_layers() + 1
    import torch

    lp = torch.log_softmax(smollm2.forward([row]).logits[0, -1].float(), dim=-1)
    assert normed[-1] == pytest.approx(float(lp[pair[0]] - lp[pair[1]]), abs=2e-3)
    assert normed[-1] == pytest.approx(raw[-1]) and normed[1] != pytest.approx(raw[1])
