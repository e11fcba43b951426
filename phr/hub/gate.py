"""The validation gate every push passes before anything is uploaded: the card as the Hub reads it, then the
content, checked by the folder's artifact kind (``phr.hub.kinds``)."""

from __future__ import annotations

from pathlib import Path

from phr.core.fs import folder_links
from phr.core.report import Rejection, ValidationReport
from phr.hub.card import README, CardError, card_configs, missing_data_files
from phr.hub.errors import PublishError, ValidationFailedError
from phr.hub.kinds import kind_of
from phr.hub.repo import IGNORED_DIRS, content_digest, link_message

#: (content digest, allow_unreviewed) -> the report of a folder that passed in this process under that review
#: policy: a relaxed pass is never taken for a strict one
_PASSED: dict[tuple[str, bool], ValidationReport] = {}


def _dataset_card_rejections(folder: Path) -> tuple[list[Rejection], dict]:
    """Card metadata as the Hub and ``datasets`` read it: ``configs`` with valid ``data_files`` naming files that
    exist."""
    try:
        configs = card_configs(folder)
    except CardError as e:
        return [Rejection(README, "card", str(e))], {}
    return [
        Rejection(README, "card", f"config {name!r} names {p}, which matches no file")
        for name, p in missing_data_files(folder, configs)
    ], configs


def refuse_links(folder: str | Path) -> None:
    """The gate's first check, also run before a push compares the folder with the repo: a folder that is not
    one, or holds a symbolic link or a file hard-linked from outside it, is refused (links are never followed)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a folder")
    links = folder_links(folder, IGNORED_DIRS)
    if links:
        report = ValidationReport([Rejection(rel, "link", what) for rel, what in links])
        raise ValidationFailedError(
            f"refusing to push {folder}: {link_message(folder, links)}\n(nothing was uploaded)", report
        )


def gate(folder: str | Path, repo_type: str, *, allow_unreviewed: bool = False) -> ValidationReport:
    """Validate ``folder`` for a push as ``repo_type``; return the report or raise ``ValidationFailedError`` (its
    message holds the rendered report; ``UnknownKindError`` when no artifact kind recognises the folder).
    ``allow_unreviewed``: the review policy (content awaiting a manual review its build requires is taken;
    ``ArtifactKind.check``). A folder whose exact content already passed in this process under the same policy is
    not validated again."""
    folder = Path(folder)
    refuse_links(folder)
    key = (content_digest(folder, repo_type), allow_unreviewed)
    if key in _PASSED:
        return _PASSED[key]
    report = ValidationReport()
    if not (folder / README).is_file():
        report.extend([Rejection(README, "card", "missing README.md (the repo card)")])
    else:
        configs: dict = {}
        if repo_type == "dataset":
            rejections, configs = _dataset_card_rejections(folder)
            report.extend(rejections)
        if report.ok:
            full = kind_of(folder, repo_type, configs).check(folder, allow_unreviewed=allow_unreviewed)
            report.extend(full.rejections)
            report.rows = full.rows
    if not report.ok:
        raise ValidationFailedError(
            f"refusing to push {folder}: it fails validation (nothing was uploaded)\n{report.render()}", report
        )
    _PASSED[key] = report
    return report
