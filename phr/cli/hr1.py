"""`phr-publish build hr1-paraphrases | hr1-sft | hr1-grpo`: the Hallucination-R1 corpora (docs/hr1.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from phr.cli.options import DryRun, bind
from phr.config.base import command_line, resolve
from phr.config.defaults import is_no_model, model_or_none
from phr.config.ops import (
    BuildHr1GrpoConfig,
    BuildHr1ParaphrasesConfig,
    BuildHr1SftConfig,
    EvalHr1Config,
    HR1TrainingBuild,
    StandIn,
)
from phr.core.errors import PHRError, UsageError
from phr.core.settings import CACHE_ENV
from phr.hr1.names import SOURCES
from phr.llm.preflight import Preflight, writable

if TYPE_CHECKING:  # the library is imported inside the commands: `--help` stays fast
    from phr.builders.hr1 import HR1BuildResult
    from phr.builders.hr1_sources import LoadResult
    from phr.hr1.pipeline import RunPlan


def _parse_sources(values: list[str] | None, online: bool) -> list[tuple[str, str | None]]:
    out = []
    for v in values or []:
        name, _, path = v.partition("=")
        if name not in SOURCES:
            raise UsageError(f"--source {v}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        if not path and not online:
            raise UsageError(f"--source {v}: give NAME=PATH (the released files), or --online for the Hub copy")
        out.append((name, path or None))
    return out


def _load(name: str, path: str | None, online: bool) -> LoadResult:
    from phr.builders.hr1_sources import load_hr1_source

    res = load_hr1_source(name, path, online=online)
    typer.echo(res.summary(), err=True)
    return res


def _loads(values: list[str] | None, online: bool) -> list[LoadResult]:
    """The sources given as NAME=PATH, or the packaged H-R1-mini questions when none is given."""
    from phr.builders.hr1_mini import load_mini

    if not values:
        return load_mini().loads
    return [_load(n, p, online) for n, p in _parse_sources(values, online)]


def _train_and_eval(
    sources: list[str] | None, online: bool, stand_in: StandIn | None, eval_sets: list[str] | None
) -> tuple[LoadResult, dict]:
    parsed = _parse_sources(sources, online)
    if len(parsed) != 1 or parsed[0][0] != "simplequestions":
        raise UsageError("training corpora are built from SimpleQuestions train: --source simplequestions=PATH")
    train = _load(*parsed[0], online)
    held_out = None
    if stand_in:
        from phr.builders.hr1_sources import stand_in_split

        train, held_out = stand_in_split(train, stand_in)
    else:
        train.questions = [q for q in train.questions if q.split == "train"]
        if not train.questions:
            raise UsageError(
                "no SimpleQuestions train rows at that path (only other splits): give the train file, or "
                "--stand-in-split even-train-odd-test to split the one you have (the card says so)"
            )
    evals: dict = {}
    for v in eval_sets or []:
        name, _, path = v.partition("=")
        if path == "stand-in" or (name == "stand-in" and not path):
            if held_out is None:
                raise UsageError(f"--eval-set {v}: needs --stand-in-split")
            evals[f"{held_out.source} (stand-in {held_out.stand_in})"] = held_out.questions
            continue
        if name not in SOURCES:
            raise UsageError(f"--eval-set {v}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        evals[name] = _load(name, path or None, online).questions
    return train, evals


def _rerun(cfg, **changes) -> str:
    """The command line that repeats this run (rendered from its resolved config, with ``changes``), with the
    call cache it used (``--cache``): a rerun makes only the calls that failed (the cache holds the rest)."""
    cache = ("--cache", os.environ[CACHE_ENV]) if os.environ.get(CACHE_ENV) else ()
    return command_line(cfg.model_copy(update=changes), global_args=cache)


def _done(res: HR1BuildResult, cfg) -> None:
    res.summary.print()
    typer.echo(f"settings: preset {cfg.preset or 'none'}; rerun: {_rerun(cfg)}")
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built {res.kind} in {res.out}: {counts}")
    typer.echo(load_hint(res.out))


def load_hint(out: Path) -> str:
    """How to load the built folder with ``datasets``: with one config, the folder; with several (one per source),
    each config by name, since ``load_dataset(PATH)`` alone loads only the default one."""
    from phr.hub.card import card_configs

    configs = card_configs(out)
    if len(configs) <= 1:
        return f'load it with: load_dataset("{out}")'
    default = next((c.name for c in configs.values() if c.default), next(iter(configs)))
    each = " and ".join(f'load_dataset("{out}", "{name}")' for name in configs)
    return f'load it with: {each} (one config per source; load_dataset("{out}") alone loads only {default})'


def _with_preset(cfg, given: bool, default: str = "mini"):
    """``cfg``, or with no source given and no preset, the same settings under the ``default`` preset (the
    no-argument offline default: ``mini``; ``smoke`` when models are given without a source); the command prints
    which preset it runs. ``--preset mini`` with sources is refused (it builds the packaged questions)."""
    if not given and cfg.preset is None:
        cfg = resolve(type(cfg), values={"preset": default}, flags=cfg.model_dump(include=cfg.model_fields_set))
        typer.echo(f"preset: {default} (the no-argument offline default, see --help)")
    else:
        typer.echo(f"preset: {cfg.preset or 'none (the defaults)'}")
    if cfg.preset == "mini" and given:
        raise UsageError("--preset mini runs Hallucination-R1-mini's packaged questions: drop --source/--dataset")
    return cfg


def _given(cfg, *names: str) -> bool:
    """Whether any of these fields was set by a flag or the --config file (not by a default or preset)."""
    return any(n in cfg.model_fields_set and n not in type(cfg).presets.get(cfg.preset or "", {}) for n in names)


def _mini_training(cfg, kind: str, out: Path, dry_run: bool) -> bool:
    """Under the preset mini, build (or dry-run) the smoke training corpus of ``kind`` (sft or grpo) from
    Hallucination-R1-mini and return True; its other source flags need --source."""
    if cfg.preset != "mini":
        return False
    if cfg.stand_in_split or cfg.eval_set:
        raise UsageError(
            "--stand-in-split / --eval-set need --source simplequestions=PATH (no --source: the mini smoke corpus)"
        )
    from phr.builders.hr1_mini import build_mini_grpo, build_mini_sft

    what = (
        "consistent curated paraphrases of its stand-in train SimpleQuestions rows with their gold answers"
        if kind == "sft"
        else "stand-in train SimpleQuestions rows with Listing B.1 applied (no QA filter)"
    )
    typer.echo(f"preset mini: the smoke {kind.upper()} corpus: Hallucination-R1-mini's {what}; no model is run")
    _preflight({}, out, cfg.overwrite).finish(dry_run, typer.echo)
    if not dry_run:
        build = build_mini_sft if kind == "sft" else build_mini_grpo
        _done(build(out, overwrite=cfg.overwrite, config=cfg.result_record()), cfg)
    return True


def _plan(cfg, **kw) -> RunPlan:
    """The run plan of a config's decoding fields (and ``kw``: k, grading, qa_scope)."""
    from phr.hr1.pipeline import Judges, RunPlan
    from phr.hr1.settings import Decoding, QADecoding

    return RunPlan(
        decoding=Decoding(max_tokens=cfg.max_tokens),
        qa_decoding=QADecoding(max_tokens=cfg.qa_max_tokens),
        judges=Judges(max_tokens=cfg.judge_max_tokens),
        **kw,
    )


