"""`build hr1-paraphrases`: Algorithm 1's paraphrase corpus (docs/hr1.md): the sources' questions (or
Hallucination-R1-mini's), the paraphraser, QA model and judge, K paraphrases per question."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phr.builders.hr1 import HR1BuildResult, build_paraphrase_corpus
from phr.builders.hr1_mini import Mini, build_mini, describe, load_mini, mini_plan
from phr.builders.hr1_sources import LoadResult
from phr.config.defaults import model_or_none
from phr.config.ops import BuildHr1ParaphrasesConfig
from phr.core.errors import UsageError
from phr.hr1.pipeline import RunPlan
from phr.hr1.plan import add_calls
from phr.hr1.settings import Grading
from phr.ops._hr1 import HR1Plan, given, known, limited, load_sources, model_build, preflight, rerun_of, with_preset


@dataclass
class ParaphrasesPlan(HR1Plan[BuildHr1ParaphrasesConfig]):
    """``build hr1-paraphrases``: the sources' questions (or the mini), the roles and the run plan."""

    loads: list[LoadResult] = field(default_factory=list)
    steps: RunPlan = field(default_factory=RunPlan)
    qa: str | None = None
    mini: Mini | None = None


def plan(cfg: BuildHr1ParaphrasesConfig) -> ParaphrasesPlan:
    cfg, line = with_preset(cfg, bool(cfg.source), "smoke" if given(cfg, "paraphraser", "judge") else "mini")
    qa = model_or_none(cfg.qa_model)
    common: dict[str, Any] = {"config": cfg, "rerun": rerun_of(cfg), "qa": qa}
    if cfg.preset == "mini":
        if qa is None:
            raise UsageError("--preset mini answers with a QA model: give --qa-model SPEC (not none)")
        mini, steps = load_mini(), mini_plan(cfg, cfg.k)
        out = cfg.out or Path("hr1-mini")
        pf = preflight({"qa model": qa}, out, cfg.overwrite)
        if not pf.problems:  # the QA model answers every question and (at most) its consistent paraphrases
            add_calls(pf, mini.questions, steps, qa=qa, asked=steps.k, grade=False, known=known(mini.paraphrases),
                      llm_options=cfg.llm_kwargs())  # fmt: skip
        return ParaphrasesPlan(
            **common,
            preflight=pf,
            out=out,
            loads=mini.loads,
            steps=steps,
            mini=mini,
            header=[line, describe(mini, steps)],
        )
    out = cfg.out or Path("hr1-paraphrases")
    roles = {"paraphraser": cfg.paraphraser, "qa model": qa, "judge": cfg.judge}
    pf = preflight(roles, out, cfg.overwrite, (f"K {cfg.k}, max_tokens {cfg.max_tokens}",))
    steps = RunPlan(k=cfg.k, decoding=cfg, grading=Grading(fuzzy=cfg.fuzzy), qa_scope="all")
    loads = pf.check("--source", lambda: load_sources(cfg.source, cfg.online))
    if loads is not None and not pf.problems:
        for ld in loads:
            pf.note(ld.summary())
        questions = [q for ld in loads for q in limited(ld.questions, cfg.limit)]
        pf.note(f"{len(questions)} questions x K {cfg.k} paraphrases")
        add_calls(pf, questions, steps, paraphraser=cfg.paraphraser, judge=cfg.judge, qa=qa, asked=cfg.k,
                  llm_options=cfg.llm_kwargs())  # fmt: skip
    return ParaphrasesPlan(**common, preflight=pf, out=out, header=[line], loads=loads or [], steps=steps)


def run(p: ParaphrasesPlan) -> HR1BuildResult:
    cfg = p.config
    if p.mini is not None:
        assert p.qa is not None
        res = build_mini(p.out, p.steps, qa=p.qa, overwrite=cfg.overwrite, diversity=cfg.diversity,
                         llm_options=cfg.llm_kwargs(), mini=p.mini, config=cfg.result_record())  # fmt: skip
    else:
        res = build_paraphrase_corpus(
            p.out, p.loads, paraphraser=cfg.paraphraser, qa=p.qa, smoke=cfg.preset == "smoke", diversity=cfg.diversity,
            **model_build(p),
        )  # fmt: skip
    res.settings = p.settings
    return res
