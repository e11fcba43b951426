"""Hallucination-R1-mini: the curated file, the build (validates, loads, says what it is), Tables 1-3 of two
questions against hand-computed values, the training smoke corpora, and the no-argument CLI with the offline
model (slow)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from datasets import load_dataset
from sacrebleu.metrics import BLEU

from phr.builders.hr1_mini import (
    build_mini,
    build_mini_grpo,
    build_mini_sft,
    format_pairs,
    load_mini,
    mini_plan,
    read_mini,
)
from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa
from phr.config.base import resolve
from phr.config.ops import BuildHr1ParaphrasesConfig, EvalHr1Config
from phr.core.errors import UsageError
from phr.eval.hr1_runner import evaluate, table_settings
from phr.llm.embed import embed
from phr.validation.hr1_folder import validate_corpus
from tests.support.cli import run
from tests.support.data import SHARED as DATA
from tests.support.data import needs


@pytest.fixture(scope="module")
def mini():
    return load_mini()


def _qa_responder(answers: dict[str, str]):
    """A QA model answering by the exact user message (the question or paraphrase); anything else: unknown."""

    def respond(model, messages, k):
        assert messages[0][1].startswith("You are a strict question"), messages[0][1][:60]
        return f"<answer>{answers.get(messages[-1][1], 'I do not know')}</answer>"

    return respond


# ---- the curated file --------------------------------------------------------------------------------------------


def test_curated_file_holds_52_questions_with_4_labelled_paraphrases(mini):
    qs = mini.questions
    assert len(qs) == 52 and {ld.source: len(ld.questions) for ld in mini.loads} == {
        "simplequestions": 28,
        "truthfulqa": 24,
    }
    assert len({q.id for q in qs}) == 52
    paras = [p for q in qs for p in mini.paraphrases[q.id]]
    assert len(paras) == 208 and all([p.k for p in mini.paraphrases[q.id]] == [0, 1, 2, 3] for q in qs)
    bad = [p for p in paras if not p.consistent]
    assert len(bad) == 12 and all(p.consistency_think.startswith("curated: inconsistent: ") for p in bad)
    # the questions the deliberately inconsistent ones belong to: 8 of 52 (ER@1 sees k = 0 ones too)
    assert sum(not mini.paraphrases[q.id][0].consistent for q in qs) == 2
    for q in qs:  # a paraphrase never copies its question
        assert all(p.text.casefold() != q.question.casefold() for p in mini.paraphrases[q.id])


@needs("truthfulqa", "simplequestions")
def test_curated_rows_are_the_source_rows(mini):
    """Each packaged question and its gold answers equal the row of the shared copy it names."""
    rows = {("truthfulqa", q.source_row_id): q for q in load_truthfulqa(DATA / "truthfulqa").questions} | {
        ("simplequestions", q.source_row_id): q for q in load_simplequestions(DATA / "simplequestions").questions
    }
    for q in mini.questions:
        src = rows[(q.source, q.source_row_id)]
        assert (q.id, q.question, q.answers, q.split, q.license, q.meta) == (
            src.id,
            src.question,
            src.answers,
            src.split,
            src.license,
            src.meta,
        )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "line 1: not JSON"),
        (
            {"source": "x", "split": "t", "source_row_id": "1", "question": "q?", "answers": ["a"], "paraphrases": []},
            "line 1: source: Value error, unknown source 'x'",
        ),
        (
            {
                "source": "popqa",
                "split": "t",
                "source_row_id": "1",
                "question": "q?",
                "answers": ["a"],
                "paraphrases": [{"text": "p?", "consistent": True}] * 3,
            },  # fmt: skip
            "line 1: paraphrases: Value error, 3 paraphrases; expected K = 4",
        ),
        (
            {
                "source": "popqa",
                "split": "t",
                "source_row_id": "1",
                "question": "q?",
                "answers": ["a"],
                "paraphrases": [{"text": "p?", "consistent": True}] * 3 + [{"text": "r?", "consistent": False}],
            },  # fmt: skip
            "line 1: paraphrases: Value error, inconsistent paraphrase 'r?' has no 'why'",
        ),
        (
            {
                "source": "popqa",
                "split": "t",
                "source_row_id": "1",
                "question": "q?",
                "answers": [],
                "paraphrases": [{"text": "p?", "consistent": True}] * 4,
            },  # fmt: skip
            "line 1: answers: Tuple should have at least 1 item",
        ),
    ],
)
def test_a_bad_curated_line_is_named(line, message):
    text = line if isinstance(line, str) else json.dumps(line)
    with pytest.raises(UsageError) as e:
        read_mini(text, "mini.jsonl")
    assert str(e.value).startswith(f"mini.jsonl: {message}")


def test_a_repeated_curated_row_is_named():
    row = json.dumps(
        {
            "source": "popqa",
            "split": "test",
            "source_row_id": "7",
            "question": "q?",
            "answers": ["a"],
            "paraphrases": [{"text": "p?", "consistent": True}] * 4,
        }  # fmt: skip
    )
    with pytest.raises(UsageError, match=r"mini.jsonl: line 2: popqa row 7 appears twice"):
        read_mini(f"{row}\n{row}\n", "mini.jsonl")


# ---- Tables 1-3 of two questions, by hand -------------------------------------------------------------------------


def test_tables_1_to_3_of_two_questions_against_hand_computed_values(mini, fake_openai, tmp_path):
    """Super Mario Bros. 2 (4 consistent paraphrases) and the Schuylkill River (k = 3 deliberately inconsistent):
    the QA model answers both originals correctly, Super Mario's k = 1 and the Schuylkill's k = 0 wrongly."""
    by_row = {q.source_row_id: q for q in mini.loads[0].questions}
    mario, river = by_row["35"], by_row["36"]
    pm, pr = mini.paraphrases[mario.id], mini.paraphrases[river.id]
    assert [p.consistent for p in pm] == [True] * 4 and [p.consistent for p in pr] == [True, True, True, False]
    answers = {mario.question: "Super Mario", river.question: "the Delaware River"}
    answers |= {p.text: "Super Mario" for p in pm} | {p.text: "Delaware River" for p in pr}
    answers[pm[1].text], answers[pr[0].text] = "Nintendo", "Atlantic Ocean"
    srv = fake_openai(_qa_responder(answers))
    cfg = resolve(EvalHr1Config, values={"preset": "mini"})
    plan, metrics = table_settings("2", 4, mini_plan(cfg).grading, cfg)
    res = evaluate(
        {"simplequestions": [mario, river]},
        paraphraser="curated",
        qa="openai:gpt-4o",
        judge="none",
        out=tmp_path / "run",
        plan=plan,
        metrics=metrics,
        paraphrases=mini.paraphrases,
    )
    # QA: 2 originals + the 7 consistent paraphrases (the inconsistent one is never asked)
    assert srv.server.count == 9
    t1, t2 = res.tables["table1"]["simplequestions"], res.tables["table2"]["simplequestions"]
    assert t1.consis.value == pytest.approx(7 / 8)
    # Mean Div (docs/hr1.md): 1 - (BLEU(y, [x]) / 100 + cos(MiniLM(y), MiniLM(x))) / 2 over the 7 consistent ones
    bleu = BLEU(tokenize="13a", smooth_method="exp", effective_order=True)
    pairs = [(p.text, mario.question) for p in pm] + [(p.text, river.question) for p in pr[:3]]
    vecs = embed([t for pair in pairs for t in pair])
    divs = [
        1 - (bleu.sentence_score(y, [x]).score / 100 + float(np.dot(vecs[2 * i], vecs[2 * i + 1]))) / 2
        for i, (y, x) in enumerate(pairs)
    ]
    assert t1.mean_div.value == pytest.approx(sum(divs) / 7, abs=1e-6) and 0.2 < t1.mean_div.value < 0.8
    assert t1.ratio_div.value == pytest.approx(sum(d > 0.9 for d in divs) / 7)
    # Table 2: both originally correct; RF@1: the river (k = 0 wrong); RF@4: both
    assert (t2.true_count.value, t2.rf_at_1.value, t2.rf_at_k.value) == (2, 1, 2)
    assert (t2.er_at_1.value, t2.wer_at_k.value) == (pytest.approx(0.5), pytest.approx(1.0))
    # Table 3: Consis@1 over the paraphrases k < 4 of both questions
    assert t2.consis_at_1.value == pytest.approx(7 / 8)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| curated | 87.50% ±" in report and "50.00% ±" in report


# ---- the build: validates, loads, says what it is -----------------------------------------------------------------


def test_build_mini_validates_loads_and_says_what_it_is(mini, fake_openai, tmp_path):
    gold = {q.question: q.answer for q in mini.questions}
    fake_openai(_qa_responder(gold))  # originals right, paraphrases unknown: every one a robustness failure
    out = tmp_path / "hr1-mini"
    res = build_mini(
        out, mini_plan(resolve(BuildHr1ParaphrasesConfig, values={"preset": "mini"})), qa="openai:gpt-4o", mini=mini
    )
    assert res.counts == {
        "questions": 52,
        "paraphrases": 208,
        "consistent": 196,
        "originally_correct": 52,
        "paraphrases_correct": 0,
    }
    assert validate_corpus(out, "hr1-paraphrases").ok
    ds = load_dataset(str(out), "simplequestions")
    assert ds["test"].num_rows == 28 and load_dataset(str(out), "truthfulqa")["validation"].num_rows == 24
    every = load_dataset(str(out))  # the default config `all`: both sources, every row (as PHRBench's `all`)
    assert {k: v.num_rows for k, v in every.items()} == {"test": 28, "validation": 24}
    assert load_dataset(str(out), "all")["validation"]["id"] == load_dataset(str(out), "truthfulqa")["validation"]["id"]
    row = ds["test"][0]
    assert row["paraphrases"][0]["consistency_think"] == "curated: consistent" and row["correctness"] == "correct"
    assert all(p["mean_div"] is not None and p["r_div"] is not None for p in row["paraphrases"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["preset"] == "mini" and manifest["models"]["paraphraser"] == "curated"
    assert manifest["curated"]["inconsistent_paraphrases"] == 12 and manifest["plan"]["qa_decoding"]["max_tokens"] == 16
    assert manifest["plan"]["grading"]["exact_match_sources"] == ["simplequestions", "popqa", "truthfulqa"]
    card = (out / "README.md").read_text()
    assert "**Hallucination-R1-mini.** 52 packaged questions" in card and "12 are deliberately inconsistent" in card
    assert "No paraphraser or judge model was run" in card and "Consistent (curated (maintainers' labels" in card
    # the card's usage names its own folder (hr1-mini), not the corpus kind
    assert 'ds = load_dataset("hr1-mini", "all")   # every row; one source: simplequestions, truthfulqa' in card
    assert 'load_dataset("hr1-paraphrases"' not in card


def test_mini_training_corpora_build_offline_without_leakage(mini, tmp_path):
    sft = build_mini_sft(tmp_path / "sft", mini=mini)
    grpo = build_mini_grpo(tmp_path / "grpo", mini=mini)
    # the 14 even SimpleQuestions rows train; 4 of their 56 paraphrases are deliberately inconsistent
    assert grpo.counts["prompts"] == 14 and sft.counts == {"questions": 14, "pairs": 52, "dropped_for_leakage": 0}
    assert validate_corpus(tmp_path / "sft", "hr1-sft").ok and validate_corpus(tmp_path / "grpo", "hr1-grpo").ok
    rows = load_dataset(str(tmp_path / "grpo"))["train"]
    row_of = {q.id: int(q.source_row_id) for q in mini.questions}
    assert all(row_of[r["question_id"]] % 2 == 0 and r["split"] == "train" for r in rows)
    assert "QA filter: none (smoke corpus" in (tmp_path / "grpo" / "README.md").read_text()
    pairs = format_pairs(mini)
    assert len(pairs) == 52 and all(re.fullmatch(r"<paraphrase>[^<]+</paraphrase>", c) for _p, c in pairs)


# ---- the GRPO smoke learns: format warm-up + the consistency stand-in (slow: trains) --------------------------------


def test_stand_in_reward_is_graded_and_zero_without_a_paraphrase():
    from phr.training.smoke import STAND_IN, consistency_scores, consistency_stand_in

    def embed(texts):  # unit vectors: "a" and "b" orthogonal, "c" at 60 degrees to "a"
        table = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [0.5, 3**0.5 / 2]}
        return np.array([table[t] for t in texts])

    got = consistency_scores(
        ["a", "a", "a", "a"],
        ["<paraphrase>a</paraphrase>", "<paraphrase>b</paraphrase>", [{"role": "assistant", "content": "<paraphrase>c</paraphrase>"}], "a"],
        embed,
    )  # fmt: skip
    assert got == pytest.approx([1.0, 0.0, 0.5, 0.0])
    assert consistency_stand_in({}, 1).__name__ == STAND_IN
    with pytest.raises(UsageError, match="reward.settings: the smoke stand-in takes none"):
        consistency_stand_in({"judge": "x"}, 1)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a format warm-up and one GRPO step: minutes on 2 shared cores
def test_grpo_smoke_has_reward_variance_and_a_loss(mini, tmp_path):
    from phr.training.config import load_recipe
    from phr.training.grpo import train_grpo

    build_mini_grpo(tmp_path / "hr1-grpo", mini=mini)
    recipe = load_recipe(
        "smoke-stage1",
        data={"path": str(tmp_path / "hr1-grpo")},
        trainer={"output_dir": str(tmp_path / "s1"), "save_strategy": "no"},
    )
    res = train_grpo(recipe)
    metrics = json.loads((res.final_dir / "curves.json").read_text())["metrics"]
    steps = zip(metrics["reward_std"]["raw"], metrics["loss"]["raw"], strict=True)
    assert any(std > 0 and loss != 0 for std, loss in steps), metrics  # a learning signal in at least one step
    assert max(metrics["rewards/smoke_consistency_stand_in/mean"]["raw"]) > 0
    # the numbers docs/training.md ("Offline training smoke", "Measured") gives for stage 1's two steps
    docs = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    said = re.search(r"stage 1 loss ([-\d.]+) / ([-\d.]+) and reward_std ([\d.]+) / ([\d.]+)", " ".join(docs.split()))
    assert said, "docs/training.md no longer states the smoke's stage-1 numbers"
    got = [f"{v:.3f}" for v in (*metrics["loss"]["raw"], *metrics["reward_std"]["raw"])]
    assert got == list(said.groups()), (got, said.groups())
    manifest = json.loads((res.final_dir / "training_manifest.json").read_text())
    assert manifest["reward"]["functions"] == ["smoke_consistency_stand_in"]
    assert manifest["recipe"]["model"]["tiny"]["format_warmup_steps"] == 40
    assert "**Smoke reward stand-in**" in (res.final_dir / "README.md").read_text()


# ---- the no-argument CLI with the offline model (slow) ------------------------------------------------------------


def test_cli_no_arguments_builds_mini_and_eval_prints_real_tables(smollm2, tmp_path):
    env = {"PHR_CACHE": str(tmp_path / "calls.sqlite")}
    res = run("build", "hr1-paraphrases", "--out", str(tmp_path / "hr1-mini"), env=env, timeout=900)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("preset: mini (the no-argument offline default")  # named, printed first
    assert "preset mini: Hallucination-R1-mini (52 packaged questions" in res.stdout
    assert validate_corpus(tmp_path / "hr1-mini", "hr1-paraphrases").ok
    ev = run("eval", "hr1", "--out", str(tmp_path / "run"), env=env, timeout=900)
    assert ev.returncode == 0, ev.stderr
    tables = json.loads((tmp_path / "run" / "results.json").read_text())["tables"]["table1"]
    for t in tables.values():
        assert t["consis"]["value"] > 0.9 and 0.2 < t["mean_div"]["value"] < 0.8
    assert "| curated | 93.75% ±" in ev.stdout  # 105 of 112 SimpleQuestions paraphrases are consistent
