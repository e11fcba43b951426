"""Scorers: each kind of PHRBench score behind one interface, run in turn by ``score_responses``.

    scorers = build_scorers(Scoring(scorer="local:smollm2", judge="openai:gpt-4o"))   # phr.config.ops.Scoring
    [s.name for s in scorers]                    # ["accuracy", "trajectory", "resolution"]
    updates = scorers[0].score([ScoreItem(instance, response)])   # [{"correct": True, "extracted": "2"}]

A ``Scorer`` has a ``name``, a ``config`` (a pydantic model: everything its numbers depend on, so it is its
cache identity, ``cache_identity(scorer)``) and ``score(batch)``: for each ``ScoreItem`` (instance,
response, sample index, and the fields earlier scorers gave it) the ``SampleScore`` fields it sets (an empty
dict where it does not apply). The three PHRBench scorers:

- ``AccuracyScorer`` ("accuracy"): multiple choice by the extracted candidate number, open-ended by the final
  answer (``phr.eval.extract``), code by running the extracted program against the tests in the sandbox;
- ``TrajectoryMetricsScorer`` ("trajectory"): OL, UI, BUF, BC under the reference scorer (``phr.eval.trajectory``),
  cached per (config, prompt, response) in the call cache file (``phr.eval.metric_cache``);
- ``ResolutionScorer`` ("resolution"): the behavioural resolution of B+H responses by the LLM judge
  (``phr.eval.resolution``) and insightful = Heuristic Correction and correct (needs "accuracy" to run first).

The weight-reuse rule is here too: ``trajectory_engine(spec, generator)`` scores with the generator's
already-loaded model when it is the same model (one copy of the weights).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from phr.config.defaults import CODE_MEMORY_MB, CODE_TIMEOUT_S, model_or_none
from phr.config.ops import Scoring
from phr.core.registry import Registry
from phr.eval.dataset import Instance
from phr.eval.extract import (
    REL_TOL,
    extract_choice,
    extract_code,
    extract_final,
    normalised_match,
    numbers_match,
    numeric_gold,
)
from phr.eval.metric_cache import MetricCache, metric_key
from phr.eval.resolution import insightful, judge_resolutions, prompt_hash
from phr.eval.sandbox import run_many
from phr.eval.trajectory import DEFAULT_SCORER, PAPER_CHOICES, TrajectoryMetrics, TrajectoryScorer
from phr.llm import LLM
from phr.llm.judge import JudgeItem, JudgeTemplate, LLMJudge
from phr.llm.providers.base import ScoringProvider
from phr.llm.spec import make_provider

if TYPE_CHECKING:  # pragma: no cover - imported where a bar is made
    from phr.core.progress import ProgressDisplay

__all__ = [
    "AccuracyScorer",
    "ResolutionScorer",
    "ScoreItem",
    "ScoringRun",
    "Scorer",
    "EquivalenceGrader",
    "GRADER_PROMPT",
    "TrajectoryMetricsScorer",
    "answer_correct",
    "build_scorers",
    "cache_identity",
    "code_program",
    "trajectory_engine",
]


#: responses per forward pass of the reference scorer
SCORER_BATCH_SIZE = 4
#: times the resolution judge is asked again after an unparseable reply
JUDGE_MAX_REASKS = 2
#: the conditions whose responses the resolution judge labels
RESOLUTION_CONDITIONS: tuple[str, ...] = ("B+H",)


@dataclass(frozen=True)
class ScoringRun:
    """One scoring: its settings (``scoring``, the config group ``phr.config.ops.Scoring``: any config that has
    them, such as ``EvalPhrbenchConfig``) and what it runs with: ``generator``, the LLM (or provider) that wrote
    the responses, whose weights a same-model reference scorer reuses; ``llm_options``, the judge's and grader's
    call options (``Calls.llm_kwargs``); ``cache``, the trajectory metrics cache file (None: the call cache file,
    $PHR_CACHE; False: off); ``workers``, the sandbox's."""

    scoring: Scoring = field(default_factory=Scoring)
    generator: Any = None
    llm_options: Mapping[str, Any] = field(default_factory=dict)
    cache: Any = None
    workers: int | None = None

    def llm(self, spec: str | None) -> Any:
        """The judge / grader for ``spec``: None for no model, an LLM with ``llm_options`` when there are any."""
        spec = model_or_none(spec)
        if spec is None or not self.llm_options:
            return spec
        return LLM(spec, **self.llm_options)


