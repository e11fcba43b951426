"""`phr-publish build hr1-paraphrases | hr1-sft | hr1-grpo`: the Hallucination-R1 corpora (docs/hr1.md)."""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from phr.cli.common import CallOptions, MaxRetryAfter, Timeout
from phr.core.errors import UsageError
from phr.hr1.names import SMOKE_MODEL, SOURCES

if TYPE_CHECKING:  # the library is imported inside the commands: `--help` stays fast
    from phr.builders.hr1 import HR1BuildResult
    from phr.builders.hr1_sources import LoadResult

Sources = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        metavar="NAME=PATH",
        help=f"A source and its released files ({', '.join(SOURCES)}); NAME alone with --online loads the Hub copy. Repeatable.",
    ),
]
Online = Annotated[bool, typer.Option("--online", help="Load sources given without a path from the Hub.")]
Out = Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Output folder (Hub layout).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing output folder.")]
Limit = Annotated[int | None, typer.Option(metavar="N", help="At most N questions per source.")]
StandIn = Annotated[
    str | None,
    typer.Option(
        "--stand-in-split",
        metavar="RULE",
        help="Split one released split into train and test (even-train-odd-test): for a SimpleQuestions copy "
        "that holds only one split. The card says so.",
    ),
]
DropLeaking = Annotated[
    bool,
    typer.Option(
        "--drop-leaking",
        help="Leave out training rows that overlap an evaluation set (listed in the manifest and card) instead of "
        "failing the build.",
    ),
]
EvalSets = Annotated[
    list[str] | None,
    typer.Option(
        "--eval-set",
        metavar="NAME=PATH",
        help="An evaluation set the training corpus must not overlap (source NAME, released files at PATH; "
        "NAME=stand-in: the other half of --stand-in-split). Repeatable; at least one for training corpora.",
    ),
]


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
    """The sources given as NAME=PATH, or the packaged smoke questions when none is given."""
    from phr.builders.hr1 import smoke_questions

    if not values:
        return [smoke_questions()]
    return [_load(n, p, online) for n, p in _parse_sources(values, online)]


def _train_and_eval(
    sources: list[str] | None, online: bool, stand_in: str | None, eval_sets: list[str] | None
) -> tuple[LoadResult, dict]:
    parsed = _parse_sources(sources, online)
    if len(parsed) != 1 or parsed[0][0] != "simplequestions":
        raise UsageError("training corpora are built from SimpleQuestions train: --source simplequestions=PATH")
    train = _load(*parsed[0], online)
    held_out = None
    if stand_in:
        from phr.builders.hr1_sources import stand_in_split

        train, held_out = stand_in_split(train, stand_in)  # type: ignore[arg-type]
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


def _rerun(*add: str) -> str:
    """This command line as typed, with the call cache it used (``--cache``) and ``add`` flags not already in it:
    a rerun makes only the calls that failed (the cache holds the rest)."""
    args = sys.argv[1:]
    cache = [] if "--cache" in args or not os.environ.get("PHR_CACHE") else ["--cache", os.environ["PHR_CACHE"]]
    return shlex.join(["phr-publish", *cache, *args, *(a for a in add if a not in args)])


def _done(res: HR1BuildResult) -> None:
    res.summary.print()
    counts = ", ".join(f"{k} {v}" for k, v in res.counts.items())
    typer.echo(f"built {res.kind} in {res.out}: {counts}")
    typer.echo(f'load it with: load_dataset("{res.out}")')


