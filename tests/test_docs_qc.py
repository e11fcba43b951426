"""docs/metrics.md describes the current resolution judge (issue 19 item 4) and `review export` names every
decision, revise included."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from phr.eval.resolution import PROMPT_VERSION, ResolutionJudgement

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_metrics_doc_describes_the_current_resolution_judge():
    sec = _section((DOCS / "metrics.md").read_text(encoding="utf-8"), "Behavioural resolution")
    reply = re.search(r"`(\{\"uses_premise\".*?\})`", sec, re.S)
    assert reply, "the reply schema is documented"
    assert re.findall(r'"(\w+)"', reply.group(1)) == list(ResolutionJudgement.model_fields)
    assert f"version {PROMPT_VERSION}" in sec and "version 1**" not in sec
    assert '"accepts_premise": <bool>' not in sec  # v1's reply
    for label in ("Heuristic Correction", "Hallucination Compliance", "Hallucination Avoidance"):
        assert f"| **{label}**" in sec  # the label table has its rows
    # no table is left empty: every header + separator is followed by a row
    lines = sec.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("| ---") or line.startswith("|---"):
            assert lines[i + 1].startswith("|"), f"empty table at: {lines[i - 1]}"


def test_review_export_hint_names_revise(mini_folder, tmp_path):
    import shutil

    from phr.cli import app

    folder = shutil.copytree(mini_folder, tmp_path / "phrbench")
    r = CliRunner().invoke(app, ["review", "export", str(folder), "--out", str(tmp_path / "review.csv")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "fill decision (accept / reject / revise; revise: the edited premise in revised_premise)" in out
    assert f"phr-publish review import {tmp_path / 'review.csv'} --folder {folder}" in out