# ---- the protocol -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreItem:
    """One response to score: its instance, the text, the sample index, and what earlier scorers set."""

    instance: Instance
    response: str
    sample: int = 0
    scored: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """A kind of score. ``config`` is everything the numbers depend on (its cache identity)."""

    name: str

    @property
    def config(self) -> BaseModel: ...

    def score(self, batch: Sequence[ScoreItem]) -> list[dict[str, Any]]:
        """Per item, in order, the ``SampleScore`` fields this scorer sets ({} where it does not apply)."""
        ...


def cache_identity(scorer: Scorer) -> str:
    """Hex SHA-256 of the scorer's name and config: equal iff the scores would be."""
    text = json.dumps(
        {"scorer": scorer.name, "config": scorer.config.model_dump(mode="json")},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode()).hexdigest()


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _progress(enabled: bool) -> ProgressDisplay:
    """A live bar on a terminal, periodic one-line progress in logs (phr.core.progress)."""
    from phr.core.progress import progress_bar

    return progress_bar(enabled)


# ---- accuracy ---------------------------------------------------------------------------------------------


#: which rule scored a response (``SampleScore.grader``); an LLM grader is recorded as ``llm:<spec>``
GRADER_CHOICE, GRADER_NUMERIC, GRADER_MATCH, GRADER_SANDBOX = "choice", "numeric", "normalised-match", "sandbox"
GRADER_PROMPT = Path(__file__).with_name("prompts") / "equivalence_grader.txt"


class Equivalence(BaseModel):
    """The equivalence grader's JSON reply."""

    model_config = ConfigDict(extra="ignore")
    equivalent: StrictBool
    rationale: StrictStr = ""


class EquivalenceGrader:
    """The LLM equivalence grader of free-text open-ended answers (``eval/prompts/equivalence_grader.txt``),
    through the LLM-judge helper: temperature 0, cached, re-asked on invalid JSON. An answer the grader
    cannot judge falls back to the normalised match (and is recorded so)."""

    TEMPLATE = JudgeTemplate(GRADER_PROMPT, syntax="format", comment="#")

    def __init__(self, llm: Any, *, max_reasks: int = JUDGE_MAX_REASKS, max_tokens: int = 256):
        self.llm = llm if isinstance(llm, LLM) else LLM(llm)
        self.judge = LLMJudge(Equivalence, self.TEMPLATE, max_tokens=max_tokens, max_reasks=max_reasks, desc="grading")

    @property
    def name(self) -> str:
        return f"llm:{self.llm.spec}"

    def grade(self, items: Sequence[tuple[Instance, str]]) -> list[bool | None]:
        """Per (instance, final answer): equivalent to the gold, or None when the grader stayed invalid."""
        work = [
            JudgeItem({"question": inst.question or "", "gold": inst.answer or "", "answer": final}, tag=inst.id)
            for inst, final in items
        ]
        return [None if j.verdict is None else j.verdict.equivalent for j in self.judge.judge(self.llm, work)]


def answer_correct(inst: Instance, response: str, rel_tol: float = REL_TOL) -> tuple[bool, str | None]:
    """(correct, what was extracted) for a multiple-choice or open-ended instance, by rule (no LLM grader)."""
    correct, extracted, _ = _rule_grade(inst, response, rel_tol)
    return correct, extracted


def _rule_grade(inst: Instance, response: str, rel_tol: float) -> tuple[bool, str | None, str]:
    """(correct, extracted, grader) by rule: the candidate number, numbers, or the normalised match."""
    if inst.task_type == "multiple_choice":
        idx = extract_choice(response, list(inst.options))
        return (idx is not None and idx == inst.answer_index), (None if idx is None else str(idx + 1)), GRADER_CHOICE
    if inst.task_type == "open_ended":
        final = extract_final(response)
        nums = numeric_gold(inst.answer or "")
        if final is None:
            return False, None, GRADER_NUMERIC if nums is not None else GRADER_MATCH
        if nums is not None:
            return numbers_match(final, nums, rel_tol), final, GRADER_NUMERIC
        return normalised_match(final, inst.answer or ""), final, GRADER_MATCH
    raise ValueError(f"{inst.id}: not a multiple-choice or open-ended instance ({inst.task_type})")


