"""The maintainers' queue: model authors submit without write access, the maintainers score every number.

    from phr.api import plan, run
    from phr.config.ops import LeaderboardQueueConfig

    done = run(plan(LeaderboardQueueConfig(repo="org/results", dataset="phrbench", hub=Path("hub"))))
    print("\\n".join(done.lines()))

A model author runs ``submit --create-pr``: a pull request on the results repo holding their responses and
metadata (``submissions/<model>/<sha12>.jsonl`` and ``.meta.json``; ``open_submission_pr``). ``leaderboard-queue``
takes every open pull request, oldest first:

1. a pull request that holds no submission is left open (listed ``skipped``);
2. the submission is validated and scored here, by the `score` operation (the maintainer's dataset, scorer and
   sandbox); every problem (malformed lines, instances left out: the coverage, a weak sandbox) closes it with a
   comment stating them all;
3. a scored submission is published with ``push_results`` (the result re-derived from its evidence, the evidence
   committed) and the pull request is merged (its responses stay in the repo, so anyone can rescore them), with a
   comment giving the result.

Decided pull requests are never opened again, so a rerun changes nothing; a run killed in the middle is completed by
the next (publishing a result twice is a no-op, and merging waits for it).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from phr.config.ops import LeaderboardQueueConfig, PushResultsConfig, ScoreSubmissionConfig
from phr.core.errors import PHRError
from phr.eval.results import model_slug
from phr.hub import PushResult, hub_dir
from phr.hub.prs import PullRequest, close_pr, list_pull_requests, merge_pr, open_pr, pr_changes
from phr.ops.plan import StepPlan

SUBMISSIONS_DIR = "submissions"
META_SUFFIX = ".meta.json"
REPO_TYPE = "dataset"


def submission_files(responses: bytes, meta: dict) -> dict[str, bytes]:
    """The files of a submission pull request: the responses and their metadata, named by the model and the
    responses' SHA-256 (``submissions/<model>/<sha12>.jsonl``)."""
    digest = hashlib.sha256(responses).hexdigest()[:12]
    base = f"{SUBMISSIONS_DIR}/{model_slug(str(meta.get('model') or 'model'))}/{digest}"
    return {f"{base}.jsonl": responses, f"{base}{META_SUFFIX}": (json.dumps(meta, indent=2) + "\n").encode()}


def open_submission_pr(
    repo_id: str, responses: bytes, meta: dict, *, hub: Path | None, endpoint: str | None = None
) -> PushResult:
    """Open a pull request on the results repo ``repo_id`` holding a submission (``submission_files``)."""
    model = meta.get("model") or "a model"
    return open_pr(
        repo_id,
        REPO_TYPE,
        submission_files(responses, meta),
        message=f"Submission: {model} (phr-publish submit --create-pr)",
        hub=hub,
        endpoint=endpoint,
    )


@dataclass
class QueuePlan(StepPlan[LeaderboardQueueConfig]):
    """The queue of a results repo (``LeaderboardQueueConfig``)."""


@dataclass
class Decision:
    """What the queue did with one pull request."""

    num: int
    model: str
    verdict: str  # merged | closed | skipped
    detail: str


