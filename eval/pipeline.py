"""Score a run folder or a leaderboard submission into results (the code both paths share).

result, out = score_run("runs/local--smollm2/3f2a1c9e0b1d", ScoreOptions(judge=None))
result, out = score_submission("sub.jsonl", "ORG/phrbench", meta, ScoreOptions(), out="scored/")
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from phr.bench.metrics import RESOLUTIONS
from phr.core.errors import PHRError
from phr.eval.aggregate import aggregate
from phr.eval.dataset import EvalDataset, load_eval_dataset
from phr.eval.report import result_json, write_results
from phr.eval.resolution import PROMPT_VERSION, prompt_hash
from phr.eval.results import Bootstrap, EvaluationSettings, Result, RunManifest, Truncation, coverage_of
from phr.eval.runner import GENERATIONS_FILE, PAPER_SCORER, load_eval_dataset_from_meta, load_run
from phr.eval.sandbox import isolation_report
from phr.eval.scorers import EquivalenceGrader
from phr.eval.scoring import ScoreOptions, score_responses
from phr.eval.submission import Submission, validate_submission
from phr.eval.trajectory import CLIP, TAU, TrajectorySettings, load_cues

#: a run warns when more than this share of its responses hit the output limit
TRUNCATION_WARN_ABOVE = 0.01

SCORES_DIR = "scores"


def _spec_of(x) -> str | None:
    return x if x is None or isinstance(x, str) else getattr(x, "spec", type(x).__name__)


def scoring_config(options: ScoreOptions) -> dict:
    """What the scores depend on, for the results JSON."""

    sandbox = {**isolation_report().record(), "timeout_s": options.code_timeout_s, "memory_mb": options.code_memory_mb}
    if options.allow_weak_sandbox is not None:
        sandbox["allow_weak_sandbox"] = options.allow_weak_sandbox
    cfg: dict = {"sandbox": sandbox}
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


def truncation_of(run_dir: Path) -> Truncation | None:
    """The share of a run's responses cut at the output limit (``finish_reason == "length"``)."""
    path = Path(run_dir) / GENERATIONS_FILE
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    known = [r for r in rows if r.get("finish_reason") is not None]
    cut = sum(1 for r in known if r["finish_reason"] == "length")
    share = round(cut / len(known), 6) if known else None
    warn = share is not None and share > TRUNCATION_WARN_ABOVE
    return Truncation(responses=len(known), truncated=cut, share=share, warn_above=TRUNCATION_WARN_ABOVE, warning=warn)


def evaluation_settings(
    options: ScoreOptions,
    *,
    preset: str | None = None,
    generation: dict | None = None,
    samples: int | None = None,
    max_tokens_source: str | None = None,
    truncation: Truncation | None = None,
) -> EvaluationSettings:
    """The settings a result records (docs/evaluation.md)."""
    gen = generation or {}
    scorer = _spec_of(options.scorer) if isinstance(options.scorer, str) or options.scorer is None else None
    if scorer is None and options.scorer is not None:
        prov = getattr(options.scorer, "provider", None)
        scorer = getattr(prov, "spec", None)
    traj = options.trajectory or TrajectorySettings()
    grader = options.grader
    grader_spec = (
        None if grader is None else (grader.llm.spec if isinstance(grader, EquivalenceGrader) else _spec_of(grader))
    )
    return EvaluationSettings(
        preset=preset,
        samples=samples,
        temperature=gen.get("temperature"),
        max_tokens=gen.get("max_tokens"),
        max_tokens_source=max_tokens_source,
        reference_scorer=scorer,
        paper_reference_scorer=PAPER_SCORER,
        reference_scorer_is_paper=scorer == PAPER_SCORER,
        **asdict(traj),
        open_ended_rel_tol=options.rel_tol,
        open_ended_grader=grader_spec,
        open_ended_grader_prompt_sha256=None if grader is None else EquivalenceGrader.TEMPLATE.version,
        resolution_judge=_spec_of(options.judge),
        resolution_prompt_version=None if options.judge is None else PROMPT_VERSION,
        resolution_labels=list(RESOLUTIONS),
        truncation=truncation,
    )


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
    preset: str | None = None,
    max_tokens_source: str | None = None,
    rescored: dict | None = None,
) -> tuple[Result, Path]:
    """Score a run folder (unsharded or merged) into ``out`` (default RUN/scores); standard errors from
    ``bootstrap``; the result's ``settings`` record ``preset``, the truncation share and every open choice;
    ``rescored``: the scoring settings asked for that differ from those the run was started with (recorded)."""
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
        **({"rescored_with": rescored} if rescored else {}),
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
    settings = evaluation_settings(
        options,
        preset=preset,
        generation=meta.generation.model_dump(),
        samples=meta.samples,
        max_tokens_source=max_tokens_source,
        truncation=truncation_of(run.path),
    )
    result = result.model_copy(update={"settings": settings, "coverage": coverage_of(instances, ds.instances)})
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
    validated: Submission | None = None,
    allow_partial: bool = False,
) -> tuple[Result, Path]:
    """Validate a submission (phr.eval.submission) against ``dataset``, then score it like a run.
    ``validated``: the submission ``validate_submission`` already returned for these arguments (not read again);
    ``allow_partial``: instances the submission leaves out are not scored (the result's coverage is partial)."""

    sub = validated if validated is not None else validate_submission(path, dataset, meta, allow_partial=allow_partial)
    answered = {i for i, _ in sub.responses}
    instances = [i for i in dataset.select(meta.conditions) if i.id in answered]  # all unless allow_partial
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
    settings = evaluation_settings(options, samples=meta.samples)
    result = result.model_copy(update={"settings": settings, "coverage": coverage_of(instances, dataset.instances)})
    write_results(out, result, scores, plots=plots)
    return result, Path(out)
