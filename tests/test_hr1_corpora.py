"""The Hallucination-R1 corpora built against the local OpenAI-protocol server: Hub layout, load_dataset,
their validators, byte-identical rebuilds, split leakage failing a training build (nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from datasets import load_dataset

from phr.builders.hr1 import (
    HR1BuildError,
    SplitLeakageError,
    build_grpo_corpus,
    build_paraphrase_corpus,
    build_sft_corpus,
    prompt_id,
)
from phr.builders.hr1_sources import LoadResult, load_simplequestions, load_truthfulqa, stand_in_split
from phr.config.ops import PushConfig
from phr.core.fs import OutputExistsError
from phr.hr1.pipeline import RunPlan, paraphrase_prompt
from phr.validation.hr1_folder import validate_corpus
from tests.support.data import SHARED as DATA
from tests.support.data import needs
from tests.support.hr1_fixtures import hr1_responder

pytestmark = needs("simplequestions")


@pytest.fixture(scope="module")
def halves() -> tuple[LoadResult, LoadResult]:
    return stand_in_split(load_simplequestions(DATA / "simplequestions"))


def _gold(*loads: LoadResult, wrong: int = 1) -> tuple[dict, frozenset]:
    qs = [q for ld in loads for q in ld.questions]
    return {q.question: q.answer for q in qs}, frozenset(q.question for q in qs[:wrong])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_paraphrase_corpus_loads_validates_and_rebuilds_byte_identically(fake_openai, tmp_path, halves):
    sq = halves[1].head(3)
    tqa = load_truthfulqa(DATA / "truthfulqa").head(2)
    answers, wrong = _gold(sq, tqa)
    srv = fake_openai(hr1_responder(answers, wrong))
    out = tmp_path / "paraphrases"
    kw = dict(
        paraphraser="openai:gpt-4o",
        qa="openai:gpt-4o",
        judge="openai:gpt-4o",
        plan=RunPlan(k=5, qa_scope="all"),
        diversity=False,
    )
    res = build_paraphrase_corpus(out, [sq, tqa], **kw)
    assert res.counts == {
        "questions": 5,
        "paraphrases": 25,
        "parsed": 20,
        "consistent": 15,
        "unjudged": 0,
        "originally_correct": 4,
    }
    assert validate_corpus(out, "hr1-paraphrases").ok
    ds = load_dataset(str(out), "simplequestions")
    assert list(ds) == ["test"] and ds["test"].num_rows == 3
    row = ds["test"][0]
    assert row["id"] == sq.questions[0].id and row["answers"] == list(sq.questions[0].answers)
    assert row["correctness"] == "wrong"  # the first question is answered wrongly on purpose
    assert [p["consistent"] for p in row["paraphrases"]] == [True, True, False, None, True]
    assert row["paraphrases"][3]["parse_error"] == "no <paraphrase> tag"
    assert [p["correctness"] for p in row["paraphrases"]] == ["correct", "wrong", None, None, "correct"]
    assert load_dataset(str(out), "truthfulqa")["validation"].num_rows == 2
    every = load_dataset(str(out))  # the default config `all`: every source's rows
    assert {k: v.num_rows for k, v in every.items()} == {"test": 3, "validation": 2}
    card = (out / "README.md").read_text()
    assert (
        "phr_kind: hr1-paraphrases" in card
        and "Stand-in split" in card
        and "| truthfulqa | truthfulqa | validation | 2 | Apache-2.0 |" in card
    )
    assert "Consistent (Listing B.2 judge): 15 (60.0%)" in card
    before, calls = _files(out), srv.server.count
    build_paraphrase_corpus(out, [sq, tqa], overwrite=True, **kw)
    assert _files(out) == before and srv.server.count == calls  # byte-identical, from the cache
    with pytest.raises(OutputExistsError, match="already exists"):
        build_paraphrase_corpus(out, [sq, tqa], **kw)


def test_sft_corpus_pairs_consistent_paraphrases_with_the_gold_answer(fake_openai, tmp_path, halves):
    train, test = halves[0].head(4), halves[1].head(40)
    answers, _ = _gold(train)
    fake_openai(hr1_responder(answers))
    res = build_sft_corpus(
        tmp_path / "sft",
        train,
        paraphraser="openai:gpt-4o",
        judge="openai:gpt-4o",
        eval_sets={"sq-test": test.questions},
        plan=RunPlan(k=3),
    )
    assert res.counts == {"questions": 4, "pairs": 8, "dropped_for_leakage": 0}  # k=0, k=1 consistent; k=2 not
    rows = load_dataset(str(tmp_path / "sft"))["train"]
    q = train.questions[0]
    assert rows[0]["id"] == f"{q.id}-p0" and rows[0]["answer"] == q.answer
    assert [m["role"] for m in rows[0]["messages"]] == ["system", "user", "assistant"]
    assert rows[0]["messages"][1]["content"] == f"Tell me: {q.question}"
    assert rows[0]["messages"][2]["content"] == f"<answer>{q.answer}</answer>"
    assert validate_corpus(tmp_path / "sft", "hr1-sft").ok


def test_training_build_fails_on_split_leakage_and_writes_nothing(fake_openai, tmp_path, halves):
    train = halves[0].head(4)
    answers, _ = _gold(train)
    srv = fake_openai(hr1_responder(answers))
    leaked = train.questions[2]
    evals = {"sq-test": [*halves[1].head(20).questions, leaked.model_copy(update={"id": "simplequestions-test-x"})]}
    with pytest.raises(SplitLeakageError, match=rf"{leaked.id}: leakage:exact: .*simplequestions-test-x") as e:
        build_grpo_corpus(tmp_path / "grpo", train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets=evals)
    assert all(v.row_id == leaked.id for v in e.value.violations)
    assert not (tmp_path / "grpo").exists()
    assert srv.server.count == 0  # checked before any model call
    with pytest.raises(HR1BuildError, match="needs the evaluation sets"):
        build_grpo_corpus(tmp_path / "grpo", train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets={})
    # --drop-leaking: the leaking question is left out (never asked) and listed in the manifest and card
    res = build_grpo_corpus(
        tmp_path / "grpo", train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets=evals, drop_leaking=True
    )
    assert res.counts["asked"] == 3 and res.counts["dropped_for_leakage"] == 1
    assert [d["row"] for d in res.manifest["dropped_for_leakage"]] == [leaked.id]
    assert "left out for split leakage" in (tmp_path / "grpo" / "README.md").read_text()


def test_grpo_corpus_keeps_correctly_answered_questions(fake_openai, tmp_path, halves):
    train, test = halves[0].head(4), halves[1].head(20)
    answers, wrong = _gold(train, wrong=1)
    fake_openai(hr1_responder(answers, wrong))
    res = build_grpo_corpus(
        tmp_path / "grpo", train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets={"sq-test": test.questions}
    )
    assert res.counts == {"asked": 4, "prompts": 3, "unjudged": 0, "dropped_for_leakage": 0}
    rows = load_dataset(str(tmp_path / "grpo"))["train"]
    kept = train.questions[1:]
    assert rows["question_id"] == [q.id for q in kept]
    assert rows["prompt_id"] == [prompt_id(q) for q in kept] and len(set(rows["prompt_id"])) == 3
    assert rows[0]["prompt"] == [{"role": "user", "content": paraphrase_prompt(kept[0].question)}]
    assert rows[0]["answers"] == list(kept[0].answers)
    assert validate_corpus(tmp_path / "grpo", "hr1-grpo").ok


def test_corpus_publishes_through_the_hub_gate_and_validate_checks_leakage(fake_openai, tmp_path, halves):
    import pyarrow.parquet as pq

    from phr.core.parquet import write_parquet
    from phr.hub import push
    from phr.hub.errors import ValidationFailedError
    from tests.support.cli import run

    train, test = halves[0].head(3), halves[1].head(20)
    answers, _ = _gold(train)
    fake_openai(hr1_responder(answers))
    folder = tmp_path / "grpo"
    build_grpo_corpus(folder, train, qa="openai:gpt-4o", judge="openai:gpt-4o", eval_sets={"sq-test": test.questions})
    hub = tmp_path / "hub"
    res = push(PushConfig(folder=folder, repo="org/hr1-grpo", tag="v0.1.0", hub=hub))
    assert res.created and res.tag_created
    pulled = load_dataset(str(hub / "datasets" / "org" / "hr1-grpo"))["train"]
    assert pulled["prompt_id"] == load_dataset(str(folder))["train"]["prompt_id"]
    # a broken copy (duplicate prompt_id) is refused by the corpus kind's validator, nothing uploaded
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(folder, bad)
    path = next((bad / "data").glob("*.parquet"))
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[1]["prompt_id"] = rows[0]["prompt_id"]
    write_parquet(table.from_pylist(rows, schema=table.schema), path)
    with pytest.raises(ValidationFailedError, match="prompt_id"):
        push(PushConfig(folder=bad, repo="org/hr1-bad", hub=hub))
    assert not (hub / "datasets" / "org" / "hr1-bad").exists()
    # `phr-publish validate` on the corpus: clean, then with the training half itself as an evaluation set
    ok = run("validate", str(folder))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    sq = tmp_path / "sq"  # the first 8 rows of the released test file (the stand-in train takes the even ones)
    sq.mkdir()
    shutil.copy(DATA / "simplequestions" / "reverse_vocab_wikidata_en.json", sq)
    lines = (DATA / "simplequestions" / "annotated_wd_data_test_answerable.txt").read_text().split("\n")[:8]
    (sq / "annotated_wd_data_test_answerable.txt").write_text("\n".join(lines))
    leak = run("validate", str(folder), "--eval-set", f"simplequestions={sq}")
    assert leak.returncode == 1
    assert "leakage:exact" in leak.stdout and train.questions[0].id.replace("train", "test") in leak.stdout
