"""`eval merge` and `eval score` as operations: score a run folder (or the shards of one, joined) with the settings
the run was started with, those the config asks for replacing them.

    from phr.api import plan, run
    from phr.config.ops import EvalScoreConfig

    done = run(plan(EvalScoreConfig(run=Path("runs/local--smollm2/3f2a1c9e0b1d"), judge="openai:gpt-4o")))

``plan`` loads the run (for `eval merge`: joins the shards in memory, checked, nothing written), resolves the
scoring settings (``scoring_settings``: the run's own from its run.json, another preset's, then what the config
asks for) and checks every model spec and key, the run's dataset and the judge's calls with their cached share.
``run`` writes the merged run folder (merge) and scores it (``phr.eval.pipeline.score_run``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phr.config.ops import SCORING_FIELDS, EvalMergeConfig, EvalScoreConfig, Scoring
from phr.eval.results import Result, RunManifest
from phr.eval.runner import Run, join_shards, load_run, write_joined
from phr.eval.sandbox import isolation_report
from phr.llm.preflight import Preflight
from phr.ops.plan import Plan

RescoreConfig = EvalMergeConfig | EvalScoreConfig


@dataclass
class RescorePlan(Plan[RescoreConfig]):
    """The run to score (``run``: loaded, or the shards joined in memory with their generation ``log_rows``),
    the scoring settings resolved (``scoring``; None: `eval merge --no-score`), the preset and ``max_tokens``
    source the result records, the settings that differ from the run's (``changed``, recorded)."""

    run: Run | None = None
    log_rows: list[dict] = field(default_factory=list)
    scoring: Scoring | None = None
    preset: str | None = None
    max_tokens_source: str | None = None
    changed: dict[str, Any] = field(default_factory=dict)
    head: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return self.head + super().lines()


@dataclass
class RescoreResult:
    """The merged run folder (`eval merge`) and the scores (None: `eval merge --no-score`)."""

    merged: Run | None = None
    result: Result | None = None
    scores: Path | None = None

    def lines(self) -> list[str]:
        if self.merged is None:
            return []
        n = len(self.merged.meta.merged_from or [])
        return [f"merged {n} shards into {self.merged.path} ({len(self.merged.responses)} responses)"]


def scoring_settings(meta: RunManifest, cfg: RescoreConfig) -> tuple[Scoring, str | None, str | None, dict]:
    """The scoring settings of a later step on a run: the run's own (``meta``: its run.json; its stored config,
    the defaults for an older run), another preset's when ``cfg`` names one (the config holds its values), then
    what ``cfg`` was given. (settings, preset, max_tokens source, what differs from the run's own)."""
    stored = meta.settings or {}
    started = stored.get("config") or {}
    own = {k: started.get(k, Scoring.model_fields[k].default) for k in SCORING_FIELDS}
    preset = started.get("preset")
    settings = dict(own)
    if cfg.preset is not None and cfg.preset != preset:  # another preset: its scoring values, then what was given
        preset = cfg.preset
        settings.update(cfg.preset_values())
    settings.update({k: v for k in SCORING_FIELDS if k in cfg.model_fields_set and (v := getattr(cfg, k)) is not None})
    changed = {k: settings[k] for k in SCORING_FIELDS if settings[k] != own[k]}
    if preset != started.get("preset"):
        changed = {"preset": preset, **changed}
    return Scoring(**settings), preset, stored.get("max_tokens_source"), changed


def plan(cfg: RescoreConfig) -> RescorePlan:
    """Load (or join) the run and resolve its scoring (see the module); nothing is written."""
    p = RescorePlan(cfg)
    if isinstance(cfg, EvalMergeConfig):
        p.run, p.log_rows = join_shards(cfg.shards)  # checked in memory: nothing written before the plan passed
        p.head.append(f"{len(cfg.shards)} shards join into one run ({len(p.run.responses)} responses)")
        if not cfg.score:
            return p
    else:
        p.run = load_run(cfg.run)
    _sandbox(p)
    p.scoring, p.preset, p.max_tokens_source, p.changed = scoring_settings(p.run.meta, cfg)
    if p.changed:
        p.head.append(
            "scoring with settings other than the run's: " + ", ".join(f"{k}={v}" for k, v in p.changed.items())
        )
    else:
        p.head.append("scoring with the settings the run was started with")
    _check_scoring(p.preflight, p.run, p.scoring, cfg)
    return p


def _sandbox(p: RescorePlan) -> None:
    """The code sandbox the run's code answers will run in: a line, or a warning when it is weak."""
    report = isolation_report()
    if report.weak:
        p.preflight.warn(report.line().removeprefix("WARNING: "))
    else:
        p.head.append(report.line())


def _check_scoring(pf: Preflight, run: Run, scoring: Scoring, cfg: RescoreConfig) -> None:
    """Every model spec and key, the run's dataset, and the calls of scoring the run's responses."""
    from phr.eval.pipeline import dataset_of_run
    from phr.eval.scoring_plan import add_scoring_calls

    for role in ("scorer", "judge", "grader"):
        pf.model(role, getattr(scoring, role))
    if pf.problems:
        return
    ds = pf.check("the run's dataset", lambda: dataset_of_run(run.meta, cfg.hub))
    if ds is not None:
        by_id = ds.by_id()
        instances = [by_id[i] for i in run.instance_ids if i in by_id]
        add_scoring_calls(pf, instances, run.responses, run.meta.samples, scoring)


def run(p: RescorePlan) -> RescoreResult:
    """Write the merged run (`eval merge`), then score the run with the planned settings."""
    from phr.eval.pipeline import score_run

    cfg = p.config
    assert p.run is not None
    done = RescoreResult()
    path = p.run.path
    if isinstance(cfg, EvalMergeConfig):
        done.merged = write_joined(p.run, p.log_rows, cfg.out)
        path = done.merged.path
    if p.scoring is not None:
        done.result, done.scores = score_run(
            path,
            p.scoring,
            hub=cfg.hub,
            plots=cfg.plots,
            preset=p.preset,
            max_tokens_source=p.max_tokens_source,
            rescored=p.changed or None,
        )
    return done