def _preflight(roles: dict[str, str | None], out: Path | None, overwrite: bool, notes=()) -> Preflight:
    """The checks of an hr1 command before any call: model specs and keys, the output folder."""
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


def _limited(questions, limit: int | None) -> list:
    """The questions a run takes of one source (``--limit``: the first N)."""
    return list(questions[:limit] if limit else questions)


def _training_inputs(pf: Preflight, cfg, dry_run: bool):
    """A training corpus's questions and evaluation sets (each file parsed), with --dry-run also screened for
    split leakage (the build screens them itself, before its first call); None when they cannot be loaded."""
    loaded = pf.check("sources", lambda: _train_and_eval(cfg.source, cfg.online, cfg.stand_in_split, cfg.eval_set))
    if loaded is not None and dry_run:
        from phr.builders.hr1 import _screen_questions

        train, evals = loaded
        try:
            kept, dropped = _screen_questions(train.questions, evals, None, cfg.drop_leaking)
            pf.note(f"{len(kept)} training questions pass the split-leakage screen ({len(dropped)} dropped)")
        except PHRError as e:  # leakage, or no evaluation set to screen against
            pf.problem(str(e))
    return loaded


def register(build_app: typer.Typer) -> None:
    """Add the three hr1 build commands to ``phr-publish build``."""

    @build_app.command("hr1-paraphrases")
    @bind(BuildHr1ParaphrasesConfig)
    def build_hr1_paraphrases(cfg: BuildHr1ParaphrasesConfig, dry_run: DryRun = False) -> None:
        """Build a paraphrase corpus (with no arguments: Hallucination-R1-mini, the offline preset `mini`).

        Hallucination-R1-mini: 52 packaged TruthfulQA and SimpleQuestions questions with K = 4 paraphrases
        written and labelled by the maintainers; local:smollm2 answers, graded by alias match (no judge); its
        card says so. Give --source (and models) for a real corpus."""
        from phr.builders.hr1 import build_paraphrase_corpus
        from phr.hr1.settings import Grading

        cfg = _with_preset(cfg, bool(cfg.source), "smoke" if _given(cfg, "paraphraser", "judge") else "mini")
        qa = model_or_none(cfg.qa_model)
        if cfg.preset == "mini":
            from phr.builders.hr1_mini import build_mini, describe, load_mini

            if qa is None:
                raise UsageError("--preset mini answers with a QA model: give --qa-model SPEC (not none)")
            out = cfg.out or Path("hr1-mini")
            pf = _preflight({"qa model": qa}, out, cfg.overwrite)
            mini = load_mini()
            typer.echo(describe(mini))
            if not pf.problems:  # the QA model answers every question and (at most) its consistent paraphrases
                from phr.builders.hr1_mini import MINI_PLAN
                from phr.hr1.plan import add_calls

                questions = [q for ld in mini.loads for q in ld.questions]
                known = {i: [p.text for p in ps if p.consistent and p.text] for i, ps in mini.paraphrases.items()}
                add_calls(pf, questions, MINI_PLAN, qa=qa, asked=MINI_PLAN.k, grade=False, known=known,
                          llm_options=cfg.llm_kwargs())  # fmt: skip
            pf.finish(dry_run, typer.echo)
            if dry_run:
                return
            res = build_mini(
                out,
                qa=qa,
                overwrite=cfg.overwrite,
                diversity=cfg.diversity,
                llm_options=cfg.llm_kwargs(),
                mini=mini,
                config=cfg.result_record(),
            )
            _done(res, cfg)
            return
        out = cfg.out or Path("hr1-paraphrases")
        roles = {"paraphraser": cfg.paraphraser, "qa model": qa, "judge": cfg.judge}
        pf = _preflight(roles, out, cfg.overwrite, [f"K {cfg.k}, max_tokens {cfg.max_tokens}"])
        plan = _plan(cfg, k=cfg.k, grading=Grading(fuzzy=cfg.fuzzy), qa_scope="all")
        loads = pf.check("--source", lambda: _loads(cfg.source, cfg.online))
        if loads is not None and not pf.problems:
            from phr.hr1.plan import add_calls

            questions = [q for ld in loads for q in _limited(ld.questions, cfg.limit)]
            pf.note(f"{len(questions)} questions x K {cfg.k} paraphrases")
            add_calls(
                pf,
                questions,
                plan,
                paraphraser=cfg.paraphraser,
                judge=cfg.judge,
                qa=qa,
                asked=cfg.k,
                llm_options=cfg.llm_kwargs(),
            )
        pf.finish(dry_run, typer.echo)
        if dry_run or loads is None:
            return
        res = build_paraphrase_corpus(
            out,
            loads,
            paraphraser=cfg.paraphraser,
            qa=qa,
            judge=cfg.judge,
            plan=plan,
            limit=cfg.limit,
            overwrite=cfg.overwrite,
            smoke=cfg.preset == "smoke",
            diversity=cfg.diversity,
            llm_options=cfg.llm_kwargs(),
            rerun=_rerun(cfg),
            config=cfg.result_record(),
        )
        _done(res, cfg)

    @build_app.command("hr1-sft")
    @bind(BuildHr1SftConfig)
    def build_hr1_sft(cfg: BuildHr1SftConfig, dry_run: DryRun = False) -> None:
        """Build the SFT corpus: consistent paraphrases of SimpleQuestions train with the gold answer (appendix E.1).
        The training questions are screened for split leakage before any model call. With no --source: the
        offline smoke corpus of preset mini (no model is run)."""
        from phr.builders.hr1 import build_sft_corpus

        cfg = _with_preset(cfg, bool(cfg.source))
        build = partial(build_sft_corpus, paraphraser=cfg.paraphraser, k=cfg.k)
        plan = _plan(cfg, k=cfg.k, qa_scope="all")
        _training_corpus(
            cfg, "sft", dry_run, {"paraphraser": cfg.paraphraser}, plan, f" x K {cfg.k} paraphrases", build
        )

    @build_app.command("hr1-grpo")
    @bind(BuildHr1GrpoConfig)
    def build_hr1_grpo(cfg: BuildHr1GrpoConfig, dry_run: DryRun = False) -> None:
        """Build the GRPO prompt corpus: SimpleQuestions train questions the QA model answers correctly (appendix C.1).
        The training questions are screened for split leakage before any model call. With no --source: the
        offline smoke corpus of preset mini (no model is run, no QA filter)."""
        from phr.builders.hr1 import build_grpo_corpus

        cfg = _with_preset(cfg, bool(cfg.source))
        build = partial(build_grpo_corpus, qa=cfg.qa_model)
        _training_corpus(cfg, "grpo", dry_run, {"qa": cfg.qa_model}, _plan(cfg), ", each asked once", build)


