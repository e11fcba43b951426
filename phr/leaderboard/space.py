"""The leaderboard as a static Hugging Face Space: the rendered page as ``index.html``, the result JSONs it links
to (``results/<model>/<run-id>.json``), ``leaderboard.md``, and a Space card (``sdk: static``, the
title, the license, the results dataset linked). ``leaderboard --space ORG/NAME`` pushes it through the same gate
as every push (``SPACE``, this artifact kind, checks it); unchanged results make no commit.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from phr.core.report import Rejection, ValidationReport
from phr.hub.card import README, CardError, card_metadata
from phr.hub.kinds import ArtifactKind

PAGE = "index.html"
RESULTS = "results"


def space_card(title: str, license: str, results_repo: str | None, count: int) -> str:
    """The Space's README: its metadata (huggingface_hub's ``SpaceCardData``) and a short description."""
    from huggingface_hub import SpaceCard, SpaceCardData

    data = SpaceCardData(
        title=title, sdk="static", app_file=PAGE, license=license, datasets=[results_repo] if results_repo else None
    )
    source = (
        f"the results dataset [{results_repo}](https://huggingface.co/datasets/{results_repo})"
        if results_repo
        else "result JSON files"
    )
    body = (
        f"# {title}\n\n"
        f"PHRBench leaderboard of {count} results, rendered by `phr-publish leaderboard` from {source}. "
        f"Every number is re-derived from each result's evidence; the result JSONs are under `{RESULTS}/`, and "
        "`leaderboard.md` holds the same table.\n"
    )
    return str(SpaceCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def space_folder(rendered: Path, out: Path, *, title: str, license: str, results_repo: str | None, count: int) -> Path:
    """``out``: a Space of the ``write_leaderboard`` folder ``rendered`` (its page becomes ``index.html``)."""
    shutil.copytree(rendered, out, ignore=shutil.ignore_patterns("leaderboard.parquet"))  # data: the results dataset's
    (out / "leaderboard.html").rename(out / PAGE)
    (out / README).write_text(space_card(title, license, results_repo, count), encoding="utf-8", newline="\n")
    return out


def _is_space(folder: Path, configs: dict) -> bool:
    return (folder / PAGE).is_file() and (folder / RESULTS).is_dir()


def validate_space(folder: Path) -> ValidationReport:
    """The card says ``sdk: static`` with a title and a license, the page is there, and every result JSON is a
    PHRBench result."""
    from pydantic import ValidationError

    from phr.eval.results import Result

    report = ValidationReport()
    try:
        meta = card_metadata(folder)
    except CardError as e:
        return ValidationReport([Rejection(README, "card", str(e))])
    if meta.get("sdk") != "static":
        report.extend([Rejection(README, "card", f"sdk is {meta.get('sdk')!r}, not 'static'")])
    for key in ("title", "license"):
        if not meta.get(key):
            report.extend([Rejection(README, "card", f"the card has no {key}")])
    if not (folder / PAGE).is_file():
        report.extend([Rejection(PAGE, "page", "missing: the page the Space serves")])
    for p in sorted((folder / RESULTS).rglob("*.json")):
        rel = p.relative_to(folder).as_posix()
        try:
            Result.model_validate_json(p.read_bytes())
        except (ValidationError, ValueError) as e:
            report.extend([Rejection(rel, "result", f"not a PHRBench result: {str(e).splitlines()[0]}")])
    return report


SPACE = ArtifactKind("leaderboard-space", "space", _is_space, validate_space)
