"""The Hallucination-R1 operations (docs/hr1.md): ``build hr1-paraphrases``, ``build hr1-sft``, ``build hr1-grpo``
and ``eval hr1``, each as ``plan(cfg)`` then ``run(plan)`` (``phr.api``; the CLI's one path).

    from phr.api import plan, run
    from phr.config.ops import EvalHr1Config

    result = run(plan(EvalHr1Config(preset="mini")))    # what `phr-publish eval hr1` does, byte for byte

``plan`` resolves everything without calling a model: the preset (the no-argument offline default is ``mini``),
the inputs (``NAME=PATH`` sources, or Hallucination-R1-mini's packaged questions), the models of each role, K and
the tables, the training questions screened for split leakage, and every call with its cached share, tokens and
cost (``phr.hr1.plan.add_calls``). ``run`` executes exactly that plan with the builders
(``phr.builders.hr1``, ``phr.builders.hr1_mini``) or ``phr.eval.hr1_runner.evaluate``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import singledispatch
from pathlib import Path
from typing import Any, TypeVar

from phr.config.base import OpConfig, command_line
from phr.config.defaults import is_no_model, model_or_none
from phr.config.ops import (
    BuildHr1GrpoConfig,
    BuildHr1ParaphrasesConfig,
    BuildHr1SftConfig,
    EvalHr1Config,
    HR1TrainingBuild,
)
from phr.config.types import eval_set_parts
from phr.core.errors import PHRError, UsageError
from phr.core.settings import CACHE_ENV
from phr.eval.hr1_metrics import MetricSettings
from phr.eval.hr1_runner import HR1EvalResult, evaluate, table_settings
from phr.hr1.names import SOURCES
from phr.hr1.pipeline import RunPlan
from phr.hr1.plan import add_calls
from phr.hr1.records import HQuestion, ParaphraseResult
from phr.hr1.settings import Grading
from phr.llm.preflight import Plan, Preflight, writable

from .hr1 import HR1BuildResult, build_grpo_corpus, build_paraphrase_corpus, build_sft_corpus, screen_questions
from .hr1_mini import (
    MINI_GRADING,
    MINI_PARAPHRASER,
    Mini,
    build_mini,
    build_mini_grpo,
    build_mini_sft,
    describe,
    describe_eval,
    load_mini,
    mini_plan,
)
from .hr1_sources import LoadResult, load_hr1_source, stand_in_split

C = TypeVar("C", bound=OpConfig)


# ---- the plans ------------------------------------------------------------------------------------------------------


@dataclass
class HR1Plan(Plan):
    """What the Hallucination-R1 plans share: the output folder, the lines printed before the plan (the preset, what
    the mini holds), the command that repeats the run (``rerun``) and the one that finishes it (``resume``)."""

    out: Path = Path()
    header: list[str] = field(default_factory=list)
    rerun: str = ""
    resume: str = ""

    def lines(self) -> list[str]:
        return self.header + super().lines()

    @property
    def settings(self) -> str:
        """The line a run ends with: its preset and the command that repeats it."""
        return f"settings: preset {self.config.preset or 'none'}; rerun: {self.rerun}"


@dataclass
class ParaphrasesPlan(HR1Plan):
    """``build hr1-paraphrases``: the sources' questions (or the mini), the roles and the run plan."""

    loads: list[LoadResult] = field(default_factory=list)
    steps: RunPlan = field(default_factory=RunPlan)
    qa: str | None = None
    mini: Mini | None = None


@dataclass
class TrainingPlan(HR1Plan):
    """``build hr1-sft`` / ``build hr1-grpo``: the training questions and the evaluation sets they must not overlap
    (none with ``mini``: the smoke corpus from Hallucination-R1-mini, no model run)."""

    kind: str = "sft"
    train: LoadResult | None = None
    eval_sets: dict[str, list[HQuestion]] = field(default_factory=dict)
    steps: RunPlan = field(default_factory=RunPlan)
    mini: bool = False


@dataclass
class EvalHr1Plan(HR1Plan):
    """``eval hr1``: the evaluation sets, the roles (``curated``: the mini's paraphrases and labels, no paraphraser
    or B.2 judge), the run plan (K, QA scope, grading) and the tables' settings."""

    sets: dict[str, list[HQuestion]] = field(default_factory=dict)
    paraphraser: str = ""
    judge: str = ""
    judges: list[str] = field(default_factory=list)
    curated: dict[str, list[ParaphraseResult]] | None = None
    steps: RunPlan = field(default_factory=RunPlan)
    metrics: MetricSettings = field(default_factory=MetricSettings)