@dataclass
class QueueRun:
    """Every pull request the queue looked at, in order."""

    repo: str
    decisions: list[Decision] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One summary table: PR, model, verdict, detail."""
        if not self.decisions:
            return [f"{self.repo}: no open pull requests"]
        rows = [("PR", "model", "verdict", "detail")]
        rows += [(f"#{d.num}", d.model, d.verdict, d.detail) for d in self.decisions]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        out = ["  ".join([*(c.ljust(w) for c, w in zip(r[:3], widths)), r[3]]).rstrip() for r in rows]
        counts = {v: sum(d.verdict == v for d in self.decisions) for v in ("merged", "closed", "skipped")}
        return [*out, f"{self.repo}: " + ", ".join(f"{n} {v}" for v, n in counts.items())]


def plan(cfg: LeaderboardQueueConfig) -> QueuePlan:
    from phr.hub.repo import check_repo_id

    check_repo_id(cfg.repo)
    return QueuePlan(cfg)


def run(p: QueuePlan) -> QueueRun:
    """Decide every open pull request of the results repo (see the module)."""
    cfg = p.config
    hub = hub_dir(cfg.hub)
    done = QueueRun(cfg.repo)
    for pr in list_pull_requests(cfg.repo, REPO_TYPE, hub=hub, endpoint=cfg.endpoint, status="open"):
        done.decisions.append(_decide(cfg, hub, pr))
    return done


def _submission(files: dict[str, bytes]) -> tuple[str, bytes, bytes] | None:
    """The one submission a pull request adds: (its path, responses, metadata), or None."""
    subs = [
        p
        for p in files
        if p.startswith(SUBMISSIONS_DIR + "/") and p.endswith(".jsonl") and p[: -len(".jsonl")] + META_SUFFIX in files
    ]
    if len(subs) != 1:
        return None
    path = subs[0]
    return path, files[path], files[path[: -len(".jsonl")] + META_SUFFIX]


def _decide(cfg: LeaderboardQueueConfig, hub: Path | None, pr: PullRequest) -> Decision:
    found = _submission(pr_changes(cfg.repo, REPO_TYPE, pr.num, hub=hub, endpoint=cfg.endpoint))
    if found is None:
        return Decision(pr.num, "—", "skipped", f"not a submission (no {SUBMISSIONS_DIR}/<model>/<id>.jsonl + meta)")
    path, responses, meta_bytes = found
    try:
        model = str(json.loads(meta_bytes).get("model") or "—")
    except (ValueError, AttributeError):
        model = "—"
    with tempfile.TemporaryDirectory(prefix="phr-queue-") as tmp:
        sub = Path(tmp) / "submission.jsonl"
        sub.write_bytes(responses)
        (Path(tmp) / f"submission{META_SUFFIX}").write_bytes(meta_bytes)
        problems, result = _score(cfg, hub, sub)
        if not problems:
            assert result is not None
            problems = _publish(cfg, hub, result)
            shown = _summary(result)
    problems = [" ".join(p.replace(str(sub), path).split()) for p in problems]  # the PR's file, one line each
    if problems:
        text = "\n".join(f"- {p}" for p in problems)
        close_pr(cfg.repo, REPO_TYPE, pr.num, f"Closed by the maintainers' queue ({path}):\n{text}", hub=hub,
                 endpoint=cfg.endpoint)  # fmt: skip
        return Decision(pr.num, model, "closed", "; ".join(problems))
    merge_pr(cfg.repo, REPO_TYPE, pr.num, comment=f"Scored by the maintainers' queue: {shown}", hub=hub,
             endpoint=cfg.endpoint)  # fmt: skip
    return Decision(pr.num, model, "merged", shown)


def _score(cfg: LeaderboardQueueConfig, hub: Path | None, sub: Path) -> tuple[list[str], Path | None]:
    """Score the submission with the `score` operation: (every problem, none) or ([], its results.json)."""
    from phr.config.ops import SCORING_FIELDS
    from phr.ops import score as submission_op

    scoring = {k: getattr(cfg, k) for k in SCORING_FIELDS}
    score = ScoreSubmissionConfig(
        submission=sub,
        dataset=cfg.dataset,
        revision=cfg.revision,
        hub=hub,
        plots=False,
        allow_weak_sandbox=cfg.allow_weak_sandbox,
        **scoring,
    )
    try:
        p = submission_op.plan(score)
        if p.preflight.problems:
            return [str(x) for x in p.preflight.problems], None
        scored = submission_op.run(p)
    except PHRError as e:
        return [str(e)], None
    return [], scored.scores / "results.json"


def _publish(cfg: LeaderboardQueueConfig, hub: Path | None, result: Path) -> list[str]:
    """Publish the scored result with its evidence to main (``push_results``): [] or the problems."""
    from phr.leaderboard.repo import push_results

    datasets = [cfg.dataset] if Path(cfg.dataset).is_dir() else []
    push = PushResultsConfig(
        results=[result],
        repo=cfg.repo,
        hub=hub,
        endpoint=cfg.endpoint,
        replace=True,
        datasets=datasets,
        allow_weak_sandbox=cfg.allow_weak_sandbox,
        message=f"Add the maintainers' scoring of {result.parent.name}",
    )
    try:
        push_results(push)
    except PHRError as e:
        return [str(e)]
    return []


def _summary(result_path: Path) -> str:
    from phr.eval.results import read_result_file

    res = read_result_file(result_path)
    m = res.metrics
    acc = ", ".join(f"{k} {m[k]:.3f}" for k in ("accuracy_b", "accuracy_bt", "accuracy_bh") if k in m)
    return f"{acc}; coverage {res.coverage_text()}; run {res.run_id}"
