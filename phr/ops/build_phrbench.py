"""`build phrbench`: PHRBench built into a Hub-layout folder (docs/builder.md): the recipe, the generator and judge,
the prompt set and, for a generated build, the base questions and every first-round call, resolved by ``plan``;
``run`` builds exactly that (``phr.builders.phrbench``: ``build_mini`` offline, ``generate_build`` otherwise).

    from phr.api import plan, run
    from phr.config.ops import BuildPhrbenchConfig

    result = run(plan(BuildPhrbenchConfig(out="phrbench-copy")))   # = phr-publish build phrbench --out phrbench-copy
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phr.bench.records import Augmentation, BaseQuestion
from phr.builders.generate import Prompts, first_round_requests
from phr.builders.phrbench import BuildError, BuildResult, GeneratedBuild, build_mini, generate_build
from phr.builders.recipe import Recipe, SourcesMissingError, load_recipe, select_questions
from phr.builders.sources._common import collect_rejected
from phr.config.defaults import is_no_model
from phr.config.ops import DEFAULT_GENERATOR, BuildPhrbenchConfig
from phr.llm import LLM, ChatRequest, as_messages
from phr.ops.plan import Plan
from phr.validation.judge import PARAMS as JUDGE_PARAMS
from phr.validation.judge import judge_prompt


@dataclass
class BuildPhrbenchPlan(Plan[BuildPhrbenchConfig]):
    """A PHRBench build resolved (``plan``): the recipe, the generator and judge specs (the option, else the
    recipe's, else ``DEFAULT_GENERATOR``), the prompt set and, for a generated build, the base questions selected
    (with the sources that fell short and the rows the sources rejected). ``progress`` and ``llm_options`` (extra
    ``LLM`` keyword arguments: retries, concurrency) are the library's knobs beside the config."""

    recipe: Recipe | None = None
    generator: str | None = None
    judge: str | None = None
    prompts: Prompts | None = None
    questions: list[BaseQuestion] = field(default_factory=list)
    short_sources: list[str] = field(default_factory=list)
    source_rejections: list = field(default_factory=list)
    progress: bool = True
    llm_options: dict = field(default_factory=dict)


def plan(cfg: BuildPhrbenchConfig) -> BuildPhrbenchPlan:
    """Resolve a build without calling a model: the recipe, the models and their keys, the output folder, and for a
    generated build the base questions and the first round's generator calls (exact, with their cached share) and
    one judge verdict per premise slot (estimated: the premises are written during the run)."""
    p = BuildPhrbenchPlan(cfg, llm_options=cfg.llm_kwargs())
    pf = p.preflight
    rec = p.recipe = pf.check(f"--recipe {cfg.recipe}", lambda: load_recipe(cfg.recipe))
    p.prompts = pf.check(f"--prompts {cfg.prompts}", lambda: Prompts.load(cfg.prompts))
    if rec is not None:
        p.judge = rec.judge if cfg.judge is None else cfg.judge
        pf.model("judge", p.judge)
        if rec.curated and cfg.generator:
            raise BuildError(f"recipe {rec.name} uses curated premises: --generator does not apply")
        if not rec.curated:
            p.generator = cfg.generator or rec.generator or DEFAULT_GENERATOR
            pf.model("generator", p.generator)
        pf.note(
            f"recipe {rec.name}: {'curated premises (no generator calls)' if rec.curated else 'generated premises'}"
        )
    if cfg.source_dir is not None and not cfg.source_dir.is_dir():
        pf.problem(f"--source-dir {cfg.source_dir}: not a folder")
    pf.output(cfg.out, cfg.overwrite)
    if rec is not None and not rec.curated:  # the sources are checked whatever else is missing: one list
        try:
            _select(p, rec)
        except SourcesMissingError as e:  # every missing source, each its own problem
            for problem in e.problems:
                pf.problem(problem)
        if not pf.problems:
            _plan_premises(p)
    return p


def _select(p: BuildPhrbenchPlan, rec: Recipe) -> None:
    """The base questions of a generated build (no model call): the recipe's sources, selected."""
    cfg = p.config
    with collect_rejected() as source_rejections:
        p.questions, p.short_sources = select_questions(
            rec, cfg.source_dir, online=cfg.online, allow_short=cfg.allow_short, allow_stand_in=cfg.allow_stand_in
        )
    p.source_rejections = source_rejections


def _plan_premises(p: BuildPhrbenchPlan) -> None:
    """The questions of a generated build and its calls: the first round's generator requests (exact, with their
    cached share; a regeneration round adds calls for the slots rejected), and one judge verdict per premise slot
    (estimated: each stood in by its question)."""
    rec, pf = p.recipe, p.preflight
    assert rec is not None and p.generator is not None
    requests = first_round_requests(p.questions, rec, prompts=p.prompts)
    slots = sum(r.n for r in requests)
    pf.note(
        f"{len(p.questions)} base questions, {slots} premise slots; up to {rec.regeneration_rounds} regeneration "
        "round(s)"
    )
    provider = LLM(p.generator, progress=False, show_summary=False, **p.llm_options).provider
    pf.calls(p.generator, requests, provider=provider)
    if not is_no_model(p.judge):
        by_id = {q.id: q for q in p.questions}
        stand_ins = [
            ChatRequest(as_messages(judge_prompt(q, _stand_in(q, i, p.generator))), JUDGE_PARAMS)
            for r in requests
            for q in [by_id[str(r.tag)]]
            for i in range(r.n)
        ]
        pf.calls(str(p.judge), stand_ins, estimated=True)


def _stand_in(q: BaseQuestion, i: int, generator: str) -> Augmentation:
    """A premise slot's stand-in for the judge's token estimate: the question itself."""
    return Augmentation(id=f"{q.id}-{i}", question_id=q.id, kind="truthful", statement=q.question, generator=generator)


def build(cfg: BuildPhrbenchConfig, *, progress: bool = True, llm_options: dict | None = None) -> BuildResult:
    """``run(plan(cfg))`` with the library's knobs: ``progress`` (bars and the call summary) and ``llm_options``
    (extra ``LLM`` keyword arguments, e.g. retries); a plan with problems raises ``PreflightError``."""
    p = plan(cfg)
    p.preflight.raise_problems()
    p.progress = progress
    p.llm_options = {**p.llm_options, **(llm_options or {})}
    return run(p)


def run(p: BuildPhrbenchPlan) -> BuildResult:
    """Build PHRBench as planned: the curated mini offline, or premises from the generator
    (``phr.builders.phrbench.generate_build``: QC order, review, regeneration)."""
    cfg, rec, prompt_set = p.config, p.recipe, p.prompts
    assert rec is not None and prompt_set is not None  # plan made them (a plan with problems is not run)
    opts = {"progress": p.progress, "show_summary": False, **p.llm_options}
    judge_llm = LLM(str(p.judge), **opts) if not is_no_model(p.judge) else None
    if rec.curated:
        return build_mini(cfg.out, overwrite=cfg.overwrite, judge=judge_llm, record=cfg.result_record())
    gen_llm = LLM(str(p.generator), **opts)
    build = GeneratedBuild(
        cfg.out, rec, prompt_set, p.questions, cfg.result_record(), p.short_sources, p.source_rejections,
        skip_review=cfg.skip_review, allow_short=cfg.allow_short, overwrite=cfg.overwrite, progress=p.progress,
    )  # fmt: skip
    return generate_build(build, gen_llm, judge_llm, cfg.rerun(global_args=("--cache", str(gen_llm.cache.path))))
