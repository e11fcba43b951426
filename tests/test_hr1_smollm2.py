"""The Hallucination-R1 pipeline end to end on real TruthfulQA and SimpleQuestions rows with the offline
SmolLM2 as paraphraser, QA model and judge (slow: loads the model): every malformed output is recorded."""

from __future__ import annotations

from datasets import load_dataset

from phr.builders.hr1 import build_paraphrase_corpus
from phr.builders.hr1_sources import load_simplequestions, load_truthfulqa
from phr.config.base import resolve
from phr.config.ops import BuildHr1ParaphrasesConfig
from phr.hr1.pipeline import RunPlan
from tests.support.data import SHARED as DATA
from tests.support.data import needs

pytestmark = needs("truthfulqa")


def test_smoke_models_end_to_end_record_every_malformed_output(smollm2, tmp_path):
    loads = [load_truthfulqa(DATA / "truthfulqa").head(1), load_simplequestions(DATA / "simplequestions").head(1)]
    plan = RunPlan(k=2, decoding=resolve(BuildHr1ParaphrasesConfig, values={"preset": "smoke"}), qa_scope="all")
    out = tmp_path / "smoke"
    res = build_paraphrase_corpus(
        out,
        loads,
        paraphraser="local:smollm2",
        qa="local:smollm2",
        judge="local:smollm2",
        plan=plan,
        smoke=True,
        llm_options={"provider": smollm2, "progress": False},
    )
    assert res.counts["questions"] == 2 and res.counts["paraphrases"] == 4
    rows = [
        r for cfg in ("truthfulqa", "simplequestions") for split in load_dataset(str(out), cfg).values() for r in split
    ]
    assert len(rows) == 2
    parse_errors = 0
    for r in rows:
        assert r["qa_extraction"] in ("tag", "unclosed_tag", "whole_reply", "empty")
        assert r["correctness"] in ("correct", "fuzzy", "wrong", "unjudged")
        for p in r["paraphrases"]:
            assert (p["text"] is None) != (p["parse_error"] is None), p  # a text or the reason there is none
            parse_errors += p["parse_error"] is not None
            if p["text"] is not None:
                assert p["consistent"] in (True, False, None) and p["consistency_think"]
    assert sum(res.manifest["parse_errors"].values()) == parse_errors
    assert res.summary.responses > 0
    card = (out / "README.md").read_text()
    assert "Smoke-test corpus" in card and "`local:smollm2`" in card
