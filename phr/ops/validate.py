"""The ``validate`` operation: every check of a built folder, by its artifact kind (``phr.hub.kinds``), as
``plan(cfg)`` then ``run(plan)`` (``phr.api``).

    from phr.api import plan, run
    from phr.config.ops import ValidateConfig

    report = run(plan(ValidateConfig(folder="phrbench")))   # = phr-publish validate phrbench

The kind is the one the hub gate would find (``kind_of``); a folder no kind recognises (no card, a broken one) is
checked as PHRBench, whose checks say what is missing. ``validate`` reports the manual review but does not
require it (the kind's ``validate_unreviewed``); the push gate does. A Hallucination-R1 training corpus is also
screened for split leakage against the evaluation sets given (``--eval-set NAME=PATH``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from phr.config.ops import ValidateConfig
from phr.config.types import eval_set_parts
from phr.core.errors import UsageError
from phr.core.fs import folder_links
from phr.core.report import Rejection, ValidationReport
from phr.hr1.corpora import KINDS as HR1_KINDS
from phr.hr1.names import SOURCES
from phr.hub.card import CardError, card_configs
from phr.hub.errors import UnknownKindError
from phr.hub.kinds import ArtifactKind, kind_of
from phr.ops.plan import StepPlan
from phr.validation.folder import PHRBENCH
from phr.validation.hr1_folder import card_kind


@dataclass
class ValidatePlan(StepPlan[ValidateConfig]):
    """The folder's kind, the links found in it (never followed: reported instead of the checks) and the
    evaluation sets of the leakage screen, as (source, path)."""

    kind: ArtifactKind = PHRBENCH
    links: list[tuple[str, str]] = field(default_factory=list)
    eval_sets: list[tuple[str, str]] = field(default_factory=list)


def folder_kind(folder: Path) -> ArtifactKind:
    """The artifact kind ``validate`` checks ``folder`` as (a card naming an unknown ``phr_kind`` is refused)."""
    named = card_kind(folder)
    if named is not None and named not in HR1_KINDS:
        raise UsageError(f"{folder}: the card's phr_kind {named!r} is not one of {', '.join(HR1_KINDS)}")
    try:
        configs = card_configs(folder)
    except CardError:
        configs = {}
    try:
        return kind_of(folder, "dataset", configs)
    except UnknownKindError:
        return PHRBENCH


def _eval_sets(cfg: ValidateConfig, kind: ArtifactKind) -> list[tuple[str, str]]:
    if cfg.eval_set and kind.name not in HR1_KINDS:
        raise UsageError("--eval-set applies to Hallucination-R1 corpora (hr1-paraphrases, hr1-sft, hr1-grpo)")
    out = []
    for v in cfg.eval_set:
        name, path = eval_set_parts(v)
        if name not in SOURCES or not path:
            raise UsageError(f"--eval-set {v}: give NAME=PATH with NAME one of {', '.join(SOURCES)}")
        out.append((name, path))
    return out


def plan(cfg: ValidateConfig) -> ValidatePlan:
    folder = cfg.folder
    if not folder.exists():
        raise UsageError(f"no such folder: {folder}")
    if not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder: give the folder `phr-publish build` wrote")
    links = folder_links(folder)
    if links:  # never followed: report them and stop (what they point to is not this folder's content)
        return ValidatePlan(cfg, links=links)
    kind = folder_kind(folder)
    return ValidatePlan(cfg, kind=kind, eval_sets=_eval_sets(cfg, kind))


def run(p: ValidatePlan) -> ValidationReport:
    """The report (``ok``: every check passed)."""
    folder = p.config.folder
    if p.links:
        return ValidationReport([Rejection(rel, "link", what) for rel, what in p.links])
    report = p.kind.check(folder, allow_unreviewed=True)
    if p.eval_sets:
        from phr.builders.hr1_sources import load_hr1_source
        from phr.validation.hr1_leakage import check_corpus_folder

        sets = {name: [(q.id, q.question) for q in load_hr1_source(name, path).questions] for name, path in p.eval_sets}
        report.extend(check_corpus_folder(folder, p.kind.name, sets).rejections)
    return report