_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s+.+|import\s+.+)$", re.MULTILINE)


def code_program(inst: Instance, response: str) -> str:
    """The program to test: the reply's last ```python block (else the reply); when it does not define the
    entry point at top level and the question is a function stub (HumanEval), the stub + the reply (a
    completion of the body). The question's import lines always come first."""
    code = extract_code(response)
    stub = inst.question or ""
    ep = inst.entry_point
    defines = ep is None or re.search(rf"^(?:async\s+)?def\s+{re.escape(ep)}\s*\(", code, re.MULTILINE)
    if not defines and ep and re.search(rf"^def\s+{re.escape(ep)}\s*\(", stub, re.MULTILINE):
        return stub.rstrip("\n") + "\n" + code
    imports = "\n".join(_IMPORT.findall(stub))
    return f"{imports}\n\n{code}" if imports else code


class AccuracyConfig(_Config):
    code_timeout_s: float = CODE_TIMEOUT_S
    code_memory_mb: int = CODE_MEMORY_MB
    rel_tol: float = REL_TOL
    grader: str | None = None  # the LLM equivalence grader's spec
    grader_prompt_sha256: str | None = None


class AccuracyScorer:
    """``correct``, ``extracted`` (the candidate number, the final answer line, or the sandbox verdict) and
    ``grader`` (which rule scored it: ``choice``, ``numeric``, ``normalised-match``, ``llm:<spec>``,
    ``sandbox``). Free-text open-ended answers go to ``grader`` (an ``EquivalenceGrader``, an LLM or a spec)
    when one is given."""

    name = "accuracy"

    def __init__(
        self,
        code_timeout_s: float = CODE_TIMEOUT_S,
        code_memory_mb: int = CODE_MEMORY_MB,
        *,
        workers: int | None = None,
        progress: bool = True,
        rel_tol: float = REL_TOL,
        grader: Any = None,
    ):
        if grader is not None and not isinstance(grader, EquivalenceGrader):
            grader = EquivalenceGrader(grader)
        self.grader = grader
        self._config = AccuracyConfig(
            code_timeout_s=code_timeout_s,
            code_memory_mb=code_memory_mb,
            rel_tol=rel_tol,
            grader=None if grader is None else grader.llm.spec,
            grader_prompt_sha256=None if grader is None else grader.TEMPLATE.version,
        )
        self.workers = workers
        self.progress = progress

    @property
    def config(self) -> AccuracyConfig:
        return self._config

    def score(self, batch: Sequence[ScoreItem]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in batch]
        code = [i for i, it in enumerate(batch) if it.instance.task_type == "code"]
        free: list[int] = []
        for i, it in enumerate(batch):
            if it.instance.task_type != "code":
                correct, extracted, grader = _rule_grade(it.instance, it.response, self.config.rel_tol)
                out[i] = {"correct": correct, "extracted": extracted, "grader": grader}
                if grader == GRADER_MATCH and extracted is not None and self.grader is not None:
                    free.append(i)
        if free:
            verdicts = self.grader.grade([(batch[i].instance, out[i]["extracted"]) for i in free])
            for i, v in zip(free, verdicts):
                if v is not None:
                    out[i].update(correct=v, grader=self.grader.name)
        if code:
            jobs = [
                {
                    "program": code_program(batch[i].instance, batch[i].response),
                    "tests": batch[i].instance.code_tests or "",
                    "entry_point": batch[i].instance.entry_point,
                }
                for i in code
            ]
            with _progress(self.progress) as bar:
                task = bar.add_task(f"running {len(code)} programs in the sandbox", total=len(code))
                verdicts = run_many(
                    jobs,
                    workers=self.workers,
                    timeout_s=self.config.code_timeout_s,
                    memory_mb=self.config.code_memory_mb,
                )
                bar.update(task, completed=len(code))
            for i, v in zip(code, verdicts):
                out[i] = {"correct": v.passed, "extracted": v.status, "grader": GRADER_SANDBOX}
        return out


