"""`eval hr1`: Hallucination-R1's robustness tables (docs/hr1.md): the evaluation sets, the paraphraser, QA
model and judge(s), K and the tables.

    from phr.api import plan, run
    from phr.config.ops import EvalHr1Config

    result = run(plan(EvalHr1Config(preset="mini")))    # what `phr-publish eval hr1` does, byte for byte
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phr.builders.hr1_mini import MINI_GRADING, MINI_PARAPHRASER, describe_eval, load_mini
from phr.config.defaults import is_no_model, model_or_none
from phr.config.ops import EvalHr1Config
from phr.core.errors import UsageError
from phr.eval.hr1_metrics import MetricSettings
from phr.eval.hr1_runner import HR1EvalResult, evaluate, table_settings
from phr.hr1.pipeline import RunPlan
from phr.hr1.plan import add_calls
from phr.hr1.records import HQuestion, ParaphraseResult
from phr.hr1.settings import Grading
from phr.ops._hr1 import HR1Plan, given, known, limited, load_sources, preflight, rerun_of, with_preset


@dataclass
class EvalHr1Plan(HR1Plan[EvalHr1Config]):
    """``eval hr1``: the evaluation sets, the roles (``curated``: the mini's paraphrases and labels, no paraphraser
    or B.2 judge), the run plan (K, QA scope, grading) and the tables' settings."""

    sets: dict[str, list[HQuestion]] = field(default_factory=dict)
    paraphraser: str = ""
    judge: str = ""
    judges: list[str] = field(default_factory=list)
    curated: dict[str, list[ParaphraseResult]] | None = None
    steps: RunPlan = field(default_factory=RunPlan)
    metrics: MetricSettings = field(default_factory=MetricSettings)


def plan(cfg: EvalHr1Config) -> EvalHr1Plan:
    cfg, line = with_preset(cfg, bool(cfg.dataset))
    extra = [j.strip() for j in (cfg.judges or "").split(",") if j.strip()]
    paraphraser, judge, curated, header = cfg.paraphraser, cfg.judge, None, [line]
    mini = load_mini() if cfg.preset == "mini" else None
    if mini is not None:
        if not given(cfg, "paraphraser"):  # the maintainers' paraphrases and labels: no paraphraser, no judge
            paraphraser, curated = MINI_PARAPHRASER, mini.paraphrases
            judge = cfg.judge if given(cfg, "judge") else "none"
        elif not given(cfg, "judge"):
            raise UsageError(
                f"--paraphraser {cfg.paraphraser} on Hallucination-R1-mini: its paraphrases need a consistency "
                f"judge; add --judge SPEC (offline: --judge {cfg.qa_model})"
            )
    steps, metrics = table_settings(cfg.table, cfg.k, MINI_GRADING if mini else Grading(fuzzy=cfg.fuzzy), cfg)
    para = None if curated is not None else paraphraser
    if mini is not None:
        header.append(describe_eval(mini, paraphraser=para, judge=model_or_none(judge), qa=cfg.qa_model, k=steps.k,
                                    limit=cfg.limit))  # fmt: skip
    roles = {"paraphraser": para, "qa model": cfg.qa_model, "judge": model_or_none(judge)}
    roles |= {f"judge {n + 2}": j for n, j in enumerate(extra)}
    pf = preflight(roles, cfg.out, cfg.overwrite)
    loads = mini.loads if mini is not None else pf.check("--dataset", lambda: load_sources(cfg.dataset, cfg.online))
    sets = {ld.source: limited(ld.questions, cfg.limit) for ld in loads or []}
    if loads is not None and len(sets) != len(loads):
        raise UsageError("give each --dataset source once")
    if loads is not None and not pf.problems:
        if mini is None:
            for ld in loads:
                pf.note(ld.summary())
        questions = [q for qs in sets.values() for q in qs]
        pf.note(f"{len(questions)} questions x K {steps.k} paraphrases" + (" (curated)" if curated else ""))
        add_calls(pf, questions, steps, paraphraser=para, judge=model_or_none(judge), qa=cfg.qa_model,
                  judged=para is not None or not is_no_model(judge), asked=steps.k,
                  known=None if curated is None else known(curated), llm_options=cfg.llm_kwargs())  # fmt: skip
        for j in extra:
            add_calls(pf, questions, steps, judge=j, judged=True, grade=False, llm_options=cfg.llm_kwargs())
    return EvalHr1Plan(
        config=cfg, preflight=pf, out=cfg.out, header=header, rerun=rerun_of(cfg),
        resume=rerun_of(cfg, overwrite=True) if cfg.partial else rerun_of(cfg), sets=sets, paraphraser=paraphraser,
        judge=judge, judges=extra, curated=curated, steps=steps, metrics=metrics,
    )  # fmt: skip


def run(p: EvalHr1Plan) -> HR1EvalResult:
    cfg = p.config
    res = evaluate(
        p.sets, paraphraser=p.paraphraser, qa=cfg.qa_model, judge=p.judge, out=p.out, table=cfg.table, plan=p.steps,
        metrics=p.metrics, judges=p.judges, human=cfg.human, diversity=cfg.diversity, overwrite=cfg.overwrite,
        llm_options=cfg.llm_kwargs(), partial=cfg.partial, paraphrases=p.curated, rerun=p.resume,
        config=cfg.result_record(),
    )  # fmt: skip
    res.settings = p.settings
    return res
