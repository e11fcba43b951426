"""PHRBench in the harnesses people already evaluate with: lm-evaluation-harness and inspect_ai (docs/harnesses.md).

Both read the same instances as ``eval phrbench`` (``phr.eval.dataset.load_eval_dataset``: a built folder, a local
hub repo or a Hub repo), prompt with the same text (the instance's ``prompt``, one user turn, the model's chat
template) and score with the same code (``phr.eval.scorers.AccuracyScorer``: answer extraction and grading, code
answers run only in our sandbox), and report the same metrics (``phr.eval.aggregate``: accuracy per condition,
H - T and retention). Their outputs (an lm-eval ``--log_samples`` file, an inspect log) are leaderboard submissions
for ``phr-publish score`` (``phr.eval.harness_logs``).

    lm_eval --model hf --model_args pretrained=DIR --apply_chat_template --tasks phrbench \\
        --include_path "$(python -m phr.eval.harness lm-eval-tasks)"
    inspect eval "$(python -m phr.eval.harness inspect-task)" --model hf/DIR -M do_sample=false
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def lm_eval_tasks() -> Path:
    """The folder to pass to lm-eval's ``--include_path`` (its tasks: phrbench, phrbench_b, phrbench_bt,
    phrbench_bh)."""
    return Path(str(resources.files("phr.eval.harness").joinpath("lm_eval_tasks")))


def inspect_task() -> str:
    """The task file and name for ``inspect eval`` (``<file>@phrbench``)."""
    return f"{resources.files('phr.eval.harness').joinpath('inspect_task.py')}@phrbench"
