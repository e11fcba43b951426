"""The README's Python examples run verbatim after the quick start (issue 33, item 8).

Every ```python block of README.md is written to a script and run with this interpreter (the project's venv) in a
fresh folder set up as the quick start leaves the clone: PHRBench-mini built into ``./phrbench`` (the session's
shared build, copied), ``$PHR_HOME`` of its own. It must exit 0. What a block needs besides that is said in
``BLOCKS``, by the README section it is in; a new block fails ``test_every_block_is_listed`` until it is added.
A block that loads a language model or trains is in the slow tier; the rest are fast (the QC encoder MiniLM and
XGBoost are not language models).

The docs/ pages' Python blocks are not run: they sketch functions on the caller's own data (``X``, ``y``,
``questions_df``, ``...``), not commands to paste.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Needs:
    """What a block needs besides the quick start's folder. ``slow``: it loads a language model or trains;
    ``openai``: it calls ``openai:gpt-4o`` (a local OpenAI-protocol server stands in, with a key in the
    environment, as a user's would be); ``results``: ``runs/a/results.json`` (a scored run of the user's, which the
    block names: a stand-in over every B+H prompt of PHRBench-mini, tests/support/predictor.py)."""

    slow: bool = False
    openai: bool = False
    results: bool = False


#: README section -> what its Python blocks need
BLOCKS = {
    "The LLM layer": Needs(slow=True, openai=True),  # and local:smollm2's one short answer
    "PHRBench-mini": Needs(),  # rebuilds ./phrbench (MiniLM QC) and validates it
    "Publishing": Needs(),  # a push into a local hub folder
    "Evaluation": Needs(slow=True),  # local:smollm2: 5 prompts x 2 samples, the reference scorer
    "Training": Needs(slow=True),  # the smoke corpus, then two GRPO steps of the tiny Llama
    "Analyses": Needs(results=True),  # the predictor, judge none: XGBoost + SHAP, no model
    "Python API: `run(plan(cfg))`": Needs(slow=True),  # eval hr1 of 4 Hallucination-R1-mini questions, local:smollm2
}


def python_blocks(text: str) -> list[tuple[str, int, str]]:
    """Every ```python block of a Markdown text: (the heading it is under, without #s; its first line; its code)."""
    found: list[tuple[str, int, str]] = []
    heading, fence, code, start = "", None, [], 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if fence is None:  # an opening fence: its language, if any
                fence, code, start = line[3:].strip(), [], n + 1
            else:
                if fence == "python":
                    found.append((heading, start, "\n".join(code) + "\n"))
                fence = None
        elif fence is None and re.match(r"#{1,6} ", line):
            heading = line.lstrip("#").strip()
        elif fence == "python":
            code.append(line)
    return found


README_BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_every_block_is_listed():
    assert README_BLOCKS, "README.md has no ```python block"
    assert {h for h, _, _ in README_BLOCKS} == set(BLOCKS), "classify each README section with Python in BLOCKS"


def _params():
    for heading, line, code in README_BLOCKS:
        needs = BLOCKS.get(heading, Needs())
        marks = [pytest.mark.slow, pytest.mark.timeout(1800)] if needs.slow else []
        slug = re.sub(r"\W+", "-", heading).strip("-").lower()  # the section: "python-api-run-plan-cfg"
        yield pytest.param(heading, code, needs, id=f"{slug}@{line}", marks=marks)


@pytest.mark.parametrize(("heading", "code", "needs"), list(_params()))
def test_readme_python_block_runs_verbatim(heading, code, needs, mini_folder, tmp_path, request):
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(mini_folder, work / "phrbench")  # the quick start: build phrbench --overwrite
    if needs.results:
        from tests.support.predictor import mini_results

        first = mini_results(tmp_path / "scored", mini_folder)[0]
        shutil.copytree(first.parent, work / "runs" / "a")
    if needs.openai:
        request.getfixturevalue("fake_openai")()  # OPENAI_API_KEY / OPENAI_BASE_URL: a local server answers
    script = work / "readme_example.py"
    script.write_text(code)
    r = subprocess.run(
        [sys.executable, script.name], cwd=work, env=dict(os.environ), capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, (
        f"README.md, {heading}:\n{code}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-5000:]}"
    )