# ---- trajectory metrics -----------------------------------------------------------------------------------


def trajectory_engine(
    scorer: Any = DEFAULT_SCORER,
    generator: Any = None,
    *,
    batch_size: int = SCORER_BATCH_SIZE,
    settings: Any = PAPER_CHOICES,
) -> TrajectoryScorer:
    """The reference scorer for a spec (or a provider, or a ready ``TrajectoryScorer``), reusing the weights of
    ``generator`` (the LLM or provider that generated the responses) when it is the same model: the same spec,
    or the same ``fingerprint``; ``settings``: the trajectory choices (``phr.config.ops.Trajectory``, or a config
    that has them). Raises CannotScoreError, naming the spec, when the model cannot score."""
    if isinstance(scorer, TrajectoryScorer):
        return scorer
    gen = getattr(generator, "provider", generator)
    gen = gen if isinstance(gen, ScoringProvider) else None
    gen_spec = getattr(generator, "spec", None) or (gen.spec if gen is not None else None)
    if gen is not None and isinstance(scorer, str) and scorer == gen_spec:
        return TrajectoryScorer(gen, batch_size=batch_size, settings=settings)
    provider = make_provider(scorer) if isinstance(scorer, str) else scorer
    if gen is not None and isinstance(provider, ScoringProvider) and provider.fingerprint == gen.fingerprint:
        provider = gen  # one copy of the weights
    return TrajectoryScorer(provider, batch_size=batch_size, settings=settings)


class TrajectoryConfig(_Config):
    model: str  # the reference scorer's fingerprint
    tau: float
    clip: float
    cues: tuple[str, ...]
    kl_direction: str
    step_rule: str
    bc_counting: str


class TrajectoryMetricsScorer:
    """``ol``, ``ui``, ``buf``, ``bc``, ``steps`` under a reference scorer (``TrajectoryScorer``, or a spec),
    cached per (config, prompt, response) in ``cache`` (a file; None: the call cache file; False: off)."""

    name = "trajectory"

    def __init__(self, engine: TrajectoryScorer | Any = DEFAULT_SCORER, *, cache: Any = None, progress: bool = True):
        self.engine = trajectory_engine(engine)
        self.cache_path = cache
        self.progress = progress
        e = self.engine
        self._config = TrajectoryConfig(
            model=e.provider.fingerprint, tau=e.tau, clip=e.clip, cues=tuple(e.cues), **e.settings.model_dump()
        )

    @property
    def config(self) -> TrajectoryConfig:
        return self._config

    def score(self, batch: Sequence[ScoreItem]) -> list[dict[str, Any]]:
        if not batch:
            return []
        cache = None if self.cache_path is False else MetricCache(self.cache_path)
        ident = self.config.model_dump(mode="json")
        keys = [metric_key(ident, it.instance.prompt, it.response) for it in batch]
        found = cache.get_many(keys) if cache else {}
        metrics: list[TrajectoryMetrics | None] = [found.get(k) for k in keys]
        todo = [i for i, m in enumerate(metrics) if m is None]
        chunk = self.engine.batch_size  # one forward per step of the bar (and of the cache): progress within seconds
        with _progress(self.progress) as bar:
            task = bar.add_task(
                f"trajectory metrics ({len(batch)} responses, {len(batch) - len(todo)} cached)",
                total=len(batch),
                completed=len(batch) - len(todo),
            )
            for j in range(0, len(todo), chunk):
                part = todo[j : j + chunk]
                got = self.engine.score([(batch[i].instance.prompt, batch[i].response) for i in part])
                for i, m in zip(part, got):
                    metrics[i] = m
                if cache:
                    cache.put_many(self.engine.provider.spec, [(keys[i], m) for i, m in zip(part, got)])
                bar.update(task, advance=len(part))
        out: list[dict[str, Any]] = []
        for found_or_scored in metrics:
            assert found_or_scored is not None  # every response was found in the cache or scored above
            x = found_or_scored
            out.append({"ol": x.ol, "ol_words": x.ol_words, "ui": x.ui, "buf": x.buf, "bc": x.bc, "steps": x.steps})
        return out


