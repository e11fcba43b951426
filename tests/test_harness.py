"""PHRBench in lm-evaluation-harness and inspect_ai (phr.eval.harness): the harnesses' own runs, with a scripted
model through each harness's model interface, score every response as ``eval phrbench``'s scorer does, report
the same Acc B / T / H, H - T and retention, run code answers only in our sandbox, and their outputs (an lm-eval
samples file, an inspect log) are submissions ``score`` takes. The same with the offline SmolLM2 end to end:
tests/test_harness_smollm2.py."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("inspect_ai")

from phr.config.ops import (  # noqa: E402
    DEFAULT_MAX_TOKENS,
    PAPER_SAMPLES,
    PAPER_TEMPERATURE,
    Scoring,
)
from phr.eval.harness import lm_eval_tasks  # noqa: E402
from phr.eval.harness.common import HEADLINE, headline, instance_of, instance_rows  # noqa: E402
from phr.eval.scoring import score_responses  # noqa: E402
from phr.llm.preflight import PreflightError  # noqa: E402
from tests.support.harness_models import TEMPLATE, ScriptedLM, inspect_model  # noqa: E402
from tests.support.scored import score_output  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


class Answers:
    """A scripted model's answers, by prompt: multiple choice right for two questions in three (by a hash of the
    id), code a hostile program that tries to write outside the sandbox and then solves the task (B) or not."""

    def __init__(self, rows: list[dict]):
        self.by_prompt = {r["prompt"]: r for r in rows}
        tag = uuid.uuid4().hex
        self.markers = [REPO / f"phr-harness-escape-{tag}", Path.home() / f"phr-harness-escape-{tag}"]

    def __call__(self, prompt: str) -> str:
        row = self.by_prompt[prompt]
        if row["task_type"] == "code":
            hostile = f"for p in {[str(m) for m in self.markers]!r}:\n    try:\n        open(p, 'w').write('escaped')\n    except OSError:\n        pass\n"
            body = row["reference_solution"] if row["condition"] == "B" else "    return None\n"
            return f"```python\n{hostile}\n{row['question']}{body}```"
        right = int(hashlib.sha256(row["id"].encode()).hexdigest(), 16) % 3 != 0
        k = row["answer_index"] if right else (row["answer_index"] + 1) % len(row["options"])
        return f"Let me think.\nAnswer: {k + 1}"

    def ours(self, rows: list[dict]):
        """``eval phrbench``'s scoring of the same answers."""
        insts = [instance_of(r) for r in rows]
        responses = {(i.id, 0): self(i.prompt) for i in insts}
        return score_responses(insts, responses, samples=1, progress=False, scoring=Scoring(scorer="none"))

    def escaped(self) -> list[Path]:
        found = [m for m in self.markers if m.exists()]
        for m in found:
            m.unlink()
        return found


@pytest.fixture(scope="module")
def rows(mini_folder):
    return instance_rows(str(mini_folder))


def _score_as_submission(path: Path, mini_folder: Path, tmp_path: Path, **kw) -> dict:
    return score_output(path, mini_folder, tmp_path / f"{path.stem}.scored", **kw)


def test_lm_eval_task_scores_as_eval_phrbench(mini_folder, rows, tmp_path):
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    answers = Answers(rows)
    ours = answers.ours(rows)
    lm = ScriptedLM(answers)
    tm = TaskManager(include_path=str(lm_eval_tasks()), include_defaults=False, metadata={"dataset": str(mini_folder)})
    out = simple_evaluate(
        model=lm, tasks=["phrbench_greedy"], task_manager=tm, log_samples=True, apply_chat_template=True
    )
    assert answers.escaped() == []

    # the prompts are the instances', chat-templated; the generation is one greedy sample, no stop but the end token
    assert sorted(c for c, _ in lm.asked) == sorted(TEMPLATE.format(r["prompt"]) for r in rows)
    assert {json.dumps(g, sort_keys=True) for _, g in lm.asked} == {
        json.dumps({"until": [], "do_sample": False, "max_gen_toks": DEFAULT_MAX_TOKENS}, sort_keys=True)
    }
    # per sample: the harness's scoring is ours; code answers ran in the sandbox (the B solutions pass)
    logged = out["samples"]["phrbench_greedy"]
    assert len(logged) == len(rows) == 170
    mine = {s.instance_id: s for s in ours}
    for s in logged:
        (scored,) = next(v for k, v in s.items() if k.startswith("accuracy_"))
        assert scored["correct"] == mine[s["doc"]["id"]].correct
        if s["doc"]["task_type"] == "code":
            assert scored["grader"] == "sandbox" and scored["correct"] == (s["doc"]["condition"] == "B")
    # the metrics: ours, computed from the same scores
    expected = headline(ours)
    got = {k.split(",")[0]: v for k, v in out["results"]["phrbench_greedy"].items() if k.split(",")[0] in HEADLINE}
    assert got == pytest.approx(expected) and set(got) == set(HEADLINE)
    assert 0 < expected["accuracy_bh"] < 1

    # the samples file lm-eval writes (as its CLI does with --log_samples) is a submission: score gives the same numbers
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm-eval"))
    tracker.save_results_aggregated(results=out, samples=out["samples"])
    tracker.save_results_samples(task_name="phrbench_greedy", samples=logged)
    (samples_file,) = (tmp_path / "lm-eval").rglob("samples_phrbench_greedy_*.jsonl")
    metrics = _score_as_submission(samples_file, mini_folder, tmp_path)
    assert {k: metrics[k] for k in HEADLINE} == pytest.approx(expected)