def register(build_app: typer.Typer) -> None:
    """Add the three hr1 build commands to ``phr-publish build``."""

    @build_app.command("hr1-paraphrases")
    def build_hr1_paraphrases(
        source: Sources = None,
        online: Online = False,
        paraphraser: Annotated[str, typer.Option(metavar="SPEC", help="Paraphrase model (Listing B.1).")] = SMOKE_MODEL,
        qa_model: Annotated[
            str, typer.Option("--qa-model", metavar="SPEC", help="QA model (Listing B.4); 'none' to skip QA.")
        ] = SMOKE_MODEL,
        judge: Annotated[str, typer.Option(metavar="SPEC", help="Judge of Listings B.2 and B.3.")] = SMOKE_MODEL,
        k: Annotated[
            int | None, typer.Option("--k", min=1, help="Paraphrases per question (default 5; smoke 4).")
        ] = None,
        limit: Limit = None,
        max_tokens: Annotated[
            int | None, typer.Option(metavar="N", help="Paraphraser max_tokens (paper 1024; smoke 96).")
        ] = None,
        fuzzy: Annotated[
            str, typer.Option(help="B.3 score 1 (fuzzy match) counts as: wrong (paper's reward) or correct.")
        ] = "wrong",
        no_diversity: Annotated[
            bool, typer.Option("--no-diversity", help="Skip the diversity scores (MiniLM).")
        ] = False,
        out: Out = None,
        overwrite: Overwrite = False,
        timeout: Timeout = 120.0,
        max_retry_after: MaxRetryAfter = 600.0,
    ) -> None:
        """Build a paraphrase corpus (with no arguments: the offline smoke corpus).

        The smoke corpus: 24 packaged TruthfulQA questions, K = 4, local:smollm2 as paraphraser, QA model and
        judge, with capped lengths; its card says so."""
        from phr.builders.hr1 import SMOKE_PLAN, SMOKE_QUESTIONS, build_paraphrase_corpus
        from phr.hr1.pipeline import Judges, RunPlan
        from phr.hr1.settings import Decoding, Grading, QADecoding

        smoke = not source
        if fuzzy not in ("wrong", "correct"):
            raise UsageError(f"--fuzzy {fuzzy}: wrong or correct")
        loads = _loads(source, online)
        base = SMOKE_PLAN if smoke else RunPlan(qa_scope="all")
        judges = Judges() if smoke and judge != SMOKE_MODEL else base.judges  # a real judge gets its full length
        decoding = base.decoding if max_tokens is None else Decoding(max_tokens=max_tokens)
        plan = RunPlan(
            k=k or base.k,
            decoding=decoding,
            qa_decoding=base.qa_decoding if smoke else QADecoding(),
            grading=Grading(fuzzy=fuzzy),  # type: ignore[arg-type]
            judges=judges,
            qa_scope=base.qa_scope,
        )
        smoke_models = smoke and SMOKE_MODEL in (paraphraser, qa_model, judge)
        res = build_paraphrase_corpus(
            out or Path("hr1-paraphrases"),
            loads,
            paraphraser=paraphraser,
            qa=None if qa_model.lower() == "none" else qa_model,
            judge=judge,
            plan=plan,
            limit=limit if limit is not None else (SMOKE_QUESTIONS if smoke else None),
            overwrite=overwrite,
            smoke=smoke_models,
            diversity=not no_diversity,
            llm_options=CallOptions(timeout=timeout, max_retry_after=max_retry_after).llm_kwargs(),
            rerun=_rerun(),
        )
        _done(res)

    @build_app.command("hr1-sft")
    def build_hr1_sft(
        source: Sources = None,
        online: Online = False,
        stand_in_split: StandIn = None,
        eval_set: EvalSets = None,
        drop_leaking: DropLeaking = False,
        paraphraser: Annotated[
            str, typer.Option(metavar="SPEC", help="Paraphrase model (Hallucination-R1).")
        ] = SMOKE_MODEL,
        judge: Annotated[str, typer.Option(metavar="SPEC", help="Consistency judge (Listing B.2).")] = SMOKE_MODEL,
        k: Annotated[int, typer.Option("--k", min=1, help="Paraphrases per question.")] = 4,
        limit: Limit = None,
        out: Out = None,
        overwrite: Overwrite = False,
        timeout: Timeout = 120.0,
        max_retry_after: MaxRetryAfter = 600.0,
    ) -> None:
        """Build the SFT corpus: consistent paraphrases of SimpleQuestions train with the gold answer (appendix E.1)."""
        from phr.builders.hr1 import build_sft_corpus

        train, evals = _train_and_eval(source, online, stand_in_split, eval_set)
        res = build_sft_corpus(
            out or Path("hr1-sft"),
            train,
            paraphraser=paraphraser,
            judge=judge,
            eval_sets=evals,
            k=k,
            limit=limit,
            overwrite=overwrite,
            drop_leaking=drop_leaking,
            llm_options=CallOptions(timeout=timeout, max_retry_after=max_retry_after).llm_kwargs(),
            rerun=_rerun(),
        )
        _done(res)

    @build_app.command("hr1-grpo")
    def build_hr1_grpo(
        source: Sources = None,
        online: Online = False,
        stand_in_split: StandIn = None,
        eval_set: EvalSets = None,
        drop_leaking: DropLeaking = False,
        qa_model: Annotated[
            str,
            typer.Option(
                "--qa-model", metavar="SPEC", help="The QA model whose correct answers are kept (paper: Qwen2.5-3B)."
            ),
        ] = SMOKE_MODEL,
        judge: Annotated[str, typer.Option(metavar="SPEC", help="Answer judge (Listing B.3).")] = SMOKE_MODEL,
        limit: Limit = None,
        out: Out = None,
        overwrite: Overwrite = False,
        timeout: Timeout = 120.0,
        max_retry_after: MaxRetryAfter = 600.0,
    ) -> None:
        """Build the GRPO prompt corpus: SimpleQuestions train questions the QA model answers correctly (appendix C.1)."""
        from phr.builders.hr1 import build_grpo_corpus

        train, evals = _train_and_eval(source, online, stand_in_split, eval_set)
        res = build_grpo_corpus(
            out or Path("hr1-grpo"),
            train,
            qa=qa_model,
            judge=judge,
            eval_sets=evals,
            limit=limit,
            overwrite=overwrite,
            drop_leaking=drop_leaking,
            llm_options=CallOptions(timeout=timeout, max_retry_after=max_retry_after).llm_kwargs(),
            rerun=_rerun(),
        )
        _done(res)