def _training_corpus(
    cfg: HR1TrainingBuild,
    kind: str,
    dry_run: bool,
    models: dict[str, str],
    plan: RunPlan,
    unit: str,
    build: Callable[..., HR1BuildResult],
) -> None:
    """`build hr1-sft` / `hr1-grpo` after the preset is resolved: the mini smoke corpus under preset mini; else
    the preflight (``models``' specs and keys, the output, the training questions screened for split leakage,
    the plan) and ``build(out, train, ...)``."""
    from phr.hr1.plan import add_calls

    out = cfg.out or Path(f"hr1-{kind}")
    if _mini_training(cfg, kind, out, dry_run):
        return
    labels = {"paraphraser": "paraphraser", "qa": "qa model"}
    pf = _preflight({**{labels[r]: m for r, m in models.items()}, "judge": cfg.judge}, out, cfg.overwrite)
    loaded = _training_inputs(pf, cfg, dry_run)
    if loaded is not None and not pf.problems:
        questions = _limited(loaded[0].questions, cfg.limit)
        pf.note(f"{len(questions)} training questions{unit}")
        add_calls(pf, questions, plan, judge=cfg.judge, llm_options=cfg.llm_kwargs(), **models)
    pf.finish(dry_run, typer.echo)
    if dry_run or loaded is None:
        return
    train, evals = loaded
    res = build(
        out,
        train,
        judge=cfg.judge,
        eval_sets=evals,
        limit=cfg.limit,
        overwrite=cfg.overwrite,
        drop_leaking=cfg.drop_leaking,
        llm_options=cfg.llm_kwargs(),
        rerun=_rerun(cfg),
        config=cfg.result_record(),
        plan=plan,
    )
    _done(res, cfg)