def test_inspect_task_scores_as_eval_phrbench(mini_folder, rows, tmp_path):
    from inspect_ai import eval as inspect_eval

    from phr.eval.harness.inspect_task import phrbench

    answers = Answers(rows)
    expected = headline(answers.ours(rows))
    (log,) = inspect_eval(
        phrbench(dataset=str(mini_folder)),
        model=inspect_model(answers),
        epochs=1,
        log_dir=str(tmp_path / "inspect"),
        display="none",
    )
    assert answers.escaped() == []
    assert log.status == "success" and len(log.samples) == 170
    mine = {s.instance_id: s for s in answers.ours(rows)}
    for s in log.samples:
        (score,) = s.scores.values()
        assert (score.value == "C") == mine[s.id].correct, s.id
        if s.metadata["task_type"] == "code":
            assert score.explanation == "graded by sandbox" and (score.value == "C") == (s.metadata["condition"] == "B")
    got = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert got == pytest.approx(expected) and set(got) == set(HEADLINE)
    assert log.eval.task_args.get("dataset") == str(mini_folder)

    (log_file,) = (tmp_path / "inspect").glob("*.eval")
    metrics = _score_as_submission(log_file, mini_folder, tmp_path)
    assert {k: metrics[k] for k in HEADLINE} == pytest.approx(expected)


def test_task_files_carry_the_papers_sampling(mini_folder):
    from lm_eval.tasks import TaskManager

    tm = TaskManager(
        include_path=str(lm_eval_tasks()), include_defaults=False, metadata={"dataset": str(mini_folder), "limit": 1}
    )
    tasks = tm.load(["phrbench", "phrbench_b", "phrbench_bt", "phrbench_bh", "phrbench_greedy"])["tasks"]
    paper = tasks["phrbench"].config  # the YAML restates the paper's settings: they must be the config's
    assert paper.repeats == PAPER_SAMPLES
    assert paper.generation_kwargs == {
        "until": [],
        "do_sample": True,
        "temperature": PAPER_TEMPERATURE,
        "max_gen_toks": DEFAULT_MAX_TOKENS,
    }
    assert paper.filter_list[0]["filter"][0] == {"function": "take_first_k", "k": PAPER_SAMPLES}
    greedy = tasks["phrbench_greedy"].config
    assert greedy.repeats == 1 and greedy.generation_kwargs["max_gen_toks"] == DEFAULT_MAX_TOKENS
    # --metadata limit: whole questions, as eval phrbench --limit (one question: its 5 instances)
    assert [d["condition"] for d in tasks["phrbench"].test_docs()] == ["B", "B+T", "B+H", "B+H", "B+H"]
    for name, cond in (("phrbench_b", "B"), ("phrbench_bt", "B+T"), ("phrbench_bh", "B+H")):
        assert {d["condition"] for d in tasks[name].test_docs()} == {cond}
        assert [m["metric"] for m in tasks[name].config.metric_list] == [f"accuracy_{name.split('_')[1]}"]


def test_harness_outputs_that_are_not_submissions_are_named(mini_folder, tmp_path):
    bad = tmp_path / "samples_phrbench_greedy_x.jsonl"
    bad.write_text(json.dumps({"doc_id": 0, "doc": {}, "resps": [["x"]], "filtered_resps": [["x"]]}) + "\n")
    with pytest.raises(PreflightError, match=r"line 1: not an lm-eval sample record \(no doc.id\)"):
        _score_as_submission(bad, mini_folder, tmp_path)
    cut = tmp_path / "run.eval"
    cut.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(PreflightError, match=r"run.eval: not a readable inspect_ai log"):
        _score_as_submission(cut, mini_folder, tmp_path)


def test_an_lm_eval_run_without_the_chat_template_is_refused_naming_the_flag(mini_folder, rows, tmp_path):
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    tm = TaskManager(
        include_path=str(lm_eval_tasks()), include_defaults=False, metadata={"dataset": str(mini_folder), "limit": 1}
    )
    out = simple_evaluate(model=ScriptedLM(Answers(rows)), tasks=["phrbench_greedy"], task_manager=tm, log_samples=True)
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm-eval"))
    tracker.save_results_aggregated(results=out, samples=out["samples"])
    tracker.save_results_samples(task_name="phrbench_greedy", samples=out["samples"]["phrbench_greedy"])
    (samples_file,) = (tmp_path / "lm-eval").rglob("samples_*.jsonl")
    with pytest.raises(PreflightError, match=r"line 1: lm-eval sent the raw prompt.*--apply_chat_template"):
        _score_as_submission(samples_file, mini_folder, tmp_path, allow_partial=True)


def test_a_prompt_that_is_not_the_instances_is_a_problem():
    from phr.eval.harness_logs import prompt_problem

    assert prompt_problem("<|user|>\nQ?\n<|assistant|>\n", "Q?", templated=True) is None
    assert "--apply_chat_template" in prompt_problem("Q?", "Q?", templated=True)
    assert prompt_problem("Q?", "Q?", templated=False) is None  # inspect shows the turn, not the rendered text
    assert "not this instance's prompt" in prompt_problem("<|user|>\nOther?\n", "Q?", templated=True)
    assert prompt_problem(None, "Q?", templated=True) is None  # a record without its context: nothing to check
