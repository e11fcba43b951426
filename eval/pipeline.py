"""Score a run folder or a leaderboard submission into results (the code both paths share).

result, out = score_run("runs/local--smollm2/3f2a1c9e0b1d", ScoreOptions(judge=None))
result, out = score_submission("sub.jsonl", "ORG/phrbench", meta, ScoreOptions(), out="scored/")
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from phr.core.errors import PHRError
from phr.eval.aggregate import aggregate
from phr.eval.dataset import EvalDataset, load_eval_dataset
from phr.eval.report import result_json, write_results
from phr.eval.resolution import prompt_hash
from phr.eval.results import Bootstrap, Result, RunManifest
from phr.eval.runner import load_eval_dataset_from_meta, load_run
from phr.eval.sandbox import detect_isolation
from phr.eval.scoring import ScoreOptions, score_responses
from phr.eval.submission import validate_submission
from phr.eval.trajectory import CLIP, TAU, load_cues

SCORES_DIR = "scores"


def _spec_of(x) -> str | None:
    return x if x is None or isinstance(x, str) else getattr(x, "spec", type(x).__name__)


def scoring_config(options: ScoreOptions) -> dict:
    """What the scores depend on, for the results JSON."""

    cfg: dict = {
        "sandbox": {
            "isolation": detect_isolation(),
            "timeout_s": options.code_timeout_s,
            "memory_mb": options.code_memory_mb,
        }
    }
    if options.scorer is not None:
        scorer = options.scorer
        cues = getattr(scorer, "cues", None) or load_cues()
        prov = getattr(scorer, "provider", None)
        spec = scorer if isinstance(scorer, str) else f"{prov.kind}:{prov.model}"
        cfg["reference_scorer"] = {
            "spec": spec,
            "revision": getattr(prov, "revision", None),
            "tau": getattr(scorer, "tau", TAU),
            "clip": getattr(scorer, "clip", CLIP),
            "cues_sha256": hashlib.sha256("\n".join(cues).encode()).hexdigest(),
        }
    else:
        cfg["reference_scorer"] = None
    if options.judge is not None:
        cfg["resolution_judge"] = {
            "spec": _spec_of(options.judge),
            "prompt_sha256": prompt_hash(),
            "max_reasks": options.judge_max_reasks,
        }
    else:
        cfg["resolution_judge"] = None
    return cfg


def dataset_of_run(meta: RunManifest, hub=None) -> EvalDataset:
    """The dataset a run used: the same folder if its files are unchanged, else the repo at the revision."""
    ds = load_eval_dataset_from_meta(meta)
    if ds is not None:
        return ds
    ref = meta.dataset
    try:
        ds = load_eval_dataset(ref.id, revision=ref.revision, hub=hub)
    except PHRError as e:
        raise PHRError(
            f"the run's dataset ({ref.id} @ {ref.revision}, folder {ref.path}) is gone "
            f"or changed, and cannot be fetched: {e}"
        ) from None
    if ds.files != ref.files:
        raise PHRError(f"dataset {ref.id} @ {ref.revision} does not have the files the run used")
    return ds


def score_run(
    run_dir: str | Path,
    options: ScoreOptions = ScoreOptions(),
    *,
    out: str | Path | None = None,
    hub=None,
    source_url: str | None = None,
    submitted_by: str | None = None,
    notes: str | None = None,
    progress: bool = True,
    plots: bool = True,
    bootstrap: Bootstrap = Bootstrap(),
) -> tuple[Result, Path]:
    """Score a run folder (unsharded or merged) into ``out`` (default RUN/scores); standard errors from
    ``bootstrap``."""
    run = load_run(run_dir)
    meta = run.meta
    if meta.shard:
        i, n = meta.shard
        raise PHRError(f"{run.path} is shard {i}/{n}: merge the shards first (phr-publish eval merge)")
    ds = dataset_of_run(run.meta, hub)
    by_id = ds.by_id()
    instances = [by_id[i] for i in run.instance_ids]
    scores = score_responses(instances, run.responses, samples=meta.samples, options=options, progress=progress)
    report = aggregate(scores, bootstrap)
    config = {
        "source": "run",
        "conditions": meta.conditions,
        "samples": meta.samples,
        "generation": meta.generation.model_dump(),
        "limit": meta.config.limit,
        "model_spec": meta.model,
        **scoring_config(options),
    }
    result = result_json(
        model=meta.model,
        revision=meta.model_revision,
        dataset=meta.dataset.model_dump(),
        report=report,
        config=config,
        run_id=meta.run_id,
        source_url=source_url,
        submitted_by=submitted_by,
        notes=notes,
    )
    out = Path(out) if out is not None else run.path / SCORES_DIR
    write_results(out, result, scores, plots=plots)
    return result, out


def score_submission(
    path: str | Path,
    dataset: EvalDataset,
    meta,
    options: ScoreOptions = ScoreOptions(),
    *,
    out: str | Path,
    progress: bool = True,
    plots: bool = True,
    bootstrap: Bootstrap = Bootstrap(),
) -> tuple[Result, Path]:
    """Validate a submission (phr.eval.submission) against ``dataset``, then score it like a run."""

    sub = validate_submission(path, dataset, meta)
    instances = dataset.select(meta.conditions)
    scores = score_responses(instances, sub.responses, samples=meta.samples, options=options, progress=progress)
    report = aggregate(scores, bootstrap)
    config = {
        "source": "submission",
        "submission_sha256": sub.sha256,
        "conditions": list(meta.conditions),
        "samples": meta.samples,
        **scoring_config(options),
    }
    ref = {**dataset.ref(), "files": dataset.files}
    result = result_json(
        model=meta.model,
        revision=meta.revision,
        dataset=ref,
        report=report,
        config=config,
        run_id=f"sub-{sub.sha256[:12]}",
        source_url=meta.link,
        submitted_by=meta.submitted_by,
        notes=meta.notes,
        model_access=meta.model_access,
    )
    write_results(out, result, scores, plots=plots)
    return result, Path(out)
