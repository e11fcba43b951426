"""`score` as an operation: validate a leaderboard submission against its dataset and score it (the runner's
scoring code, docs/submissions.md).

    from phr.api import plan, run
    from phr.config.ops import ScoreSubmissionConfig

    scored = run(plan(ScoreSubmissionConfig(submission=Path("sub.jsonl"), dataset="phrbench", scorer="none")))
    scored.result, scored.scores      # the Result and the folder it was written to (default SUBMISSION.scored/)

``plan`` reads the metadata (the sidecar JSON with the config's values winning), refuses a weak code sandbox for
someone else's code unless ``allow_weak_sandbox``, and checks the scorers' specs and keys, the dataset, the
submission itself and the output folder, with the judge's calls and their cached share. `submit` plans the same
(``phr.ops.submit``), and first refuses a submission that does not cover all three conditions (no
leaderboard entry: it would be refused only after scoring).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from phr.bench.conditions import leaderboard_coverage_problem
from phr.config.ops import ScoreSubmissionConfig, SubmitConfig
from phr.core.errors import PHRError, UsageError
from phr.eval.dataset import EvalDataset, load_eval_dataset
from phr.eval.results import Result
from phr.eval.sandbox import isolation_report
from phr.eval.submission import Submission, SubmissionError, SubmissionMeta, load_meta, validate_submission
from phr.llm.preflight import Preflight, writable
from phr.ops.plan import Plan


@dataclass
class SubmissionPlan(Plan[ScoreSubmissionConfig]):
    """A submission resolved: its metadata, dataset, the validated submission and the output folder."""

    meta: SubmissionMeta | None = None
    dataset: EvalDataset | None = None
    submission: Submission | None = None
    out: Path | None = None
    head: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return self.head + super().lines()


@dataclass
class ScoredSubmission:
    """The result of a scored submission and the folder it was written to."""

    result: Result
    scores: Path


def plan(cfg: ScoreSubmissionConfig) -> SubmissionPlan:
    """Resolve a submission's scoring without scoring it (see the module)."""
    if not cfg.submission.is_file():
        raise UsageError(f"no such submission file: {cfg.submission}")
    p = SubmissionPlan(cfg, head=[cfg.preset_line()])
    p.meta = load_meta(
        cfg.meta,
        submission=cfg.submission,
        model=cfg.model,
        revision=cfg.model_revision,
        link=cfg.link,
        samples=cfg.samples,
        conditions=cfg.conditions,
        submitted_by=cfg.submitted_by,
        notes=cfg.notes,
    )
    if isinstance(cfg, SubmitConfig) and (why := leaderboard_coverage_problem(p.meta.conditions)):
        raise SubmissionError(f"{cfg.submission}: {why}; `phr-publish score` scores it without publishing")
    _sandbox(p, cfg)  # after the metadata: bad input first
    p.out = cfg.out or cfg.submission.with_name(cfg.submission.stem + ".scored")
    _check(p.preflight, p, cfg)
    return p


def _sandbox(p: SubmissionPlan, cfg: ScoreSubmissionConfig) -> None:
    """Someone else's code runs only in a strong sandbox, or a weak one with ``allow_weak_sandbox`` (warned)."""
    report = isolation_report()
    if report.weak and not cfg.allow_weak_sandbox:
        raise UsageError(report.refusal())
    if report.weak:
        p.preflight.warn(report.line().removeprefix("WARNING: "))
    else:
        p.head.append(report.line())


def _check(pf: Preflight, p: SubmissionPlan, cfg: ScoreSubmissionConfig) -> None:
    from phr.eval.scoring_plan import add_scoring_calls

    for role in ("scorer", "judge", "grader"):
        pf.model(role, getattr(cfg, role))
    p.dataset = pf.check(
        f"--dataset {cfg.dataset}", lambda: load_eval_dataset(cfg.dataset, revision=cfg.revision, hub=cfg.hub)
    )
    meta, ds = p.meta, p.dataset
    if ds is not None and meta is not None and not pf.problems:
        p.submission = pf.check(
            str(cfg.submission),
            lambda: validate_submission(cfg.submission, ds, meta, allow_partial=cfg.allow_partial),
        )
        if p.submission is not None:
            add_scoring_calls(pf, ds.select(meta.conditions), p.submission.responses, meta.samples, cfg)
    out = p.out
    pf.check("--out", lambda: writable(out or "."))


def run(p: SubmissionPlan) -> ScoredSubmission:
    """Score the planned submission into its output folder."""
    from phr.eval.pipeline import score_submission

    cfg = p.config
    if p.dataset is None or p.meta is None or p.out is None:
        raise PHRError("the plan of this submission is incomplete (it has problems): nothing to score")
    result, where = score_submission(
        cfg.submission,
        p.dataset,
        p.meta,
        cfg,
        out=p.out,
        plots=cfg.plots,
        validated=p.submission,
        allow_partial=cfg.allow_partial,
        allow_weak_sandbox=cfg.allow_weak_sandbox,
    )
    return ScoredSubmission(result, where)
