"""PHRBench as an inspect_ai task (docs/harnesses.md):

    inspect eval phr/phrbench --model hf/DIR -M do_sample=false --epochs 1 \\
        -T dataset=phrbench -T limit=2 --max-tokens 96
    inspect_ai.eval(phrbench(dataset="phrbench"), model="hf/DIR", epochs=1, max_tokens=96, model_args=...)

The samples are ``eval phrbench``'s instances (``dataset``, ``conditions``, ``limit`` base questions), the input
is the instance's prompt as one user turn (inspect applies the model's chat template), and the scorer is ours
(``phr.eval.harness.common.score_row``: extraction, grading, code run only in our sandbox). The metrics are
``phr.eval.aggregate``'s: accuracy per condition, H - T (``delta_accuracy``) and retention. The task's defaults
are the paper's (App. B.1): 10 epochs (samples per prompt) at temperature 0.7, up to 2048 new tokens.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Metric, Score, Target, metric, scorer
from inspect_ai.scorer import SampleScore as InspectScore
from inspect_ai.solver import TaskState, generate

from phr.config.ops import DEFAULT_DATASET, DEFAULT_MAX_TOKENS, PAPER_SAMPLES, PAPER_TEMPERATURE
from phr.eval.dataset import CONDITIONS
from phr.eval.harness.common import headline, instance_of, instance_rows, score_row
from phr.eval.scoring import SampleScore


def _ours(scores: list[InspectScore]) -> list[SampleScore]:
    """inspect's scores as ours: one per instance, ``correct`` the mean over its epochs (the mean of equal-sized
    means is the mean over every sample, as ``phr.eval.aggregate`` averages)."""
    return [
        SampleScore.of(instance_of(s.sample_metadata or {}), 0, missing=False, correct=s.score.as_float())  # type: ignore[arg-type]
        for s in scores
    ]


def _headline_metric(name: str) -> Metric:
    def compute(scores: list[InspectScore]) -> float:
        return headline(_ours(scores)).get(name, float("nan"))

    return compute


@metric
def accuracy_b() -> Metric:
    """Accuracy under B."""
    return _headline_metric("accuracy_b")


@metric
def accuracy_bt() -> Metric:
    """Accuracy under B+T."""
    return _headline_metric("accuracy_bt")


@metric
def accuracy_bh() -> Metric:
    """Accuracy under B+H."""
    return _headline_metric("accuracy_bh")


@metric
def delta_accuracy() -> Metric:
    """H - T: accuracy under B+H minus under B+T."""
    return _headline_metric("delta_accuracy")


@metric
def retention() -> Metric:
    """H / T: accuracy under B+H over accuracy under B+T."""
    return _headline_metric("retention")


@scorer(metrics=[accuracy_b(), accuracy_bt(), accuracy_bh(), delta_accuracy(), retention()])
def phrbench_scorer() -> Callable:
    """``eval phrbench``'s accuracy: the answer extracted and graded by our code; code answers run in our sandbox."""

    async def score(state: TaskState, target: Target) -> Score:
        row = state.metadata
        completion = state.output.completion
        scored = (await anyio.to_thread.run_sync(score_row, row, [completion]))[0]
        return Score(
            value=CORRECT if scored.correct else INCORRECT,
            answer=scored.extracted,
            explanation=f"graded by {scored.grader}",
            metadata={"condition": row["condition"], "question_id": row["question_id"], "grader": scored.grader},
        )

    return score


def _phrbench(
    dataset: str = DEFAULT_DATASET,
    conditions: str = ",".join(CONDITIONS),
    hub: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
) -> Task:
    """PHRBench: ``dataset`` a built folder or repo id, ``conditions`` comma-separated, ``limit`` base questions."""
    rows = instance_rows(dataset, conditions=conditions, hub=hub, revision=revision, limit=limit)
    samples = [Sample(input=r["prompt"], target=r.get("answer") or "", id=r["id"], metadata=r) for r in rows]
    return Task(
        dataset=MemoryDataset(samples, name="phrbench"),
        solver=generate(),
        scorer=phrbench_scorer(),
        epochs=Epochs(PAPER_SAMPLES),  # the paper's sampling (App. B.1); max tokens: eval phrbench's default
        config=GenerateConfig(temperature=PAPER_TEMPERATURE, max_tokens=DEFAULT_MAX_TOKENS),
    )


#: ``phr/phrbench``, the name ``inspect eval phr/phrbench`` asks for (the entry point ``phr`` loads this module).
#: inspect prefixes a task's name with its package only for a package installed in site-packages or an editable
#: install whose distribution is named like the package (ours is phr-toolkit), so the name is given here, and the
#: plain name (prefixed when installed in site-packages) is registered too: the task is found either way.
phrbench = task(name="phrbench")(_phrbench)
task(name="phr/phrbench")(_phrbench)
