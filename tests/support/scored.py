"""Results with their evidence for the leaderboard tests: a submission of gold answers (some wrong) to
PHRBench-mini, scored by the toolkit's own scoring (``phr.eval.pipeline.score_submission``, no reference scorer),
so that push-results and the leaderboard can re-derive every number."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pyarrow.parquet as pq

from tests.support.answers import gold, wrong


@cache
def _mini(folder: str):
    from phr.eval.dataset import load_eval_dataset

    rows = {r["id"]: r for p in (Path(folder) / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()}
    return load_eval_dataset(folder), rows


def scored_result(
    out: Path,
    mini_folder: Path,
    model: str,
    *,
    wrong_if: Callable[[int], bool] = lambda n: False,
    run_id: str | None = None,
    **fields,
) -> Path:
    """Score a submission for ``model`` whose n-th answer is wrong where ``wrong_if(n)``; the scored folder's
    results.json (``run_id`` and further top-level ``fields`` written into it: identity, not evidence)."""
    from phr.config.ops import Scoring
    from phr.eval.pipeline import score_submission
    from phr.eval.submission import load_meta

    ds, rows = _mini(str(mini_folder))
    out.mkdir(parents=True, exist_ok=True)
    sub = out / "submission.jsonl"
    lines = [
        {"instance_id": i.id, "sample": 0, "response": wrong(i) if wrong_if(n) else gold(i, rows)}
        for n, i in enumerate(ds.instances)
    ]
    sub.write_text("".join(json.dumps(x) + "\n" for x in lines))
    meta = load_meta(None, model=model, revision="abc1234")
    _, folder = score_submission(sub, ds, meta, Scoring(scorer="none"), out=out / "scored", progress=False, plots=False)
    path = folder / "results.json"
    data = json.loads(path.read_text())
    data.update({"run_id": run_id or data["run_id"], **fields})
    path.write_text(json.dumps(data, indent=2))
    return path


def score_output(path: Path, mini_folder: Path, out: Path, **kw) -> dict:
    """``score`` a submission of one sample per instance of PHRBench-mini (a JSONL file or a harness's output) without
    the reference scorer, into ``out`` (``kw``: more settings); the result's metrics."""
    from phr.api import plan, run
    from phr.config.ops import ScoreSubmissionConfig

    cfg = ScoreSubmissionConfig(
        submission=path,
        dataset=str(mini_folder),
        model="org/harness-run",
        model_revision="r1",
        samples=1,
        scorer="none",
        out=out,
        plots=False,
        allow_weak_sandbox=True,
        **kw,
    )
    return run(plan(cfg)).result.metrics