def register_eval(eval_app: typer.Typer) -> None:
    """Add ``phr-publish eval hr1``."""

    @eval_app.command("hr1")
    def eval_hr1(
        dataset: Annotated[
            list[str] | None,
            typer.Option(
                "--dataset",
                metavar="NAME=PATH",
                help=f"An evaluation set: source NAME ({', '.join(SOURCES)}) and its released files (NAME alone with "
                "--online). Repeatable. Default: the 24 packaged TruthfulQA questions.",
            ),
        ] = None,
        online: Online = False,
        paraphraser: Annotated[str, typer.Option(metavar="SPEC", help="The paraphraser under test.")] = SMOKE_MODEL,
        qa_model: Annotated[str, typer.Option("--qa-model", metavar="SPEC", help="The target QA model.")] = SMOKE_MODEL,
        judge: Annotated[
            str, typer.Option(metavar="SPEC", help="Judge of Listings B.2 and B.3 (paper: DeepSeek-V3).")
        ] = SMOKE_MODEL,
        k: Annotated[
            int | None, typer.Option("--k", min=1, help="Paraphrases per question (default 5; --table 4: 8).")
        ] = None,
        table: Annotated[
            str, typer.Option("--table", help="2 (Tables 1-3: robustness, default) or 4 (SFT metrics).")
        ] = "2",
        judges: Annotated[
            str | None,
            typer.Option(metavar="A,B,C", help="More consistency judges for Table 7 (comma-separated specs)."),
        ] = None,
        human: Annotated[
            Path | None,
            typer.Option(metavar="CSV", help="Human consistency labels for Table 7 (question_id,k,annotator,label)."),
        ] = None,
        limit: Limit = None,
        fuzzy: Annotated[
            str, typer.Option(help="B.3 score 1 (fuzzy match) counts as: wrong (default) or correct.")
        ] = "wrong",
        no_diversity: Annotated[
            bool, typer.Option("--no-diversity", help="Skip Table 1's diversity (MiniLM).")
        ] = False,
        out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Run folder.")] = Path("runs/hr1"),
        overwrite: Overwrite = False,
        partial: Annotated[
            bool,
            typer.Option(
                "--partial",
                help="When calls fail after all retries, write the tables anyway, marked partial (the missing values "
                "left out of the denominators and listed); without it such a run writes nothing and exits 1.",
            ),
        ] = False,
        timeout: Timeout = 120.0,
        max_retry_after: MaxRetryAfter = 600.0,
    ) -> None:
        """Evaluate a paraphraser against a QA model: Tables 1-3 (or 4), and 7 with --judges/--human."""
        from phr.builders.hr1 import SMOKE_PLAN
        from phr.eval.hr1_metrics import MetricSettings
        from phr.eval.hr1_runner import evaluate
        from phr.hr1.pipeline import RunPlan
        from phr.hr1.settings import Grading

        if table not in ("2", "4"):
            raise UsageError(f"--table {table}: 2 (robustness, Tables 1-3) or 4 (SFT metrics)")
        if fuzzy not in ("wrong", "correct"):
            raise UsageError(f"--fuzzy {fuzzy}: wrong or correct")
        loads = _loads(dataset, online)
        sets = {ld.source: (ld.questions[:limit] if limit else ld.questions) for ld in loads}
        if len(sets) != len(loads):
            raise UsageError("give each --dataset source once")
        plan = RunPlan(grading=Grading(fuzzy=fuzzy))  # type: ignore[arg-type]
        if SMOKE_MODEL in (paraphraser, qa_model, judge):
            plan = replace(SMOKE_PLAN, grading=plan.grading)
        res = evaluate(
            sets,
            paraphraser=paraphraser,
            qa=qa_model,
            judge=judge,
            out=out,
            table="sft" if table == "4" else "robustness",
            k=k,
            plan=plan,
            metrics=MetricSettings(grading=plan.grading),
            judges=[j.strip() for j in (judges or "").split(",") if j.strip()],
            human=human,
            diversity=not no_diversity,
            overwrite=overwrite,
            llm_options=CallOptions(timeout=timeout, max_retry_after=max_retry_after).llm_kwargs(),
            partial=partial,
            rerun=_rerun("--overwrite") if partial else _rerun(),
        )
        res.summary.print()
        typer.echo((res.out / "report.md").read_text())
        typer.echo(f"results: {res.out / 'results.json'}; per-question records: {res.out / 'records'}")
        if res.partial:
            typer.echo(
                f"PARTIAL: {len(res.failures)} value(s) missing (a call failed after all retries): left out of the "
                f"tables, listed in results.json. {res.rerun}",
                err=True,
            )
