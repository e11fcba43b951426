"""`submit` as an operation: plan and score a submission as `score` does (``phr.ops.score``), then publish
its result to the leaderboard results repo (and, with ``model_pr``, a pull request on the model's repo).

    from phr.api import plan, run
    from phr.config.ops import SubmitConfig

    done = run(plan(SubmitConfig(submission=Path("sub.jsonl"), repo="org/results", hub=Path("hub"))))
    print("\\n".join(done.lines()))

``hub`` is the local hub both of the dataset (a repo id) and of the results repo (default: $PHR_HUB_DIR; unset:
the Hub).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from phr.config.ops import SubmitConfig
from phr.ops import score as submission_op
from phr.ops.score import ScoredSubmission, SubmissionPlan


@dataclass
class Submitted:
    """The scored submission, and what publishing it did (one line each)."""

    scored: ScoredSubmission
    published: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return list(self.published)


def plan(cfg: SubmitConfig) -> SubmissionPlan:
    """The submission's plan (``phr.ops.score.plan``)."""
    return submission_op.plan(cfg)


def run(p: SubmissionPlan) -> Submitted:
    """Score the submission, then push its results.json to the results repo (and open the model repo's PR)."""
    from phr.cards.eval_yaml import model_eval_results_yaml
    from phr.config.ops import PushResultsConfig
    from phr.eval.results import normalize
    from phr.leaderboard.repo import open_model_pr, push_results

    cfg = p.config
    assert isinstance(cfg, SubmitConfig)  # plan() takes a SubmitConfig
    scored = submission_op.run(p)
    if cfg.create_pr:  # no write access: the responses and metadata go to the maintainers' queue
        from phr.hub import hub_dir
        from phr.ops.leaderboard_queue import open_submission_pr

        assert p.meta is not None  # the plan loaded it
        meta = {k: v for k, v in p.meta.as_dict().items() if v is not None}
        pr = open_submission_pr(cfg.repo, cfg.submission.read_bytes(), meta, hub=hub_dir(cfg.hub))
        where = pr.pr_url or pr.pr_ref or "(already open)"
        return Submitted(scored, [f"results repo {cfg.repo}: submission pull request {where}; the maintainers' "
                                  "queue (phr-publish leaderboard-queue) scores it and merges it or says why not"])  # fmt: skip
    pushed = PushResultsConfig(
        results=[scored.scores / "results.json"],
        repo=cfg.repo,
        hub=cfg.hub,
        replace=cfg.replace,
        allow_partial=cfg.allow_partial,
        allow_weak_sandbox=cfg.allow_weak_sandbox,
        datasets=[cfg.dataset] if Path(cfg.dataset).is_dir() else [],
    )
    res = push_results(pushed)
    done = Submitted(scored, res.lines())
    if cfg.model_pr:
        model = scored.result["model"]
        pr = open_model_pr(model, model_eval_results_yaml(normalize(scored.result)), to=cfg.hub)
        done.published.append(
            f"model repo {model}: "
            + (f"pull request {pr.pr_url or pr.pr_ref}" if pr.changed else "already holds these results")
        )
    return done