def register_eval(eval_app: typer.Typer) -> None:
    """Add ``phr-publish eval hr1``."""

    @eval_app.command("hr1")
    @bind(EvalHr1Config)
    def eval_hr1(cfg: EvalHr1Config, dry_run: DryRun = False) -> None:
        """Evaluate a paraphraser against a QA model: Tables 1-3 (or 4), and 7 with --judges/--human."""
        from phr.eval.hr1_metrics import MetricSettings
        from phr.eval.hr1_runner import evaluate
        from phr.hr1.settings import Grading

        cfg = _with_preset(cfg, bool(cfg.dataset))
        extra = [j.strip() for j in (cfg.judges or "").split(",") if j.strip()]
        paraphraser, judge, curated, mini = cfg.paraphraser, cfg.judge, None, None
        if cfg.preset == "mini":
            from phr.builders.hr1_mini import MINI_K, MINI_PARAPHRASER, describe_eval, load_mini

            mini = load_mini()
            if not _given(cfg, "paraphraser"):  # the maintainers' paraphrases and labels: no paraphraser, no judge
                paraphraser, curated = MINI_PARAPHRASER, mini.paraphrases
                judge = cfg.judge if _given(cfg, "judge") else "none"
            elif not _given(cfg, "judge"):
                raise UsageError(
                    f"--paraphraser {cfg.paraphraser} on Hallucination-R1-mini: its paraphrases need a consistency "
                    f"judge; add --judge SPEC (offline: --judge {cfg.qa_model})"
                )
            typer.echo(
                describe_eval(
                    mini,
                    paraphraser=None if curated is not None else paraphraser,
                    judge=model_or_none(judge),
                    qa=cfg.qa_model,
                    k=cfg.k or MINI_K,
                    limit=cfg.limit,
                )
            )
        roles = {
            "paraphraser": None if curated is not None else paraphraser,
            "qa model": cfg.qa_model,
            "judge": model_or_none(judge),
        }
        roles |= {f"judge {n + 2}": j for n, j in enumerate(extra)}
        pf = _preflight(roles, cfg.out, cfg.overwrite)
        loads = mini.loads if mini is not None else pf.check("--dataset", lambda: _loads(cfg.dataset, cfg.online))
        sets = {ld.source: _limited(ld.questions, cfg.limit) for ld in loads or []}
        if loads is not None and len(sets) != len(loads):
            raise UsageError("give each --dataset source once")
        if mini is not None:  # the mini's grading (alias match for every source) and Algorithm 1's QA scope
            from phr.builders.hr1_mini import MINI_PLAN

            plan = _plan(cfg, grading=MINI_PLAN.grading, qa_scope=MINI_PLAN.qa_scope, k=cfg.k or MINI_PLAN.k)
        else:
            plan = _plan(cfg, grading=Grading(fuzzy=cfg.fuzzy))
        if loads is not None and not pf.problems:
            from dataclasses import replace

            from phr.hr1.plan import add_calls

            questions = [q for qs in sets.values() for q in qs]
            para = None if curated is not None else paraphraser
            table_k = MetricSettings().table4_k if cfg.table == "4" else MetricSettings().k
            est = replace(plan, k=cfg.k or (plan.k if mini is not None else table_k))
            pf.note(f"{len(questions)} questions x K {est.k} paraphrases" + (" (curated)" if curated else ""))
            add_calls(
                pf,
                questions,
                est,
                paraphraser=para,
                judge=model_or_none(judge),
                qa=cfg.qa_model,
                judged=para is not None or not is_no_model(judge),
                asked=est.k,
                known=None
                if curated is None
                else {i: [p.text for p in ps if p.text and p.consistent] for i, ps in curated.items()},
                llm_options=cfg.llm_kwargs(),
            )
            for j in extra:
                add_calls(pf, questions, est, judge=j, judged=True, grade=False, llm_options=cfg.llm_kwargs())
        pf.finish(dry_run, typer.echo)
        if dry_run or loads is None:
            return
        res = evaluate(
            sets,
            paraphraser=paraphraser,
            qa=cfg.qa_model,
            judge=judge,
            out=cfg.out,
            table="sft" if cfg.table == "4" else "robustness",
            k=cfg.k,
            plan=plan,
            metrics=MetricSettings(grading=plan.grading),
            judges=extra,
            human=cfg.human,
            diversity=cfg.diversity,
            overwrite=cfg.overwrite,
            llm_options=cfg.llm_kwargs(),
            partial=cfg.partial,
            paraphrases=curated,
            rerun=_rerun(cfg, overwrite=True) if cfg.partial else _rerun(cfg),
            config=cfg.result_record(),
        )
        res.summary.print()
        typer.echo((res.out / "report.md").read_text())
        typer.echo(f"results: {res.out / 'results.json'}; per-question records: {res.out / 'records'}")
        typer.echo(f"settings: preset {cfg.preset or 'none'}; rerun: {_rerun(cfg)}")
        if res.partial:
            typer.echo(
                f"PARTIAL: {len(res.failures)} value(s) missing (a call failed after all retries): left out of the "
                f"tables, listed in results.json. {res.rerun}",
                err=True,
            )
