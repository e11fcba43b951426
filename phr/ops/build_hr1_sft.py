"""`build hr1-sft` and `build hr1-grpo`: the training corpora of Hallucination-R1 (docs/hr1.md): SimpleQuestions
train (or the train half of a stand-in split) screened against the evaluation sets, then paraphrased (SFT, App.
E.1) or filtered by the QA model (GRPO, Listing B.1); ``--preset mini``: the smoke corpora, no model run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phr.builders.hr1 import HR1BuildResult, Screened, build_grpo_corpus, build_sft_corpus, screen_questions
from phr.builders.hr1_mini import build_mini_grpo, build_mini_sft
from phr.builders.hr1_sources import LoadResult, load_hr1_source, stand_in_split
from phr.config.ops import BuildHr1GrpoConfig, BuildHr1SftConfig, HR1TrainingBuild
from phr.config.types import eval_set_parts
from phr.core.errors import PHRError, UsageError
from phr.hr1.names import SOURCES
from phr.hr1.pipeline import RunPlan
from phr.hr1.plan import add_calls
from phr.hr1.records import HQuestion
from phr.llm.preflight import Preflight
from phr.ops._hr1 import HR1Plan, limited, model_build, parse_sources, preflight, rerun_of, with_preset


@dataclass
class TrainingPlan(HR1Plan[BuildHr1SftConfig | BuildHr1GrpoConfig]):
    """``build hr1-sft`` / ``build hr1-grpo``: the training questions and the evaluation sets they must not overlap
    (none with ``mini``: the smoke corpus from Hallucination-R1-mini, no model run)."""

    kind: str = "sft"
    train: LoadResult | None = None
    eval_sets: dict[str, list[HQuestion]] = field(default_factory=dict)
    screened: Screened | None = None
    steps: RunPlan = field(default_factory=RunPlan)
    mini: bool = False


_MINI_TRAINING = {
    "sft": "consistent curated paraphrases of its stand-in train SimpleQuestions rows with their gold answers",
    "grpo": "stand-in train SimpleQuestions rows with Listing B.1 applied (no QA filter)",
}


def plan(cfg: BuildHr1SftConfig | BuildHr1GrpoConfig) -> TrainingPlan:
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
    train, evals = loaded or (None, {})
    screened = _screen(pf, cfg, train, evals) if train is not None else None
    if screened is not None and not pf.problems:
        pf.note(f"{len(screened.questions)} training questions{unit}")
        add_calls(pf, screened.questions, steps, paraphraser=models.get("paraphraser"), qa=models.get("qa"),
                  judge=cfg.judge, llm_options=cfg.llm_kwargs())  # fmt: skip
    return TrainingPlan(
        **common, preflight=pf, header=[line], train=train, eval_sets=evals, screened=screened, steps=steps
    )


def _screen(
    pf: Preflight, cfg: HR1TrainingBuild, train: LoadResult, evals: dict[str, list[HQuestion]]
) -> Screened | None:
    """The questions the build will run (the first ``--limit``), screened for split leakage once, here: the run
    uses what the plan kept (and records what it dropped)."""
    try:
        kept, dropped = screen_questions(limited(train.questions, cfg.limit), evals, None, cfg.drop_leaking)
    except PHRError as e:  # leakage, or no evaluation set to screen against
        pf.problem(str(e))
        return None
    pf.note(f"{len(kept)} training questions pass the split-leakage screen ({len(dropped)} dropped)")
    return Screened(kept, dropped)


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


def run(p: TrainingPlan) -> HR1BuildResult:
    cfg = p.config
    if p.mini:
        build = build_mini_sft if p.kind == "sft" else build_mini_grpo
        res = build(p.out, overwrite=cfg.overwrite, config=cfg.result_record())
    else:
        assert p.train is not None and p.screened is not None  # a plan without them has problems
        common = dict(eval_sets=p.eval_sets, screened=p.screened, drop_leaking=cfg.drop_leaking, **model_build(p))
        if isinstance(cfg, BuildHr1SftConfig):
            res = build_sft_corpus(p.out, p.train, paraphraser=cfg.paraphraser, **common)
        else:
            res = build_grpo_corpus(p.out, p.train, qa=cfg.qa_model, **common)
    res.settings = p.settings
    return res