# ---- shared resolution ----------------------------------------------------------------------------------------------


def rerun_of(cfg: Any, **changes: Any) -> str:
    """The command line that repeats this run (rendered from its resolved config, with ``changes``), with the
    call cache it used (``--cache``): a rerun makes only the calls that failed (the cache holds the rest)."""
    cache = ("--cache", os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else ()
    return command_line(cfg.model_copy(update=changes), global_args=cache)


def with_preset(cfg: C, given: bool, default: str = "mini") -> tuple[C, str]:
    """``cfg`` (its preset applied when it was built) or, with no input ``given`` and no preset, ``cfg`` under
    the ``default`` preset (the no-argument offline default: ``mini``; ``smoke`` when models are given without a
    source); and the plan's line for the preset (its values, those overridden). ``--preset mini`` with sources is
    refused (it runs the packaged questions)."""
    chosen = getattr(cfg, "preset", None) is None and not given
    resolved = cfg.under_preset(default) if chosen else cfg
    if getattr(resolved, "preset", None) == "mini" and given:
        raise UsageError("--preset mini runs Hallucination-R1-mini's packaged questions: drop --source/--dataset")
    return resolved, resolved.preset_line("the no-argument offline default, see --help" if chosen else None)


def given(cfg: Any, *names: str) -> bool:
    """Whether any of these fields was set by a flag, the --config file or in Python (not by a default or preset)."""
    return any(n in cfg.model_fields_set for n in names)


def parse_sources(values: list[str], online: bool) -> list[tuple[str, str | None]]:
    """``NAME=PATH`` (``NAME`` alone with ``online``) of known sources."""
    out = []
    for v in values:
        name, path = eval_set_parts(v)
        if name not in SOURCES:
            raise UsageError(f"--source {v}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        if not path and not online:
            raise UsageError(f"--source {v}: give NAME=PATH (the released files), or --online for the Hub copy")
        out.append((name, path))
    return out


def load_sources(values: list[str], online: bool) -> list[LoadResult]:
    """The sources given as NAME=PATH, or the packaged H-R1-mini questions when none is given."""
    if not values:
        return load_mini().loads
    return [load_hr1_source(n, p, online=online) for n, p in parse_sources(values, online)]


def preflight(
    roles: dict[str, str | None], out: Path | None, overwrite: bool, notes: tuple[str, ...] = ()
) -> Preflight:
    """The checks of an hr1 operation before any call: model specs and keys, the output folder."""
    pf = Preflight()
    for role, spec in roles.items():
        pf.model(role, spec)
    if out is not None:
        if out.exists() and not overwrite:
            pf.problem(f"--out {out}: already exists (pass --overwrite to replace it)")
        pf.check("--out", lambda: writable(out))
    for n in notes:
        pf.note(n)
    return pf


def _limited(questions: list[HQuestion], limit: int | None) -> list[HQuestion]:
    """The questions a run takes of one source (``--limit``: the first N)."""
    return list(questions[:limit] if limit else questions)


def _known(paraphrases: dict[str, list[ParaphraseResult]]) -> dict[str, list[str]]:
    """The curated paraphrases the QA model may be asked (the consistent ones with text), by question id."""
    return {i: [p.text for p in ps if p.consistent and p.text] for i, ps in paraphrases.items()}


# ---- plan -----------------------------------------------------------------------------------------------------------


@singledispatch
def plan(cfg: Any) -> Plan:
    """The plan of a Hallucination-R1 operation's config (``phr.api.plan``)."""
    raise TypeError(f"{type(cfg).__name__} is not a Hallucination-R1 operation")


@plan.register
def _(cfg: BuildHr1ParaphrasesConfig) -> ParaphrasesPlan:
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
            add_calls(pf, mini.questions, steps, qa=qa, asked=steps.k, grade=False, known=_known(mini.paraphrases),
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
        questions = [q for ld in loads for q in _limited(ld.questions, cfg.limit)]
        pf.note(f"{len(questions)} questions x K {cfg.k} paraphrases")
        add_calls(pf, questions, steps, paraphraser=cfg.paraphraser, judge=cfg.judge, qa=qa, asked=cfg.k,
                  llm_options=cfg.llm_kwargs())  # fmt: skip
    return ParaphrasesPlan(**common, preflight=pf, out=out, header=[line], loads=loads or [], steps=steps)


_MINI_TRAINING = {
    "sft": "consistent curated paraphrases of its stand-in train SimpleQuestions rows with their gold answers",
    "grpo": "stand-in train SimpleQuestions rows with Listing B.1 applied (no QA filter)",
}


@plan.register(BuildHr1SftConfig)
@plan.register(BuildHr1GrpoConfig)
def _(cfg: BuildHr1SftConfig | BuildHr1GrpoConfig) -> TrainingPlan:
    cfg, line = with_preset(cfg, bool(cfg.source))
    kind = "sft" if isinstance(cfg, BuildHr1SftConfig) else "grpo"
    out = cfg.out or Path(f"hr1-{kind}")
    common: dict[str, Any] = {"config": cfg, "out": out, "kind": kind, "rerun": rerun_of(cfg)}
    if cfg.preset == "mini":
        if cfg.stand_in_split or cfg.eval_set:
            raise UsageError(
                "--stand-in-split / --eval-set need --source simplequestions=PATH (no --source: the mini smoke corpus)"
            )
        what = f"preset mini: the smoke {kind.upper()} corpus: Hallucination-R1-mini's {_MINI_TRAINING[kind]}"
        pf = preflight({}, out, cfg.overwrite)
        return TrainingPlan(**common, preflight=pf, header=[line, f"{what}; no model is run"], mini=True)
    if isinstance(cfg, BuildHr1SftConfig):
        models, unit = {"paraphraser": cfg.paraphraser}, f" x K {cfg.k} paraphrases"
        steps = RunPlan(k=cfg.k, decoding=cfg, qa_scope="all")
    else:
        models, unit, steps = {"qa": cfg.qa_model}, ", each asked once", RunPlan(decoding=cfg)
    labels = {"paraphraser": "paraphraser", "qa": "qa model"}
    pf = preflight({**{labels[r]: m for r, m in models.items()}, "judge": cfg.judge}, out, cfg.overwrite)
    loaded = pf.check("sources", lambda: _train_and_eval(cfg))
    if loaded is not None:
        _screen(pf, cfg, *loaded)
    if loaded is not None and not pf.problems:
        questions = _limited(loaded[0].questions, cfg.limit)
        pf.note(f"{len(questions)} training questions{unit}")
        add_calls(pf, questions, steps, paraphraser=models.get("paraphraser"), qa=models.get("qa"), judge=cfg.judge,
                  llm_options=cfg.llm_kwargs())  # fmt: skip
    train, evals = loaded or (None, {})
    return TrainingPlan(**common, preflight=pf, header=[line], train=train, eval_sets=evals, steps=steps)


def _screen(pf: Preflight, cfg: HR1TrainingBuild, train: LoadResult, evals: dict[str, list[HQuestion]]) -> None:
    """Screen the training questions for split leakage (the build screens them again, before its first call)."""
    try:
        kept, dropped = screen_questions(train.questions, evals, None, cfg.drop_leaking)
        pf.note(f"{len(kept)} training questions pass the split-leakage screen ({len(dropped)} dropped)")
    except PHRError as e:  # leakage, or no evaluation set to screen against
        pf.problem(str(e))


def _train_and_eval(cfg: HR1TrainingBuild) -> tuple[LoadResult, dict[str, list[HQuestion]]]:
    """A training corpus's questions (SimpleQuestions train, or the train half of ``--stand-in-split``) and the
    evaluation sets it must not overlap (each file parsed)."""
    parsed = parse_sources(cfg.source, cfg.online)
    if len(parsed) != 1 or parsed[0][0] != "simplequestions":
        raise UsageError("training corpora are built from SimpleQuestions train: --source simplequestions=PATH")
    train = load_hr1_source(*parsed[0], online=cfg.online)
    held_out = None
    if cfg.stand_in_split:
        train, held_out = stand_in_split(train, cfg.stand_in_split)
    else:
        train.questions = [q for q in train.questions if q.split == "train"]
        if not train.questions:
            raise UsageError(
                "no SimpleQuestions train rows at that path (only other splits): give the train file, or "
                "--stand-in-split even-train-odd-test to split the one you have (the card says so)"
            )
    evals: dict[str, list[HQuestion]] = {}
    for v in cfg.eval_set:
        name, path = eval_set_parts(v)
        if path == "stand-in" or (name == "stand-in" and not path):
            if held_out is None:
                raise UsageError(f"--eval-set {v}: needs --stand-in-split")
            evals[f"{held_out.source} (stand-in {held_out.stand_in})"] = held_out.questions
            continue
        if name not in SOURCES:
            raise UsageError(f"--eval-set {v}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        evals[name] = load_hr1_source(name, path, online=cfg.online).questions
    return train, evals


@plan.register
def _(cfg: EvalHr1Config) -> EvalHr1Plan:
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
    sets = {ld.source: _limited(ld.questions, cfg.limit) for ld in loads or []}
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
                  known=None if curated is None else _known(curated), llm_options=cfg.llm_kwargs())  # fmt: skip
        for j in extra:
            add_calls(pf, questions, steps, judge=j, judged=True, grade=False, llm_options=cfg.llm_kwargs())
    return EvalHr1Plan(
        config=cfg, preflight=pf, out=cfg.out, header=header, rerun=rerun_of(cfg),
        resume=rerun_of(cfg, overwrite=True) if cfg.partial else rerun_of(cfg), sets=sets, paraphraser=paraphraser,
        judge=judge, judges=extra, curated=curated, steps=steps, metrics=metrics,
    )  # fmt: skip


# ---- run ------------------------------------------------------------------------------------------------------------


@singledispatch
def run(p: Any) -> Any:
    """Execute a Hallucination-R1 plan exactly (``phr.api.run``)."""
    raise TypeError(f"{type(p).__name__} is not a Hallucination-R1 plan")


def _model_build(p: ParaphrasesPlan | TrainingPlan) -> dict[str, Any]:
    """The keywords a corpus build that calls models takes from its plan: the judge, the steps, the limit,
    overwrite, the LLM options, the rerun command and the settings record."""
    cfg = p.config
    return dict(judge=cfg.judge, plan=p.steps, limit=cfg.limit, overwrite=cfg.overwrite, llm_options=cfg.llm_kwargs(),
                rerun=p.rerun, config=cfg.result_record())  # fmt: skip


@run.register
def _(p: ParaphrasesPlan) -> HR1BuildResult:
    cfg = p.config
    if p.mini is not None:
        assert p.qa is not None
        res = build_mini(p.out, p.steps, qa=p.qa, overwrite=cfg.overwrite, diversity=cfg.diversity,
                         llm_options=cfg.llm_kwargs(), mini=p.mini, config=cfg.result_record())  # fmt: skip
    else:
        res = build_paraphrase_corpus(
            p.out, p.loads, paraphraser=cfg.paraphraser, qa=p.qa, smoke=cfg.preset == "smoke", diversity=cfg.diversity,
            **_model_build(p),
        )  # fmt: skip
    res.settings = p.settings
    return res


@run.register
def _(p: TrainingPlan) -> HR1BuildResult:
    cfg = p.config
    if p.mini:
        build = build_mini_sft if p.kind == "sft" else build_mini_grpo
        res = build(p.out, overwrite=cfg.overwrite, config=cfg.result_record())
    else:
        assert p.train is not None
        role = {"paraphraser": cfg.paraphraser} if p.kind == "sft" else {"qa": cfg.qa_model}
        corpus = build_sft_corpus if p.kind == "sft" else build_grpo_corpus
        res = corpus(p.out, p.train, eval_sets=p.eval_sets, drop_leaking=cfg.drop_leaking, **role, **_model_build(p))
    res.settings = p.settings
    return res


@run.register
def _(p: EvalHr1Plan) -> HR1EvalResult:
    cfg = p.config
    res = evaluate(
        p.sets, paraphraser=p.paraphraser, qa=cfg.qa_model, judge=p.judge, out=p.out, table=cfg.table, plan=p.steps,
        metrics=p.metrics, judges=p.judges, human=cfg.human, diversity=cfg.diversity, overwrite=cfg.overwrite,
        llm_options=cfg.llm_kwargs(), partial=cfg.partial, paraphrases=p.curated, rerun=p.resume,
        config=cfg.result_record(),
    )  # fmt: skip
    res.settings = p.settings
    return res
