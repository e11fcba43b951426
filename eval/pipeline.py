"""Score a run folder or a leaderboard submission into results (the code both paths share).

    result, out = score_run("runs/local--smollm2/3f2a1c9e0b1d", Scoring(scorer="none"))
    result, out = score_submission("sub.jsonl", dataset, meta, Scoring(), out="scored/")

The scoring settings are the config group ``phr.config.ops.Scoring`` (any config that has them), or a
``ScoringRun`` of them with what the scoring runs with (the generator's weights, the judge's call options).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from phr.bench.metrics import RESOLUTIONS
from phr.config.defaults import CODE_MEMORY_MB, CODE_TIMEOUT_S, model_or_none
from phr.config.ops import PAPER_SCORER, Scoring
from phr.core.errors import PHRError
from phr.core.fs import sha256_file
from phr.eval.aggregate import aggregate
from phr.eval.dataset import EvalDataset, Instance, load_eval_dataset
from phr.eval.evidence import dataset_fingerprint, sha256_hex
from phr.eval.extract import REL_TOL
from phr.eval.report import RESULTS_FILE, result_json, write_results
from phr.eval.resolution import PROMPT_VERSION, prompt_hash
from phr.eval.results import (
    Bootstrap,
    EvaluationSettings,
    ReportTables,
    Result,
    RunManifest,
    Truncation,
    coverage_of,
    read_result_file,
)
from phr.eval.runner import GENERATIONS_FILE, RESPONSES_FILE, load_eval_dataset_from_meta, load_run
from phr.eval.sandbox import isolation_report
from phr.eval.scorers import JUDGE_MAX_REASKS, EquivalenceGrader, ScoringRun
from phr.eval.scoring import SampleScore, score_responses
from phr.eval.submission import Submission, SubmissionMeta, validate_submission
from phr.eval.trajectory import CLIP, TAU, load_cues, trajectory_choices

#: a run warns when more than this share of its responses hit the output limit
TRUNCATION_WARN_ABOVE = 0.01

SCORES_DIR = "scores"


def _as_run(scoring: ScoringRun | Scoring) -> ScoringRun:
    return scoring if isinstance(scoring, ScoringRun) else ScoringRun(scoring)


def _score(
    instances: Sequence[Instance],
    responses: Mapping[tuple[str, int], str],
    samples: int,
    scoring: ScoringRun | Scoring,
    progress: bool,
    bootstrap: Bootstrap,
) -> tuple[Scoring, list[SampleScore], ReportTables]:
    """Score samples 0..samples-1 of ``instances``: (the scoring settings, the scores, their report tables with
    standard errors from ``bootstrap``)."""
    how = _as_run(scoring)
    scores = score_responses(instances, responses, samples=samples, scoring=how, progress=progress)
    return how.scoring, scores, aggregate(scores, bootstrap)


def _write_scored(
    out: Path,
    result: Result,
    settings: EvaluationSettings,
    scores: list[SampleScore],
    dataset: Sequence[Instance],
    *,
    plots: bool,
    responses_sha256: str,
) -> tuple[Result, Path]:
    """Write ``result`` (with its ``settings`` and its coverage of the ``dataset`` instances) and its ``scores`` into
    ``out``; (the result as read back, ``out``)."""
    result = result.model_copy(update={"settings": settings, "coverage": coverage_of(scores, dataset)})
    fingerprint = dataset_fingerprint(dataset)
    write_results(out, result, scores, plots=plots, responses_sha256=responses_sha256, dataset_fingerprint=fingerprint)
    return read_result_file(out / RESULTS_FILE), out


def scoring_config(scoring: Scoring, allow_weak_sandbox: bool | None = None) -> dict:
    """What the scores depend on, for the results JSON."""

    sandbox: dict = {**isolation_report().record(), "timeout_s": CODE_TIMEOUT_S, "memory_mb": CODE_MEMORY_MB}
    if allow_weak_sandbox is not None:
        sandbox["allow_weak_sandbox"] = allow_weak_sandbox
    cfg: dict = {"sandbox": sandbox}
    scorer, judge = model_or_none(scoring.scorer), model_or_none(scoring.judge)
    cfg["reference_scorer"] = None
    if scorer is not None:
        cfg["reference_scorer"] = {
            "spec": scorer,
            "revision": None,
            "tau": TAU,
            "clip": CLIP,
            "cues_sha256": hashlib.sha256("\n".join(load_cues()).encode()).hexdigest(),
        }
    cfg["resolution_judge"] = None
    if judge is not None:
        cfg["resolution_judge"] = {"spec": judge, "prompt_sha256": prompt_hash(), "max_reasks": JUDGE_MAX_REASKS}
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
    scoring: Scoring,
    *,
    preset: str | None = None,
    generation: dict | None = None,
    samples: int | None = None,
    max_tokens_source: str | None = None,
    truncation: Truncation | None = None,
) -> EvaluationSettings:
    """The settings a result records (docs/evaluation.md)."""
    gen = generation or {}
    scorer, grader, judge = (model_or_none(getattr(scoring, k)) for k in ("scorer", "grader", "judge"))
    return EvaluationSettings(
        preset=preset,
        samples=samples,
        temperature=gen.get("temperature"),
        max_tokens=gen.get("max_tokens"),
        max_tokens_source=max_tokens_source,
        reference_scorer=scorer,
        paper_reference_scorer=PAPER_SCORER,
        reference_scorer_is_paper=scorer == PAPER_SCORER,
        **trajectory_choices(scoring).model_dump(),
        open_ended_rel_tol=REL_TOL,
        open_ended_grader=grader,
        open_ended_grader_prompt_sha256=None if grader is None else EquivalenceGrader.TEMPLATE.version,
        resolution_judge=judge,
        resolution_prompt_version=None if judge is None else PROMPT_VERSION,
        resolution_labels=list(RESOLUTIONS),
        truncation=truncation,
    )


def dataset_of_run(meta: RunManifest, hub: str | os.PathLike | None = None) -> EvalDataset:
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
    scoring: ScoringRun | Scoring,
    *,
    out: str | Path | None = None,
    hub: str | os.PathLike | None = None,
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
    how, scores, report = _score(instances, run.responses, meta.samples, scoring, progress, bootstrap)
    config = {
        "source": "run",
        "conditions": meta.conditions,
        "samples": meta.samples,
        "generation": meta.generation.model_dump(),
        "limit": meta.config.limit,
        "model_spec": meta.model,
        **scoring_config(how),
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
        how,
        preset=preset,
        generation=meta.generation.model_dump(),
        samples=meta.samples,
        max_tokens_source=max_tokens_source,
        truncation=truncation_of(run.path),
    )
    out = Path(out) if out is not None else run.path / SCORES_DIR
    responses = sha256_file(run.path / RESPONSES_FILE) if (run.path / RESPONSES_FILE).exists() else sha256_hex(b"")
    return _write_scored(out, result, settings, scores, ds.instances, plots=plots, responses_sha256=responses)


def score_submission(
    path: str | Path,
    dataset: EvalDataset,
    meta: SubmissionMeta,
    scoring: ScoringRun | Scoring,
    *,
    out: str | Path,
    progress: bool = True,
    plots: bool = True,
    bootstrap: Bootstrap = Bootstrap(),
    validated: Submission | None = None,
    allow_partial: bool = False,
    allow_weak_sandbox: bool | None = None,
) -> tuple[Result, Path]:
    """Validate a submission (phr.eval.submission) against ``dataset``, then score it like a run.
    ``validated``: the submission ``validate_submission`` already returned for these arguments (not read again);
    ``allow_partial``: instances the submission leaves out are not scored (the result's coverage is partial);
    ``allow_weak_sandbox``: whether a weak code sandbox was accepted (recorded)."""

    sub = validated if validated is not None else validate_submission(path, dataset, meta, allow_partial=allow_partial)
    answered = {i for i, _ in sub.responses}
    instances = [i for i in dataset.select(meta.conditions) if i.id in answered]  # all unless allow_partial
    how, scores, report = _score(instances, sub.responses, meta.samples, scoring, progress, bootstrap)
    config = {
        "source": "submission",
        "submission_sha256": sub.sha256,
        "conditions": list(meta.conditions),
        "samples": meta.samples,
        **scoring_config(how, allow_weak_sandbox),
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
    settings = evaluation_settings(how, samples=meta.samples)
    return _write_scored(
        Path(out), result, settings, scores, dataset.instances, plots=plots, responses_sha256=sub.sha256
    )