# ---- behavioural resolution -------------------------------------------------------------------------------


class ResolutionConfig(_Config):
    judge: str  # the judge's model spec
    prompt_sha256: str
    max_reasks: int
    max_tokens: int
    conditions: tuple[str, ...]


class ResolutionScorer:
    """``resolution``, ``accepts_premise``, ``corrects_premise``, ``judge_rationale`` and ``insightful`` of the
    responses to instances of ``conditions`` (B+H), by the LLM judge (an LLM or a spec). An unparseable
    judgement sets nothing (unjudged)."""

    name = "resolution"

    def __init__(
        self,
        judge: Any,
        *,
        max_reasks: int = JUDGE_MAX_REASKS,
        max_tokens: int = 256,
        conditions: Sequence[str] = RESOLUTION_CONDITIONS,
    ):
        self.judge = judge
        spec = judge if isinstance(judge, str) else getattr(judge, "spec", type(judge).__name__)
        self._config = ResolutionConfig(
            judge=spec,
            prompt_sha256=prompt_hash(),
            max_reasks=max_reasks,
            max_tokens=max_tokens,
            conditions=tuple(conditions),
        )

    @property
    def config(self) -> ResolutionConfig:
        return self._config

    def score(self, batch: Sequence[ScoreItem]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in batch]
        idx = [i for i, it in enumerate(batch) if it.instance.condition in self.config.conditions]
        if not idx:
            return out
        verdicts = judge_resolutions(
            self.judge,
            [(batch[i].instance, batch[i].response) for i in idx],
            max_reasks=self.config.max_reasks,
            max_tokens=self.config.max_tokens,
        )
        for i, r in zip(idx, verdicts):
            if r is not None:
                out[i] = {
                    "resolution": r.label,
                    "accepts_premise": r.accepts_premise,
                    "corrects_premise": r.corrects_premise,
                    "judge_rationale": r.rationale,
                    "insightful": insightful(r.label, bool(batch[i].scored.get("correct", False))),
                }
        return out


# ---- from a scoring's settings ---------------------------------------------------------------------------


#: the scorers, in the order they run (a later one reads what earlier ones set: resolution reads ``correct``);
#: each a factory ``(run, progress) -> Scorer | None`` (None: not asked for); a new scorer registers itself
#: (``@SCORERS.register(name)``, phr.core.registry) and runs after these
SCORERS: Registry[Callable[[ScoringRun, bool], Scorer | None]] = Registry("scorer")


@SCORERS.register("accuracy")
def _accuracy(run: ScoringRun, progress: bool) -> Scorer:
    return AccuracyScorer(workers=run.workers, progress=progress, grader=run.llm(run.scoring.grader))


@SCORERS.register("trajectory")
def _trajectory(run: ScoringRun, progress: bool) -> Scorer | None:
    spec = model_or_none(run.scoring.scorer)
    if spec is None:
        return None
    engine = trajectory_engine(spec, run.generator, settings=run.scoring)
    return TrajectoryMetricsScorer(engine, cache=run.cache, progress=progress)


@SCORERS.register("resolution")
def _resolution(run: ScoringRun, progress: bool) -> Scorer | None:
    judge = run.llm(run.scoring.judge)
    return None if judge is None else ResolutionScorer(judge)


def build_scorers(run: ScoringRun | Scoring | None = None, *, progress: bool = True) -> list[Scorer]:
    """The registered scorers ``run`` asks for (a ``ScoringRun``, or just the settings: a ``Scoring``), in
    order: accuracy, then trajectory metrics (``scorer``; 'none' skips them), then resolution (``judge``; 'none'
    skips it)."""
    if not isinstance(run, ScoringRun):
        run = ScoringRun(run if run is not None else Scoring())
    return [s for make in SCORERS.values() if (s := make(run, progress)) is not None]
