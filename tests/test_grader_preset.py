"""The LLM equivalence grader (issue 10 item 4), the paper preset and the recorded settings (item 5)."""

import json

import pytest

from phr.config.ops import PAPER_SCORER, EvalPhrbenchConfig, Scoring, Trajectory
from phr.eval.pipeline import evaluation_settings, truncation_of
from phr.eval.runner import model_max_output
from phr.eval.scorers import GRADER_PROMPT, AccuracyScorer, ScoreItem
from phr.llm import LLM
from tests.support.cli import run
from tests.support.rows import instance


def oe(n, answer):
    return instance(n, domain="Biomedicine", source="gpqa", question=f"Which pathway is it ({n})?", answer=answer)


def test_grader_scores_free_text_through_the_local_server_and_caches(fake_openai, tmp_path):
    def grade(model, messages, k):
        prompt = messages[-1][1]  # (role, content)
        answer = prompt.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return json.dumps({"rationale": "compared", "equivalent": "TCA" in answer or "Krebs" in answer})

    fake = fake_openai(grade)
    llm = LLM("openai:gpt-4o-mini", progress=False, timeout=5)
    scorer = AccuracyScorer(progress=False, grader=llm)
    batch = [
        ScoreItem(oe(1, "Krebs cycle"), "It is the citric acid (TCA) cycle.\nAnswer: the TCA cycle"),  # no verbatim
        ScoreItem(oe(2, "Krebs cycle"), "Answer: glycolysis"),
        ScoreItem(oe(3, "4.3 x 10^-6 M"), "Answer: 4.3e-6 M"),  # numeric: never sent to the grader
        ScoreItem(oe(4, "Krebs cycle"), ""),  # no final answer: nothing to grade
    ]
    out = scorer.score(batch)
    assert [o["correct"] for o in out] == [True, False, True, False]
    assert [o["grader"] for o in out] == [
        "llm:openai:gpt-4o-mini",
        "llm:openai:gpt-4o-mini",
        "numeric",
        "normalised-match",
    ]
    assert fake.server.count == 2
    assert scorer.config.grader == "openai:gpt-4o-mini" and len(scorer.config.grader_prompt_sha256) == 64
    AccuracyScorer(progress=False, grader=LLM("openai:gpt-4o-mini", progress=False)).score(batch)
    assert fake.server.count == 2  # cached
    assert "OURS" in GRADER_PROMPT.read_text().splitlines()[1]  # the prompt file says whose it is


def test_without_a_grader_free_text_is_a_normalised_match():
    out = AccuracyScorer(progress=False).score([ScoreItem(oe(1, "Krebs cycle"), "Answer: the TCA cycle")])
    assert out == [{"correct": False, "extracted": "the TCA cycle", "grader": "normalised-match"}]


class Declares:
    spec = "fake:model"

    def __init__(self, value):
        self.value = value

    def max_output_tokens(self):
        return self.value


def test_paper_preset_and_model_maximum():
    assert EvalPhrbenchConfig.presets["paper"] == {
        "samples": 10,
        "temperature": 0.7,
        "max_tokens": "model",
        "scorer": PAPER_SCORER,
    }
    assert PAPER_SCORER == "hf:Qwen/Qwen2.5-7B-Instruct"
    assert model_max_output(Declares(32768)) == 32768
    assert model_max_output(Declares(None)) is None and model_max_output(object()) is None


def test_truncation_share_and_settings(tmp_path):
    rows = [{"finish_reason": "length"}] + [{"finish_reason": "stop"}] * 49 + [{"failure": "timeout"}]
    (tmp_path / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tr = truncation_of(tmp_path)
    assert (tr.responses, tr.truncated, tr.share, tr.warning) == (50, 1, 0.02, True)  # 2% > 1%: warn
    rows[0] = {"finish_reason": "stop"}
    (tmp_path / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert truncation_of(tmp_path).warning is False and truncation_of(tmp_path / "none") is None

    opts = Scoring(scorer="local:smollm2", kl_direction="later_reference")
    st = evaluation_settings(opts, preset="paper", generation={"temperature": 0.7, "max_tokens": 8192}, samples=10)
    assert st.preset == "paper" and st.samples == 10 and st.max_tokens == 8192
    assert st.reference_scorer == "local:smollm2" and st.reference_scorer_is_paper is False
    assert (st.kl_direction, st.step_rule, st.bc_counting) == ("later_reference", "paper", "every_occurrence")
    assert st.ol_units == {"OL": "reference-scorer tokens", "OL_words": "words"}
    assert st.resolution_labels == ["Heuristic Correction", "Hallucination Compliance", "Hallucination Avoidance"]
    with pytest.raises(ValueError, match="kl_direction"):
        Trajectory(kl_direction="forward")


@pytest.mark.slow
def test_eval_preset_paper_with_the_smollm2_scorer(smollm2, mini_folder, tmp_path):
    """Acceptance: --preset paper --model local:smollm2 --limit 2 --scorer local:smollm2 (fewer samples and
    tokens here to keep CPU time bounded; the preset's other settings stand)."""
    r = run(
        "--cache",
        str(tmp_path / "calls.sqlite"),
        "eval",
        "phrbench",
        "--preset",
        "paper",
        "--model",
        "local:smollm2",
        "--limit",
        "2",
        "--scorer",
        "local:smollm2",
        "--samples",
        "1",
        "--max-tokens",
        "24",
        "--dataset",
        str(mini_folder),
        "--runs",
        str(tmp_path / "runs"),
        timeout=1200,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(next((tmp_path / "runs").glob("local--smollm2/*/scores/results.json")).read_text())
    st = res["settings"]
    assert st["preset"] == "paper" and st["temperature"] == 0.7 and st["max_tokens_source"] == "--max-tokens"
    assert st["reference_scorer"] == "local:smollm2" and st["reference_scorer_is_paper"] is False
    assert st["truncation"]["responses"] > 0 and st["truncation"]["share"] is not None
    assert {"kl_direction", "step_rule", "bc_counting", "ol_units", "open_ended_rel_tol"} <= set(st)
    assert "OL_words_bh" in res["metrics"]
    assert "truncated responses" in r.stdout and "not the paper's" in r.stdout
